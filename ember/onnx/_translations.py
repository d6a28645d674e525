"""How each ember op is written in ONNX (opset 18 and later).

NOTE [ ONNX translations ]
The exporter (ember/onnx/_exporter.py) traces the model through the dispatcher and calls, for
each op that depends on the model's inputs, the translation registered here under the op's
name. A translation receives the ``Ctx`` (``ctx.g`` is the ``GraphBuilder``; ``ctx.name(v)``
gives a ``Value``'s ONNX name, writing a constant as an initializer the first time it is
used), the op's arguments as the dispatcher passed them -- tensors replaced by ``Value`` s,
everything else as is -- its keyword arguments, and the ``Value`` s of its results, whose
traced shapes and dtypes it may read. It returns the ONNX name of each result.

Shapes that ops take as arguments (``view``, ``expand``, ``repeat``) were plain integers in
the trace. They are written so that the graph stays right when a dimension the user marked
dynamic changes: a leading dimension a reshape keeps becomes ``0`` ("copy from the input"),
one other becomes ``-1``, and an ``expand`` writes ``1`` where it keeps the input's size.
Ops whose attributes ONNX cannot express raise ``OnnxExporterError`` naming the op.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as _dt
from ._builder import Value, onnx_type

TRANSLATIONS = {}


def translation(*names):
    """Register a function as the ONNX translation of the ops ``names``."""
    def deco(fn):
        for n in names:
            TRANSLATIONS[n] = fn
        return fn
    return deco


def _error(msg):
    from .errors import OnnxExporterError

    return OnnxExporterError(msg)


# -- helpers ---------------------------------------------------------------------------------

def _np_dtype(dtype):
    return np.dtype(_dt.to_np[dtype])


def _input(ctx, x, dtype):
    """The name of operand ``x`` (a Value or a Python number) as a tensor of ``dtype``."""
    g = ctx.g
    if isinstance(x, Value):
        name = ctx.name(x)
        if x.dtype != dtype:
            name = g.node("Cast", [name], to=onnx_type(dtype), name_hint="cast")
        return name
    return g.const(np.asarray(x, dtype=_np_dtype(dtype)), "scalar")


def _promoted(args):
    """The dtype ember computes a comparison of ``args`` in."""
    import ember

    items = [ember.empty((1,) if a.ndim else (), dtype=a.dtype) if isinstance(a, Value)
             else a for a in args]
    if len(items) == 1:
        return items[0].dtype
    return ember.result_type(items[0], items[1])


def _elementwise(op_type, compare=False):
    def tr(ctx, args, kwargs, outs):
        compute = _promoted(args) if compare else outs[0].dtype
        names = [_input(ctx, a, compute) for a in args]
        return [ctx.g.node(op_type, names, name_hint=ctx.hint)]
    return tr


for _name, _onnx in {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
                     "maximum": "Max", "minimum": "Min", "logical_and": "And",
                     "logical_or": "Or", "logical_xor": "Xor"}.items():
    TRANSLATIONS[_name] = _elementwise(_onnx)
    TRANSLATIONS[_name + "_"] = TRANSLATIONS[_name]
for _name, _onnx in {"eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
                     "ge": "GreaterOrEqual"}.items():
    TRANSLATIONS[_name] = _elementwise(_onnx, compare=True)


@translation("ne")
def _ne(ctx, args, kwargs, outs):
    eq = _elementwise("Equal", compare=True)(ctx, args, kwargs, outs)[0]
    return [ctx.g.node("Not", [eq], name_hint=ctx.hint)]


@translation("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_and_", "bitwise_or_")
def _bitwise(ctx, args, kwargs, outs):
    base = ctx.op.rstrip("_")
    if outs[0].dtype != _dt.bool_:
        op = {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr",
              "bitwise_xor": "BitwiseXor"}[base]
    else:
        op = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor"}[base]
    return [ctx.g.node(op, [_input(ctx, a, outs[0].dtype) for a in args], name_hint=ctx.hint)]


@translation("floor_divide")
def _floor_divide(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    g = ctx.g
    if dtype.is_floating_point:
        return [g.node("Floor", [g.node("Div", [a, b])], name_hint=ctx.hint)]
    # integers: floor of the true quotient (ONNX Div truncates)
    fa, fb = (g.node("Cast", [n], to=onnx_type(_dt.float64)) for n in (a, b))
    q = g.node("Floor", [g.node("Div", [fa, fb])])
    return [g.node("Cast", [q], to=onnx_type(dtype), name_hint=ctx.hint)]


def _unary(op_type):
    def tr(ctx, args, kwargs, outs):
        return [ctx.g.node(op_type, [_input(ctx, args[0], outs[0].dtype)], name_hint=ctx.hint)]
    return tr


for _name, _onnx in {"neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
                     "reciprocal": "Reciprocal", "tanh": "Tanh", "sigmoid": "Sigmoid",
                     "relu": "Relu", "sin": "Sin", "cos": "Cos", "tan": "Tan", "erf": "Erf",
                     "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign",
                     "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
                     "cosh": "Cosh", "softsign": "Softsign", "mish": "Mish",
                     "selu": "Selu", "hardswish": "HardSwish"}.items():
    TRANSLATIONS[_name] = _unary(_onnx)
    TRANSLATIONS[_name + "_"] = TRANSLATIONS[_name]


@translation("logical_not", "bitwise_not")
def _not(ctx, args, kwargs, outs):
    if outs[0].dtype == _dt.bool_:
        return [ctx.g.node("Not", [ctx.name(args[0])], name_hint=ctx.hint)]
    return [ctx.g.node("BitwiseNot", [ctx.name(args[0])], name_hint=ctx.hint)]


@translation("isnan")
def _isnan(ctx, args, kwargs, outs):
    return [ctx.g.node("IsNaN", [ctx.name(args[0])], name_hint=ctx.hint)]


@translation("isinf")
def _isinf(ctx, args, kwargs, outs):
    return [ctx.g.node("IsInf", [ctx.name(args[0])], name_hint=ctx.hint)]


@translation("rsqrt")
def _rsqrt(ctx, args, kwargs, outs):
    s = ctx.g.node("Sqrt", [_input(ctx, args[0], outs[0].dtype)])
    return [ctx.g.node("Reciprocal", [s], name_hint=ctx.hint)]


@translation("log1p")
def _log1p(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    one = _input(ctx, 1, dtype)
    return [ctx.g.node("Log", [ctx.g.node("Add", [_input(ctx, args[0], dtype), one])],
                       name_hint=ctx.hint)]


@translation("expm1")
def _expm1(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    e = ctx.g.node("Exp", [_input(ctx, args[0], dtype)])
    return [ctx.g.node("Sub", [e, _input(ctx, 1, dtype)], name_hint=ctx.hint)]


@translation("silu")
def _silu(ctx, args, kwargs, outs):
    x = ctx.name(args[0])
    return [ctx.g.node("Mul", [x, ctx.g.node("Sigmoid", [x])], name_hint=ctx.hint)]


@translation("gelu")
def _gelu(ctx, args, kwargs, outs):
    return [ctx.g.node("Gelu", [ctx.name(args[0])], approximate="none", name_hint=ctx.hint)]


@translation("gelu_tanh")
def _gelu_tanh(ctx, args, kwargs, outs):
    return [ctx.g.node("Gelu", [ctx.name(args[0])], approximate="tanh", name_hint="gelu")]


@translation("clamp", "clamp_")
def _clamp(ctx, args, kwargs, outs):
    lo = args[1] if len(args) > 1 else kwargs.get("min")
    hi = args[2] if len(args) > 2 else kwargs.get("max")
    dtype = outs[0].dtype
    names = [_input(ctx, args[0], dtype),
             "" if lo is None else _input(ctx, lo, dtype),
             "" if hi is None else _input(ctx, hi, dtype)]
    while names[-1] == "":
        names.pop()
    return [ctx.g.node("Clip", names, name_hint="clamp")]


@translation("clamp_min", "clamp_min_")
def _clamp_min(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    return [ctx.g.node("Max", [_input(ctx, args[0], dtype), _input(ctx, args[1], dtype)],
                       name_hint="clamp_min")]


@translation("clamp_max", "clamp_max_")
def _clamp_max(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    return [ctx.g.node("Min", [_input(ctx, args[0], dtype), _input(ctx, args[1], dtype)],
                       name_hint="clamp_max")]


@translation("where")
def _where(ctx, args, kwargs, outs):
    cond, a, b = args[:3]
    dtype = outs[0].dtype
    return [ctx.g.node("Where", [_input(ctx, cond, _dt.bool_), _input(ctx, a, dtype),
                                 _input(ctx, b, dtype)], name_hint="where")]


@translation("masked_fill", "masked_fill_")
def _masked_fill(ctx, args, kwargs, outs):
    x, mask = args[0], args[1]
    value = args[2] if len(args) > 2 and args[2] is not None else kwargs.get("value")
    dtype = outs[0].dtype
    return [ctx.g.node("Where", [_input(ctx, mask, _dt.bool_), _input(ctx, value, dtype),
                                 _input(ctx, x, dtype)], name_hint="masked_fill")]


@translation("_to_copy", "to", "type_as")
def _to_copy(ctx, args, kwargs, outs):
    x = args[0]
    if x.dtype == outs[0].dtype:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint=ctx.hint)]
    return [ctx.g.node("Cast", [ctx.name(x)], to=onnx_type(outs[0].dtype), name_hint="to")]


@translation("clone", "contiguous", "alias", "detach", "dropout", "feature_dropout",
             "alpha_dropout", "lift_fresh", "_conj", "resolve_conj", "resolve_neg")
def _identity(ctx, args, kwargs, outs):
    return [ctx.g.node("Identity", [ctx.name(args[0])], name_hint=ctx.hint)]


# -- shapes ----------------------------------------------------------------------------------

def _reshape_target(in_shape, out_shape):
    """The Reshape target for ``in_shape`` -> ``out_shape`` that keeps working when a leading
    dimension changes (NOTE [ ONNX translations ])."""
    target = list(out_shape)
    k = 0
    while k < min(len(in_shape), len(out_shape)) and in_shape[k] == out_shape[k] \
            and out_shape[k] != 0:
        target[k] = 0
        k += 1
    rest = [i for i in range(k, len(target))]
    if rest and all(target[i] != 0 for i in rest) and 0 not in in_shape:
        # one free dimension: the one most likely to carry a dynamic size (the first)
        target[rest[0]] = -1
    return target


def _reshape(ctx, x, out_shape, hint="view"):
    if tuple(x.shape) == tuple(out_shape):
        return ctx.g.node("Identity", [ctx.name(x)], name_hint=hint)
    shape = ctx.g.ints(_reshape_target(x.shape, out_shape), "shape")
    return ctx.g.node("Reshape", [ctx.name(x), shape], name_hint=hint)


@translation("view", "reshape", "_reshape_copy", "_unsafe_view", "flatten", "unflatten",
             "view_as", "reshape_as")
def _view(ctx, args, kwargs, outs):
    return [_reshape(ctx, args[0], outs[0].shape, ctx.hint)]


@translation("squeeze", "unsqueeze", "squeeze_", "unsqueeze_")
def _squeeze(ctx, args, kwargs, outs):
    x, out = args[0], outs[0]
    g = ctx.g
    if ctx.op.startswith("unsqueeze"):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        dim = dim % (x.ndim + 1)
        return [g.node("Unsqueeze", [ctx.name(x), g.ints([dim], "axes")], name_hint="unsqueeze")]
    dims = [d for d in range(x.ndim) if x.shape[d] == 1 and
            len(out.shape) < x.ndim] if out.shape != x.shape else []
    dims = kwargs.get("dims", dims)
    dims = [d % x.ndim for d in (dims if isinstance(dims, (list, tuple)) else [dims])
            if x.shape[d % x.ndim] == 1]
    if not dims:
        return [g.node("Identity", [ctx.name(x)], name_hint="squeeze")]
    return [g.node("Squeeze", [ctx.name(x), g.ints(dims, "axes")], name_hint="squeeze")]


@translation("permute")
def _permute(ctx, args, kwargs, outs):
    dims = kwargs.get("dims", args[1] if len(args) > 1 else None)
    x = args[0]
    perm = [d % x.ndim for d in dims]
    return [ctx.g.node("Transpose", [ctx.name(x)], perm=perm, name_hint="permute")]


@translation("transpose", "transpose_", "swapaxes", "swapdims")
def _transpose(ctx, args, kwargs, outs):
    x = args[0]
    d0 = kwargs.get("dim0", args[1] if len(args) > 1 else None) % max(x.ndim, 1)
    d1 = kwargs.get("dim1", args[2] if len(args) > 2 else None) % max(x.ndim, 1)
    perm = list(range(x.ndim))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return [ctx.g.node("Transpose", [ctx.name(x)], perm=perm, name_hint="transpose")]


@translation("t", "numpy_T", "mT")
def _t(ctx, args, kwargs, outs):
    x = args[0]
    perm = list(range(x.ndim))
    if x.ndim >= 2:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    return [ctx.g.node("Transpose", [ctx.name(x)], perm=perm, name_hint="t")]


@translation("expand", "expand_as", "broadcast_to")
def _expand(ctx, args, kwargs, outs):
    x, out = args[0], outs[0]
    pad = len(out.shape) - x.ndim
    target = [1 if i >= pad and x.shape[i - pad] == s else s for i, s in enumerate(out.shape)]
    return [ctx.g.node("Expand", [ctx.name(x), ctx.g.ints(target, "shape")],
                       name_hint="expand")]


@translation("repeat")
def _repeat(ctx, args, kwargs, outs):
    x = args[0]
    reps = list(kwargs.get("repeats", args[1] if len(args) > 1 else ()))
    name = ctx.name(x)
    if len(reps) > x.ndim:
        name = _reshape(ctx, x, (1,) * (len(reps) - x.ndim) + x.shape, "unsqueeze")
    return [ctx.g.node("Tile", [name, ctx.g.ints(reps, "repeats")], name_hint="repeat")]


@translation("cat", "concat", "concatenate")
def _cat(ctx, args, kwargs, outs):
    tensors = _flat_values(args)
    dim = kwargs.get("dim", 0)
    dtype = outs[0].dtype
    names = [_input(ctx, t, dtype) for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    axis = dim % len(outs[0].shape)
    return [ctx.g.node("Concat", names, axis=axis, name_hint="cat")]


@translation("stack")
def _stack(ctx, args, kwargs, outs):
    tensors = _flat_values(args)
    dim = kwargs.get("dim", 0) % len(outs[0].shape)
    dtype = outs[0].dtype
    g = ctx.g
    parts = [g.node("Unsqueeze", [_input(ctx, t, dtype), g.ints([dim], "axes")])
             for t in tensors]
    return [g.node("Concat", parts, axis=dim, name_hint="stack")]


def _flat_values(args):
    out = []
    for a in args:
        if isinstance(a, Value):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_flat_values(a))
    return out


@translation("split", "split_with_sizes", "chunk", "unbind", "tensor_split")
def _split(ctx, args, kwargs, outs):
    x = args[0]
    dim = kwargs.get("dim", 0) % x.ndim
    sizes = [o.shape[dim] if len(o.shape) == x.ndim else 1 for o in outs]
    g = ctx.g
    names = g.node("Split", [ctx.name(x), g.ints(sizes, "split")], outputs=len(outs),
                   axis=dim, name_hint=ctx.hint)
    if not isinstance(names, list):
        names = [names]
    if len(outs[0].shape) < x.ndim:  # unbind drops the axis
        names = [g.node("Squeeze", [n, g.ints([dim], "axes")], name_hint=ctx.hint)
                 for n in names]
    return names


@translation("select")
def _select(ctx, args, kwargs, outs):
    x = args[0]
    dim = kwargs["dim"] % x.ndim
    index = kwargs["index"] % x.shape[dim]
    g = ctx.g
    return [g.node("Gather", [ctx.name(x), g.const(np.asarray(index, np.int64), "index")],
                   axis=dim, name_hint="select")]


@translation("narrow")
def _narrow(ctx, args, kwargs, outs):
    x = args[0]
    dim = kwargs["dim"] % x.ndim
    start = kwargs["start"] % max(x.shape[dim], 1) if kwargs["start"] < 0 else kwargs["start"]
    return [_slice(ctx, ctx.name(x), [dim], [start], [start + kwargs["length"]], [1], "narrow")]


def _slice(ctx, name, axes, starts, ends, steps, hint="slice"):
    g = ctx.g
    return g.node("Slice", [name, g.ints(starts, "starts"), g.ints(ends, "ends"),
                            g.ints(axes, "axes"), g.ints(steps, "steps")], name_hint=hint)


@translation("index")
def _index(ctx, args, kwargs, outs):
    x, key = args[0], args[1]
    key = key if isinstance(key, tuple) else (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis and k is not True
                 and k is not False)
    if any(isinstance(k, Value) and k.dtype == _dt.bool_ for k in key):
        raise _error("ONNX export of indexing with a boolean mask is not supported: the "
                     "result's shape depends on the values")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(k)
    advanced = [k for k in expanded if isinstance(k, Value) or isinstance(k, (list,))]
    if len(advanced) > 1:
        raise _error("ONNX export of indexing with more than one index tensor is not "
                     "supported by ember's exporter")
    g = ctx.g
    name = ctx.name(x)
    shape = list(x.shape)
    axis = 0
    for k in expanded:
        if k is None:
            name = g.node("Unsqueeze", [name, g.ints([axis], "axes")], name_hint="index")
            shape.insert(axis, 1)
            axis += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[axis])
            if (start, stop, step) != (0, shape[axis], 1):
                name = _slice(ctx, name, [axis], [start], [stop], [step], "index")
                shape[axis] = len(range(start, stop, step))
            axis += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            idx = int(k) % shape[axis]
            name = g.node("Gather", [name, g.const(np.asarray(idx, np.int64), "index")],
                          axis=axis, name_hint="index")
            del shape[axis]
        else:  # one index tensor (or list)
            idx = k if isinstance(k, Value) else Value(None, (len(k),), _dt.int64,
                                                       np.asarray(k, np.int64))
            iname = _input(ctx, idx, _dt.int64)
            if idx.is_constant and (idx.array < 0).any():
                iname = g.const(np.where(idx.array < 0, idx.array + shape[axis],
                                         idx.array).astype(np.int64), "index")
            name = g.node("Gather", [name, iname], axis=axis, name_hint="index")
            shape[axis:axis + 1] = list(idx.shape)
            axis += idx.ndim
    if tuple(shape) != tuple(outs[0].shape):  # pragma: no cover - a mismatch is a bug here
        raise _error(f"ONNX export of indexing {x.shape} with {key!r} gave {shape}, "
                     f"expected {outs[0].shape}")
    return [name]


@translation("index_select")
def _index_select(ctx, args, kwargs, outs):
    x, index = args[0], args[1]
    dim = kwargs.get("dim", 0) % max(x.ndim, 1)
    return [ctx.g.node("Gather", [ctx.name(x), _input(ctx, index, _dt.int64)], axis=dim,
                       name_hint="index_select")]


@translation("embedding")
def _embedding(ctx, args, kwargs, outs):
    weight, index = args[0], args[1]
    return [ctx.g.node("Gather", [ctx.name(weight), _input(ctx, index, _dt.int64)], axis=0,
                       name_hint="embedding")]


@translation("constant_pad_nd")
def _pad(ctx, args, kwargs, outs):
    x = args[0]
    pads = kwargs["pads"]
    begins = [int(p[0]) for p in pads]
    ends = [int(p[1]) for p in pads]
    g = ctx.g
    value = kwargs.get("value", 0) or 0
    if min(begins + ends) < 0:
        raise _error("ONNX export of negative padding is not supported by ember's exporter")
    return [g.node("Pad", [ctx.name(x), g.ints(begins + ends, "pads"),
                           _input(ctx, value, outs[0].dtype)], mode="constant",
                   name_hint="pad")]


@translation("tril", "triu")
def _tril(ctx, args, kwargs, outs):
    g = ctx.g
    upper = kwargs.get("upper", ctx.op == "triu")
    diagonal = kwargs.get("diagonal", 0)
    x = args[0]
    if g.opset < 14:  # no Trilu: keep the triangle with a constant mask
        n, m = x.shape[-2:]
        keep = np.triu(np.ones((n, m), bool), diagonal) if upper else \
            np.tril(np.ones((n, m), bool), diagonal)
        zero = _input(ctx, 0, outs[0].dtype)
        return [g.node("Where", [g.const(keep, "mask"), ctx.name(x), zero], name_hint=ctx.op)]
    k = g.const(np.asarray(diagonal, np.int64), "k")
    return [g.node("Trilu", [ctx.name(args[0]), k], upper=int(bool(upper)), name_hint=ctx.op)]


@translation("cumsum")
def _cumsum(ctx, args, kwargs, outs):
    x = args[0]
    axis = ctx.g.const(np.asarray(kwargs["dim"] % max(x.ndim, 1), np.int64), "axis")
    return [ctx.g.node("CumSum", [_input(ctx, x, outs[0].dtype), axis], name_hint="cumsum")]


# -- reductions ------------------------------------------------------------------------------

def _dims(kwargs, ndim):
    dim = kwargs.get("dim")
    if dim is None:
        return list(range(ndim))
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    return [d % max(ndim, 1) for d in dims] if ndim else []


def _reduce(op_type):
    def tr(ctx, args, kwargs, outs):
        x = args[0]
        dtype = outs[0].dtype
        g = ctx.g
        dims = _dims(kwargs, x.ndim)
        keep = int(bool(kwargs.get("keepdim", False)))
        inputs = [_input(ctx, x, dtype)]
        if dims:
            inputs.append(g.ints(dims, "axes"))
            return [g.node(op_type, inputs, keepdims=keep, name_hint=ctx.hint)]
        return [g.node("Identity", inputs, name_hint=ctx.hint)]
    return tr


TRANSLATIONS.update(sum=_reduce("ReduceSum"), mean=_reduce("ReduceMean"),
                    amax=_reduce("ReduceMax"), amin=_reduce("ReduceMin"),
                    prod=_reduce("ReduceProd"))


@translation("amax", "amin")
def _amax(ctx, args, kwargs, outs):
    largest = kwargs.get("largest", ctx.op == "amax")
    return _reduce("ReduceMax" if largest else "ReduceMin")(ctx, args, kwargs, outs)


@translation("max.dim", "min.dim")
def _max_dim(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dim = kwargs["dim"] % max(x.ndim, 1)
    keep = int(bool(kwargs.get("keepdim", False)))
    largest = kwargs.get("largest", ctx.op.startswith("max"))
    values = g.node("ReduceMax" if largest else "ReduceMin", [ctx.name(x), g.ints([dim], "axes")],
                    keepdims=keep, name_hint=ctx.op.split(".")[0])
    index = g.node("ArgMax" if largest else "ArgMin", [ctx.name(x)], axis=dim, keepdims=keep,
                   select_last_index=0, name_hint="indices")
    return [values, index]


@translation("argmax", "argmin")
def _argmax(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    largest = kwargs.get("largest", ctx.op == "argmax")
    keep = int(bool(kwargs.get("keepdim", False)))
    dims = kwargs.get("dim")
    name = ctx.name(x)
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) != 1):
        name = _reshape(ctx, x, (int(np.prod(x.shape)),), "flatten")
        dim = 0
        keep = 0
    else:
        dim = (dims[0] if isinstance(dims, (tuple, list)) else dims) % max(x.ndim, 1)
    return [g.node("ArgMax" if largest else "ArgMin", [name], axis=dim, keepdims=keep,
                   name_hint=ctx.op)]


@translation("var", "std")
def _var(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dtype = outs[0].dtype
    dims = _dims(kwargs, x.ndim)
    keep = int(bool(kwargs.get("keepdim", False)))
    correction = kwargs.get("correction", 1)
    n = int(np.prod([x.shape[d] for d in dims])) if dims else 1
    xn = _input(ctx, x, dtype)
    axes = g.ints(dims, "axes")
    mean = g.node("ReduceMean", [xn, axes], keepdims=1)
    diff = g.node("Sub", [xn, mean])
    sq = g.node("Mul", [diff, diff])
    total = g.node("ReduceSum", [sq, axes], keepdims=keep)
    out = g.node("Div", [total, _input(ctx, max(n - correction, 0), dtype)], name_hint="var")
    if kwargs.get("take_sqrt", ctx.op == "std"):
        out = g.node("Sqrt", [out], name_hint="std")
    return [out]


@translation("linalg_vector_norm")
def _vector_norm(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    ord_ = kwargs.get("ord", 2)
    dims = _dims(kwargs, x.ndim)
    keep = int(bool(kwargs.get("keepdim", False)))
    axes = g.ints(dims, "axes")
    xn = _input(ctx, x, outs[0].dtype)
    if ord_ == 2:
        return [g.node("ReduceL2", [xn, axes], keepdims=keep, name_hint="norm")]
    if ord_ == 1:
        return [g.node("ReduceL1", [xn, axes], keepdims=keep, name_hint="norm")]
    if ord_ == math.inf:
        return [g.node("ReduceMax", [g.node("Abs", [xn]), axes], keepdims=keep,
                       name_hint="norm")]
    p = _input(ctx, float(ord_), outs[0].dtype)
    s = g.node("ReduceSum", [g.node("Pow", [g.node("Abs", [xn]), p]), axes], keepdims=keep)
    return [g.node("Pow", [s, _input(ctx, 1.0 / float(ord_), outs[0].dtype)],
                   name_hint="norm")]


# -- neural-network ops ----------------------------------------------------------------------

@translation("softmax", "log_softmax", "_softmax", "_log_softmax")
def _softmax(ctx, args, kwargs, outs):
    x = args[0]
    dim = kwargs.get("dim", -1) % max(x.ndim, 1)
    op = "LogSoftmax" if "log" in ctx.op else "Softmax"
    g = ctx.g
    name = _input(ctx, x, outs[0].dtype)
    if g.opset < 13 and dim != x.ndim - 1:
        # before opset 13 these flatten everything after ``axis``: move the axis last
        perm = list(range(x.ndim))
        perm[dim], perm[-1] = perm[-1], perm[dim]
        t = g.node(op, [g.node("Transpose", [name], perm=perm)], axis=x.ndim - 1)
        return [g.node("Transpose", [t], perm=perm, name_hint=ctx.op.lstrip("_"))]
    return [g.node(op, [name], axis=dim, name_hint=ctx.op.lstrip("_"))]


@translation("linear")
def _linear(ctx, args, kwargs, outs):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    g = ctx.g
    if x.ndim == 2 and w.ndim == 2:
        inputs = [ctx.name(x), ctx.name(w)] + ([ctx.name(b)] if b is not None else [])
        return [g.node("Gemm", inputs, alpha=1.0, beta=1.0, transA=0, transB=1,
                       name_hint="linear")]
    wt = g.node("Transpose", [ctx.name(w)], perm=list(range(w.ndim))[::-1])
    y = g.node("MatMul", [ctx.name(x), wt], name_hint="linear" if b is None else "matmul")
    if b is not None:
        y = g.node("Add", [y, ctx.name(b)], name_hint="linear")
    return [y]


@translation("matmul", "mm", "bmm")
def _matmul(ctx, args, kwargs, outs):
    return [ctx.g.node("MatMul", [ctx.name(args[0]), ctx.name(args[1])], name_hint=ctx.op)]


@translation("addmm", "baddbmm", "addbmm")
def _addmm(ctx, args, kwargs, outs):
    c, a, b = args[:3]
    g = ctx.g
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    dtype = outs[0].dtype
    if ctx.op == "addmm" and a.ndim == 2 and b.ndim == 2:
        return [g.node("Gemm", [ctx.name(a), ctx.name(b), ctx.name(c)], alpha=float(alpha),
                       beta=float(beta), name_hint="addmm")]
    prod = g.node("MatMul", [ctx.name(a), ctx.name(b)])
    if ctx.op == "addbmm":
        prod = g.node("ReduceSum", [prod, g.ints([0], "axes")], keepdims=0)
    if alpha != 1:
        prod = g.node("Mul", [prod, _input(ctx, alpha, dtype)])
    cn = ctx.name(c)
    if beta != 1:
        cn = g.node("Mul", [cn, _input(ctx, beta, dtype)])
    return [g.node("Add", [cn, prod], name_hint=ctx.op)]


def _conv_attrs(kwargs, nd):
    stride = list(kwargs.get("stride", (1,) * nd))
    padding = kwargs.get("padding", (0,) * nd)
    dilation = list(kwargs.get("dilation", (1,) * nd))
    if isinstance(padding, str):
        raise _error("ONNX export of string padding is not supported by ember's exporter")
    padding = list(padding)
    return stride, padding + padding, dilation


@translation("convolution")
def _conv(ctx, args, kwargs, outs):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    nd = w.ndim - 2
    stride, pads, dilation = _conv_attrs(kwargs, nd)
    if kwargs.get("transposed"):
        raise _error("ONNX export of this transposed convolution form is not supported")
    inputs = [ctx.name(x), ctx.name(w)] + ([ctx.name(b)] if b is not None else [])
    return [ctx.g.node("Conv", inputs, strides=stride, pads=pads, dilations=dilation,
                       group=int(kwargs.get("groups", 1)),
                       kernel_shape=list(w.shape[2:]), name_hint="convolution")]


@translation("convolution_input_grad")
def _conv_transpose(ctx, args, kwargs, outs):
    # a transposed convolution is the input gradient of a convolution (ember's ConvTranspose)
    x, w = args[0], args[1]
    nd = w.ndim - 2
    stride, pads, dilation = _conv_attrs(kwargs, nd)
    out_spatial = list(kwargs["input_shape"][2:])
    return [ctx.g.node("ConvTranspose", [ctx.name(x), ctx.name(w)], strides=stride,
                       pads=pads, dilations=dilation, group=int(kwargs.get("groups", 1)),
                       kernel_shape=list(w.shape[2:]), output_shape=out_spatial,
                       name_hint="conv_transpose")]


@translation("native_batch_norm", "batch_norm")
def _batch_norm(ctx, args, kwargs, outs):
    x, weight, bias, mean, var = (list(args) + [None] * 5)[:5]
    g = ctx.g
    if kwargs.get("training"):
        raise _error("ONNX export of batch_norm in training mode is not supported: export "
                     "with model.eval() (training=TrainingMode.EVAL)")
    c = x.shape[1]
    dtype = x.dtype
    ones, zeros = np.ones(c, _np_dtype(dtype)), np.zeros(c, _np_dtype(dtype))
    names = [ctx.name(x),
             ctx.name(weight) if weight is not None else g.const(ones, "weight"),
             ctx.name(bias) if bias is not None else g.const(zeros, "bias"),
             ctx.name(mean) if mean is not None else g.const(zeros, "running_mean"),
             ctx.name(var) if var is not None else g.const(ones, "running_var")]
    y = g.node("BatchNormalization", names, epsilon=float(kwargs.get("eps", 1e-5)),
               name_hint="batch_norm")
    return [y] + [ctx.unused() for _ in outs[1:]]


@translation("native_layer_norm", "layer_norm")
def _layer_norm(ctx, args, kwargs, outs):
    x, weight, bias = (list(args) + [None] * 3)[:3]
    g = ctx.g
    nd = kwargs.get("ndim", 1)
    norm_shape = x.shape[x.ndim - nd:]
    dtype = x.dtype
    scale = ctx.name(weight) if weight is not None else \
        g.const(np.ones(norm_shape, _np_dtype(dtype)), "weight")
    inputs = [ctx.name(x), scale] + ([ctx.name(bias)] if bias is not None else [])
    y = g.node("LayerNormalization", inputs, axis=-nd, epsilon=float(kwargs.get("eps", 1e-5)),
               name_hint="layer_norm")
    return [y] + [ctx.unused() for _ in outs[1:]]


@translation("rms_norm")
def _rms_norm(ctx, args, kwargs, outs):
    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs.get("weight")
    g = ctx.g
    dtype = outs[0].dtype
    nd = kwargs.get("ndim", 1 if weight is None else weight.ndim)
    eps = kwargs.get("eps")
    if eps is None:
        eps = float(np.finfo(_np_dtype(dtype)).eps)
    xn = ctx.name(x)
    axes = g.ints(list(range(x.ndim - nd, x.ndim)), "axes")
    ms = g.node("ReduceMean", [g.node("Mul", [xn, xn]), axes], keepdims=1)
    inv = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [ms, _input(ctx, eps, dtype)])])])
    y = g.node("Mul", [xn, inv], name_hint="rms_norm")
    if weight is not None:
        y = g.node("Mul", [y, ctx.name(weight)], name_hint="rms_norm")
    return [y]


def _pool_pads(kwargs, nd, x, kernel, stride, dilation=None):
    padding = list(kwargs.get("padding", (0,) * nd))
    pads = padding + padding
    if kwargs.get("ceil_mode"):
        return pads, 1
    return pads, 0


@translation("max_pool")
def _max_pool(ctx, args, kwargs, outs):
    x = args[0]
    kernel = list(kwargs["kernel_size"])
    nd = len(kernel)
    stride = list(kwargs.get("stride") or kernel)
    dilation = list(kwargs.get("dilation", (1,) * nd))
    pads, ceil = _pool_pads(kwargs, nd, x, kernel, stride)
    values = ctx.g.node("MaxPool", [ctx.name(x)], kernel_shape=kernel, strides=stride,
                        pads=pads, dilations=dilation, ceil_mode=ceil, name_hint="max_pool")
    # the indices are written only if something uses them (NOTE [ ONNX translations ])
    return [values] + [ctx.unused() for _ in outs[1:]]


@translation("avg_pool")
def _avg_pool(ctx, args, kwargs, outs):
    x = args[0]
    kernel = list(kwargs["kernel_size"])
    nd = len(kernel)
    stride = list(kwargs.get("stride") or kernel)
    pads, ceil = _pool_pads(kwargs, nd, x, kernel, stride)
    if kwargs.get("divisor_override"):
        raise _error("ONNX export of avg_pool with divisor_override is not supported")
    return [ctx.g.node("AveragePool", [ctx.name(x)], kernel_shape=kernel, strides=stride,
                       pads=pads, ceil_mode=ceil,
                       count_include_pad=int(bool(kwargs.get("count_include_pad", True))),
                       name_hint="avg_pool")]


@translation("adaptive_avg_pool", "adaptive_max_pool")
def _adaptive_pool(ctx, args, kwargs, outs):
    x = args[0]
    size = list(kwargs["output_size"])
    spatial = list(x.shape[x.ndim - len(size):])
    is_max = ctx.op == "adaptive_max_pool"
    if all(s == 1 for s in size):
        return [ctx.g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [ctx.name(x)],
                           name_hint=ctx.op)] + [ctx.unused() for _ in outs[1:]]
    if any(i % o for i, o in zip(spatial, size)):
        raise _error(f"ONNX export of {ctx.op} from {spatial} to {size} is not supported: "
                     f"the input size must be a multiple of the output size")
    kernel = [i // o for i, o in zip(spatial, size)]
    op = "MaxPool" if is_max else "AveragePool"
    return [ctx.g.node(op, [ctx.name(x)], kernel_shape=kernel, strides=kernel,
                       name_hint=ctx.op)] + [ctx.unused() for _ in outs[1:]]


@translation("scaled_dot_product_attention")
def _sdpa(ctx, args, kwargs, outs):
    q, k, v = args[:3]
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    g = ctx.g
    dtype = outs[0].dtype
    scale = kwargs.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    perm = list(range(k.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    kt = g.node("Transpose", [ctx.name(k)], perm=perm)
    scores = g.node("Mul", [g.node("MatMul", [ctx.name(q), kt]), _input(ctx, scale, dtype)])
    if kwargs.get("is_causal"):
        n, m = q.shape[-2], k.shape[-2]
        mask = Value(None, (n, m), _dt.bool_, np.tril(np.ones((n, m), bool)))
    if mask is not None:
        if mask.dtype == _dt.bool_:
            neg = _input(ctx, -np.inf, dtype)
            scores = g.node("Where", [ctx.name(mask), scores, neg])
        else:
            scores = g.node("Add", [scores, _input(ctx, mask, dtype)])
    if kwargs.get("dropout_p"):
        raise _error("ONNX export of scaled_dot_product_attention with dropout is not "
                     "supported: export in eval mode")
    attn = g.node("Softmax", [scores], axis=-1)
    return [g.node("MatMul", [attn, ctx.name(v)], name_hint="scaled_dot_product_attention")]


@translation("lstm_layer")
def _lstm_layer(ctx, args, kwargs, outs):
    # ember's fused layer op: (x (T, B, I), w_ih, b_ih + b_hh, h0, c0, w_hh, w_hr, table,
    # indices) -> (outputs, h_n, c_n, saved...) (NOTE [ Fused LSTM layer ] in nn_rnn.py)
    x, w_ih, b, h0, c0, w_hh = args[:6]
    extra = args[6:9]
    g = ctx.g
    if any(a is not None for a in extra):
        raise _error("ONNX export of an LSTM with projections (proj_size) or a folded "
                     "embedding lookup is not supported by ember's exporter")
    hidden = h0.shape[-1]

    def reorder(name):
        # ember's (and PyTorch's) gate order i, f, g, o -> ONNX's i, o, f, c
        i, f, c, o = g.node("Split", [name, g.ints([hidden] * 4, "split")], outputs=4, axis=0)
        return g.node("Concat", [i, o, f, c], axis=0)

    axes0 = g.ints([0], "axes")
    w = g.node("Unsqueeze", [reorder(ctx.name(w_ih)), axes0])
    r = g.node("Unsqueeze", [reorder(ctx.name(w_hh)), axes0])
    dtype = x.dtype
    bi = reorder(ctx.name(b)) if b is not None else \
        g.const(np.zeros(4 * hidden, _np_dtype(dtype)), "bias")
    zeros = g.const(np.zeros(4 * hidden, _np_dtype(dtype)), "bias")
    bias = g.node("Unsqueeze", [g.node("Concat", [bi, zeros], axis=0), axes0])
    h = g.node("Unsqueeze", [ctx.name(h0), axes0])
    c = g.node("Unsqueeze", [ctx.name(c0), axes0])
    direction = "reverse" if kwargs.get("reverse") else "forward"
    y, yh, yc = g.node("LSTM", [ctx.name(x), w, r, bias, "", h, c], outputs=3,
                       hidden_size=hidden, direction=direction, name_hint="lstm")
    y = g.node("Squeeze", [y, g.ints([1], "axes")], name_hint="lstm")
    yh = g.node("Squeeze", [yh, axes0], name_hint="lstm_h")
    yc = g.node("Squeeze", [yc, axes0], name_hint="lstm_c")
    return [y, yh, yc] + [ctx.unused() for _ in outs[3:]]


@translation("hardtanh")
def _hardtanh(ctx, args, kwargs, outs):
    lo = kwargs.get("min_val", args[1] if len(args) > 1 else -1.0)
    hi = kwargs.get("max_val", args[2] if len(args) > 2 else 1.0)
    dtype = outs[0].dtype
    return [ctx.g.node("Clip", [ctx.name(args[0]), _input(ctx, lo, dtype),
                                _input(ctx, hi, dtype)], name_hint="hardtanh")]


@translation("threshold")
def _threshold(ctx, args, kwargs, outs):
    x = args[0]
    th = kwargs.get("threshold", args[1] if len(args) > 1 else None)
    value = kwargs.get("value", args[2] if len(args) > 2 else None)
    dtype = outs[0].dtype
    g = ctx.g
    cond = g.node("Greater", [ctx.name(x), _input(ctx, th, dtype)])
    return [g.node("Where", [cond, ctx.name(x), _input(ctx, value, dtype)],
                   name_hint="threshold")]


@translation("fill_", "zero_", "full_like", "zeros_like", "ones_like", "empty_like")
def _fill(ctx, args, kwargs, outs):
    out = outs[0]
    if ctx.op == "empty_like":
        value = 0
    elif ctx.op in ("zero_", "zeros_like"):
        value = 0
    elif ctx.op == "ones_like":
        value = 1
    else:
        value = args[1] if len(args) > 1 else kwargs.get("fill_value", kwargs.get("value"))
    g = ctx.g
    shape = g.node("Shape", [ctx.name(args[0])])
    filled = np.asarray([value], dtype=_np_dtype(out.dtype))
    from onnx import numpy_helper

    return [g.node("ConstantOfShape", [shape], value=numpy_helper.from_array(filled),
                   name_hint=ctx.op.rstrip("_"))]
