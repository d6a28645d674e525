"""One backward node over a call that ember composes from several ops.

NOTE [ One node for a composite ]
PyTorch records one node for ``var_mean``, ``aminmax``, ``interpolate``, ``grid_sample``,
``group_norm``, ``pixel_shuffle`` and a transposed convolution with a bias, where ember
computes each from several ops and so records several nodes (two, for ``var_mean``: one
per output). Code that inspects graphs sees the difference: ``v.grad_fn is m.grad_fn`` for
``v, m = var_mean(x)``, the node's name, its ``next_functions`` and its ``_saved_*``.

So the public function, once its ops ran, hangs a ``ComposedNode`` named as torch's over
its outputs (``as_one_node``). The node passes each output's gradient on unchanged to the
node ember recorded for that output -- the engine still runs ember's formulas, and higher
derivatives still flow through them -- while ``next_functions`` shows the edges torch's node
has: one per tensor argument of torch's op, in its order, ``(None, 0)`` for one that needs
no gradient (NOTE [ Shown edges ] in ember/_ops/_node_names.py). It costs one pass-through
node per call, and nothing at all when no output requires grad.

Where the call's result is a view of an argument (a composite that returned its input
unchanged), ember's graph is left as it is: such a view's ``grad_fn`` follows its base. A view
of an intermediate (``reshape`` last) takes the node: nothing else can write into its base.

Known difference: a hook registered with ``register_hook`` on such a node receives the
gradients it hands to ember's nodes (one per output), not one per input of torch's op.
"""

from __future__ import annotations

from ._base import Node, _sequence
from ._nodes import _FREED, _shown_edge, gradient_edge, node_module

_classes: dict = {}


class ComposedNode(Node):
    """The node PyTorch records for a call ember composes from several ops (NOTE [ One
    node for a composite ]): it hands each output's gradient to the node ember recorded for
    that output, and shows torch's edges and saved values.

    Example:
        >>> import ember
        >>> x = ember.ones(2, 3, requires_grad=True)
        >>> v, m = ember.var_mean(x, 1)
        >>> v.grad_fn is m.grad_fn, v.grad_fn.name(), m.output_nr
        (True, 'VarMeanBackward0', 1)
    """

    # _next: per output, the edge to ember's node for it; _shown: torch's edges;
    # _attrs: torch's saved values by name (a callable is asked with the node)
    _shown = ()
    _attrs = None
    _freed = False

    @property
    def next_functions(self):
        shown = self._shown
        if callable(shown):  # torch's steps, built on first look (``as_one_node``'s ``shown``)
            shown = self._shown = tuple(shown(self._edges, _shown_edge))
            del self._edges
        return shown

    def _apply(self, grads):
        return tuple(grads)

    def _n_outputs(self):
        return self._nout

    def _release(self):
        attrs = self._attrs
        if attrs:
            self._attrs = {k: v for k, v in attrs.items() if not _is_tensor(v)}
            self._freed = True

    def __getattr__(self, name):
        if not name.startswith("_saved_"):
            raise AttributeError(name)
        attrs = self.__dict__.get("_attrs") or {}
        key = name[len("_saved_"):]
        if key not in attrs:
            if self.__dict__.get("_freed"):
                raise RuntimeError(_FREED)
            raise AttributeError(name)
        v = attrs[key]
        return v(self) if callable(v) and not _is_tensor(v) else v

    def __dir__(self):
        extra = [f"_saved_{k}" for k in (self.__dict__.get("_attrs") or ())]
        return sorted(set(super().__dir__()) | set(extra))


def _is_tensor(v):
    return hasattr(v, "_grad_fn")


def node_class(name):
    """The ComposedNode subclass called ``name`` (``"VarMeanBackward0"``)."""
    cls = _classes.get(name)
    if cls is None:
        cls = _classes[name] = type(name, (ComposedNode,), {"__module__": node_module[0]})
    return cls


def as_one_node(name, outputs, inputs, saved=None, shown=None):
    """Hang one node named ``name`` over ``outputs`` (a tensor or a tuple of them, None
    entries allowed), showing one edge per entry of ``inputs`` (tensors or None, in the
    order of torch's op) and ``saved`` as its ``_saved_<key>`` values (a callable value is
    called with the node on access). Nothing happens when no output has a node, or when
    one is a view. See NOTE [ One node for a composite ].

    Args:
        name (str): torch's class name for the node.
        outputs: the call's result, a tensor or a tuple (or tuple subclass) of them.
        inputs (tuple): torch's op's tensor arguments, in order.
        saved (dict, optional): torch's saved values by name, without ``_saved_``.
        shown (callable, optional): ``shown(edges, step)`` giving ``next_functions`` where
            torch's node does not lead straight to its op's arguments (its op is one step of
            several): ``edges`` are the gradient edges of ``inputs``, ``step(name, edges)``
            makes a stand-in node (NOTE [ Shown edges ]) and returns its edge. Called once,
            on first look.

    Returns:
        ``outputs``, whose nodes now lead through the new one.

    Example:
        >>> import ember
        >>> x = ember.ones(2, 3, requires_grad=True)
        >>> y = as_one_node("MyBackward0", x * 2, (x, None))
        >>> y.grad_fn.name(), [type(n).__name__ for n, _ in y.grad_fn.next_functions]
        ('MyBackward0', ['AccumulateGrad', 'NoneType'])
    """
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    edges = []
    for o in outs:
        if o is None or o._grad_fn is None:
            edges.append((None, 0))
            continue
        base = o._base
        if base is not None and any(t is not None and (t is base or t._base is base)
                                    for t in inputs):
            return outputs  # an alias of an argument: its node follows its base
        edges.append((o._grad_fn, o._out_nr))
    if all(e[0] is None for e in edges):
        return outputs
    node = node_class(name)()
    node._next = tuple(edges)
    node._nout = len(outs)
    node._seq = next(_sequence)
    edges_in = tuple(gradient_edge(t) if t is not None and t._rg else (None, 0)
                     for t in inputs)
    if shown is None:
        node._shown = edges_in
    else:
        node._shown, node._edges = shown, edges_in
    if saved:
        node._attrs = saved
    for i, o in enumerate(outs):
        if edges[i][0] is not None:
            o._grad_fn = node
            o._out_nr = i
    return outputs
