"""The base of the autograd graph: ``Node``, ``AccumulateGrad``, hook handles and the
saved-tensor hook stack.

Every other autograd module builds on these; ``graph.py`` re-exports them beside the
user-facing utilities, which use the recorder (``_nodes.py``) and the engine (``_engine.py``).
This module imports neither: the engine installs ``_accumulate_grad`` when it is imported.

NOTE [ Nodes do not own their outputs ]
A node holds edges to the nodes of its *inputs* (``next_functions``) and the values it
saved, never its output tensors: an output points at its node, not the reverse, so there are
no reference cycles and an intermediate dies by reference counting as soon as nothing needs
it. A node that saves its own result keeps the array and re-wraps it on unpack.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

#: the global sequence number: nodes created later run earlier in backward
_sequence = itertools.count()

# ------------------------------------------------------------------------------------------------
# hook handles


class RemovableHandle:
    """What every ``register_*_hook`` returns (tensor, grad-node, module and optimizer hooks:
    one class, ``torch.utils.hooks.RemovableHandle``): ``remove()`` unregisters the hook.

    Args:
        hooks_dict: the dict the hook is stored in, under this handle's ``id``.
        *extra_dicts: further dicts holding the same id (a hook registered with kwargs).
        extra_dict: PyTorch's keyword form of the same (a dict or a list of dicts).

    Returns:
        RemovableHandle: the handle; usable as a context manager that removes the hook.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> with x.register_hook(lambda g: g * 2):
        ...     x.sum().backward()
        >>> x.grad
        tensor([2., 2.])
    """

    _ids = itertools.count()

    def __init__(self, hooks_dict, *extra_dicts, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict) if hooks_dict is not None \
            else _no_dict
        self.id = next(RemovableHandle._ids)
        if extra_dict is not None:
            extra_dicts += tuple(extra_dict) if isinstance(extra_dict, (list, tuple)) \
                else (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dicts)

    def remove(self):
        """Unregister the hook (again: nothing happens).

        Returns:
            None
        """
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        # PyTorch's layout, (hooks dict, id, extra dicts), so a pickled module holding a
        # handle loads in either library
        return (self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_ref))

    def __setstate__(self, state):
        if type(state[0]) is tuple:  # ember's earlier layout: ((hooks dict, *extras), id)
            state = (state[0][0], state[1], state[0][1:])
        hooks = state[0]
        self.id = state[1]
        self.hooks_dict_ref = weakref.ref(hooks) if hooks is not None else _no_dict
        extras = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _no_dict():
    return None


class _HookDict(OrderedDict):
    """An ordered dict of hooks that can be weakly referenced by handles."""


#: True once any tensor got a hook of its own (``register_hook`` on a leaf,
#: ``register_post_accumulate_grad_hook``): until then the engine does not look for a leaf's
#: hooks, whose unset slots cost an AttributeError to read (``run_backward`` in _engine.py)
leaf_hooks_seen = False


def _add_hook(holder, attr, fn):
    global leaf_hooks_seen
    if attr == "_hooks" or attr == "_post_acc_hooks":
        leaf_hooks_seen = True
    d = getattr(holder, attr, None)
    if d is None:
        d = _HookDict()
        setattr(holder, attr, d)
    h = RemovableHandle(d)
    d[h.id] = fn
    return h


# ------------------------------------------------------------------------------------------------
# Node


class Node:
    """A node of the backward graph: the ``grad_fn`` of a tensor.

    Subclasses implement ``_apply(grads) -> tuple`` taking one gradient per output (None
    where none arrived) and returning one gradient per edge in ``next_functions``.

    Example:
        >>> import ember
        >>> y = (ember.ones(2, requires_grad=True) * 3).sum()
        >>> isinstance(y.grad_fn, ember.autograd.graph.Node), y.grad_fn.name()
        (True, 'SumBackward0')
    """

    __module__ = "ember.autograd.graph"  # its public address

    # ``_next``: tuple of (node or None, input_nr); ``_seq``: sequence_nr;
    # ``_pre``/``_post``: user hooks; ``_tpre``: tensor hooks of outputs keyed by output nr;
    # ``_retain``: weakrefs of outputs that retain their grad, keyed by output nr.
    _next = ()
    _pre = None
    _post = None
    _tpre = None
    _retain = None
    _meta = None
    _trace = None
    _seq = 0
    #: the order the engine hands this node's gradients on to ``_next`` (None: as listed;
    #: NOTE [ Edge order ] in ember/autograd/_engine.py)
    _edge_order = None
    #: True once a pre-hook, tensor hook or retain_grad was registered (the engine's cheap test)
    _hooked = False
    #: the number of outputs (``_n_outputs()``) as an attribute: the engine sizes each node's
    #: input buffer from it without a method call (subclasses with more override it)
    _nout = 1

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self):
        return self._next

    @property
    def metadata(self) -> dict:
        m = self._meta
        if m is None:
            m = self._meta = {}
        return m

    @property
    def requires_grad(self) -> bool:
        return True

    def _sequence_nr(self) -> int:
        return self._seq

    def _set_sequence_nr(self, n):
        self._seq = n

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after the node; it may return new
        ``grad_inputs``."""
        return _add_hook(self, "_post", fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before the node; it may return new ``grad_outputs``."""
        self._hooked = True
        return _add_hook(self, "_pre", fn)

    def _register_hook_dict(self, tensor):  # torch's internal name; kept for tooling
        pass

    def __call__(self, *grads):
        """Run the node's formula directly (as torch allows): returns the input gradients."""
        res = self._apply(list(grads))
        return res[0] if len(res) == 1 else res

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # -- for subclasses -------------------------------------------------------------------------

    def _apply(self, grads):
        raise NotImplementedError

    def _release(self):
        """Free saved values after a backward without retain_graph."""

    def _n_outputs(self) -> int:
        return 1


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: writes gradients into ``variable.grad``.

    Held weakly by its tensor (``tensor._accum``) and strongly by the nodes that use the
    leaf, so it lives as long as some graph reaches it. See NOTE [ Accumulating .grad ] in
    ``_engine.py`` for the rules.

    Args:
        variable: the leaf tensor whose ``.grad`` it writes.

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> type((x * 2).grad_fn.next_functions[0][0]).__name__
        'AccumulateGrad'
    """

    _seq = float("inf")  # leaves are flushed as soon as they are ready (NOTE [ Engine ])

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # the name PyTorch's node prints

    def _sequence_nr(self) -> int:
        # the engine orders by ``_seq`` (infinite: last); torch shows a leaf's number as
        # the largest uint64
        s = self._seq
        return 2 ** 64 - 1 if s == float("inf") else s

    def _apply(self, grads):
        _accumulate_grad(self.variable, grads[0])
        return ()


#: ``_engine.accumulate_grad``, the .grad rules: installed by the engine, which builds on this
#: module (only direct calls of an AccumulateGrad node get here; the engine calls it itself)
_accumulate_grad = None


# ------------------------------------------------------------------------------------------------
# the saved-tensor hook stack (the context managers that push on it are in graph.py)


class _HooksState(threading.local):
    def __init__(self):
        self.stack = []  # (pack, unpack) pairs, innermost last
        self.disabled = None  # error message while disable_saved_tensors_hooks is active


_hooks_state = _HooksState()
