"""Recording the graph: op nodes, saved tensors, and autograd's side of in-place ops and views.

The dispatcher calls ``record(op, inputs, params, outputs)`` after a kernel ran when grad mode
is on and some input requires grad (NOTE [ Hot path ] in ember/_dispatch.py). ``record``
builds one ``Node`` whose class is named after the op (``mul`` -> ``MulBackward0``), points
it at the nodes of the inputs, saves what the op's vjp asks for, and stamps the outputs.

NOTE [ Gradient metadata per input ]
Each node keeps, per input, the input's shape and dtype. The node sums each gradient its
formula returns down to that shape and casts it to that dtype (complex to real by taking
the real part, torch's convention) -- this is the one place where broadcasting and dtype
promotion are undone, so formulas never call ``sum_to_size`` (ARCHITECTURE.md section 3).

NOTE [ In-place ops and autograd ]
An in-place op runs out of place and its result is written into ``self``
(``_dispatch.commit_inplace_result``). Before that, ``check_inplace`` refuses what PyTorch
refuses, and ``begin_inplace`` remembers ``self`` as this thread's pending target until
``end_inplace`` (also on failure): while it is pending, ``record`` saves a *copy* of
``self`` itself, since the write will overwrite the value the formula needs (torch's
``original_self``). Another input that only shares ``self``'s version counter (a view of the
same base, ``self.detach()``) is saved as it is, at the version before the write, so that
backward refuses it as modified, as PyTorch does (``r[:, 0].mul_(r[:, 2])``).
``commit_inplace`` then rebases ``self``'s history onto the result's
node -- or, when ``self`` is a view, rewrites the base's history with a ``CopySlices`` node
and lets the views' grad_fns be regenerated lazily (NOTE [ View replay ]).

NOTE [ View replay ]
``_dispatch._wrap_views`` stores in each view's ``_view_meta`` the chain of (op, params)
that makes the view from its root base, and the version at which its grad_fn was valid.
When the root's version moved (an in-place write on the base or on any view of it), the
view's grad_fn is stale: it is rebuilt on demand by replaying the chain on the root under
grad mode and taking the replayed view's node.
"""

from __future__ import annotations

import re
import threading
import weakref

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from ._registry_glue import cast_op, sum_to_op
from . import anomaly_mode as _anomaly
from ._base import AccumulateGrad, Node, _hooks_state, _sequence

_state = _dispatch.state
_apply_op = _dispatch.apply
_weakref = weakref.ref

#: set by allow_mutation_on_saved_tensors: every saved tensor is copied when saved
clone_on_save = False
#: how many threads have an in-place write in flight: the tensor about to be overwritten is
#: ``_state.pending_inplace`` on that thread (NOTE [ In-place ops and autograd ]); saving
#: reads this count first so the common case costs one global read
_pending = 0
_pending_lock = threading.Lock()
#: True once inference mode was ever entered (guards the inference-tensor checks)
inference_seen = False
#: True when saving needs more than the fast path: clone_on_save, saved-tensor hooks ever
#: used, inference mode ever entered (kept up to date by those features)
slow_save = False
_new = object.__new__

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def _legacy_type(arr):
    """The legacy type name of an array's tensor as ``Tensor.type()`` writes it
    ('torch.FloatTensor'), the form PyTorch's version error prints."""
    from .._ops.conversion import _LEGACY

    d = _dt.from_np[arr.dtype]
    prefix = "torch." if type(arr) is np.ndarray else "torch.cuda."
    return prefix + _LEGACY.get(d, "Tensor")


def short_name(node) -> str:
    """``MulBackward0`` -> ``Mul``, as PyTorch names nodes in its version error."""
    return re.sub(r"Backward\d*$", "", node.name())


# ------------------------------------------------------------------------------------------------
# saved tensors


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An input is kept as the Tensor itself; the node's own output is kept as its array and
    version counter and re-wrapped on unpack (NOTE [ Nodes do not own their outputs ] in
    _base.py). With saved-tensor hooks active the pack hook's result is kept instead.
    A node's ``_raw_saved_<name>`` attributes give them (``register_hooks(pack, unpack)``
    as in PyTorch); autograd makes them, users do not.

    Args:
        t: the Tensor saved (an input), or None for the node's own output.
        vc: the tensor's version counter.
        version: the counter's value when saved (an in-place change later is an error).
        out_nr: the output's index, for a saved output (-1: not differentiable).

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> saved = x.exp().grad_fn._raw_saved_result
        >>> type(saved).__name__
        'SavedTensor'
    """

    # ``t``: the Tensor (an input) or None (the node's output, kept as ``arr``); ``vc`` and
    # ``version``: the version counter and its value at save time. The rest are class
    # defaults so that saving an input costs three stores (see ``save_input``).
    arr = None
    out_nr = -1  # the output's index (-1: a non-differentiable output, unpacked plain)
    packed = None
    unpack_hook = None
    freed = False
    diff = True
    #: the output's forward-mode tangents (its ``_tangent`` dict), kept while a dual level
    #: is active so that a formula reading ``out`` sees them (forward-over-reverse)
    tangents = None

    def __init__(self, t, vc, version, out_nr=-1):
        self.t = t
        self.vc = vc
        self.version = version
        self.out_nr = out_nr

    def unpack(self, node):
        if self.freed:
            raise RuntimeError(_FREED)
        if self.unpack_hook is not None:
            return self.unpack_hook(self.packed)
        vc = self.vc
        t = self.t
        if t is not None:
            cur = t._vc
            v = 0 if cur is None else cur[0]
        else:
            v = vc[0]
        if v != self.version:
            raise RuntimeError(self._version_error(node, v))
        if t is not None:
            return t
        o = wrap(self.arr)
        o._vc = vc
        if self.tangents is not None:
            o._tangent = self.tangents
        if self.diff:
            o._grad_fn = node
            o._out_nr = self.out_nr
            o._rg = True
        return o

    def _version_error(self, node, v):
        if self.t is not None and self._saved_transposed(node):
            # PyTorch's node kept ``t.t()``, a view whose history is replayed as AsStrided
            # once its base changed in place (``Op.saved_transposed``)
            arr = self.t._data.T
            which = ", which is output 0 of AsStrided," if self.t._rg else ""
        elif self.t is not None:
            arr = self.t._data
            fn = self.t._grad_fn
            if fn is not None and self.t._base is not None and self.t._rg:
                # a differentiable view whose storage was written: PyTorch regenerates its
                # grad_fn as AsStrided before naming it (NOTE [ View replay ])
                which = ", which is output 0 of AsStrided,"
            else:
                which = (f", which is output {self.t._out_nr} of {short_name(fn)},"
                         if fn is not None else "")
        else:
            arr = self.arr
            which = f", which is output {self.out_nr} of {short_name(node)},"
        return (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{_legacy_type(arr)} {list(arr.shape)}]{which} is at version "
            f"{v}; expected version {self.version} instead. Hint: enable anomaly detection to "
            "find the operation that failed to compute its gradient, with "
            f"{_dt.printed_module[0]}.autograd.set_detect_anomaly(True, check_nan=False).")

    def _saved_transposed(self, node):
        op = getattr(node, "_op", None)
        idx = getattr(op, "saved_transposed", ())
        saved = getattr(node, "_saved", None) or ()
        return any(i < len(saved) and (saved[i] is self or saved[i] is self.t) for i in idx)

    def release(self):
        self.t = self.arr = self.packed = None
        self.freed = True

    def register_hooks(self, pack_hook, unpack_hook):
        """Replace the saved value by ``pack_hook(value)`` now, and have every later read
        return ``unpack_hook(packed)`` (one pair of hooks per saved tensor).

        Args:
            pack_hook: called once, with the saved tensor; its result is kept instead.
            unpack_hook: called with the packed object at each read (the backward pass,
                ``grad_fn._saved_<name>``); returns the tensor to use.

        Returns:
            None.

        Example::

            >>> x = ember.randn(3, requires_grad=True)
            >>> y = x.pow(2)
            >>> y.grad_fn._raw_saved_self.register_hooks(lambda t: t * 1, lambda p: p)
        """
        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and "
                            "unpack_hook must be callables")
        if self.unpack_hook is not None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time.")
        if self.freed:
            raise RuntimeError(_FREED)
        value = self.unpack(None)
        self.packed = pack_hook(value)
        self.unpack_hook = unpack_hook
        self.t = self.arr = None


def save_input(t):
    """Save an input tensor for backward (see ``SavedTensor``)."""
    if not (slow_save or _pending):
        s = _new(SavedTensor)
        s.t = t
        vc = s.vc = t._vc
        s.version = 0 if vc is None else vc[0]
        return s
    if inference_seen and getattr(t, "_inference", False):
        raise RuntimeError(
            "Inference tensors cannot be saved for backward. Please do not use Tensors created "
            "in inference mode in computation tracked by autograd. To work around this, you can "
            "make a clone to get a normal tensor and use it in autograd, or use "
            "`ember.no_grad()` instead of `ember.inference_mode()`.")
    p = getattr(_state, "pending_inplace", None) if _pending else None
    if clone_on_save or t is p:
        t = _detached_copy(t)
    vc = t._vc
    s = SavedTensor(t, vc, 0 if vc is None else vc[0])
    if _hooks_state.stack:
        _pack(s, t)
    return s


def save_output(o, nr):
    """Save a node's own output: keep its array, not the Tensor (no reference cycle)."""
    vc = o._vc
    if vc is None:
        vc = o._vc = [0]
    s = _new(SavedTensor)  # (``__init__``'s stores without its call)
    s.t = None
    s.vc = vc
    s.version = vc[0]
    s.out_nr = nr
    s.arr = o._data
    if _dispatch.intercept and _dispatch.carries_tangent is not None:
        # the dual level sets the output's tangent after this: share the dict it will fill
        d = getattr(o, "_tangent", None)
        if d is None:
            d = o._tangent = {}
        s.tangents = d
    if o._grad_fn is None:
        s.diff = False
    if _hooks_state.stack:
        _pack(s, o)
    return s


def _pack(s, t):
    stack = _hooks_state.stack
    pack, unpack = stack[-1]
    # the pack hook runs without saved-tensor hooks: ops inside it save plainly
    _hooks_state.stack = []
    try:
        s.packed = pack(t)
    finally:
        _hooks_state.stack = stack
    s.unpack_hook = unpack
    s.t = s.arr = None


def _detached_copy(t):
    c = _copied_value(t)
    c._rg = t._rg
    c._grad_fn = t._grad_fn
    if t._grad_fn is not None:
        c._out_nr = t._out_nr
    if _dispatch.carries_tangent is not None and _dispatch.carries_tangent(t):
        # forward-over-reverse: the backward formula reads the saved value's tangent too
        from ._forward import copy_tangents

        copy_tangents(t, c)
    return c


def _copied_value(t):
    """A new tensor holding ``t``'s value; for a batched tensor of ``vmap`` (whose array is
    one example's view: NOTE [ Batched tensors ] in ember/func/_batch_tensor.py), every
    example's."""
    if _dispatch.intercept:
        from ..func._batch_tensor import batch_info, make_batched

        inf = batch_info(t)
        if inf is not None:
            return make_batched(_copied_value(inf[0]), inf[1])
    return wrap(t._data.copy())


# ------------------------------------------------------------------------------------------------
# op nodes


_node_classes: dict = {}
# the module node classes name: this one, or none ("builtins") while ember runs as torch,
# whose nodes are C types (NOTE [ Class names under the alias ] in ember/compat/_names.py)
node_module = [__name__]


def node_class(op):
    """The Node subclass for ``op``: named like PyTorch's (``MulBackward0``)."""
    cls = _node_classes.get(op)
    if cls is None:
        name = getattr(op, "node_name", None)
        if name is None:
            name = "".join(_camel(p) for p in op.name.strip("_").split("_")) + "Backward0"
        # (the op's edge order as a class attribute: the engine reads it once per node, and
        # a plain attribute costs less than OpNode's property)
        cls = _node_classes[op] = type(name, (OpNode,), {"__slots__": (),
                                                         "__module__": node_module[0],
                                                         "_edge_order": op.edge_order})
    return cls


def _camel(part):
    """``log1p`` -> ``Log1P``: PyTorch's node names capitalise each word and each letter
    after a digit."""
    chars = list(part[:1].upper() + part[1:])
    for i in range(1, len(chars)):
        if chars[i - 1].isdigit():
            chars[i] = chars[i].upper()
    return "".join(chars)


_named_classes: dict = {}


def named_node_class(name):
    """The OpNode subclass called ``name``, for ops whose node name depends on the call
    (NOTE [ Node names ] in ember/_ops/_node_names.py)."""
    cls = _named_classes.get(name)
    if cls is None:
        cls = _named_classes[name] = type(name, (OpNode,), {"__slots__": (),
                                                            "__module__": node_module[0]})
    return cls


class ShownNode(Node):
    """A node of the graph as PyTorch draws it where ember computes the step inside another
    node (NOTE [ Shown edges ] in ember/_ops/_node_names.py): it has torch's name and leads
    on to the real edges, but runs nothing -- the gradient flows through the node that
    holds the computation.

    Example:
        >>> import ember
        >>> lin = ember.nn.Linear(2, 1)
        >>> y = lin(ember.ones(1, 2))
        >>> y.grad_fn.next_functions[2][0].name()
        'TBackward0'
    """

    #: torch's saved names -> a function giving the value (read off the node that computes
    #: this step: NOTE [ Saved attributes as torch lists them ] in ember/_ops/_node_saved.py)
    _shown_saved = None

    def __init__(self, edges, saved=None):
        self._next = edges
        if saved:
            self._shown_saved = saved

    def _apply(self, grads):
        raise RuntimeError(
            f"{self.name()} is how PyTorch draws this step; ember computes it inside the "
            "node that leads here, so it cannot be called on its own")

    def __getattr__(self, name):
        saved = self.__dict__.get("_shown_saved")
        if saved is not None and name.startswith("_saved_") and name[7:] in saved:
            return saved[name[7:]]()
        raise AttributeError(name)

    def __dir__(self):
        extra = [f"_saved_{n}" for n in (self._shown_saved or ())]
        return sorted(set(super().__dir__()) | set(extra))


_shown_classes = {}


def _shown_edge(name, edges, saved=None):
    """The edge to a ``ShownNode`` named ``name`` over ``edges`` (none when nothing past it
    needs a gradient), showing ``saved`` (torch's saved names -> functions giving them)."""
    if all(e[0] is None for e in edges) and len(edges) == 1:
        return edges[0]
    cls = _shown_classes.get(name)
    if cls is None:
        cls = _shown_classes[name] = type(name, (ShownNode,), {"__module__": node_module[0]})
    return (cls(tuple(edges), saved), 0)


class OpNode(Node):
    """The backward node of one call of a registered op (see NOTE [ Derivative formulas ] in
    ember/_ops/_registry.py for the formula contract)."""

    # _op, _params, _saved (per input: SavedTensor or None), _sout (saved result or None),
    # _meta_in (per input: (shape, dtype) or None), _nout (number of outputs), _freed,
    # _multi (the op returned a tuple: its formula gets a tuple of gradients)
    # the fields every node sets are slots (no per-node dict on the recording hot path);
    # rarer ones are class defaults overridden in the instance dict when needed
    __slots__ = ("_op", "_params", "_next", "_meta_in", "_seq", "_saved", "_vers")
    _multi = False
    _nout = 1
    _freed = False
    _sout = None

    @property
    def next_functions(self):
        # torch's shape of this node's edges (NOTE [ Shown edges ] in
        # ember/_ops/_node_names.py), built once; the engine reads ``_next``
        d = self.__dict__
        shown = d.get("_shown")
        if shown is None:
            from .._ops._node_names import shown_edges

            shown = d["_shown"] = shown_edges(self, self._next, _shown_edge)
        return shown

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after the node, seeing the gradients of the
        inputs ``next_functions`` shows (NOTE [ Shown edges ] in ember/_ops/_node_names.py);
        it may return new ``grad_inputs``.

        Args:
            fn (callable): the hook.

        Returns:
            RemovableHandle: ``remove()`` unregisters it.

        Example::

            >>> x = ember.ones(2, requires_grad=True)
            >>> y = x * 3
            >>> h = y.grad_fn.register_hook(lambda gin, gout: print(gin[0]))
            >>> y.sum().backward()
            tensor([3., 3.])
        """
        from .._ops._node_names import shown_hook

        return super().register_hook(shown_hook(self, fn))

    @property
    def _edge_order(self):
        # NOTE [ Edge order ] in ember/autograd/_engine.py (``Op.edge_order``: None but for
        # the ops that name an order)
        return self._op.edge_order

    def _n_outputs(self):
        return self._nout

    def _apply(self, grads):
        # the engine's per-node hot path (NOTE [ Engine ] in _engine.py): no per-call tuple,
        # dict or generator beyond what the formula's call itself needs
        op = self._op
        nxt = self._next
        if not self._multi:
            g = grads[0]
            if g is None:
                return (None,) * len(nxt)
        else:
            for x in grads:
                if x is not None:
                    break
            else:
                return (None,) * len(nxt)
            g = tuple(grads)
        if self._freed:
            raise RuntimeError(_FREED)
        saved = self._saved
        if saved is None:
            args = _NONES[len(nxt)] if len(nxt) < 8 else (None,) * len(nxt)
        elif self._vers is None:
            args = [None if s is None else s.unpack(self) for s in saved]
        else:
            args = saved
            i = 0
            for v in self._vers:
                s = saved[i]
                i += 1
                if s is not None:
                    vc = s._vc
                    if vc is None:
                        if v:
                            SavedTensor(s, vc, v).unpack(self)  # raises the version error
                    elif vc[0] != v:
                        SavedTensor(s, vc, v).unpack(self)  # raises the version error
        params = self._params
        if op.wants_needs:
            params = _with_needs(params, nxt)
        sout = self._sout
        if sout is not None:
            out = tuple(None if s is None else s.unpack(self) for s in sout) \
                if type(sout) is tuple else sout.unpack(self)
            res = op.vjp(g, *args, out=out, **params)
        elif op.saves_out:  # ``Op.out_needed`` said this call's formula reads no result
            res = op.vjp(g, *args, out=None, **params)
        else:
            res = op.vjp(g, *args, **params)
        if type(res) is not tuple:
            if res is None or isinstance(res, Tensor):
                res = (res,)
        return fit_grads(nxt, res, self._meta_in)

    def _release(self):
        saved = self._saved
        if saved is not None:
            if self._vers is None:
                for s in saved:
                    if s is not None:
                        s.release()
            self._saved = None
            self._freed = True
        sout = self._sout
        if sout is not None:
            for s in (sout if type(sout) is tuple else (sout,)):
                if s is not None:
                    s.release()
            self._freed = True

    def __getattr__(self, name):
        # _saved_<name> / _raw_saved_<name>: inputs by the formula's parameter names, the
        # result as ``result``, static params by their names
        raw = name.startswith("_raw_saved_")
        if not (raw or name.startswith("_saved_")):
            raise AttributeError(name)
        rules = _saved_rules(self)
        if rules is not None:
            # torch's names first (NOTE [ Saved attributes as torch lists them ] in
            # ember/_ops/_node_saved.py); ember's own still answer below
            r = rules.get(name[len("_raw_saved_"):] if raw else name[len("_saved_"):])
            if r is not None and (r.tensor or not raw):
                return r.fn(self, raw)
        scalar = None if raw else _SCALAR_SAVED.get(type(self).__name__)
        if scalar is not None and name[len("_saved_"):] in scalar:
            # NOTE [ Saved Scalars ]: where torch's overload took a Scalar (``x ** 2``'s
            # exponent, ``clamp(min=0.5)``'s bounds) its node keeps a Python number, and an
            # absent optional bound reads as None; ember's keeps the wrapped 0-dim tensor
            try:
                v = self._lookup_saved(name, raw)
            except AttributeError:
                return None
            return v.item() if isinstance(v, Tensor) and _is_wrapped_number(v) else v
        return self._lookup_saved(name, raw)

    def _lookup_saved(self, name, raw):
        key = name[len("_raw_saved_"):] if raw else name[len("_saved_"):]
        d = {"_sout": self._sout, "_op": self._op, "_saved": self._saved,
             "_vers": self._vers, "_freed": self._freed, "_params": self._params}
        if key == "result" and d.get("_sout") is not None:
            s = d["_sout"]
            if type(s) is tuple:
                return s if raw else tuple(None if x is None else x.unpack(self) for x in s)
            return s if raw else s.unpack(self)
        names = _vjp_input_names(d["_op"])
        saved = d.get("_saved")
        if key in names and d.get("_freed"):
            raise RuntimeError(_FREED)
        if key in names and saved is not None:
            i = names.index(key)
            if i < len(saved) and saved[i] is not None and _is_layout_stand_in(
                    saved[i].t if type(saved[i]) is SavedTensor else saved[i]):
                return None  # left unsaved (``Op.unsaved_layout``): torch's answer too
            sf = d["_op"].saved_for
            if i < len(saved) and saved[i] is None and sf is not None and i in sf:
                return None  # left unsaved by ``Op.saved_for``, as torch's undefined one
            if i < len(saved) and saved[i] is not None and not _is_stand_in(d["_op"], i):
                if raw and d.get("_vers") is not None:
                    # the fast path keeps bare tensors; a handle the caller may hang hooks
                    # on must be the one the backward pass reads
                    self._saved = [None if t is None else SavedTensor(t, t._vc, v)
                                   for t, v in zip(saved, d["_vers"])]
                    self._vers = None
                    saved = self._saved
                s = saved[i]
                if self._vers is not None:
                    s = SavedTensor(s, s._vc, self._vers[i])
                return s if raw else s.unpack(self)
        params = d.get("_params") or {}
        if key in params and not raw:
            v = params[key]
            if key == "reduction" and type(v) is str:
                return _REDUCTION_ENUM.get(v, v)  # torch saves its enum's number
            return v
        if key == "alpha" and not raw and type(self).__name__ in _ALPHA_NODES:
            return 1  # torch saves add/sub's alpha even when it is the default
        # torch's names: ``_saved_self``, ``_saved_mat2``, ``_saved_self_sym_sizes``...
        tnames = _torch_input_names(self, len(names))
        if tnames is not None:
            sizes = key.endswith("_sym_sizes") and not raw
            bare = key[:-len("_sym_sizes")] if sizes else key
            for i, tn in enumerate(tnames):
                if tn.partition("^")[0] != bare:
                    continue
                if sizes:
                    meta = self._meta_in[i] if i < len(self._meta_in) else None
                    if meta is not None:
                        return tuple(meta[0])
                    x = saved[i] if saved is not None and i < len(saved) else None
                    x = x.t if type(x) is SavedTensor else x  # (a stand-in's is its own)
                    if x is not None:
                        return tuple(x.shape)
                    break
                if _is_stand_in(d["_op"], i):
                    break  # torch keeps only the sizes (``_saved_self_sym_sizes``)
                v = getattr(self, name.replace(key, names[i]))
                return v.mT if tn.endswith("^T") and not raw and v is not None else v
        raise AttributeError(name)

    def saved_input(self, i, raw=False, transposed=False):
        """Input ``i`` as this node saved it (its ``SavedTensor`` when ``raw``; the
        transpose when ``transposed``), None where the node kept none; raises the "freed"
        error after a backward pass released it."""
        names = _vjp_input_names(self._op)
        if i >= len(names):
            return None
        try:
            v = self._lookup_saved(("_raw_saved_" if raw else "_saved_") + names[i], raw)
        except AttributeError:
            return None
        return v.mT if transposed and not raw and v is not None else v

    def saved_result(self, k=None, raw=False):
        """The node's result ``k`` (all of it for None) as saved, None where it kept none."""
        s = self._sout
        if type(s) is tuple:
            if k is None:
                return s if raw else tuple(None if x is None else x.unpack(self) for x in s)
            s = s[k] if k < len(s) else None
        elif k not in (None, 0):
            return None
        if s is None:
            return None
        return s if raw else s.unpack(self)

    def __dir__(self):
        rules = _saved_rules(self)
        if rules is not None:  # NOTE [ Saved attributes as torch lists them ]
            from .._ops._node_saved import listed_names

            return sorted(set(super().__dir__()) | set(listed_names(rules)))
        ember_names = _vjp_input_names(self._op)
        shown = _torch_input_names(self, len(ember_names)) or ember_names
        pairs = [(n.partition("^")[0], i)
                 for i, (n, s) in enumerate(zip(shown, self._saved or ())) if s is not None]
        names = [n for n, i in pairs if not _is_stand_in(self._op, i)]
        extra = [f"_saved_{n}" for n in names] + [f"_raw_saved_{n}" for n in names]
        extra += [f"_saved_{n}_sym_sizes" for n, i in pairs if _is_stand_in(self._op, i)]
        if self._sout is not None:
            extra += ["_saved_result", "_raw_saved_result"]
        extra += [f"_saved_{k}" for k in self._params]
        extra += [f"_saved_{k}" for k in _SCALAR_SAVED.get(type(self).__name__, ())]
        return sorted(set(super().__dir__()) | set(extra))


#: node name -> the saved values torch keeps as Python numbers (NOTE [ Saved Scalars ])
_SCALAR_SAVED = {"PowBackward0": ("exponent",), "PowBackward2": ("self",),
                 "ClampBackward1": ("min", "max")}

#: the number torch's loss nodes save for each ``reduction``
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}

_ALPHA_NODES = frozenset(("AddBackward0", "SubBackward0", "RsubBackward0", "AddBackward1",
                          "SubBackward1", "RsubBackward1"))


def _is_wrapped_number(t) -> bool:
    """Whether ``t`` is a Python number an op made a zero-dim tensor (``_elementwise._const``)."""
    try:
        return t._wrapped_number
    except AttributeError:
        return False


def _is_stand_in(op, i):
    """Whether a node of ``op`` keeps input ``i`` as a shape stand-in (``Op.shape_only``)."""
    so = op.shape_only
    return so is not None and (so is True or i in so)


def _saved_rules(node):
    from .._ops._node_saved import saved_rules

    return saved_rules(node._op.name, type(node).__name__)


def _torch_input_names(node, n):
    from .._ops._node_names import saved_input_names

    return saved_input_names(node._op.name, type(node).__name__, n)


def _vjp_input_names(op):
    import inspect

    ps = list(inspect.signature(op.vjp).parameters.values())[1:]
    return [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def fit_grads(nxt, res, meta):
    """One gradient per edge, summed to its input's shape and cast to its dtype (NOTE
    [ Gradient metadata per input ]). Gradients for edges that need none are dropped."""
    n = len(nxt)
    if n == 1 and len(res) >= 1:
        # one input (unary ops, most views): the commonest node
        r = res[0]
        if r is None or nxt[0][0] is None:
            return (None,)
        rd = r._data
        m = meta[0]
        if rd.shape != m[0] or rd.dtype != m[1]:
            r = _fit(r, m)
        return (r,)
    if n == 2 and len(res) >= 2:
        # two inputs (binary ops, matmul): the next commonest
        r0 = res[0]
        if r0 is not None:
            if nxt[0][0] is None:
                r0 = None
            else:
                rd = r0._data
                m = meta[0]
                if rd.shape != m[0] or rd.dtype != m[1]:
                    r0 = _fit(r0, m)
        r1 = res[1]
        if r1 is not None:
            if nxt[1][0] is None:
                r1 = None
            else:
                rd = r1._data
                m = meta[1]
                if rd.shape != m[0] or rd.dtype != m[1]:
                    r1 = _fit(r1, m)
        return (r0, r1)
    if n == 3 and len(res) >= 3:
        # three inputs (linear, addmm, where): as for two, without the general loop's list
        r0, r1, r2 = res[0], res[1], res[2]
        if r0 is not None:
            if nxt[0][0] is None:
                r0 = None
            else:
                rd = r0._data
                m = meta[0]
                if rd.shape != m[0] or rd.dtype != m[1]:
                    r0 = _fit(r0, m)
        if r1 is not None:
            if nxt[1][0] is None:
                r1 = None
            else:
                rd = r1._data
                m = meta[1]
                if rd.shape != m[0] or rd.dtype != m[1]:
                    r1 = _fit(r1, m)
        if r2 is not None:
            if nxt[2][0] is None:
                r2 = None
            else:
                rd = r2._data
                m = meta[2]
                if rd.shape != m[0] or rd.dtype != m[1]:
                    r2 = _fit(r2, m)
        return (r0, r1, r2)
    out = []
    for (node, _), r, m in zip(nxt, res, meta):
        if node is None or r is None:
            out.append(None)
            continue
        rd = r._data
        if rd.shape != m[0] or rd.dtype != m[1]:
            r = _fit(r, m)
        out.append(r)
    if len(res) < n:
        out.extend([None] * (n - len(res)))
    return tuple(out)


def _fit(r, m):
    """``r`` summed down to shape ``m[0]`` and cast to dtype ``m[1]`` (``fit_grads``)."""
    shape, dt = m
    rd = r._data
    if rd.shape != shape:
        r = _apply_op(sum_to_op, (r,), {"shape": shape, "in_shape": rd.shape})
        rd = r._data
    if rd.dtype != dt:
        r = _apply_op(cast_op, (r,), {"dtype": dt})
    return r


#: ``(None,) * n`` for the input counts nodes commonly have: a formula's arguments when the
#: op saved nothing
_NONES = tuple((None,) * n for n in range(8))
#: (params is empty) needs_input_grad flags -> the keyword dict ``{"needs_input_grad": ...}``,
#: shared by every node recorded without params (formulas receive keywords as a fresh dict)
_NEEDS_ONLY: dict = {}


def _with_needs(params, nxt):
    """``params`` plus ``needs_input_grad`` (one flag per edge) for formulas that ask for it."""
    if len(nxt) == 2:  # (binary ops: no list or generator for two flags)
        needs = (nxt[0] is not _NO_EDGE, nxt[1] is not _NO_EDGE)
    else:
        needs = tuple([e is not _NO_EDGE for e in nxt])
    if not params:
        d = _NEEDS_ONLY.get(needs)
        if d is None:
            d = _NEEDS_ONLY[needs] = {"needs_input_grad": needs}
        return d
    return dict(params, needs_input_grad=needs)


# ------------------------------------------------------------------------------------------------
# record

_NO_EDGE = (None, 0)
#: op -> (node class or None when not differentiable, saved-input flags (True: all) or None,
#: whether the op is "simple": no saved output, not a view, no non-differentiable outputs)
_op_info: dict = {}


def _make_op_info(op):
    if not op.differentiable:
        info = (None, None, False)
    else:
        flags = op.saved_inputs
        saves = flags if (True in flags or op.saves_all_varargs) else None
        if saves is not None and all(flags) and not op.saves_all_varargs \
                and op.shape_only is None:  # (stand-ins are made in ``record``)
            saves = True
        simple = not op.saves_out and op.view_of is None and not op.nondiff_outputs
        info = (node_class(op), saves, simple)
        if saves is None and op.saves_out and op.out_needed is None and \
                op.view_of is None and not op.nondiff_outputs:
            _out_only.add(op)  # NOTE [ Output-only recording ]
    _op_info[op] = info
    return info


def accumulate_node(t):
    """The AccumulateGrad node of leaf ``t``, created on first need and held weakly."""
    try:
        acc = t._accum()
    except (AttributeError, TypeError):  # (TypeError: ``swap_tensors`` left None)
        acc = None
    if acc is None:
        acc = _new_accumulator(t)
    return acc


# NOTE [ Accumulators live with their graph ]
# A leaf holds its AccumulateGrad weakly (``t._accum``), as a PyTorch tensor does: every op
# recorded on the leaf while some graph holds the node finds the same node, and once no
# graph does (a training step's graph is freed at the end of the step, a lone ``x + 1``'s at
# once) the node goes, and the next recording makes a new one -- with none of the old one's
# hooks, as in PyTorch. Keeping it alive from the leaf would make a cycle (the node holds
# its leaf) and keep hooks registered on a dead graph's node, so the recorders only make
# the new node cheaply: ``_new_accumulator`` once the weak reference was found dead.


def _new_accumulator(t):
    """A new AccumulateGrad for leaf ``t``, which holds it weakly (the recorders call it
    once they found ``t._accum`` dead or unset)."""
    acc = _new(AccumulateGrad)
    acc.variable = t
    t._accum = _weakref(acc)
    return acc


def gradient_edge(t):
    """(node, input_nr) through which ``t`` receives its gradient."""
    if t._base is not None:
        refresh_view(t)
    fn = t._grad_fn
    if fn is not None:
        return fn, t._out_nr
    return accumulate_node(t), 0


_NO_PARAMS: dict = {}  # shared by every node recorded without params; never mutated


def record_binary(op, a, b, out):
    """``record(op, (a, b), {}, out)`` for two tensor inputs and one output, the commonest
    call (``a + b``, ``a * w``): simple ops, saving both inputs or none, skip ``record``'s
    loops."""
    info = _op_info.get(op)
    if info is None:
        info = _make_op_info(op)
    cls, saves, simple = info
    if not simple or _anomaly._enabled or (
            saves is not None and (saves is not True or slow_save or _pending)):
        return record(op, (a, b), _NO_PARAMS, out)
    if cls is None:
        return
    # ``gradient_edge`` inlined for each operand (the recording hot path)
    if a._rg:
        d = a._data
        ma = (d.shape, d.dtype)
        if a._base is not None:
            refresh_view(a)
        fn = a._grad_fn
        if fn is not None:
            ea = (fn, a._out_nr)
        else:
            try:
                fn = a._accum()
            except (AttributeError, TypeError):
                fn = None
            ea = (fn or _new_accumulator(a), 0)
    else:
        ea = _NO_EDGE
        ma = None
    if b._rg:
        d = b._data
        mb = (d.shape, d.dtype)
        if b._base is not None:
            refresh_view(b)
        fn = b._grad_fn
        if fn is not None:
            eb = (fn, b._out_nr)
        else:
            try:
                fn = b._accum()
            except (AttributeError, TypeError):
                fn = None
            eb = (fn or _new_accumulator(b), 0)
    else:
        eb = _NO_EDGE
        mb = None
    if op.node_name_of is not None:  # NOTE [ Node names ] in ember/_ops/_node_names.py
        name = op.node_name_of((a, b), _NO_PARAMS)
        if name is not None:
            cls = _named_classes.get(name) or named_node_class(name)
    node = _new(cls)
    node._op = op
    node._params = _NO_PARAMS
    node._next = (ea, eb)
    node._meta_in = (ma, mb)
    node._seq = next(_sequence)
    if saves is None:
        node._saved = node._vers = None
    else:  # both inputs, kept as the Tensors plus their versions (see ``record``)
        if op.saved_for is None:
            node._saved = [a, b]
        else:  # ``Op.saved_for``: an input kept only for the gradients that read it
            sf = op.saved_for
            na, nb = sf.get(0), sf.get(1)
            ra, rb = a._rg, b._rg
            node._saved = [
                a if na is None or (ra and 0 in na) or (rb and 1 in na) else None,
                b if nb is None or (ra and 0 in nb) or (rb and 1 in nb) else None]
            if op.unsaved_layout and (node._saved[0] is None or node._saved[1] is None):
                _layout_stand_ins(op, node._saved, (a, b))
        sa, sb = node._saved  # (a stand-in has no version counter of its own)
        va = None if sa is None else sa._vc
        vb = None if sb is None else sb._vc
        node._vers = [0 if va is None else va[0], 0 if vb is None else vb[0]]
    if out._data.dtype.kind not in "iub":
        out._grad_fn = node
        out._out_nr = 0
        out._rg = True


def record_unary(op, t, params, out):
    """``record(op, (t,), params, out)`` for one tensor input that requires grad and one
    output, the commonest unary call (``x.sum()``, ``x.tanh()``): a simple op (no saved
    output, not a view) that saves nothing or only ``t``, and an op whose formula reads only
    its own output (NOTE [ Output-only recording ]), skip ``record``'s branches; anything
    else goes to ``record``."""
    info = _op_info.get(op)
    if info is None:
        info = _make_op_info(op)
    cls, saves, simple = info
    if simple:
        if _anomaly._enabled or (saves is not None and (
                saves is not True or slow_save or _pending or op.saved_for is not None)):
            return record(op, (t,), params, out)
        if cls is None:
            return
    elif op not in _out_only or _anomaly._enabled or type(out) is tuple:
        return record(op, (t,), params, out)
    d = t._data
    if t._base is not None:
        refresh_view(t)
    fn = t._grad_fn
    if fn is not None:
        e = (fn, t._out_nr)
    else:
        try:
            fn = t._accum()
        except (AttributeError, TypeError):
            fn = None
        e = (fn or _new_accumulator(t), 0)
    if op.node_name_of is not None:  # NOTE [ Node names ] in ember/_ops/_node_names.py
        name = op.node_name_of((t,), params)
        if name is not None:
            cls = _named_classes.get(name) or named_node_class(name)
    node = _new(cls)
    node._op = op
    node._params = params
    node._next = (e,)
    node._meta_in = [(d.shape, d.dtype)]
    node._seq = next(_sequence)
    if saves is None:
        node._saved = node._vers = None
    else:
        vc = t._vc
        node._saved = [t]
        node._vers = [0 if vc is None else vc[0]]
    if out._data.dtype.kind not in "iub":
        out._grad_fn = node
        out._out_nr = 0
        out._rg = True
        if not simple:  # an output-only op: its node keeps the output
            node._sout = save_output(out, 0)


def _edge_of(t):
    """``gradient_edge(t)`` for a tensor that requires grad, inlined for the recorders."""
    if t._base is not None:
        refresh_view(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._out_nr)
    try:
        fn = t._accum()
    except (AttributeError, TypeError):  # (TypeError: ``swap_tensors`` left None)
        fn = None
    return (fn or _new_accumulator(t), 0)


#: (op, whether a bias was given) -> the node class of a call of ``record_affine``
_affine_classes: dict = {}


def record_affine(op, x, w, b, out):
    """``record(op, (x, w, b), {}, out)`` for ``linear`` on a 2-D float input with a weight
    and an optional bias, one of which requires grad (NOTE [ Recording a layer call ]);
    anything ``record`` treats specially goes to ``record``."""
    if slow_save or _pending or _anomaly._enabled:
        return record(op, (x, w, b), _NO_PARAMS, out)
    key = (op, b is None)
    cls = _affine_classes.get(key)
    if cls is None:
        cls = (_op_info.get(op) or _make_op_info(op))[0]
        name = None if op.node_name_of is None else op.node_name_of((x, w, b), _NO_PARAMS)
        if name is not None:
            cls = _named_classes.get(name) or named_node_class(name)
        _affine_classes[key] = cls
    rx = x._rg
    rw = w._rg
    if b is not None and b._rg:
        eb = _edge_of(b)
        d = b._data
        mb = (d.shape, d.dtype)
    else:
        eb = _NO_EDGE
        mb = None
    node = _new(cls)
    node._op = op
    node._params = _NO_PARAMS
    if rx:
        ex = _edge_of(x)
        d = x._data
        mx = (d.shape, d.dtype)
    else:
        ex = _NO_EDGE
        mx = None
    if rw:
        ew = _edge_of(w)
        d = w._data
        mw = (d.shape, d.dtype)
    else:
        ew = _NO_EDGE
        mw = None
    node._next = (ex, ew, eb)
    node._meta_in = [mx, mw, mb]
    node._seq = next(_sequence)
    # ``Op.saved_for``: the input is kept for the weight's gradient, the weight for the
    # input's; one left out has a layout stand-in
    saved = node._saved = [x if rw else None, w if rx else None, None]
    if not (rx and rw) and op.unsaved_layout:
        _layout_stand_ins(op, saved, (x, w, b))
    vx = None if saved[0] is None else saved[0]._vc
    vw = None if saved[1] is None else saved[1]._vc
    node._vers = [0 if vx is None else vx[0], 0 if vw is None else vw[0], 0]
    out._grad_fn = node
    out._out_nr = 0
    out._rg = True


# NOTE [ Recording a layer call ]
# ``record`` spends ~1.8 us on a linear layer's call, most of it on what is the same at
# every call: the loop over three inputs, the node's name asked of the op, the saved-input
# flags and ``Op.saved_for`` walked as tables. ``record_affine`` makes the same node for
# the 2-D float calls of linear's direct path (NOTE [ Linear's direct path ] in
# ember/_ops/nn_ops.py): the class that name gives (cached by op and bias), the same edges,
# metadata, saved inputs or layout stand-ins, and versions. Saved-tensor hooks, an in-place
# write in flight, clone-on-save and anomaly mode go to ``record``;
# tests/perf/test_overhead_33.py compares the two nodes field by field.


# NOTE [ Output-only recording ]
# An op that saves no input and only its own output (``Op.saves_out`` with no
# ``out_needed`` test), is no view and has no non-differentiable output gets from ``record``
# a node whose ``_sout`` holds the output and nothing else: ``record_unary`` makes the same
# node with the same fields straight away (a third of a recorded ``tanh``'s cost).
# ``_out_only`` holds the ops found eligible, filled by ``_make_op_info``; anomaly mode and
# tuple outputs keep ``record``.
_out_only: set = set()


def _shape_stand_in(t):
    """A tensor with ``t``'s shape, dtype and device and no data of its own (one broadcast
    element: NaN, or zero for integer and bool dtypes), kept by a node in place of an input
    its formula reads only for those (``Op.shape_only``)."""
    d = t._data
    if type(d) is np.ndarray:
        # the one element per dtype made once: an ndarray over it with zero strides is what
        # ``broadcast_to`` makes, read-only too, without its Python-level checks (4 -> 1 us
        # per recorded matmul whose other operand needs no grad)
        one = _STAND_IN_ELEMENTS.get(d.dtype)
        if one is None:
            one = np.asarray(np.nan if d.dtype.kind in "fcV" else 0, dtype=d.dtype).reshape(1)
            one.flags.writeable = False
            _STAND_IN_ELEMENTS[d.dtype] = one
        return wrap(np.ndarray(d.shape, d.dtype, buffer=one, strides=(0,) * d.ndim))
    xp = _dispatch.xp_of(d)
    fill = np.nan if d.dtype.kind in "fcV" else 0
    return wrap(xp.broadcast_to(xp.asarray(fill, dtype=d.dtype), d.shape))


#: dtype -> the read-only one-element array ``_shape_stand_in`` views with zero strides
_STAND_IN_ELEMENTS: dict = {}


def _layout_stand_ins(op, saved, inputs):
    """Put a stand-in remembering the input's strides (``Op.unsaved_layout``) wherever
    ``op.saved_for`` left an input tensor unsaved (NOTE [ Shared layout stand-ins ])."""
    for i in op.saved_for:
        t = inputs[i]
        if saved[i] is None and isinstance(t, Tensor):
            d = t._data
            if type(d) is np.ndarray:
                key = (d.shape, d.dtype, d.strides)
                st = _LAYOUT_STAND_INS.get(key)
                if st is None:
                    if len(_LAYOUT_STAND_INS) >= _LAYOUT_STAND_INS_MAX:
                        _LAYOUT_STAND_INS.clear()
                    st = _LAYOUT_STAND_INS[key] = _shape_stand_in(t)
                    st._layout_of_unsaved = d.strides
            else:
                st = _shape_stand_in(t)
                st._layout_of_unsaved = d.strides
            saved[i] = st


# NOTE [ Shared layout stand-ins ]
# A layout stand-in is read, never written: its shape, dtype and remembered strides answer
# the formula's layout test, its one broadcast element is read-only, it has no version
# counter, history or gradient, and the accessors answer None for it (``_is_layout_stand_in``).
# So the nodes of every product whose unsaved operand has one (shape, dtype, strides) share
# one stand-in, made once: a recorded ``x @ w`` whose ``x`` needs no gradient (a network's
# first layer) costs a dict look-up here instead of a new array and Tensor (~1 us). Host
# arrays only; the cache is emptied when it reaches ``_LAYOUT_STAND_INS_MAX`` entries.
_LAYOUT_STAND_INS: dict = {}
_LAYOUT_STAND_INS_MAX = 256


def _is_layout_stand_in(t) -> bool:
    """Whether ``t`` is a stand-in for an input ``saved_for`` left unsaved."""
    try:
        return t.__dict__.get("_layout_of_unsaved") is not None
    except AttributeError:
        return False


def _stand_ins(which, saved):
    """Replace the saved inputs ``which`` (``Op.shape_only``) by stand-ins; their indices."""
    idx = [i for i, t in enumerate(saved) if t is not None and (which is True or i in which)]
    for i in idx:
        saved[i] = _shape_stand_in(saved[i])
    return idx


def record(op, inputs, params, outputs):
    """The dispatcher's autograd hook: attach a node to ``outputs``. See the module doc."""
    info = _op_info.get(op)
    if info is None:
        info = _make_op_info(op)
    cls, saves, simple = info
    if cls is None:
        return
    if len(inputs) == 1:
        # one input (unary ops, views, reductions): no lists to build
        t = inputs[0]
        if t is not None and t._rg:
            if t._base is not None:
                refresh_view(t)
            fn = t._grad_fn
            if fn is None:
                try:
                    fn = t._accum()
                except (AttributeError, TypeError):
                    pass
                nxt = ((fn or _new_accumulator(t), 0),)
            else:
                nxt = ((fn, t._out_nr),)
            d = t._data
            meta = [(d.shape, d.dtype)]
        else:
            nxt = (_NO_EDGE,)
            meta = [None]
    else:
        nxt = []
        meta = []
        for t in inputs:
            if t is not None and t._rg:
                if t._base is not None:
                    refresh_view(t)
                fn = t._grad_fn
                if fn is None:
                    try:  # accumulate_node, inlined: this loop is the recording hot path
                        fn = t._accum()
                    except (AttributeError, TypeError):
                        fn = None
                    if fn is None:
                        fn = _new_accumulator(t)
                    nxt.append((fn, 0))
                else:
                    nxt.append((fn, t._out_nr))
                d = t._data
                meta.append((d.shape, d.dtype))
            else:
                nxt.append(_NO_EDGE)
                meta.append(None)
        nxt = tuple(nxt)
    if op.node_name_of is not None:  # NOTE [ Node names ] in ember/_ops/_node_names.py
        name = op.node_name_of(inputs, params)
        if name is not None:
            cls = _named_classes.get(name) or named_node_class(name)
    node = _new(cls)
    node._op = op
    node._params = params
    node._next = nxt
    node._meta_in = meta
    node._seq = next(_sequence)
    if saves is None:
        node._saved = node._vers = None
    else:
        # NOTE: the fast path keeps saved inputs as the Tensors themselves plus their versions
        # in ``_vers``; hooks, clones and inference checks need SavedTensor objects
        if saves is True:
            saved = list(inputs)
        else:
            n = len(saves)
            va = op.saves_all_varargs
            saved = [t if (saves[i] if i < n else va) else None for i, t in enumerate(inputs)]
        if op.saved_for is not None:
            for i, needers in op.saved_for.items():
                for j in needers:  # (a loop, not ``any`` over a generator: per layer call)
                    x = inputs[j]
                    if x is not None and x._rg:
                        break
                else:
                    saved[i] = None
            if op.unsaved_layout:
                _layout_stand_ins(op, saved, inputs)
        stand = None if op.shape_only is None else _stand_ins(op.shape_only, saved)
        if slow_save or _pending:
            # (a stand-in is no saved tensor: no pack hook sees it, as none sees torch's
            # sizes; nor does a Python number made a tensor, as none sees torch's wrapped ones)
            node._saved = [None if t is None else SavedTensor(t, None, 0)
                           if (stand and i in stand) or _is_wrapped_number(t)
                           or _is_layout_stand_in(t)
                           else save_input(t) for i, t in enumerate(saved)]
            node._vers = None
        else:
            vs = []
            for t in saved:
                if t is None:
                    vs.append(0)
                else:
                    vc = t._vc
                    vs.append(0 if vc is None else vc[0])
            node._saved = saved
            node._vers = vs
    if _anomaly._enabled:
        node._trace = _anomaly.forward_trace()
    if simple and type(outputs) is not tuple:
        # the common case: one output, nothing else to save, not a view
        if outputs._data.dtype.kind not in "iub":
            outputs._grad_fn = node
            outputs._out_nr = 0
            outputs._rg = True
        return
    if op.view_of is not None and (type(outputs) is tuple or
                                   getattr(outputs, "_view_meta", None) is None):
        _view_outputs(op, inputs, params, outputs)  # (a view ``_wrap_views`` made has its chain)
    if type(outputs) is tuple:
        node._nout = len(outputs)
        node._multi = True
        nd = op.nondiff_outputs
        first = None
        for i, o in enumerate(outputs):
            # (a None output is a result the kernel left out, e.g. an absent projection's)
            if i in nd or o is None or o._data.dtype.kind in "iub":
                continue
            o._grad_fn = node
            o._out_nr = i
            o._rg = True
            if first is None:
                first = o
        if op.saves_out and first is not None:
            # multi-output formulas receive every output they read (e.g. max_pool's indices;
            # None for those ``op.saved_outputs`` leaves out)
            keep = op.saved_outputs
            node._sout = tuple(save_output(o, i) if o is not None and (keep is None or i in keep)
                               else None for i, o in enumerate(outputs))
    else:
        if outputs._data.dtype.kind in "iub" or 0 in op.nondiff_outputs:
            return
        outputs._grad_fn = node
        outputs._out_nr = 0
        outputs._rg = True
        if op.saves_out and (op.out_needed is None or op.out_needed(inputs, params)):
            node._sout = save_output(outputs, 0)


# ------------------------------------------------------------------------------------------------
# views


def _contiguous():
    from .._core import layout

    return layout.contiguous_format


def _view_outputs(op, inputs, params, outputs):
    """Views made by a path that bypassed ``_wrap_views`` get their replay chain here."""
    outs = outputs if type(outputs) is tuple else (outputs,)
    if not outs or getattr(outs[0], "_view_meta", None) is not None:
        return  # (no outputs: unbind along an empty dim)
    base = inputs[op.view_of]
    if base._base is None:
        chain = ()
    else:
        vm = getattr(base, "_view_meta", None)
        chain = None if vm is None else vm[0]
    others = inputs if len(inputs) > 1 else None
    vc = outs[0]._vc
    v = 0 if vc is None else vc[0]
    multi = type(outputs) is tuple and op.multi_output_view
    for i, o in enumerate(outs):
        if o._base is not None:
            o._view_meta = [None if chain is None else chain + ((op, params, i, others),), v,
                            multi]


def view_meta(t):
    """``t._view_meta`` (see ``_dispatch._wrap_views``); for a view made without one (a
    fast path that wraps NumPy views itself), a chain of one ``as_strided`` relative to the
    root, when the root is contiguous -- PyTorch's own fallback (AsStridedBackward0)."""
    vm = getattr(t, "_view_meta", None)
    if vm is not None and vm[0] is not None:
        return vm
    root = t._base
    if root is None or not root._data.flags.c_contiguous:
        return vm
    a = t._data
    item = a.itemsize
    offset = t.storage_offset() - root.storage_offset()
    entry = (None, (a.shape, tuple(s // item for s in a.strides), offset), 0, None)
    vc = root._vc
    if vm is None:
        vm = t._view_meta = [(entry,), 0 if vc is None else vc[0], False]
    else:
        vm[0] = (entry,)
    return vm


def refresh_view(t):
    """Rebuild a view's grad_fn after its base was modified in place (NOTE [ View replay ])."""
    if not t._rg:
        return  # never tracked (e.g. made under no_grad): stays out of the graph
    if t._ng_view == 1:  # made under no_grad: a leaf of its own, until its memory is written
        if t._vc[0] != t._ng_at:
            raise RuntimeError(
                "A view was created in no_grad mode and its base or another view of its base "
                "has been modified inplace with grad mode enabled. " + _NO_GRAD_VIEW_WHY)
        return
    vm = view_meta(t)
    if vm is None or vm[0] is None:
        return
    root = t._base
    vc = root._vc
    cur = 0 if vc is None else vc[0]
    if vm[1] == cur:
        return
    vm[1] = cur
    if not root._rg:
        return
    prev = _state.grad_enabled
    _state.grad_enabled = True
    try:
        v = replay(root, vm[0])
    finally:
        _state.grad_enabled = prev
    if v._grad_fn is not None:
        t._grad_fn = v._grad_fn
        t._out_nr = v._out_nr
        t._rg = True


def replay(x, chain):
    """Apply the view chain (op, params, output index, other inputs) to ``x``."""
    for op, params, idx, others in chain:
        if op is None:  # the as_strided fallback of ``view_meta``
            from .._ops.shape import as_strided

            if not x._data.flags.c_contiguous or x.storage_offset() != 0:
                x = x.clone(memory_format=_contiguous())
            size, stride, offset = params
            x = as_strided(x, size, stride, offset)
            continue
        if others is None:
            r = _apply_op(op, (x,), params)
        else:
            ins = list(others)
            ins[op.view_of] = x
            r = _apply_op(op, tuple(ins), params)
        x = r[idx] if type(r) is tuple else r
    return x


class CopySlices(Node):
    """The base's node after an in-place write into one of its views.

    The new base equals the old base with the view's elements replaced by the in-place
    result ``r``: the old base's gradient is the incoming one with the view's elements
    zeroed, and ``r``'s gradient is the incoming one seen through the view.
    """

    def __init__(self, root, chain, r):
        self._chain = chain
        d = root._data
        self._shape_dtype = (d.shape, d.dtype, type(d))
        base_edge = gradient_edge(root) if root._rg else (None, 0)
        self._next = (base_edge, (r._grad_fn, r._out_nr) if r._grad_fn is not None
                      else (None, 0))
        self._seq = next(_sequence)
        if _anomaly._enabled:
            self._trace = _anomaly.forward_trace()

    def _apply(self, grads):
        g = grads[0]
        if g is None:
            return (None, None)
        shape, dtype, at = self._shape_dtype
        xp = _dispatch.backends_by_type[at].xp
        mask = wrap(xp.ones(shape, dtype=g._data.dtype))
        hole = replay(mask, self._chain)
        hole._data[...] = 0
        g_base = g * mask if self._next[0][0] is not None else None
        g_r = replay(g, self._chain) if self._next[1][0] is not None else None
        return (g_base, g_r)

    @property
    def next_functions(self):
        # torch's CopySlices wraps the in-place op's node and shows that node's edges but
        # the first (the view it wrote, which CopySlices stands for) after the base's;
        # the engine routes through ``_next`` (NOTE [ Shown edges ] in _node_names.py)
        r = self._next[1][0]
        if r is None or isinstance(r, AccumulateGrad):
            return self._next
        return (self._next[0],) + tuple(r.next_functions[1:])


# ------------------------------------------------------------------------------------------------
# in-place hooks


def check_inplace(t, opname):
    """Refuse in-place writes PyTorch refuses (see the module doc)."""
    if t._rg and _state.grad_enabled:
        if t._base is not None and t._ng_view:
            _refuse_no_grad_view(t, t._ng_view)
        if t._grad_fn is None and t._base is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation.")
        base = t._base
        if base is not None:
            if base._rg and base._grad_fn is None:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation.")
            vm = getattr(t, "_view_meta", None)
            if vm is not None and vm[2]:
                refresh_view(t)
                fn = t._grad_fn
                raise RuntimeError(
                    f"Output {t._out_nr} of {short_name(fn)} is a view and is being modified "
                    "inplace. This view is the output of a function that returns multiple views. "
                    "Such functions do not allow the output views to be modified inplace. You "
                    "should replace the inplace operation by an out-of-place one.")
    if inference_seen:
        check_inference_inplace(t)


_NO_GRAD_VIEW_WHY = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked).")


def _refuse_no_grad_view(t, kind):
    why = _NO_GRAD_VIEW_WHY
    if kind == 1:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           f"with grad mode enabled. {why}")
    what = "" if t._grad_fn is None else short_name(t._grad_fn)
    raise RuntimeError(f"Output {t._out_nr} of {what} is a view of a view which was created in "
                       f"no_grad mode and is being modified inplace with grad mode enabled. {why}")


def begin_inplace(t):
    """An in-place op is about to compute the values it will write into ``t``: remember
    ``t`` on this thread, so that saving it for backward meanwhile saves a copy."""
    global _pending
    if getattr(_state, "pending_inplace", None) is None:
        with _pending_lock:
            _pending += 1
    _state.pending_inplace = t


def end_inplace():
    """The in-place op begun by ``begin_inplace`` finished (or failed): forget its target."""
    global _pending
    if getattr(_state, "pending_inplace", None) is not None:
        _state.pending_inplace = None
        with _pending_lock:
            _pending -= 1


def check_inference_inplace(t):
    if getattr(t, "_inference", False) and not _state.inference_mode:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
            "make a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")


def commit_inplace(t, r):
    """``t`` now holds ``r``'s values: make ``r``'s history ``t``'s (or its base's)."""
    fn = r._grad_fn
    base = t._base
    vm = view_meta(t) if base is not None else None
    if vm is not None and vm[0] is not None and (base._rg or fn is not None):
        node = CopySlices(base, vm[0], r)
        base._grad_fn = node
        base._out_nr = 0
        base._rg = True
        vm[1] = -1  # force the view's grad_fn to be replayed from the base's new history
        t._rg = True
        refresh_view(t)
        return
    if fn is None:
        return
    t._grad_fn = fn
    t._out_nr = r._out_nr
    t._rg = True

