"""The dispatcher: from a declared op and its tensor inputs to a backend kernel and back.

A call goes: public function (argument normalisation) -> the door -> [the mode stack] ->
[autograd records a Node when grad mode is on and an input requires grad] -> backend kernel
-> wrap the result.

NOTE [ Dispatch ]
Every op call, in every form -- function, method, operator, in-place ``op_``, ``out=``,
indexing get and set -- enters the dispatcher at one of a few entrances, one per op class:
``apply`` (any declared op), ``elementwise``/``binary``/``unary`` (element-wise ops, which
prepare promotion and scalars first), ``elementwise_inplace`` and ``inplace`` (the one
in-place protocol), ``write_out`` (the one ``out=`` protocol), and the indexing entrances.
Each entrance's first step is the same test::

    if intercept and state.modes:
        return through_modes(handle, args, kwargs)

``intercept`` is a module global, True while any thread has a mode pushed; so with no
mode anywhere the test costs one global read and the entrance goes on to its kernel (the
hot path below). The hottest operators (``a + b``, ``t[i]``) test a single cell instead,
``slow``, which also covers ``__torch_function__`` and replaced CPU kernels, and take the
full route only when it is on. With modes on, ``through_modes`` -- the one door -- hands the
call to the innermost mode of this thread as ``(handle, args, kwargs)``: ``handle`` is the op
form's ``OpOverload``, callable with those arguments, and calling it re-enters the same
entrance with that mode popped, so the next mode down sees the call, and below the last mode
the kernel runs. A mode that never calls ``handle`` replaces the op.

The stack is thread-local and ordered by each mode's ``level`` (lower is consulted
first), then by push order (the most recent first among equal levels):

    tracing / dispatch modes (Python)  0    ``ember.utils._python_dispatch``
    autocast                          10
    vmap batching                     20
    forward-mode AD                   30    (20 inside vmap: NOTE [ Dual levels inside vmap ])
    profiler                          40
    inference tensors                 50    ``ember.inference_mode`` marks results
    backend selection                 -     the array type of the first input (below)

Autograd is not a stack entry: it records after the kernel, where grad mode says so (NOTE
[ Hot path ]), so a mode that calls its ``handle`` gets outputs with their grad_fn. A new
transformation is a new ``Mode`` subclass pushed with ``push_mode``; no op declaration
changes.

NOTE [ Hot path ]
The common case -- no mode, nothing requires grad -- must cost a kernel look-up, the kernel
call and one Tensor construction. So: the kernel table is keyed by the *array type* of the
first input (``numpy.ndarray`` -> the CPU kernel), grad mode is read only after some input
turned out to require grad, and nothing here parses keywords or builds dicts on that path.
An entrance may keep a specialisation for its commonest case (a same-dtype CPU add, a full
CPU sum, a BLAS matmul, an int or slice index) as long as it stands after the mode test and
runs only while the op's CPU kernel is the built-in one (``Op.builtin_cpu``). The hottest
operators go one step further and run their same-dtype CPU case inside the dunder itself,
behind the same ``slow`` test (NOTE [ Operators inlined ] in ember/_ops/arithmetic.py).

Autograd plugs in by assigning the module-level hooks below (``record``, ``check_inplace``,
``commit_inplace``); the core knows nothing of it.
"""

from __future__ import annotations

import functools
import sys as _sys
import threading

import numpy as np

from ._core import dtype as _dt
from ._core.backend import (  # noqa: F401  (the backend registry, long imported from here)
    Backend, backend_of, backends_by_name, backends_by_type, register_backend, xp_of,
)
from ._core.tensor import Tensor, wrap

_new = object.__new__

# --------------------------------------------------------------------------------------------
# grad mode (thread-local; read only when an input requires grad, see NOTE [ Hot path ])


class _ThreadState(threading.local):
    grad_enabled = True
    inference_mode = False
    #: the mode stack, consulted from the end (NOTE [ Dispatch ])
    modes = ()
    #: (a mode stack, the op names its modes act on or None): ``routes``' last answer
    routing = (None, None)
    #: (a mode stack, whether all its modes keep tensors' data): ``plain_data``'s last answer
    plain = (None, True)


state = _ThreadState()

# Hooks filled by ember.autograd. Until it is imported nothing records.
#   record(op, inputs, params, outputs) -> None      attach grad_fn to outputs
#   record_binary(op, a, b, output) -> None          the same for record(op, (a, b), {}, out)
#   record_unary(op, t, params, output) -> None      the same for record(op, (t,), params, out)
#   check_inplace(tensor, opname) -> None            raise if an in-place op is not allowed
#   commit_inplace(tensor, result) -> None           rebase tensor's history onto result's
#   begin_inplace(tensor) / end_inplace()         bracket computing an in-place op's values
record = None
record_binary = None
#: record_unary(op, t, params, output): ``record(op, (t,), params, output)`` for one input
#: that requires grad (the reductions' hot paths call it after testing grad mode)
record_unary = None
#: record_affine(op, x, w, b, output): ``record(op, (x, w, b), {}, output)`` for linear's
#: 2-D float calls (NOTE [ Recording a layer call ] in ember/autograd/_nodes.py)
record_affine = None
#: set by ember/_ops/creation.py: ``(self, result) -> result`` recording that ``self`` is
#: overwritten by values with no gradient (NOTE [ Overwriting a tensor in a graph ])
nondiff_overwrite = None
check_inplace = None
commit_inplace = None
begin_inplace = None
end_inplace = None
#: set by ember/autograd/_forward.py once a dual level was entered: ``(self, result)``
#: carries ``result``'s forward-mode tangents into ``self`` after an in-place commit
commit_tangent = None
#: the same module's ``(tensor) -> bool``: whether ``tensor`` carries a tangent of a dual
#: level on this thread (ops that take a differentiable path only when needed ask it)
carries_tangent = None
#: set by ember/func/_batch_rules.py: ``(self, result) -> bool``, for ``commit_inplace_result``
#: reached with a batched ``self`` (a dual level decomposing an in-place op above a vmap):
#: writes ``result`` into ``self``'s physical tensor and returns True; False if not batched
write_batched = None


def needs_grad(tensors) -> bool:
    """True when autograd must record: grad mode is on and some input requires grad."""
    for t in tensors:
        if t is not None and t._rg:
            return state.grad_enabled
    return False


def differentiable_formula(*tensors) -> bool:
    """Whether a derivative formula over ``tensors`` must be built from differentiable ops
    rather than a fused backward kernel or saved constants: grad mode records it
    (``create_graph``), or one of ``tensors`` carries a forward-mode tangent that a dual
    level carries through it (forward-over-reverse needs no ``create_graph``, as in PyTorch).

    Example::

        >>> import ember
        >>> differentiable_formula(ember.ones(2))  # grad mode on
        True
    """
    if state.grad_enabled:
        return True
    ct = carries_tangent
    return ct is not None and any(t is not None and ct(t) for t in tensors)


# --------------------------------------------------------------------------------------------
# the mode stack and the door (NOTE [ Dispatch ])

#: True while any thread has a mode on its stack; the one test every entrance makes
intercept = False
#: ``[True]`` while ``intercept`` is, or once __torch_function__ may apply to them (a function
#: mode entered, or a Tensor subclass taking part defined with operators of its own; others
#: are found by their type: NOTE [ Subclasses found by their type ] in ember/_overrides.py):
#: the hottest operators test this one cell and skip both layers' tests otherwise
slow = [False]
#: set by ember/_overrides.py when the __torch_function__ protocol comes on
torch_function_on = False
#: set by ``Op.register_kernel`` when some op got a CPU kernel of its own, which the
#: entrances' CPU specialisations must then leave to run (``Op.builtin_cpu``)
cpu_kernel_replaced = False
_pushed = 0
_push_lock = threading.Lock()


class Mode:
    """A layer of the mode stack: sees every op call while pushed on this thread.

    Subclasses set ``level`` (NOTE [ Dispatch ]) and implement ``dispatch(handle, args,
    kwargs)``, which usually calls ``handle(*args, **kwargs)`` -- the op with this mode and
    those above it popped -- and may change the arguments or the result. A mode that acts on
    a few built-in ops only sets ``_ember_ops`` to their names (NOTE [ Modes that name their ops ]).
    """

    level = 0
    #: the names of the built-in ops this mode acts on; None: every op (a private name:
    #: user modes subclass this class and may have an ``ops`` of their own)
    _ember_ops = None
    #: True for a mode under which a tensor's ``_data`` is still the array its ops see, with
    #: the shape and dtype they see (autocast: it changes calls, never what a tensor holds);
    #: vmap's and functorch's levels do not (``plain_data``)
    _ember_keeps_data = False

    def dispatch(self, handle, args, kwargs):
        return handle(*args, **kwargs)


def push_mode(mode: Mode) -> None:
    """Put ``mode`` on this thread's stack, in its level's place."""
    global intercept, _pushed
    modes = state.modes
    i = 0
    # consulted from the end: higher levels first in the tuple, pushes within a level later
    while i < len(modes) and modes[i].level >= mode.level:
        i += 1
    state.modes = modes[:i] + (mode,) + modes[i:]
    with _push_lock:
        _pushed += 1
        intercept = True
        slow[0] = True


def without_latest(modes: tuple, mode, what: str) -> tuple:
    """``modes`` less the latest occurrence of ``mode``; RuntimeError naming ``what`` when it
    is not there. (The function-mode stack of ember/_overrides.py shares it.)"""
    for i in range(len(modes) - 1, -1, -1):
        if modes[i] is mode:
            return modes[:i] + modes[i + 1:]
    raise RuntimeError(f"{what}: {mode!r} is not on this thread's mode stack")


def pop_mode(mode: Mode) -> None:
    """Take ``mode`` off this thread's stack (the latest push of it)."""
    global intercept, _pushed
    state.modes = without_latest(state.modes, mode, "pop_mode")
    with _push_lock:
        _pushed -= 1
        intercept = _pushed > 0
        slow[0] = intercept or torch_function_on or cpu_kernel_replaced


# NOTE [ Modes that name their ops ]
# Autocast's door layer changes the calls of about a hundred ops and hands every other call
# straight on; routing each ``a + b`` of an AMP step through it cost ~40% of the step's host
# time. A mode may name the built-in ops it acts on (``Mode._ember_ops``): while every mode on this
# thread's stack names its ops, a call of a built-in op none of them names skips the stack
# and takes the path it takes with no mode on (``routes``). Custom ops always go through:
# their rules (``register_autocast``) are found by the op, not by name. The answer depends
# on the stack only, and is kept for the last stack seen per thread.


def transform_on() -> bool:
    """Whether a transform mode (vmap, forward AD: ``Mode._ember_transforms``) is on this
    thread's stack, where formulas keep forms those transforms batch and differentiate."""
    return intercept and any(getattr(m, "_ember_transforms", False) for m in state.modes)


def named_union(modes, attr):
    """The union of the name sets ``attr`` of ``modes``, or None when a mode has none (it
    acts on everything); shared by the door and the ``__torch_function__`` layer."""
    names = frozenset()
    for m in modes:
        own = getattr(m, attr, None)
        if own is None:
            return None
        names = names | own
    return names


def routes(op) -> bool:
    """Whether a call of ``op`` must go through this thread's mode stack (NOTE [ Modes that
    name their ops ]); asked by the entrances after ``intercept and state.modes``."""
    modes = state.modes
    cached = state.routing
    if cached[0] is modes:
        names = cached[1]
    else:
        names = named_union(modes, "_ember_ops")
        state.routing = (modes, names)
    return names is None or op.name in names or not op.is_builtin


def plain_data() -> bool:
    """Whether ops on this thread see tensors' own arrays: no mode is pushed, or every mode on
    the stack keeps them (``Mode._ember_keeps_data``). Shortcuts that read ``_data`` directly
    (NOTE [ Checked convolution calls ]) ask this before taking themselves.

    Returns:
        bool: True when ``_data`` is what the op would see.

    Example::

        >>> plain_data()
        True
    """
    if not intercept:
        return True
    modes = state.modes
    if not modes:
        return True
    cached = state.plain
    if cached[0] is modes:
        return cached[1]
    answer = all(getattr(m, "_ember_keeps_data", False) for m in modes)
    state.plain = (modes, answer)
    return answer


def through_modes(handle, args, kwargs):
    """The door: hand an op call to this thread's innermost mode, with that mode popped
    while it runs (so the op it calls goes on to the next mode down)."""
    modes = state.modes
    mode = modes[-1]
    state.modes = modes[:-1]
    try:
        return mode.dispatch(handle, args, kwargs)
    finally:
        state.modes = modes


class OpOverloadPacket:
    """All forms of one op name, as ``ember.ops.aten.<name>``; ``.default`` and ``.out``
    are its overloads (PyTorch's ``OpOverloadPacket``)."""

    def __init__(self, namespace, name, op=None):
        self._ns = namespace
        self.__name__ = name
        self._qualified_op_name = f"{namespace}::{name}"
        self.op = op
        self._overloads = {}

    def _add(self, overload):
        self._overloads[overload._overloadname] = overload
        setattr(self, overload._overloadname, overload)

    def overloads(self):
        """The names of this op's overloads."""
        return list(self._overloads)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        # PyTorch splits ops into overloads by argument types (add.Tensor, add.Scalar,
        # sum.dim_IntList); the forms ember names as torch does are made on first use (NOTE
        # [ Overload names ] in ember/_ops/_overloads.py), the others are its default form
        if named_overload is not None and self._ns == "aten":
            found = named_overload(self.__name__, name)
            if found is not None:
                return found
        default = self._functional()
        if default is None:
            raise AttributeError(f"'{self._qualified_op_name}' has no overload named '{name}'")
        return default

    def _functional(self):
        """The overload that is not the ``out=`` form (``default``, or ``Tensor`` for the
        binary element-wise ops, as PyTorch names them)."""
        for name, o in self._overloads.items():
            if name != "out":
                return o
        return None

    def __call__(self, *args, **kwargs):
        if kwargs.get("out") is not None and "out" in self._overloads:
            return self._overloads["out"](*args, **kwargs)
        return self._functional()(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self.__name__}')>"

    def __str__(self):
        return f"{self._ns}.{self.__name__}"


class OpOverload:
    """One form of an op: what a dispatch mode receives as ``func`` (PyTorch's
    ``OpOverload``). Calling it runs the op from the current point of the mode stack.

    Args:
        packet: the ``OpOverloadPacket`` (``ember.ops.aten.add``) it belongs to.
        overload (str): the overload's name (``"Tensor"``, ``"default"``...).
        run (callable): runs the op from the current point of the mode stack.
        op (Op, optional): the registry's op.
        is_inplace (bool): whether this form writes into its first argument.

    Example::

        >>> from ember.utils._python_dispatch import TorchDispatchMode
        >>> class Log(TorchDispatchMode):
        ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ...         print(type(func).__name__, func)
        ...         return func(*args, **(kwargs or {}))
        >>> x = ember.ones(2)
        >>> with Log():
        ...     _ = x + 1
        OpOverload aten.add.Tensor
    """

    __slots__ = ("overloadpacket", "_overloadname", "_run", "op", "is_inplace", "is_view",
                 "below", "__name__", "__qualname__", "__weakref__")

    def __init__(self, packet, overload, run, op=None, is_inplace=False):
        self.overloadpacket = packet
        self._overloadname = overload
        self._run = run
        self.op = op
        self.is_inplace = is_inplace
        self.is_view = op is not None and getattr(op, "view_of", None) is not None
        #: for an op written in Python (``entrance``, or a custom op of ember/_library):
        #: its body, which runs the op below every mode -- the profiler runs it to see the
        #: ops it calls (NOTE [ Profiler recording ] in ember/profiler/_recorder.py); None
        #: for the other entrances
        self.below = None
        self.__name__ = f"{packet.__name__}.{overload}"
        self.__qualname__ = self.__name__
        packet._add(self)

    @property
    def namespace(self):
        return self.overloadpacket._ns

    @property
    def _schema(self):
        """The overload's ``FunctionSchema``: torch's for the aten overloads ember shows
        (``aten::sum.dim_IntList(Tensor self, ...) -> Tensor``), else one made from the op's
        public function (NOTE [ Overload names ] in ember/_ops/_overloads.py)."""
        if schema_of is None:
            raise AttributeError("_schema")
        return schema_of(self)

    def name(self):
        """The qualified name, ``aten::add`` or ``aten::add.out``."""
        base = self.overloadpacket._qualified_op_name
        return base if self._overloadname == "default" else f"{base}.{self._overloadname}"

    def __call__(self, *args, **kwargs):
        return self._run(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverload(op='{self.namespace}.{self.overloadpacket.__name__}', " \
               f"overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self.namespace}.{self.__name__}"

    def __hash__(self):
        return id(self)


#: namespace -> {name -> OpOverloadPacket}; "aten" holds ember's own ops
packets: dict = {}
#: set by ember/_ops/_overloads.py: ``(packet name, overload name) -> OpOverload or None``,
#: torch's overload names ember gives dispatch modes; and ``(OpOverload) -> FunctionSchema``
named_overload = None
schema_of = None


def packet(namespace, name, op=None):
    """The ``OpOverloadPacket`` for ``namespace::name``, made on first use."""
    table = packets.setdefault(namespace, {})
    p = table.get(name)
    if p is None:
        p = table[name] = OpOverloadPacket(namespace, name, op)
    return p


def overload(namespace, name, overload_name, run, op=None, is_inplace=False):
    """The ``OpOverload`` ``namespace::name.overload_name`` running ``run``, made once."""
    p = packet(namespace, name, op)
    o = p._overloads.get(overload_name)
    if o is None:
        o = OpOverload(p, overload_name, run, op, is_inplace)
    elif o._run is not run and not (op is not None and o.op is op):
        raise RuntimeError(f"ember: two different ops claim the name "
                           f"{namespace}::{name}.{overload_name}")
    return o


def entrance(name, *, inplace=False, overload_name="default"):
    """Decorator: make ``fn``, an op implementation written in Python (an in-place form,
    an indexing form), an entrance of the door under the name ``aten::<name>``: with a mode
    on, the call goes through the modes first (NOTE [ Dispatch ]). The wrapped function's
    ``handle`` is its OpOverload."""

    def deco(fn):
        def entry(*args, **kwargs):
            if intercept and state.modes:
                return through_modes(handle, args, kwargs)
            return fn(*args, **kwargs)

        functools.update_wrapper(entry, fn)
        handle = overload("aten", name, overload_name, entry, is_inplace=inplace)
        handle.below = fn
        entry.handle = handle
        return entry

    return deco


def _apply_handle(op, has_out):
    h = op._handles[has_out] if op._handles is not None else None
    if h is None:
        if op._handles is None:
            op._handles = [None, None]

        def run(*inputs, out=None, **params):
            return apply(op, inputs, params, out)

        h = op._handles[has_out] = overload("aten", op.name, "out" if has_out else "default",
                                           run, op)
    return h


# --------------------------------------------------------------------------------------------
# apply


class _Missing(Exception):
    pass


def _result_arrays(op, res, at):
    """Zero-dim results must stay arrays: NumPy returns scalars for them. (Arrays of any
    backend pass: a device transfer returns the destination's arrays; a None -- a gradient
    not asked for -- stays None, as CuPy has no object arrays to hold it.)"""
    if type(res) in backends_by_type:
        return res
    if isinstance(res, tuple):
        return tuple(r if r is None or type(r) in backends_by_type else
                     backends_by_type[at].xp.asarray(r) for r in res)
    return backends_by_type[at].xp.asarray(res)


def device_mismatch(op_name, a, b):
    da = backend_of(a).device_of(a)
    db = backend_of(b).device_of(b)
    return RuntimeError(
        f"{op_name}: expected all tensors to be on the same device, but found at least two "
        f"devices, {da} and {db}!")


def apply(op, inputs, params, out=None):
    """Run ``op`` on ``inputs`` (a tuple of Tensors or None) with static ``params``.

    Returns a Tensor, or a tuple of Tensors for multi-output ops. ``out`` receives the result
    when given (PyTorch's ``out=`` contract: resized if empty, dtype checked).
    """
    if intercept and state.modes and routes(op):
        return through_modes(_apply_handle(op, out is not None), tuple(inputs),
                             params if out is None else dict(params, out=out))
    if len(inputs) == 1 and inputs[0] is not None:
        # one input (views, reductions, most nn ops): no loops, no list of arrays
        t = inputs[0]
        first = t._data
        at = type(first)
        impl = op.impl.get(at)
        if impl is None:
            impl = op.resolve(at)
        res = impl(first, **params)
        rg = t._rg
    else:
        first = None
        for t in inputs:
            if t is not None:
                first = t._data
                break
        at = type(first)
        impl = op.impl.get(at)
        if impl is None:
            impl = op.resolve(at)
        arrays = []
        rg = False
        for t in inputs:
            if t is None:
                arrays.append(None)
            else:
                a = t._data
                if type(a) is not at:
                    if type(first) is np.ndarray and first.ndim == 0:
                        return _apply_on_device_of(op, inputs, params, out, a)
                    a = _coerce_device(op.name, first, a)
                arrays.append(a)
                if t._rg:
                    rg = True
        res = impl(*arrays, **params)
    if type(res) is not at:
        res = _result_arrays(op, res, at)
    if op.view_of is not None:
        if first.size == 0 and at is np.ndarray and len(inputs) == 1 and first.ndim and \
                not any(first.strides):
            res = _empty_view(impl, first, params)
        outputs = _wrap_views(inputs[op.view_of], res, op, params, inputs)
    elif type(res) is tuple:
        outputs = tuple(None if r is None else wrap(r) for r in res)
    else:
        outputs = wrap(res)
    # (``needs_grad``, with the inputs' flags read in the loop above)
    if rg and record is not None and state.grad_enabled:
        record(op, inputs, params, outputs)
    if out is not None:
        return write_out(op.name, out, outputs)
    return outputs


def _empty_view(impl, a, params):
    """A view op's result on an empty NumPy array, with PyTorch's strides.

    NOTE [ Strides of empty views ]
    NumPy gives every dim of a new empty array stride 0, and its views keep those zeros;
    ``Tensor.stride`` reports a zero-strided empty array as torch's contiguous layout
    (``_empty_strides``), but a view of it (``x.t()``, ``x[:, 1:]``, ``x.expand(...)``)
    came out zero-strided again and was reported contiguous for its own shape, where torch
    derives the view's strides from its base's (``zeros(0, 4).t()`` is (1, 4)). The view op
    runs once more on the same (empty) memory given the strides ember reports for it, so
    NumPy derives the view's strides as torch does. Only a view of an empty array pays (one
    size check on the view path)."""
    return impl(restrided_empty(a), **params)


def restrided_empty(a):
    """The empty NumPy array ``a`` (zero strides) on the same memory with the strides
    ``Tensor.stride`` reports for it (NOTE [ Strides of empty views ])."""
    from ._core.tensor import _empty_strides

    item = a.itemsize
    return np.ndarray(a.shape, a.dtype, buffer=a,
                      strides=tuple(s * item for s in _empty_strides(a.shape)))


def _coerce_device(op_name, first, a):
    """A zero-dim CPU tensor may join tensors on another device, as a scalar does."""
    if type(a) is np.ndarray and a.ndim == 0:
        return backends_by_type[type(first)].xp.asarray(a)
    raise device_mismatch(op_name, first, a)


def _apply_on_device_of(op, inputs, params, out, a):
    """The first input is a zero-dim CPU tensor and ``a`` lives on another device: the
    CPU scalars move there (differentiably) and the op runs there, whichever input came
    first, as in torch (``torch.where(cpu_scalar_cond, cpu_scalar, cuda_tensor)``)."""
    dev = backend_of(a).device_of(a)
    moved = tuple(t.to(dev) if t is not None and type(t._data) is np.ndarray and
                  t._data.ndim == 0 else t for t in inputs)
    return apply(op, moved, params, out)


def _wrap_views(base, res, op=None, params=None, inputs=None):
    """Outputs of a view op share storage and version counter with their base.

    Each view also records in ``_view_meta`` how to remake it from the root base -- the chain
    of (op, params, output index, other inputs) -- and the root's version when its grad_fn
    was valid, plus whether it is one of several views (``op.multi_output_view``); autograd
    replays the chain after in-place writes (NOTE [ View replay ] in ember/autograd/_nodes.py).
    """
    root = base._base
    if root is None:
        root = base
    vc = root._vc
    if vc is None:
        vc = root._vc = base._vc = [0]
    if type(res) is not tuple:
        # one view (the commonest: ``view``, ``t``, ``select``): ``wrap`` inlined, and a view
        # of a root starts its chain without a concatenation
        o = _new(Tensor)
        o._data = res
        o._rg = False
        o._grad_fn = None
        o._base = root
        o._vc = vc
        if op is not None:
            others = inputs if inputs is not None and len(inputs) > 1 else None
            if root is base:
                o._view_meta = [((op, params, 0, others),), vc[0], False]
            else:
                vm = getattr(base, "_view_meta", None)
                o._view_meta = [None if vm is None or vm[0] is None
                                else vm[0] + ((op, params, 0, others),), vc[0], False]
            if base._ng_view or (root._rg or base._rg) and not state.grad_enabled:
                mark_no_grad_view(base, o)
        return o
    chain = ()
    if op is not None:
        if base._base is not None:
            vm = getattr(base, "_view_meta", None)
            chain = None if vm is None or vm[0] is None else vm[0]
        others = inputs if inputs is not None and len(inputs) > 1 else None
    outs = tuple(wrap(r) for r in res)
    multi = op is not None and op.multi_output_view
    for i, o in enumerate(outs):
        o._base = root
        o._vc = vc
        if op is not None:
            o._view_meta = [None if chain is None else chain + ((op, params, i, others),),
                            vc[0], multi]
            if base._ng_view or (root._rg or base._rg) and not state.grad_enabled:
                mark_no_grad_view(base, o)
    return outs


def mark_no_grad_view(base, o):
    """Mark ``o``, a new view of ``base``, as PyTorch marks a view made under no_grad of a
    tensor that needs a gradient (it becomes a leaf that requires grad, ``_ng_view`` 1) or a
    view of such a view (``_ng_view`` 2): both refuse in-place writes under grad mode
    (``autograd._nodes.check_inplace``). Called where views are made, when ``base`` is such
    a view or grad mode is off and ``base`` (or its base) requires grad."""
    if not state.grad_enabled:
        if base._rg or (base._base is not None and base._base._rg):
            o._ng_view = 1
            o._ng_at = o._vc[0]  # its version when made: a later write makes it unusable
            o._rg = True
    elif base._ng_view:
        o._ng_view = 2


# --------------------------------------------------------------------------------------------
# out= and in-place


def _torch_name(d):
    return d.scalar_name


#: NOTE [ out= dtypes ]
#: PyTorch has two rules for the dtype of an ``out=`` tensor. Element-wise arithmetic and
#: the ops built like it (joins, some reductions and linalg functions) compute in the
#: result dtype and cast into ``out`` when the cast is allowed ("cast"); every other op
#: wants ``out`` to have exactly the result's dtype ("exact"). ``write_out`` applies the
#: exact rule unless the op's name is in this set or the caller says otherwise (element-wise
#: ops say it per op: ``ElementwiseOp.exact_out``).
CASTING_OUT = frozenset({
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
    "row_stack", "kron", "outer", "ger", "addr", "diff", "mean", "std", "var", "logsumexp",
    "cholesky", "cholesky_inverse", "cholesky_solve", "linalg.cond",
    "linalg.householder_product", "linalg.matrix_power", "matrix_power", "linalg.matrix_rank",
    "linalg.pinv", "linalg.tensorinv", "linalg.tensorsolve", "normal", "mvlgamma",
    "special.multigammaln", "special.gammainc", "special.gammaincc", "igamma", "igammac",
    "lerp", "addcdiv", "addcmul", "logaddexp", "logaddexp2", "hypot", "nextafter", "gcd",
    "lcm", "polygamma", "special.polygamma", "special.zeta", "xlogy", "special.xlogy",
    "special.xlog1py", "ldexp", "max", "min", "fft_irfft", "fft_irfft2", "fft_irfftn",
    "fft_hfft", "fft_hfft2", "fft_hfftn",
})
# some linalg functions report themselves as ``linalg_<name>``, as PyTorch's messages do
CASTING_OUT = CASTING_OUT | {n.replace(".", "_") for n in CASTING_OUT if n.startswith("linalg.")}


def write_out(op_name, out, result, exact=None):
    """Copy ``result`` into the user's ``out`` tensor(s) following PyTorch's rules (NOTE
    [ out= dtypes ]; ``exact`` None: by the op's name)."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op_name}(): out= expects a tuple of {len(result)} tensors")
        for o, r in zip(out, result):
            if not isinstance(o, Tensor):
                raise TypeError(f"{op_name}(): argument 'out' must be tuple of Tensors, not "
                                f"{type(o).__name__}")
            # several results (values and indices): each must match exactly
            _check_out_dtype(op_name, o, r, True if exact is None else exact)
        for o, r in zip(out, result):
            write_out(op_name, o, r, False)
        return type(result)(out) if type(result) is tuple else out
    if not isinstance(out, Tensor):
        raise TypeError(f"{op_name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if state.grad_enabled and (result._rg or out._rg):
        raise RuntimeError(
            f"{op_name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad.")
    _check_out_dtype(op_name, out, result, exact)
    rd, od = result._data, out._data
    if type(rd) is not type(od):
        raise device_mismatch(op_name, od, rd)
    if od.shape != rd.shape:
        if od.size:  # PyTorch resizes a non-empty out= tensor too, with this warning
            warn_resized(od.shape, rd.shape)
        out._set_data(backends_by_type[type(rd)].xp.empty(rd.shape, od.dtype))
        od = out._data
    od[...] = rd
    out._bump()
    return out


def warn_resized(had, shape):
    """PyTorch's warning for a non-empty output resized from shape ``had`` to ``shape``."""
    from ._settings import warn_at_caller

    warn_at_caller(
        f"An output with one or more elements was resized since it had shape "
        f"{list(had)}, which does not match the required output shape "
        f"{list(shape)}. This behavior is deprecated, and in a future release "
        "outputs will not be resized unless they have zero elements. You can explicitly "
        "reuse an out tensor t by resizing it, inplace, to zero elements with "
        "t.resize_(0).", UserWarning)


#: PyTorch's C++ type names, which its exact-dtype message uses
_C_NAMES = {"Float": "float", "Double": "double", "Half": "c10::Half",
            "BFloat16": "c10::BFloat16", "Long": "long int", "Int": "int", "Short": "short int",
            "Char": "signed char", "Byte": "unsigned char", "Bool": "bool",
            "ComplexFloat": "c10::complex<float>", "ComplexDouble": "c10::complex<double>",
            "ComplexHalf": "c10::complex<c10::Half>"}


def _check_out_dtype(op_name, out, result, exact):
    rd, od = result._data.dtype, out._data.dtype
    if rd == od:
        return
    r, o = _dt.from_np[rd], _dt.from_np[od]
    if exact is None:
        exact = op_name not in CASTING_OUT
    # torch's messages carry no op name (its TensorIterator's and resize checks' words)
    if exact:
        raise RuntimeError(
            f"Expected out tensor to have dtype {_C_NAMES.get(r.scalar_name, r)}, "
            f"but got {_C_NAMES.get(o.scalar_name, o)} instead")
    if not _dt.can_cast(r, o):
        raise RuntimeError(
            f"result type {r.scalar_name} can't be cast to the desired output "
            f"type {o.scalar_name}")


def check_overlap(op_name, t):
    """In-place writes into an expanded tensor would race on shared elements."""
    a = t._data
    if a.size <= 1:
        return
    for n, s in zip(a.shape, a.strides):
        if s == 0 and n > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to "
                "tensor refers to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def check_inplace_result(op_name, self, rd):
    """The dtype and shape rules for writing an op's result into ``self``."""
    sd = self._data
    if rd.dtype != sd.dtype:
        rdt, sdt = _dt.from_np[rd.dtype], _dt.from_np[sd.dtype]
        if not _dt.can_cast(rdt, sdt):
            raise RuntimeError(
                f"result type {rdt.scalar_name} can't be cast to the desired "
                f"output type {sdt.scalar_name}")
    if rd.shape != sd.shape:
        raise RuntimeError(
            f"output with shape {list(sd.shape)} doesn't match the broadcast "
            f"shape {list(rd.shape)}")


# NOTE [ Adopting an in-place result ]
# An in-place op that autograd records (``ReLU(inplace=True)`` in training) is computed out
# of place and its result written into ``self``: one more pass over memory, on a GPU a
# device-to-device copy per layer. When nothing but ``self`` can see ``self``'s array -- no
# view of it (a view holds its base: the reference count says so), it is no view itself,
# and the result is a fresh array of the same layout -- ``self`` takes the result's array
# instead: every reader goes through ``self``, so none can tell, and the version counter
# moves as for a write. References at the test: ``self._data``, the local and the
# argument of getrefcount.
_ADOPT_REFS = 3


def commit_inplace_result(op_name, self, compute):
    """Generic in-place: run ``compute()`` out of place, then write its result into ``self``.

    Autograd's checks run before anything is computed or written, and the in-place op's
    graph node becomes ``self``'s history (NOTE [ In-place ops and autograd ] in autograd).
    """
    if check_inplace is not None:
        check_inplace(self, op_name)
    check_overlap(op_name, self)
    if begin_inplace is None:
        r = compute()
    else:
        begin_inplace(self)
        try:
            r = compute()
        finally:
            end_inplace()
    if r._grad_fn is None and self._rg and nondiff_overwrite is not None and \
            state.grad_enabled:
        # NOTE [ Overwriting a tensor in a graph ] in ember/_ops/creation.py
        r = nondiff_overwrite(self, r)
    rd = r._data
    check_inplace_result(op_name, self, rd)
    sd = self._data
    if rd is not sd and not (intercept and write_batched is not None and
                             write_batched(self, r)):
        if (self._base is None and sd.base is None and rd.base is None
                and type(rd) is type(sd) and rd.dtype == sd.dtype and rd.shape == sd.shape
                and rd.strides == sd.strides and _sys.getrefcount(sd) <= _ADOPT_REFS):
            # NOTE [ Adopting an in-place result ]
            self._data = rd
        else:
            sd[...] = rd
    self._bump()
    if r._grad_fn is not None and commit_inplace is not None:
        commit_inplace(self, r)
    if intercept and commit_tangent is not None:
        commit_tangent(self, r)
    return self
