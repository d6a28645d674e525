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


for _name, _onnx in {"mul": "Mul", "div": "Div", "pow": "Pow",
                     "maximum": "Max", "minimum": "Min", "logical_and": "And",
                     "logical_or": "Or", "logical_xor": "Xor"}.items():
    TRANSLATIONS[_name] = _elementwise(_onnx)
    TRANSLATIONS[_name + "_"] = TRANSLATIONS[_name]


@translation("add", "sub", "add_", "sub_")
def _add_sub(ctx, args, kwargs, outs):
    # ``alpha`` reaches the op as a param where the kernel fuses it (NOTE [ Fused
    # multiply-add as PyTorch's kernels ]): ONNX scales ``other`` first
    alpha = kwargs.get("alpha", 1)
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    if alpha != 1:
        b = ctx.g.node("Mul", [b, _input(ctx, alpha, dtype)])
    return [ctx.g.node("Add" if ctx.op.startswith("add") else "Sub", [a, b],
                       name_hint=ctx.hint)]


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
                     "cosh": "Cosh", "softsign": "Softsign"}.items():
    TRANSLATIONS[_name] = _unary(_onnx)
    TRANSLATIONS[_name + "_"] = TRANSLATIONS[_name]


# -- the activations that are one op each (ember/_ops/nn_activations.py): ONNX's own op where
# the opset has it with the same parameters, else their definition in basic ops


def _softplus_of(ctx, x, dtype):
    # log(1 + exp(x)) (ONNX's Softplus, every opset)
    return ctx.g.node("Softplus", [x])


@translation("leaky_relu")
def _leaky_relu(ctx, args, kwargs, outs):
    return [ctx.g.node("LeakyRelu", [_input(ctx, args[0], outs[0].dtype)],
                       alpha=float(kwargs["negative_slope"]), name_hint=ctx.hint)]


@translation("hardtanh")
def _hardtanh(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    return [ctx.g.node("Clip", [_input(ctx, args[0], dtype), _input(ctx, kwargs["min_val"], dtype),
                                _input(ctx, kwargs["max_val"], dtype)], name_hint=ctx.hint)]


@translation("elu")
def _elu(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    x = _input(ctx, args[0], dtype)
    alpha, scale, input_scale = kwargs["alpha"], kwargs["scale"], kwargs["input_scale"]
    if scale == 1.0 and input_scale == 1.0:
        return [ctx.g.node("Elu", [x], alpha=float(alpha), name_hint=ctx.hint)]
    if input_scale == 1.0:
        return [ctx.g.node("Selu", [x], alpha=float(alpha), gamma=float(scale),
                           name_hint=ctx.hint)]
    # scale * where(x > 0, x, alpha * (exp(x * input_scale) - 1)) (celu)
    g = ctx.g
    neg = g.node("Mul", [g.node("Sub", [g.node("Exp", [g.node("Mul", [x, _input(
        ctx, input_scale, dtype)])]), _input(ctx, 1, dtype)]), _input(ctx, alpha, dtype)])
    pos = g.node("Greater", [x, _input(ctx, 0, dtype)])
    y = g.node("Where", [pos, x, neg])
    return [g.node("Mul", [y, _input(ctx, scale, dtype)], name_hint=ctx.hint)]


@translation("hardsigmoid")
def _hardsigmoid(ctx, args, kwargs, outs):
    return [ctx.g.node("HardSigmoid", [_input(ctx, args[0], outs[0].dtype)], alpha=1.0 / 6,
                       beta=0.5, name_hint=ctx.hint)]


@translation("hardswish")
def _hardswish(ctx, args, kwargs, outs):
    x = _input(ctx, args[0], outs[0].dtype)
    if ctx.g.opset >= 14:
        return [ctx.g.node("HardSwish", [x], name_hint=ctx.hint)]
    hs = ctx.g.node("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)
    return [ctx.g.node("Mul", [x, hs], name_hint=ctx.hint)]


@translation("softplus")
def _softplus(ctx, args, kwargs, outs):
    # where(beta x > threshold, x, softplus(beta x) / beta)
    dtype = outs[0].dtype
    g = ctx.g
    x = _input(ctx, args[0], dtype)
    beta, threshold = kwargs["beta"], kwargs["threshold"]
    bx = x if beta == 1.0 else g.node("Mul", [x, _input(ctx, beta, dtype)])
    sp = _softplus_of(ctx, bx, dtype)
    if beta != 1.0:
        sp = g.node("Div", [sp, _input(ctx, beta, dtype)])
    over = g.node("Greater", [bx, _input(ctx, threshold, dtype)])
    return [g.node("Where", [over, x, sp], name_hint=ctx.hint)]


@translation("log_sigmoid")
def _log_sigmoid(ctx, args, kwargs, outs):
    # -softplus(-x)
    g = ctx.g
    x = _input(ctx, args[0], outs[0].dtype)
    return [g.node("Neg", [_softplus_of(ctx, g.node("Neg", [x]), outs[0].dtype)],
                   name_hint=ctx.hint)]


@translation("mish")
def _mish(ctx, args, kwargs, outs):
    g = ctx.g
    x = _input(ctx, args[0], outs[0].dtype)
    if g.opset >= 18:
        return [g.node("Mish", [x], name_hint=ctx.hint)]
    t = g.node("Tanh", [_softplus_of(ctx, x, outs[0].dtype)])
    return [g.node("Mul", [x, t], name_hint=ctx.hint)]


@translation("prelu")
def _prelu(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    return [ctx.g.node("PRelu", [_input(ctx, args[0], dtype), _input(ctx, args[1], dtype)],
                       name_hint=ctx.hint)]


@translation("hardshrink", "softshrink")
def _shrink(ctx, args, kwargs, outs):
    # ONNX's Shrink: x - bias above lambd, x + bias below -lambd, 0 between
    lambd = float(kwargs["lambd"])
    bias = lambd if ctx.op == "softshrink" else 0.0
    return [ctx.g.node("Shrink", [_input(ctx, args[0], outs[0].dtype)], lambd=lambd,
                       bias=bias, name_hint=ctx.hint)]


@translation("glu")
def _glu(ctx, args, kwargs, outs):
    x = args[0]
    dim = kwargs["dim"] % x.ndim
    half = x.shape[dim] // 2
    g = ctx.g
    a, b = g.node("Split", [ctx.name(x), g.ints([half, half], "split")], outputs=2, axis=dim)
    return [g.node("Mul", [a, g.node("Sigmoid", [b])], name_hint=ctx.hint)]


# -- the element-wise losses that are one op each (ember/_ops/nn_loss.py): the per-element
# formula, then the reduction


def _loss_reduced(ctx, loss, reduction, ndim):
    g = ctx.g
    if reduction == "none":
        return g.node("Identity", [loss], name_hint=ctx.hint)
    op = "ReduceSum" if reduction == "sum" else "ReduceMean"
    if ndim == 0:
        return g.node("Identity", [loss], name_hint=ctx.hint)
    return g.node(op, [loss, g.ints(list(range(ndim)), "axes")], keepdims=0,
                  name_hint=ctx.hint)


@translation("smooth_l1_loss", "huber_loss")
def _smooth_loss(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    g = ctx.g
    x, t = (_input(ctx, a, dtype) for a in args[:2])
    d = g.node("Abs", [g.node("Sub", [x, t])])
    sq = g.node("Mul", [d, d])
    if ctx.op == "smooth_l1_loss":
        width = kwargs["beta"]
        inner = g.node("Mul", [sq, _input(ctx, 0.5 / width, dtype)])
        outer = g.node("Sub", [d, _input(ctx, 0.5 * width, dtype)])
    else:
        width = kwargs["delta"]
        inner = g.node("Mul", [sq, _input(ctx, 0.5, dtype)])
        outer = g.node("Mul", [g.node("Sub", [d, _input(ctx, 0.5 * width, dtype)]),
                               _input(ctx, width, dtype)])
    loss = g.node("Where", [g.node("Less", [d, _input(ctx, width, dtype)]), inner, outer])
    return [_loss_reduced(ctx, loss, kwargs["reduction"], args[0].ndim)]


@translation("soft_margin_loss")
def _soft_margin_loss(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    g = ctx.g
    x, t = (_input(ctx, a, dtype) for a in args[:2])
    loss = _softplus_of(ctx, g.node("Neg", [g.node("Mul", [t, x])]), dtype)
    return [_loss_reduced(ctx, loss, kwargs["reduction"], args[0].ndim)]


@translation("binary_cross_entropy")
def _binary_cross_entropy(ctx, args, kwargs, outs):
    # -(t max(log x, -100) + (1 - t) max(log(1 - x), -100)), times the weight
    dtype = outs[0].dtype
    g = ctx.g
    x, t = (_input(ctx, a, dtype) for a in args[:2])
    one, floor = _input(ctx, 1, dtype), _input(ctx, -100, dtype)
    log_x = g.node("Max", [g.node("Log", [x]), floor])
    log_1mx = g.node("Max", [g.node("Log", [g.node("Sub", [one, x])]), floor])
    pos = g.node("Mul", [t, log_x])
    neg = g.node("Mul", [g.node("Sub", [one, t]), log_1mx])
    loss = g.node("Neg", [g.node("Add", [pos, neg])])
    if len(args) > 2 and args[2] is not None:
        loss = g.node("Mul", [loss, _input(ctx, args[2], dtype)])
    return [_loss_reduced(ctx, loss, kwargs["reduction"], args[0].ndim)]


@translation("binary_cross_entropy_with_logits")
def _bce_with_logits(ctx, args, kwargs, outs):
    # (1 - t) x - l log sigmoid(x), l = (pos_weight - 1) t + 1, log sigmoid(x) =
    # -softplus(-x); times the weight
    dtype = outs[0].dtype
    g = ctx.g
    x, t = (_input(ctx, a, dtype) for a in args[:2])
    weight = args[2] if len(args) > 2 else None
    pos_weight = args[3] if len(args) > 3 else None
    one = _input(ctx, 1, dtype)
    neg_log_sig = _softplus_of(ctx, g.node("Neg", [x]), dtype)
    if pos_weight is not None:
        lw = g.node("Add", [g.node("Mul", [g.node("Sub", [_input(ctx, pos_weight, dtype), one]),
                                           t]), one])
        neg_log_sig = g.node("Mul", [neg_log_sig, lw])
    loss = g.node("Add", [g.node("Mul", [g.node("Sub", [one, t]), x]), neg_log_sig])
    if weight is not None:
        loss = g.node("Mul", [loss, _input(ctx, weight, dtype)])
    return [_loss_reduced(ctx, loss, kwargs["reduction"], args[0].ndim)]


@translation("logical_not", "bitwise_not")
def _not(ctx, args, kwargs, outs):
    if outs[0].dtype == _dt.bool_:
        return [ctx.g.node("Not", [_input(ctx, args[0], _dt.bool_)], name_hint=ctx.hint)]
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
    if isinstance(lo, Value) and lo.ndim or isinstance(hi, Value) and hi.ndim:
        y = _input(ctx, args[0], dtype)  # Clip takes scalar bounds: tensors need Max/Min
        if lo is not None:
            y = ctx.g.node("Max", [y, _input(ctx, lo, dtype)])
        if hi is not None:
            y = ctx.g.node("Min", [y, _input(ctx, hi, dtype)])
        return [ctx.g.node("Identity", [y], name_hint="clamp")]
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
    if x.ndim < 2:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint="permute")]
    perm = [d % x.ndim for d in dims]
    return [ctx.g.node("Transpose", [ctx.name(x)], perm=perm, name_hint="permute")]


@translation("transpose", "transpose_", "swapaxes", "swapdims")
def _transpose(ctx, args, kwargs, outs):
    x = args[0]
    if x.ndim < 2:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint="transpose")]
    d0 = kwargs.get("dim0", args[1] if len(args) > 1 else None) % max(x.ndim, 1)
    d1 = kwargs.get("dim1", args[2] if len(args) > 2 else None) % max(x.ndim, 1)
    perm = list(range(x.ndim))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return [ctx.g.node("Transpose", [ctx.name(x)], perm=perm, name_hint="transpose")]


@translation("t", "numpy_T", "mT")
def _t(ctx, args, kwargs, outs):
    x = args[0]
    if x.ndim < 2:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint="t")]
    perm = list(range(x.ndim))
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
    iname = _input(ctx, index, _dt.int64)
    if index.ndim == 0:  # a 0-d index keeps the dimension (size 1)
        iname = _reshape(ctx, Value(iname, (), _dt.int64), (1,), "index")
    if x.ndim == 0:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint="index_select")]
    return [ctx.g.node("Gather", [ctx.name(x), iname], axis=dim, name_hint="index_select")]


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
    if x.ndim == 0:
        return [ctx.g.node("Identity", [_input(ctx, x, outs[0].dtype)], name_hint="cumsum")]
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
    if x.ndim == 0:
        zero = g.const(np.asarray(0, np.int64), "indices")
        return [g.node("Identity", [ctx.name(x)], name_hint=ctx.op.split(".")[0]),
                g.node("Identity", [zero], name_hint="indices")]
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
    c = x.shape[1]
    if kwargs.get("training") or mean is None:
        # batch statistics (a functional call with training=True, or no running stats)
        return [_batch_stats_norm(ctx, x, weight, bias, float(kwargs.get("eps", 1e-5)))] + \
            [ctx.unused() for _ in outs[1:]]
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


def _batch_stats_norm(ctx, x, weight, bias, eps):
    g = ctx.g
    dtype = x.dtype
    xn = ctx.name(x)
    axes = g.ints([0] + list(range(2, x.ndim)), "axes")
    mean = g.node("ReduceMean", [xn, axes], keepdims=1)
    d = g.node("Sub", [xn, mean])
    var = g.node("ReduceMean", [g.node("Mul", [d, d]), axes], keepdims=1)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, _scalar(ctx, eps, dtype)])])])
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if weight is not None:
        y = g.node("Mul", [y, _reshape(ctx, weight, tuple(shape), "weight")])
    if bias is not None:
        y = g.node("Add", [y, _reshape(ctx, bias, tuple(shape), "bias")])
    return g.node("Identity", [y], name_hint="batch_norm")


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
    # ember's fused layer op: (x (T, B, I), w_ih, b_ih, h0, c0, w_hh, w_hr, table, indices,
    # b_hh) -> (outputs, h_n, c_n, saved...) (NOTE [ Fused LSTM layer ] in nn_rnn.py)
    x, w_ih, b, h0, c0, w_hh = args[:6]
    b_hh = args[9] if len(args) > 9 else None
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
    bh = reorder(ctx.name(b_hh)) if b_hh is not None else \
        g.const(np.zeros(4 * hidden, _np_dtype(dtype)), "bias")
    bias = g.node("Unsqueeze", [g.node("Concat", [bi, bh], axis=0), axes0])
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


# -- more element-wise maths ------------------------------------------------------------------

for _name, _onnx in {"asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh"}.items():
    TRANSLATIONS[_name] = _unary(_onnx)


def _scalar(ctx, value, dtype):
    return _input(ctx, value, dtype)


@translation("trunc", "fix")
def _trunc(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    x = _input(ctx, args[0], dtype)
    if not dtype.is_floating_point:
        return [g.node("Identity", [x], name_hint="trunc")]
    neg = g.node("Less", [x, _scalar(ctx, 0, dtype)])
    return [g.node("Where", [neg, g.node("Ceil", [x]), g.node("Floor", [x])],
                   name_hint="trunc")]


@translation("div_trunc")
def _div_trunc(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    q = g.node("Div", [_input(ctx, args[0], dtype), _input(ctx, args[1], dtype)])
    if not dtype.is_floating_point:
        return [q]
    neg = g.node("Less", [q, _scalar(ctx, 0, dtype)])
    return [g.node("Where", [neg, g.node("Ceil", [q]), g.node("Floor", [q])],
                   name_hint="div")]


@translation("remainder", "fmod")
def _remainder(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    if dtype.is_floating_point:
        if ctx.op == "fmod":
            return [g.node("Mod", [a, b], fmod=1, name_hint="fmod")]
        q = g.node("Floor", [g.node("Div", [a, b])])
        return [g.node("Sub", [a, g.node("Mul", [q, b])], name_hint="remainder")]
    return [g.node("Mod", [a, b], fmod=int(ctx.op == "fmod"), name_hint=ctx.op)]


@translation("atan2", "arctan2")
def _atan2(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    y, x = (_input(ctx, a, dtype) for a in args[:2])
    zero, pi = _scalar(ctx, 0, dtype), _scalar(ctx, math.pi, dtype)
    base = g.node("Atan", [g.node("Div", [y, x])])
    x_neg = g.node("Less", [x, zero])
    y_neg = g.node("Less", [y, zero])
    shift = g.node("Where", [y_neg, g.node("Neg", [pi]), pi])
    out = g.node("Where", [x_neg, g.node("Add", [base, shift]), base])
    # x == 0: +-pi/2 by the sign of y (0 when y is 0 too)
    half = _scalar(ctx, math.pi / 2, dtype)
    x_zero = g.node("Equal", [x, zero])
    axis = g.node("Mul", [g.node("Sign", [y]), half])
    return [g.node("Where", [x_zero, axis, out], name_hint="atan2")]


@translation("exp2")
def _exp2(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    return [ctx.g.node("Pow", [_scalar(ctx, 2.0, dtype), _input(ctx, args[0], dtype)],
                       name_hint="exp2")]


@translation("log2", "log10")
def _log_base(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    base = 2.0 if ctx.op == "log2" else 10.0
    ln = ctx.g.node("Log", [_input(ctx, args[0], dtype)])
    return [ctx.g.node("Div", [ln, _scalar(ctx, math.log(base), dtype)], name_hint=ctx.op)]


@translation("erfc")
def _erfc(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    e = ctx.g.node("Erf", [_input(ctx, args[0], dtype)])
    return [ctx.g.node("Sub", [_scalar(ctx, 1.0, dtype), e], name_hint="erfc")]


@translation("square")
def _square(ctx, args, kwargs, outs):
    x = _input(ctx, args[0], outs[0].dtype)
    return [ctx.g.node("Mul", [x, x], name_hint="square")]


@translation("deg2rad", "rad2deg")
def _angle_units(ctx, args, kwargs, outs):
    dtype = outs[0].dtype
    k = math.pi / 180 if ctx.op == "deg2rad" else 180 / math.pi
    return [ctx.g.node("Mul", [_input(ctx, args[0], dtype), _scalar(ctx, k, dtype)],
                       name_hint=ctx.op)]


@translation("sinc")
def _sinc(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    x = _input(ctx, args[0], dtype)
    px = g.node("Mul", [x, _scalar(ctx, math.pi, dtype)])
    ratio = g.node("Div", [g.node("Sin", [px]), px])
    zero = g.node("Equal", [x, _scalar(ctx, 0, dtype)])
    return [g.node("Where", [zero, _scalar(ctx, 1.0, dtype), ratio], name_hint="sinc")]


@translation("logit")
def _logit(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    x = _input(ctx, args[0], dtype)
    eps = kwargs.get("eps")
    if eps is not None:
        x = g.node("Clip", [x, _scalar(ctx, eps, dtype), _scalar(ctx, 1 - eps, dtype)])
    ratio = g.node("Div", [x, g.node("Sub", [_scalar(ctx, 1.0, dtype), x])])
    return [g.node("Log", [ratio], name_hint="logit")]


@translation("all", "any")
def _all(ctx, args, kwargs, outs):
    g = ctx.g
    x = args[0]
    is_all = kwargs.get("is_all", ctx.op == "all")
    as_int = g.node("Cast", [g.node("Cast", [ctx.name(x)], to=onnx_type(_dt.bool_))],
                    to=onnx_type(_dt.int32))
    dims = _dims(kwargs, x.ndim)
    keep = int(bool(kwargs.get("keepdim", False)))
    if dims:
        red = g.node("ReduceMin" if is_all else "ReduceMax", [as_int, g.ints(dims, "axes")],
                     keepdims=keep)
    else:
        red = as_int
    return [g.node("Cast", [red], to=onnx_type(outs[0].dtype), name_hint=ctx.op)]


# -- gathers and scatters -------------------------------------------------------------------

@translation("gather", "take_along_dim")
def _gather(ctx, args, kwargs, outs):
    x, index = args[0], args[1]
    dim = kwargs.get("dim")
    g = ctx.g
    name, iname = ctx.name(x), _input(ctx, index, _dt.int64)
    if dim is None:  # take_along_dim without dim: both flattened
        name = _reshape(ctx, x, (int(np.prod(x.shape)),), "flatten")
        dim = 0
    dim = dim % max(x.ndim, 1)
    if ctx.op == "take_along_dim" and tuple(index.shape) != tuple(outs[0].shape):
        target = list(outs[0].shape)
        shape_x = list(target)
        shape_x[dim] = x.shape[dim]
        name = g.node("Expand", [name, g.ints(shape_x, "shape")])
        iname = g.node("Expand", [iname, g.ints(target, "shape")])
    return [g.node("GatherElements", [name, iname], axis=dim, name_hint=ctx.op)]


@translation("take")
def _take(ctx, args, kwargs, outs):
    x, index = args[0], args[1]
    flat = _reshape(ctx, x, (int(np.prod(x.shape)),), "flatten")
    return [ctx.g.node("Gather", [flat, _input(ctx, index, _dt.int64)], axis=0,
                       name_hint="take")]


_SCATTER_REDUCTIONS = {None: "none", "add": "add", "sum": "add", "multiply": "mul",
                       "prod": "mul", "amax": "max", "amin": "min"}


@translation("scatter", "scatter_add", "scatter_reduce", "scatter_", "scatter_add_",
             "scatter_reduce_")
def _scatter(ctx, args, kwargs, outs):
    x, index = args[0], args[1]
    src = args[2] if len(args) > 2 else None
    g = ctx.g
    dtype = outs[0].dtype
    dim = kwargs.get("dim", 0) % max(x.ndim, 1)
    reduce = kwargs.get("reduce")
    if reduce not in _SCATTER_REDUCTIONS or not kwargs.get("include_self", True):
        raise _error(f"ONNX export of {ctx.op} with reduce={reduce!r} and include_self="
                     f"{kwargs.get('include_self', True)} is not supported")
    if src is None:
        src_name = g.node("Expand", [_input(ctx, kwargs.get("value"), dtype),
                                     g.ints(index.shape, "shape")])
    elif tuple(src.shape) != tuple(index.shape):
        src_name = _slice(ctx, _input(ctx, src, dtype), list(range(index.ndim)),
                          [0] * index.ndim, list(index.shape), [1] * index.ndim, "src")
    else:
        src_name = _input(ctx, src, dtype)
    reduction = _SCATTER_REDUCTIONS[reduce]
    if reduction in ("max", "min") and g.opset < 18 or reduction != "none" and g.opset < 16:
        raise _error(f"ONNX export of {ctx.op} with reduce={reduce!r} needs opset "
                     f"{18 if reduction in ('max', 'min') else 16} or later")
    attrs = {"reduction": reduction} if reduction != "none" else {}
    return [g.node("ScatterElements", [_input(ctx, x, dtype), _input(ctx, index, _dt.int64),
                                       src_name], axis=dim, name_hint=ctx.op.rstrip("_"),
                   **attrs)]


def _index_grid(shape, key):
    """The (N, ndim) int64 coordinates ``x[key]`` selects in an array of ``shape``, and the
    shape of the selection (for writing ``x[key] = v`` as one ScatterND)."""
    positions = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    chosen = positions[key]
    coords = np.stack(np.unravel_index(np.asarray(chosen).reshape(-1), shape), axis=-1)
    return coords.astype(np.int64), np.asarray(chosen).shape


def _constant_key(key):
    """``key`` with Values replaced by their arrays, or None when an index is not constant."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if isinstance(k, Value):
            if not k.is_constant:
                return None
            out.append(k.array)
        else:
            out.append(k)
    return tuple(out)


@translation("setitem_", "index_put", "index_put_")
def _setitem(ctx, args, kwargs, outs):
    g = ctx.g
    x = args[0]
    dtype = outs[0].dtype
    if ctx.op == "setitem_":
        key, value = args[1], args[2]
        accumulate = False
    else:
        value, key = args[1], tuple(args[2:]) if len(args) > 2 else ()
        spec = kwargs.get("spec")
        if spec is not None:
            items, it = [], iter(key)
            for s in spec:
                items.append(next(it) if isinstance(s, str) or repr(s) == "<index tensor>"
                             else s)
            key = tuple(items)
        accumulate = bool(kwargs.get("accumulate", False))
    if isinstance(key, Value) and key.dtype == _dt.bool_ and not key.is_constant:
        # x[mask] = scalar value: a Where over the broadcast mask
        if isinstance(value, Value) and value.ndim > 0:
            raise _error("ONNX export of x[mask] = tensor is not supported (the values' "
                         "positions depend on the mask)")
        mask = ctx.name(key)
        if key.ndim < x.ndim:
            mask = g.node("Unsqueeze", [mask, g.ints(list(range(key.ndim, x.ndim)), "axes")])
        return [g.node("Where", [mask, _input(ctx, value, dtype), _input(ctx, x, dtype)],
                       name_hint="setitem")]
    const_key = _constant_key(key)
    if const_key is None:
        raise _error(f"ONNX export of {ctx.op} with indices computed from the inputs is not "
                     f"supported by ember's exporter")
    k = const_key[0] if len(const_key) == 1 else const_key
    try:
        coords, sel_shape = _index_grid(x.shape, k)
    except (IndexError, ValueError, TypeError) as err:
        raise _error(f"ONNX export of {ctx.op}: unsupported index {key!r}") from err
    updates = _input(ctx, value, dtype)
    if not isinstance(value, Value) or tuple(value.shape) != tuple(sel_shape):
        updates = g.node("Expand", [updates, g.ints(sel_shape, "shape")])
    n = coords.shape[0]
    updates = g.node("Reshape", [updates, g.ints([n], "shape")])
    attrs = {"reduction": "add"} if accumulate else {}
    if accumulate and g.opset < 16:
        raise _error("ONNX export of index_put with accumulate=True needs opset 16 or later")
    return [g.node("ScatterND", [_input(ctx, x, dtype), g.const(coords, "indices"), updates],
                   name_hint=ctx.op.rstrip("_"), **attrs)]


@translation("index_add", "index_add_")
def _index_add(ctx, args, kwargs, outs):
    x, index, src = args[:3]
    g = ctx.g
    dtype = outs[0].dtype
    dim = kwargs.get("dim", 0) % max(x.ndim, 1)
    if g.opset < 16:
        raise _error("ONNX export of index_add needs opset 16 or later")
    src_name = _input(ctx, src, dtype)
    alpha = kwargs.get("alpha", 1)
    if alpha != 1:
        src_name = g.node("Mul", [src_name, _scalar(ctx, alpha, dtype)])
    # the index along ``dim``, broadcast to src's shape
    shape = [1] * src.ndim
    shape[dim] = index.shape[0] if index.ndim else 1
    idx = _reshape(ctx, index, tuple(shape), "index") if index.ndim != src.ndim or \
        tuple(index.shape) != tuple(shape) else ctx.name(index)
    idx = g.node("Expand", [idx, g.ints(src.shape, "shape")])
    return [g.node("ScatterElements", [_input(ctx, x, dtype), idx, src_name], axis=dim,
                   reduction="add", name_hint="index_add")]


@translation("index_fill", "index_fill_")
def _index_fill(ctx, args, kwargs, outs):
    x, index = args[0], args[1]
    value = args[2] if len(args) > 2 and args[2] is not None else kwargs.get("value")
    g = ctx.g
    dtype = outs[0].dtype
    dim = kwargs.get("dim", 0) % max(x.ndim, 1)
    if not (isinstance(index, Value) and index.is_constant):
        raise _error("ONNX export of index_fill with indices computed from the inputs is not "
                     "supported by ember's exporter")
    mask = np.zeros(x.shape[dim], bool)
    mask[np.asarray(index.array).reshape(-1)] = True
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    return [g.node("Where", [g.const(mask.reshape(shape), "mask"), _input(ctx, value, dtype),
                             _input(ctx, x, dtype)], name_hint="index_fill")]


@translation("flip")
def _flip(ctx, args, kwargs, outs):
    x = args[0]
    dims = [d % x.ndim for d in kwargs.get("dims", ())]
    if not dims:
        return [ctx.g.node("Identity", [ctx.name(x)], name_hint="flip")]
    big = np.iinfo(np.int64).max
    return [_slice(ctx, ctx.name(x), dims, [-1] * len(dims), [-big] * len(dims),
                   [-1] * len(dims), "flip")]


@translation("roll")
def _roll(ctx, args, kwargs, outs):
    x = args[0]
    shifts = kwargs.get("shifts", args[1] if len(args) > 1 else None)
    dims = kwargs.get("dims", args[2] if len(args) > 2 else None)
    shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    g = ctx.g
    name = ctx.name(x)
    if dims is None or dims == ():
        name = _reshape(ctx, x, (int(np.prod(x.shape)),), "flatten")
        sizes, dims = [int(np.prod(x.shape))], [0]
    else:
        dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
        sizes = [x.shape[d % x.ndim] for d in dims]
        dims = [d % x.ndim for d in dims]
    for s, d, n in zip(shifts, dims, sizes):
        s = s % n if n else 0
        if s:
            tail = _slice(ctx, name, [d], [n - s], [n], [1])
            head = _slice(ctx, name, [d], [0], [n - s], [1])
            name = g.node("Concat", [tail, head], axis=d)
    if dims == [0] and len(sizes) == 1 and x.ndim != 1:
        name = g.node("Reshape", [name, g.ints(x.shape, "shape")])
    return [g.node("Identity", [name], name_hint="roll")]


@translation("sort", "topk")
def _sort(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dim = kwargs.get("dim", -1) % max(x.ndim, 1)
    if ctx.op == "sort":
        k = x.shape[dim]
        largest = bool(kwargs.get("descending", False))
    else:
        k = kwargs["k"]
        largest = bool(kwargs.get("largest", True))
    values, indices = g.node("TopK", [ctx.name(x), g.ints([k], "k")], outputs=2, axis=dim,
                             largest=int(largest), sorted=1, name_hint=ctx.op)
    return [values, indices]


@translation("diagonal")
def _diagonal(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    d1, d2 = kwargs["dim1"] % x.ndim, kwargs["dim2"] % x.ndim
    offset = kwargs.get("offset", 0)
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    perm = rest + [d1, d2]
    name = g.node("Transpose", [ctx.name(x)], perm=perm) if perm != list(range(x.ndim)) \
        else ctx.name(x)
    n, m = x.shape[d1], x.shape[d2]
    rows = np.arange(n)
    cols = rows + offset
    keep = (cols >= 0) & (cols < m)
    flat_index = (rows[keep] * m + cols[keep]).astype(np.int64)
    lead = [x.shape[d] for d in rest]
    flat = g.node("Reshape", [name, g.ints([0] * len(lead) + [n * m], "shape")])
    return [g.node("Gather", [flat, g.const(flat_index, "index")], axis=len(lead),
                   name_hint="diagonal")]


@translation("unfold")
def _unfold(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dim = kwargs["dimension"] % max(x.ndim, 1)
    size, step = kwargs["size"], kwargs["step"]
    n = (x.shape[dim] - size) // step + 1
    index = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).astype(np.int64)
    gathered = g.node("Gather", [ctx.name(x), g.const(index, "index")], axis=dim)
    # (..., n, size, ...) -> (..., n, ..., size): the window moves to the end
    nd = x.ndim + 1
    perm = [i for i in range(nd) if i != dim + 1] + [dim + 1]
    return [g.node("Transpose", [gathered], perm=perm, name_hint="unfold")]


@translation("outer", "ger")
def _outer(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    a = g.node("Unsqueeze", [_input(ctx, args[0], dtype), g.ints([1], "axes")])
    b = g.node("Unsqueeze", [_input(ctx, args[1], dtype), g.ints([0], "axes")])
    return [g.node("Mul", [a, b], name_hint="outer")]


@translation("tensordot")
def _tensordot(ctx, args, kwargs, outs):
    a, b = args[:2]
    g = ctx.g
    da = [d % a.ndim for d in kwargs["dims_a"]]
    db = [d % b.ndim for d in kwargs["dims_b"]]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    ta = g.node("Transpose", [ctx.name(a)], perm=free_a + da)
    tb = g.node("Transpose", [ctx.name(b)], perm=db + free_b)
    ra = g.node("Reshape", [ta, g.ints([int(np.prod([a.shape[d] for d in free_a])), k],
                                       "shape")])
    rb = g.node("Reshape", [tb, g.ints([k, int(np.prod([b.shape[d] for d in free_b]))],
                                       "shape")])
    prod = g.node("MatMul", [ra, rb])
    return [g.node("Reshape", [prod, g.ints(outs[0].shape, "shape")], name_hint="tensordot")]


@translation("nonzero")
def _nonzero(ctx, args, kwargs, outs):
    g = ctx.g
    nz = g.node("NonZero", [ctx.name(args[0])])
    return [g.node("Transpose", [nz], perm=[1, 0], name_hint="nonzero")]


@translation("masked_select")
def _masked_select(ctx, args, kwargs, outs):
    x, mask = args[0], args[1]
    g = ctx.g
    shape = kwargs.get("shape", x.shape)
    xn = ctx.name(x)
    if tuple(x.shape) != tuple(shape):
        xn = g.node("Expand", [xn, g.ints(shape, "shape")])
    mn = _input(ctx, mask, _dt.bool_)
    if tuple(mask.shape) != tuple(shape):
        mn = g.node("Expand", [mn, g.ints(shape, "shape")])
    flat = int(np.prod(shape))
    xn = g.node("Reshape", [xn, g.ints([flat], "shape")])
    mn = g.node("Reshape", [mn, g.ints([flat], "shape")])
    return [g.node("Compress", [xn, mn], axis=0, name_hint="masked_select")]


@translation("cdist")
def _cdist(ctx, args, kwargs, outs):
    a, b = args[:2]
    g = ctx.g
    dtype = outs[0].dtype
    p = float(kwargs.get("p", 2.0))
    an = g.node("Unsqueeze", [ctx.name(a), g.ints([a.ndim - 1], "axes")])  # (..., n, 1, d)
    bn = g.node("Unsqueeze", [ctx.name(b), g.ints([b.ndim - 2], "axes")])  # (..., 1, m, d)
    diff = g.node("Abs", [g.node("Sub", [an, bn])])
    axes = g.ints([-1], "axes")
    if p == 2.0:
        return [g.node("ReduceL2", [diff, axes], keepdims=0, name_hint="cdist")]
    if p == 1.0:
        return [g.node("ReduceSum", [diff, axes], keepdims=0, name_hint="cdist")]
    if p == math.inf:
        return [g.node("ReduceMax", [diff, axes], keepdims=0, name_hint="cdist")]
    if p == 0.0:
        nz = g.node("Cast", [g.node("Not", [g.node("Equal", [diff, _scalar(ctx, 0, dtype)])])],
                    to=onnx_type(dtype))
        return [g.node("ReduceSum", [nz, axes], keepdims=0, name_hint="cdist")]
    s = g.node("ReduceSum", [g.node("Pow", [diff, _scalar(ctx, p, dtype)]), axes], keepdims=0)
    return [g.node("Pow", [s, _scalar(ctx, 1.0 / p, dtype)], name_hint="cdist")]


@translation("lstm_cell")
def _lstm_cell(ctx, args, kwargs, outs):
    # ember's LSTM step: (x @ w_ih.T + biases, h, c, w_hh) -> (h', c', saved...)
    xw, h, c, w_hh = args[:4]
    g = ctx.g
    hs = h.shape[-1]
    wt = g.node("Transpose", [ctx.name(w_hh)], perm=[1, 0])
    gates = g.node("Add", [ctx.name(xw), g.node("MatMul", [ctx.name(h), wt])])
    i, f, cc, o = g.node("Split", [gates, g.ints([hs] * 4, "split")], outputs=4, axis=1)
    i, f, o = (g.node("Sigmoid", [n]) for n in (i, f, o))
    keep = g.node("Mul", [f, ctx.name(c)])
    write = g.node("Mul", [i, g.node("Tanh", [cc])])
    c_new = g.node("Add", [keep, write], name_hint="lstm_c")
    h_new = g.node("Mul", [o, g.node("Tanh", [c_new])], name_hint="lstm_h")
    return [h_new, c_new] + [ctx.unused() for _ in outs[2:]]


@translation("unsafe_split", "unsafe_chunk")
def _unsafe_split(ctx, args, kwargs, outs):
    return _split(ctx, args, kwargs, outs)


@translation("frac")
def _frac(ctx, args, kwargs, outs):
    t = _trunc(ctx, args, kwargs, outs)[0]
    return [ctx.g.node("Sub", [_input(ctx, args[0], outs[0].dtype), t], name_hint="frac")]


@translation("sgn")
def _sgn(ctx, args, kwargs, outs):
    return [ctx.g.node("Sign", [_input(ctx, args[0], outs[0].dtype)], name_hint="sgn")]


@translation("isfinite", "isposinf", "isneginf")
def _isfinite(ctx, args, kwargs, outs):
    g = ctx.g
    x = args[0]
    if not x.dtype.is_floating_point:
        value = np.ones if ctx.op == "isfinite" else np.zeros
        return [g.node("Identity", [g.const(value(x.shape, bool), "mask")], name_hint=ctx.op)]
    xn = ctx.name(x)
    if ctx.op == "isposinf":
        return [g.node("IsInf", [xn], detect_negative=0, name_hint=ctx.op)]
    if ctx.op == "isneginf":
        return [g.node("IsInf", [xn], detect_positive=0, name_hint=ctx.op)]
    bad = g.node("Or", [g.node("IsInf", [xn]), g.node("IsNaN", [xn])])
    return [g.node("Not", [bad], name_hint="isfinite")]


@translation("nan_to_num")
def _nan_to_num(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    x = _input(ctx, args[0], dtype)
    if not dtype.is_floating_point:
        return [g.node("Identity", [x], name_hint="nan_to_num")]
    info = np.finfo(_np_dtype(dtype))
    nan = kwargs.get("nan", args[1] if len(args) > 1 else 0.0)
    pos = kwargs.get("posinf", args[2] if len(args) > 2 else None)
    neg = kwargs.get("neginf", args[3] if len(args) > 3 else None)
    pos = float(info.max) if pos is None else pos
    neg = float(info.min) if neg is None else neg
    y = g.node("Where", [g.node("IsNaN", [x]), _scalar(ctx, 0.0 if nan is None else nan,
                                                       dtype), x])
    y = g.node("Where", [g.node("IsInf", [y], detect_negative=0), _scalar(ctx, pos, dtype), y])
    return [g.node("Where", [g.node("IsInf", [y], detect_positive=0), _scalar(ctx, neg, dtype),
                             y], name_hint="nan_to_num")]


@translation("fmax", "fmin")
def _fmax(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    m = g.node("Max" if ctx.op == "fmax" else "Min", [a, b])
    if not dtype.is_floating_point:
        return [g.node("Identity", [m], name_hint=ctx.op)]
    m = g.node("Where", [g.node("IsNaN", [a]), b, m])
    return [g.node("Where", [g.node("IsNaN", [b]), a, m], name_hint=ctx.op)]


@translation("hypot")
def _hypot(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    s = g.node("Add", [g.node("Mul", [a, a]), g.node("Mul", [b, b])])
    return [g.node("Sqrt", [s], name_hint="hypot")]


@translation("logaddexp")
def _logaddexp(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    a, b = (_input(ctx, x, dtype) for x in args[:2])
    m = g.node("Max", [a, b])
    d = g.node("Neg", [g.node("Abs", [g.node("Sub", [a, b])])])
    soft = g.node("Log", [g.node("Add", [_scalar(ctx, 1.0, dtype), g.node("Exp", [d])])])
    return [g.node("Add", [m, soft], name_hint="logaddexp")]


@translation("logsumexp")
def _logsumexp(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dims = _dims(kwargs, x.ndim)
    keep = int(bool(kwargs.get("keepdim", False)))
    xn = _input(ctx, x, outs[0].dtype)
    if not dims:
        return [g.node("Identity", [xn], name_hint="logsumexp")]
    return [g.node("ReduceLogSumExp", [xn, g.ints(dims, "axes")], keepdims=keep,
                   name_hint="logsumexp")]


@translation("count_nonzero")
def _count_nonzero(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    nz = g.node("Cast", [g.node("Cast", [ctx.name(x)], to=onnx_type(_dt.bool_))],
                to=onnx_type(_dt.int64))
    dims = _dims(kwargs, x.ndim)
    if not dims:
        return [g.node("Identity", [nz], name_hint="count_nonzero")]
    return [g.node("ReduceSum", [nz, g.ints(dims, "axes")], keepdims=0,
                   name_hint="count_nonzero")]


@translation("xlogy")
def _xlogy(ctx, args, kwargs, outs):
    g = ctx.g
    dtype = outs[0].dtype
    x, y = (_input(ctx, a, dtype) for a in args[:2])
    prod = g.node("Mul", [x, g.node("Log", [y])])
    zero = _scalar(ctx, 0.0, dtype)
    out = g.node("Where", [g.node("Equal", [x, zero]), zero, prod])
    return [g.node("Where", [g.node("IsNaN", [y]), y, out], name_hint="xlogy")]


@translation("nansum", "nanmean")
def _nansum(ctx, args, kwargs, outs):
    x = args[0]
    g = ctx.g
    dtype = outs[0].dtype
    xn = _input(ctx, x, dtype)
    nan = g.node("IsNaN", [xn])
    clean = g.node("Where", [nan, _scalar(ctx, 0.0, dtype), xn])
    dims = _dims(kwargs, x.ndim)
    keep = int(bool(kwargs.get("keepdim", False)))
    if not dims:
        return [g.node("Identity", [clean], name_hint=ctx.op)]
    axes = g.ints(dims, "axes")
    total = g.node("ReduceSum", [clean, axes], keepdims=keep)
    if ctx.op == "nansum":
        return [g.node("Identity", [total], name_hint="nansum")]
    count = g.node("ReduceSum", [g.node("Cast", [g.node("Not", [nan])], to=onnx_type(dtype)),
                                 axes], keepdims=keep)
    return [g.node("Div", [total, count], name_hint="nanmean")]
