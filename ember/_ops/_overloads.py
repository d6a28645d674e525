"""PyTorch's overload names for the op calls a ``TorchDispatchMode`` sees.

NOTE [ Overload names ]
PyTorch splits an op into overloads by argument kinds -- ``x.sum()`` is ``aten.sum.default``
but ``x.sum(1)`` is ``aten.sum.dim_IntList``; ``x.std()`` is ``aten.std.correction``;
``x.max(1)`` is ``aten.max.dim``; ``x.add_(y)`` is ``aten.add_.Tensor`` -- and ember has one
op per computation (``sum``; ``var`` computing the standard deviation too; ``max.dim``
computing ``min(dim)``; ``add_``). A dispatch mode written for PyTorch keys on those names
(``func is torch.ops.aten.sum.dim_IntList``, ``str(func)``, ``func.overloadpacket``), so a
Python dispatch mode (``ember.utils._python_dispatch.TorchDispatchMode``) receives, for the
calls in the table below, an ``OpOverload`` named as torch names the call.

The renamed handle is a real overload of its packet (``ember.ops.aten.sum.dim_IntList``,
``ember.ops.aten.std.correction``), made once, on first use by a mode or by looking the name
up, so ``func is torch.ops.aten.sum.dim_IntList`` holds. Calling it does two things, told
apart by the call:

- with the arguments the mode received (ember's entrance form) it runs the op exactly as the
  handle the entrance made would (the next mode down sees the call again, then the kernel);
- with torch's arguments (``ember.ops.aten.sum.dim_IntList(x, [0], True)``) it runs the
  public function that computes that overload.

The entrance form of an op run by ``apply`` is its inputs (Tensors or None, one per
positional parameter of the kernel) and every keyword parameter the kernel requires; an
element-wise op's is its operands and the keywords its entrance was seen to pass
(``_EntranceShape``). Anything else is torch's form. The ``default`` handles of everyday ops
(``view``, ``transpose``, ``sum``, ``unsqueeze``...: ``_TORCH_FORM_CALLS``) take both forms
the same way, so a decomposition written for torch (``aten.view.default(x, [6])``) runs.

Only Python dispatch modes defined outside ember see the renamed handles: ember's own
consumers (ONNX export, ``export``, the flop counter, vmap, autocast, the profiler) key
their tables on ember's op names (``ember.utils._python_dispatch`` decides, per mode class,
with ``TorchDispatchMode._torch_overload_names``).

Each rule was read off torch 2.13's own dispatch-mode logs (``tests/dispatch``).
"""

from __future__ import annotations

import inspect

from .. import _dispatch
from .._core.tensor import Tensor

# ------------------------------------------------------------------------------------------------
# facts about torch's overloads

#: binary element-wise ops whose tensor-and-tensor form torch names ``Tensor`` (the others
#: are ``default``: ``maximum``, ``atan2``, ``hypot``, ``logaddexp``, ``floor_divide``...)
TENSOR_FORM = frozenset({
    "add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge", "fmod", "remainder",
    "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "clamp_min", "clamp_max", "xlogy", "lerp",
})
#: the tensor-and-number form's name, where it is not the tensor form's (a ``None`` entry:
#: torch wraps the number into a tensor and calls the tensor form); ember's own element-wise
#: entrance already names the comparison, ``fmod``, ``remainder``, ``copysign``, ``pow`` and
#: ``xlogy`` forms
NUMBER_FORM = {
    "bitwise_and": "Scalar", "bitwise_or": "Scalar", "bitwise_xor": "Scalar",
    "bitwise_left_shift": "Tensor_Scalar", "bitwise_right_shift": "Tensor_Scalar",
    "clamp_min": "default", "clamp_max": "default", "lerp": "Scalar",
}
#: in-place forms with a number operand, by op
INPLACE_NUMBER_FORM = {
    **{n: "Scalar" for n in ("eq", "ne", "lt", "le", "gt", "ge", "fmod", "remainder",
                              "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "pow",
                              "lerp")},
    "bitwise_left_shift": "Tensor_Scalar", "bitwise_right_shift": "Tensor_Scalar",
    "xlogy": "Scalar_Other", "clamp_min": "default", "clamp_max": "default",
}


def _is_number(x):
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, Tensor)


# ------------------------------------------------------------------------------------------------
# the rules: handle name -> rule(args, kwargs) -> (packet, overload) or None (keep)


def _dims(packet, overload):
    def rule(args, kwargs):
        return None if kwargs.get("dim") is None else (packet, overload)
    return rule


def _var(args, kwargs):
    return ("std" if kwargs.get("take_sqrt") else "var", "correction")


def _extreme(args, kwargs):
    largest = kwargs.get("largest", True)
    if kwargs.get("dim") is None:
        return ("max" if largest else "min", "default")
    return None if largest else ("amin", "default")


def _extreme_dim(args, kwargs):
    return ("max" if kwargs.get("largest", True) else "min", "dim")


def _all_any(args, kwargs):
    name = "all" if kwargs.get("is_all", True) else "any"
    dim = kwargs.get("dim")
    if dim is None:
        return (name, "default")
    return (name, "dim" if len(dim) == 1 else "dims")


def _split(args, kwargs):
    sizes = [e - s for s, e in kwargs.get("bounds", ())]
    even = len(sizes) < 2 or (all(s == sizes[0] for s in sizes[:-1]) and sizes[-1] <= sizes[0])
    return ("split", "Tensor") if even else ("split_with_sizes", "default")


def _masked_fill(packet):
    def rule(args, kwargs):
        return (packet, "Tensor" if len(args) > 2 and isinstance(args[2], Tensor) else "Scalar")
    return rule


def _fill(args, kwargs):
    return ("fill_", "Tensor" if len(args) > 1 and isinstance(args[1], Tensor) else "Scalar")


def _fixed(packet, overload):
    def rule(args, kwargs):
        return (packet, overload)
    return rule


def _binary(name):
    """The functional form of binary element-wise op ``name`` (ember's handle
    ``<name>.Tensor``)."""
    def rule(args, kwargs):
        if name not in TENSOR_FORM:
            return (name, "default")
        if len(args) == 2 and isinstance(args[0], Tensor) and _is_number(args[1]):
            form = NUMBER_FORM.get(name)
            return None if form is None else (name, form)
        if name == "sub" and len(args) == 2 and _is_number(args[0]):
            return ("rsub", "Scalar")  # ``1 - x``
        return None
    return rule


def _inplace(name):
    """The in-place form ``<name>_`` of a binary element-wise op."""
    def rule(args, kwargs):
        if name == "floor_divide":
            return (name + "_", "Tensor")
        if name not in TENSOR_FORM and name != "pow":
            return None
        other = args[-1] if len(args) > 1 else None
        if _is_number(other):
            form = INPLACE_NUMBER_FORM.get(name, "Tensor")
        else:
            form = "Tensor"
        return (name + "_", form)
    return rule


def _clamp(args, kwargs):
    bounds = list(args[1:]) + [kwargs.get("min"), kwargs.get("max")]
    return None if any(isinstance(b, Tensor) for b in bounds) else ("clamp", "default")


def _clamp_inplace(args, kwargs):
    bounds = list(args[1:]) + [kwargs.get("min"), kwargs.get("max")]
    return ("clamp_", "Tensor") if any(isinstance(b, Tensor) for b in bounds) else None


_RULES = {
    "sum.default": _dims("sum", "dim_IntList"),
    "mean.default": _dims("mean", "dim"),
    "prod.default": _dims("prod", "dim_int"),
    "var.default": _var,
    "amax.default": _extreme,
    "max.dim.default": _extreme_dim,
    "all.default": _all_any,
    "split.default": _split,
    "where.default": _fixed("where", "self"),
    "masked_fill.default": _masked_fill("masked_fill"),
    "masked_fill_.default": _masked_fill("masked_fill_"),
    "fill_.default": _fill,
    "empty.default": _fixed("empty", "memory_format"),
    "clamp.Tensor": _clamp,
    "clamp_.default": _clamp_inplace,
    "select.default": _fixed("select", "int"),
    "softmax.default": _fixed("_softmax", "default"),
    "log_softmax.default": _fixed("_log_softmax", "default"),
}

#: the public function computing each renamed overload, for calls in torch's form
_PUBLIC = {
    ("max", "default"): "max", ("min", "default"): "min", ("max", "dim"): "max",
    ("min", "dim"): "min", ("amin", "default"): "amin", ("std", "correction"): "std",
    ("var", "correction"): "var", ("any", "default"): "any", ("any", "dim"): "any",
    ("any", "dims"): "any", ("all", "dim"): "all", ("all", "dims"): "all",
    ("split_with_sizes", "default"): "split", ("where", "self"): "where",
    ("empty", "memory_format"): "empty", ("rsub", "Scalar"): "rsub",
}


def _torch_softmax(name):
    def run(input, dim, half_to_float=False):
        from . import _registry

        return _registry.functions[name](input, dim)
    run.__name__ = "_" + name
    return run


#: torch's ops with no public ember function of their name, by what computes them
_ADAPTERS = {("_softmax", "default"): _torch_softmax("softmax"),
             ("_log_softmax", "default"): _torch_softmax("log_softmax")}


def _public(packet, overload):
    from . import _registry

    if (packet, overload) in _ADAPTERS:
        return _ADAPTERS[packet, overload]
    name = _PUBLIC.get((packet, overload), packet)
    fn = _registry.functions.get(name)
    if fn is None and packet.endswith("_"):
        from .._core.tensor import Tensor as _T

        fn = getattr(_T, packet, None)
    return fn


# ------------------------------------------------------------------------------------------------
# the renamed handles


#: (handle, packet, overload) -> the renamed OpOverload
_made: dict = {}


class _EntranceShape:
    """What a call from ember's entrance of an op looks like (NOTE [ Overload names ]):
    for an op run by ``apply``, its inputs (Tensors or None, as many as the kernel's
    positional parameters) and every keyword parameter the kernel requires; for an
    element-wise op, operands and no keywords beyond those seen from the entrance."""

    __slots__ = ("applied", "n_inputs", "required", "seen")

    def __init__(self, handle):
        from ._elementwise import ElementwiseOp

        op = handle.op
        self.applied = op is not None and not isinstance(op, ElementwiseOp) and \
            handle._run is not None and getattr(op, "kernel", None) is not None
        self.n_inputs, self.required = None, frozenset()
        self.seen = set()
        if self.applied:
            try:
                params = list(inspect.signature(op.kernel).parameters.values())[1:]
            except (TypeError, ValueError):
                self.applied = False
                return
            if not any(p.kind is p.VAR_POSITIONAL for p in params):
                self.n_inputs = len([p for p in params if p.kind in (
                    p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
            self.required = frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY and
                                      p.default is p.empty)

    def matches(self, args, kwargs):
        keys = frozenset(kwargs)
        if self.applied:
            if self.n_inputs is not None and len(args) != self.n_inputs:
                return False
            if not all(a is None or isinstance(a, Tensor) for a in args):
                return False
            return keys in self.seen if self.seen else self.required <= keys
        return keys in self.seen if self.seen else not kwargs


#: handle -> its _EntranceShape
_shapes: dict = {}


def _dual(handle, base_run, public):
    """A run that tells the entrance's form from torch's (NOTE [ Overload names ])."""
    if public is None:
        return base_run
    shape = _shapes.setdefault(handle, _EntranceShape(handle))
    if getattr(public, "__name__", "") == "rsub":
        def run(*args, **kwargs):  # the entrance passes ``1 - x`` as (1, x)
            if args and _is_number(args[0]):
                return base_run(*args, **kwargs)
            return public(*args, **kwargs)

        return run

    def run(*args, **kwargs):
        if shape.matches(args, kwargs):
            return base_run(*args, **kwargs)
        return public(*args, **kwargs)

    return run


def _named(handle, packet_name, overload_name):
    key = (handle, packet_name, overload_name)
    h = _made.get(key)
    if h is not None:
        return h
    from .. import ops as _ops_ns

    table = _dispatch.packets.setdefault("aten", {})
    if packet_name not in table:
        try:  # the packet of a public function first: ember.ops.aten.<name>(...) calls it
            getattr(_ops_ns.aten, packet_name)
        except AttributeError:
            pass
    p = _dispatch.packet("aten", packet_name, handle.op)
    existing = p._overloads.get(overload_name)
    if existing is not None and (existing is handle or existing.op is handle.op):
        h = existing  # the entrance made this form itself
    else:
        _shapes.setdefault(handle, _EntranceShape(handle))
        run = _dual(handle, handle._run, _public(packet_name, overload_name))
        # where a public function's handle holds the name (``max.default``), this one takes
        # its place (and its turn in the packet), and calls in torch's form still reach the
        # function
        h = _dispatch.OpOverload(p, overload_name, run, handle.op, handle.is_inplace)
        h.below = handle.below
        _shapes[h] = _shapes[handle]
    _made[key] = h
    return h


def torch_handle(handle, args, kwargs):
    """The OpOverload PyTorch would show a dispatch mode for this call of ``handle``
    (``handle`` itself when torch's name is ember's). See NOTE [ Overload names ].

    Args:
        handle (OpOverload): what the entrance handed the mode stack.
        args (tuple): the call's positional arguments.
        kwargs (dict): its keyword arguments.

    Returns:
        An OpOverload that runs the same call.

    Example::

        >>> h = ember.ops.aten.sum.default
        >>> str(torch_handle(h, (ember.ones(2, 3),), {"dim": (0,), "keepdim": False,
        ...                                            "dtype": None}))
        'aten.sum.dim_IntList'
    """
    rule = _RULES.get(handle.__name__)
    if rule is None:
        return handle
    target = rule(args, kwargs)
    if target is None:
        return handle
    h = _named(handle, *target)
    shape = _shapes.get(h)
    if shape is not None:
        shape.seen.add(frozenset(kwargs or ()))
    return h


#: torch's overload -> ember's handle whose calls it names (for ``ember.ops.aten.<p>.<o>``
#: looked up before any mode saw such a call)
_BASE = {
    ("sum", "dim_IntList"): "sum.default", ("mean", "dim"): "mean.default",
    ("prod", "dim_int"): "prod.default", ("std", "correction"): "var.default",
    ("var", "correction"): "var.default", ("max", "default"): "amax.default",
    ("min", "default"): "amax.default", ("amin", "default"): "amax.default",
    ("max", "dim"): "max.dim.default", ("min", "dim"): "max.dim.default",
    ("all", "dim"): "all.default", ("all", "dims"): "all.default",
    ("any", "default"): "all.default", ("any", "dim"): "all.default",
    ("any", "dims"): "all.default", ("split", "Tensor"): "split.default",
    ("split_with_sizes", "default"): "split.default", ("where", "self"): "where.default",
    ("masked_fill", "Scalar"): "masked_fill.default",
    ("masked_fill", "Tensor"): "masked_fill.default",
    ("masked_fill_", "Scalar"): "masked_fill_.default",
    ("masked_fill_", "Tensor"): "masked_fill_.default",
    ("fill_", "Scalar"): "fill_.default", ("fill_", "Tensor"): "fill_.default",
    ("empty", "memory_format"): "empty.default", ("clamp", "default"): "clamp.Tensor",
    ("clamp_", "Tensor"): "clamp_.default", ("rsub", "Scalar"): "sub.Tensor",
    ("select", "int"): "select.default", ("_softmax", "default"): "softmax.default",
    ("_log_softmax", "default"): "log_softmax.default",
}


def _base_handle(name):
    """ember's handle called ``name`` (``"sum.default"``, ``"mul_.default"``), made if the
    op has not needed it yet; None when there is none."""
    from ._elementwise import ElementwiseOp
    from ._registry import ops

    packet_name, overload = name.rsplit(".", 1)
    p = _dispatch.packets.get("aten", {}).get(packet_name)
    if p is not None and overload in p._overloads:
        return p._overloads[overload]
    inplace = packet_name.endswith("_") and overload == "default"
    op = ops.get(packet_name[:-1] if inplace else packet_name)
    if isinstance(op, ElementwiseOp):
        return op.inplace_handle() if inplace else op.handle(False, 2)
    if op is not None and not inplace and overload == "default" and \
            getattr(op, "handle", None) is None:
        return _dispatch._apply_handle(op, False)
    return None


def lookup(packet_name, overload_name):
    """``ember.ops.aten.<packet_name>.<overload_name>`` for one of torch's overload names
    this module gives out, made on first use; None for other names."""
    base = _BASE.get((packet_name, overload_name))
    if base is None:
        ew = packet_name[:-1] if packet_name.endswith("_") else packet_name
        if (ew, overload_name) in _EW_TARGETS or (packet_name, overload_name) in _EW_TARGETS:
            base = f"{packet_name}.default" if packet_name.endswith("_") else f"{ew}.Tensor"
    if base is None:
        return None
    handle = _base_handle(base)
    if handle is None:
        return None
    return _named(handle, packet_name, overload_name)


#: the element-wise forms the rules give out, filled by ``install``
_EW_TARGETS: set = set()


# ------------------------------------------------------------------------------------------------
# indexing, as torch's dispatch modes see it

#: NOTE [ Indexing in dispatch modes ]
#: torch runs ``x[idx]`` as one op per index item, in order: an int is ``select.int(t, dim,
#: i)``, a slice ``slice.Tensor(t, dim, start, end[, step])`` (a whole-dimension slice inside
#: a tuple is skipped), ``None`` is ``unsqueeze(t, dim)``, and the index tensors are gathered
#: into one ``index.Tensor(t, [None | Tensor per dimension])`` at the end; when nothing else
#: ran the result is ``alias(t)``. A Python dispatch mode sees ember's indexing the same way:
#: it gets these calls one by one instead of ember's one indexing entrance (ints, slices,
#: None, Ellipsis and integer or bool index tensors; any other index -- a list, a bool, a
#: 0-dim tensor -- reaches the mode as ``index.Tensor(t, idx)`` with the index as written).
#: Each step is a view or gather like the one ember's single step makes, so values, views and
#: gradients are the same.

_INT64_MAX = 2 ** 63 - 1


@_dispatch.entrance("slice", overload_name="Tensor")
def _slice(t, dim=0, start=None, end=None, step=1):
    """torch's ``aten.slice.Tensor``: ``t`` sliced along ``dim`` (a view)."""
    if step is None:
        step = 1
    from ._node_names import rename

    # PyTorch's slice op is always ``SliceBackward0``, even over a whole dim (where ember's
    # tuple key, like torch's, would make an alias)
    return rename(t[(slice(None),) * dim + (slice(start, end, step),)], "SliceBackward0")


def _call(handle, *args):
    if _dispatch.intercept and _dispatch.state.modes:
        return _dispatch.through_modes(handle, args, {})
    return handle(*args)


def _index_items(x, idx):
    """The items of ``idx`` when every one is of a kind the decomposition handles, and the
    number of dimensions they consume; None otherwise."""
    items = idx if type(idx) is tuple else (idx,)
    consumed, ellipses = 0, 0
    for it in items:
        tp = type(it)
        if tp is int:
            consumed += 1
        elif tp is slice:
            if not all(v is None or type(v) is int for v in (it.start, it.stop, it.step)):
                return None
            if it.step is not None and it.step <= 0:
                return None
            consumed += 1
        elif it is None:
            pass
        elif it is Ellipsis:
            ellipses += 1
        elif isinstance(it, Tensor):
            kind = it._data.dtype.kind
            if it._data.ndim == 0 or kind not in "bi":
                return None
            consumed += it._data.ndim if kind == "b" else 1
        else:
            return None
    if ellipses > 1 or consumed > x._data.ndim:
        return None
    return items, consumed


def getitem_steps(x, idx):
    """``x[idx]`` as torch's sequence of ops (NOTE [ Indexing in dispatch modes ]), each
    through the mode stack; NotImplemented for an index it does not split."""
    parsed = _index_items(x, idx)
    if parsed is None:
        return NotImplemented
    items, consumed = parsed
    bare = type(idx) is not tuple
    sizes = x._data.shape
    select = lookup("select", "int")
    unsqueeze = _base_handle("unsqueeze.default")
    if unsqueeze not in _dualized:
        from ._registry import functions

        _dualize(unsqueeze, functions["unsqueeze"])
    t, dim, src, ran, tensors = x, 0, 0, False, []
    for it in items:
        if it is Ellipsis:
            skip = len(sizes) - consumed
            dim += skip
            src += skip
        elif type(it) is int:
            t = _call(select, t, dim, it)
            src += 1
            ran = True
        elif type(it) is slice:
            start, stop, step = it.start, it.stop, it.step
            whole = start in (None, 0) and (stop is None or stop >= sizes[src]) and \
                step in (None, 1)
            if bare or not whole:
                args = (t, dim, 0 if start is None else start,
                        _INT64_MAX if stop is None else stop)
                if step not in (None, 1):
                    args += (step,)
                t = _call(_slice.handle, *args)
                ran = True
            dim += 1
            src += 1
        elif it is None:
            t = _call(unsqueeze, t, dim)
            dim += 1
            ran = True
        else:
            n = it._data.ndim if it._data.dtype.kind == "b" else 1
            tensors.append((dim, it, n))
            dim += n
            src += n
    if tensors:
        from .indexing import _GETITEM

        entries, cur = [], 0
        for d, it, n in tensors:
            entries += [None] * (d - cur)
            entries.append(it)
            cur = d + n
        return _call(_GETITEM, t, entries)
    if not ran:
        return _call(_base_handle("alias.default"), t)
    return t


def _narrow_steps(args, kwargs):
    """``narrow`` as torch's ``slice.Tensor`` (the entrance already made ``start``
    non-negative)."""
    if len(args) != 1 or "length" not in kwargs:
        return NotImplemented
    dim, start = kwargs["dim"], kwargs["start"]
    return _call(_slice.handle, args[0], dim, start, start + kwargs["length"])


def _linear_steps(args, kwargs):
    """``linear`` as torch's ``t`` and ``addmm`` (``mm`` without a bias), with views around
    them for a contiguous batch."""
    if kwargs or len(args) not in (2, 3):
        return NotImplemented
    x, w = args[0], args[1]
    b = args[2] if len(args) == 3 else None
    if not (isinstance(x, Tensor) and isinstance(w, Tensor)) or w._data.ndim != 2:
        return NotImplemented
    n = x._data.ndim
    if n < 2 or n > 2 and not (b is not None and x._data.flags.c_contiguous):
        return NotImplemented
    from .. import _ops  # noqa: F401  (the families below are loaded)
    from . import _registry

    batch = x._data.shape[:-1]
    x2 = x.view(-1, x._data.shape[-1]) if n > 2 else x
    wt = w.t()
    out = _registry.functions["addmm"](b, x2, wt) if b is not None else \
        _registry.functions["mm"](x2, wt)
    return out.view(*batch, w._data.shape[0]) if n > 2 else out


#: handle name -> ``steps(args, kwargs)``: the call as the ops torch runs for it, each
#: through the mode stack, or NotImplemented where the call is not split
_STEPS = {
    "narrow.default": _narrow_steps,
    "linear.default": _linear_steps,
}


#: the handle names ``steps`` may split
SPLIT = frozenset(_STEPS) | {"index.Tensor"}


def steps(handle, args, kwargs):
    """Run a call of ``handle`` as the ops torch's dispatch modes see for it (NOTE [ Indexing
    in dispatch modes ]; ``narrow`` is a ``slice``, ``linear`` a ``t`` and an ``addmm``);
    NotImplemented when torch sees the call as it is.

    Args:
        handle (OpOverload): what the entrance handed the mode stack.
        args (tuple): the call's positional arguments.
        kwargs (dict): its keyword arguments.

    Returns:
        The call's result, or NotImplemented.

    Example::

        >>> from ember._ops.indexing import _GETITEM
        >>> steps(_GETITEM, (ember.ones(2, 3), 0), {}).shape
        ember.Size([3])
    """
    from .indexing import _GETITEM

    if handle is _GETITEM:
        if len(args) != 2 or kwargs:
            return NotImplemented
        return getitem_steps(*args)
    fn = _STEPS.get(handle.__name__)
    return NotImplemented if fn is None else fn(args, kwargs or {})


def _index_in_torch_form(run):
    """``aten.index.Tensor``'s run, also taking torch's form: a list holding a Tensor or
    None per dimension (None: the whole dimension)."""

    def index(self, idx, *rest, **kwargs):
        if type(idx) is list and idx and all(e is None or isinstance(e, Tensor) for e in idx):
            idx = tuple(slice(None) if e is None else e for e in idx)
        return run(self, idx, *rest, **kwargs)

    return index


def _dualize(handle, public):
    """Let ``handle`` take torch's arguments too (NOTE [ Overload names ])."""
    if handle is not None and handle not in _dualized:
        _dualized.add(handle)
        handle._run = _dual(handle, handle._run, public)


_dualized: set = set()


# ------------------------------------------------------------------------------------------------
# schemas

#: OpOverload -> its FunctionSchema
_schemas: dict = {}

_TYPE_OF_DEFAULT = {bool: "bool", int: "int", float: "float", str: "str"}


def _made_up_schema(handle):
    """A schema for an overload torch's table does not list, from ember's public function:
    ``self`` (written to by an in-place form, aliased by a view), the other parameters typed
    by their defaults."""
    from ._registry import functions

    packet = handle.overloadpacket
    name = packet._qualified_op_name
    if handle._overloadname != "default":
        name += "." + handle._overloadname
    alias = "(a!)" if handle.is_inplace else "(a)" if handle.is_view else ""
    args = [f"Tensor{alias} self"]
    base = packet.__name__[:-1] if handle.is_inplace else packet.__name__
    fn = functions.get(base)
    try:
        params = list(inspect.signature(fn).parameters.values())[1:] if fn is not None else []
    except (TypeError, ValueError):
        params = []
    star = False
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "out":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            args.append("*")
            star = True
        if p.default is p.empty:
            args.append(f"Tensor {p.name}")
        elif p.default is None:
            args.append(f"Any? {p.name}=None")
        else:
            t = _TYPE_OF_DEFAULT.get(type(p.default))
            if t is None:
                continue
            default = f'"{p.default}"' if t == "str" else p.default
            args.append(f"{t} {p.name}={default}")
    return f"{name}({', '.join(args)}) -> Tensor{alias}"


def schema_of(handle):
    """``handle._schema``: the overload's ``FunctionSchema``.

    Args:
        handle (OpOverload): one of ember's overloads.

    Returns:
        The FunctionSchema torch declares for that overload name, or one made from ember's
        public function for an overload torch does not have.

    Example::

        >>> str(schema_of(ember.ops.aten.transpose.int))
        'aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)'
    """
    s = _schemas.get(handle)
    if s is None:
        from .._library.schema import parse_schema
        from ._overload_schemas import SCHEMAS

        text = SCHEMAS.get(handle.__name__) if handle.namespace == "aten" else None
        s = _schemas[handle] = parse_schema(text or _made_up_schema(handle))
    return s


def _binary_function(fn):
    """Whether public function ``fn`` takes two operands (as ``ember.ops`` counts them)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return len([p for p in params if p.default is p.empty and
                p.kind is p.POSITIONAL_OR_KEYWORD]) == 2


#: ops whose ``default`` handle also takes torch's arguments
#: (``ember.ops.aten.view.default(x, [6])``), as the renamed forms do
_TORCH_FORM_CALLS = (
    "sum", "mean", "prod", "amax", "argmax", "var", "view", "transpose", "permute", "expand",
    "unsqueeze", "squeeze", "select", "alias", "clone", "cumsum", "cumprod", "softmax",
    "log_softmax", "flip", "roll", "repeat", "tril", "triu", "diagonal", "gather",
    "index_select", "masked_fill", "where", "cat", "stack", "narrow", "split", "unbind",
    "logsumexp", "sort", "topk", "embedding", "matmul", "linear", "all",
)


def install():
    """Add the element-wise rules and let ``ember.ops.aten.<op>.<overload>`` find the forms
    this module names (called once every family is loaded)."""
    from . import indexing
    from ._elementwise import ElementwiseOp
    from ._registry import functions, ops

    _dispatch.named_overload = lookup
    _dispatch.schema_of = schema_of
    indexing._GETITEM._run = _index_in_torch_form(indexing._GETITEM._run)
    for name in _TORCH_FORM_CALLS:
        op = ops.get(name)
        public = functions.get(name) or getattr(Tensor, name, None)
        if op is not None and public is not None and getattr(op, "handle", None) is None:
            _dualize(_dispatch._apply_handle(op, False), public)
    for name in ("add", "sub"):  # ``alpha=``
        _dualize(ops[name].handle(False, 2), functions[name])
    for packet_name, overload_name in _BASE:
        if packet_name not in ops and packet_name not in functions:
            lookup(packet_name, overload_name)  # ember.ops.aten._softmax exists from the start
    for name, op in ops.items():
        if not isinstance(op, ElementwiseOp):
            continue
        _RULES.setdefault(f"{name}.Tensor", _binary(name))
        _RULES.setdefault(f"{name}_.default", _inplace(name))
        if hasattr(Tensor, name + "_"):
            op.inplace_handle()  # ember.ops.aten.<name>_ exists before its first call
        if not _binary_function(functions.get(name)):
            continue
        if name not in TENSOR_FORM:
            _EW_TARGETS.add((name, "default"))
        elif name in NUMBER_FORM:
            _EW_TARGETS.add((name, NUMBER_FORM[name]))
        if name in TENSOR_FORM or name in ("pow", "floor_divide"):
            _EW_TARGETS.add((name + "_", "Tensor"))
            if name in INPLACE_NUMBER_FORM:
                _EW_TARGETS.add((name + "_", INPLACE_NUMBER_FORM[name]))
