"""Regressions for session 25's half-precision work: float16/bfloat16 results rounded where
torch's CPU kernels round them (convolutions and their gradients, normalizations, prod,
embedding), and what the differential run found. Each case runs with ``T = ember`` and
``T = torch`` from the same values where torch is installed; the expectations are torch
2.13's, bit for bit."""

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    t = t.detach()
    if t.dtype in (ember.bfloat16, ember.float16) or str(t.dtype) in (
            "torch.bfloat16", "torch.float16"):
        t = t.float()
    return t.numpy()


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    ok = (a == b) | (np.isnan(a) & np.isnan(b))
    assert ok.all(), (int((~ok).sum()), a[~ok][:5], b[~ok][:5])


def _half(T, values, dtype, requires_grad=False):
    """``values`` (float32) as a ``dtype`` tensor of library ``T``."""
    t = T.tensor(np.asarray(values, np.float32)).to(getattr(T, dtype))
    return t.requires_grad_() if requires_grad else t


def _values(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _both(fn):
    """``fn(T)`` with ember and with torch, each a tuple of tensors, as NumPy arrays."""
    return [[None if t is None else _np(t) for t in fn(T)] for T in (ember, _torch())]


def _check(fn):
    mine, theirs = _both(fn)
    for a, b in zip(mine, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            _same(a, b)


def _raises(fn):
    """The exception type and message ``fn(T)`` raises with ember and with torch."""
    out = []
    for T in (ember, _torch()):
        with pytest.raises(Exception) as info:
            fn(T)
        out.append((info.type.__name__, str(info.value)))
    return out


# ------------------------------------------------------------------------------------------------
# convolutions (NOTE [ float16 convolutions as the slow CPU kernels ] in nn_conv_half.py)

_CONV_CASES = [
    # (nd, transposed, N, C_in, C_out, spatial, kernel, stride, padding, dilation, groups)
    (1, False, 3, 4, 6, (9,), (3,), 1, 1, 1, 1),
    (2, False, 2, 4, 4, (7, 6), (3, 2), 2, 1, 1, 2),
    (2, False, 3, 2, 3, (8, 7), (3, 3), 1, 1, 2, 1),
    (3, False, 2, 2, 4, (5, 6, 5), (2, 3, 2), 1, 0, 1, 2),
    (1, True, 2, 4, 6, (7,), (3,), 2, 1, 1, 2),
    (2, True, 3, 3, 2, (5, 4), (3, 2), 2, 0, 1, 1),
    (2, True, 2, 2, 4, (4, 5), (2, 3), 1, 1, 2, 2),
    (3, True, 2, 2, 3, (4, 3, 4), (2, 2, 3), 2, 1, 1, 1),
]


def _conv_run(T, case, dtype, seed):
    nd, transposed, n, cin, cout, spatial, k, stride, padding, dilation, groups = case
    wshape = (cin, cout // groups) + k if transposed else (cout, cin // groups) + k
    x = _half(T, _values((n, cin) + spatial, seed), dtype, True)
    w = _half(T, _values(wshape, seed + 1), dtype, True)
    b = _half(T, _values((cout,), seed + 2), dtype, True)
    F = T.nn.functional
    if transposed:
        y = getattr(F, f"conv_transpose{nd}d")(x, w, b, stride=stride, padding=padding,
                                                dilation=dilation, groups=groups)
    else:
        y = getattr(F, f"conv{nd}d")(x, w, b, stride=stride, padding=padding,
                                     dilation=dilation, groups=groups)
    g = _half(T, _values(tuple(y.shape), seed + 3), dtype)
    gx, gw, gb = T.autograd.grad(y, (x, w, b), g)
    return y, gx, gw, gb


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", _CONV_CASES, ids=lambda c: (
    f"{'t' if c[1] else ''}conv{c[0]}d-s{c[7]}-p{c[8]}-d{c[9]}-g{c[10]}"))
def test_half_convolution_output_and_gradients_as_torch(case, dtype):
    _check(lambda T: _conv_run(T, case, dtype, 7))


def test_float16_convolution_input_grad_rounds_per_tap():
    # 3x3 taps overlap on every input position: torch's col2im adds nine float16 columns one
    # by one, so a float32 sum rounded once differs in many places
    case = (2, False, 2, 8, 16, (6, 6), (3, 3), 1, 1, 1, 1)
    mine, theirs = _both(lambda T: _conv_run(T, case, "float16", 11)[1:2])
    _same(mine[0], theirs[0])


def test_float16_dilated_convolution_bias_grad_rounds_per_sample():
    case = (1, False, 4, 2, 3, (40,), (2,), 1, 0, 2, 1)
    mine, theirs = _both(lambda T: _conv_run(T, case, "float16", 3)[3:])
    _same(mine[0], theirs[0])


def test_bfloat16_transposed_convolution_adds_bias_before_rounding():
    case = (2, True, 2, 4, 4, (5, 5), (3, 3), 1, 0, 1, 1)
    mine, theirs = _both(lambda T: _conv_run(T, case, "bfloat16", 5)[:1])
    _same(mine[0], theirs[0])


_MIXED = [  # (op, input dtype, weight dtype, bias dtype)
    ("conv2d", "float16", "float16", "float32"),
    ("conv1d", "float32", "float32", "bfloat16"),
    ("conv3d", "complex64", "complex64", "complex128"),
    ("conv2d", "float64", "float64", "int64"),
    ("conv2d", "float16", "float32", None),
    ("conv2d", "bfloat16", "float32", None),
    ("conv2d", "complex128", "complex64", None),
    ("conv2d", "complex64", "float32", None),
    ("conv_transpose2d", "bfloat16", "bfloat16", "float32"),
    ("conv_transpose1d", "complex64", "complex64", "float32"),
    ("conv_transpose3d", "bfloat16", "bfloat16", "float16"),
    ("conv_transpose3d", "float16", "float16", "float32"),
    ("conv_transpose2d", "bfloat16", "float32", None),
]


@pytest.mark.parametrize("op,xd,wd,bd", _MIXED)
def test_convolution_mixed_dtypes_refused_as_torch(op, xd, wd, bd):
    nd = int(op[-2])
    wshape = ((2, 3) if "transpose" in op else (3, 2)) + (2,) * nd

    def run(T):
        b = None if bd is None else T.ones(3, dtype=getattr(T, bd))
        getattr(T.nn.functional, op)(T.ones((1, 2) + (4,) * nd, dtype=getattr(T, xd)),
                                     T.ones(wshape, dtype=getattr(T, wd)), b)

    mine, theirs = _raises(run)
    assert mine == theirs


@pytest.mark.parametrize("op", ["conv_transpose1d", "conv_transpose2d"])
def test_float16_transposed_convolution_casts_a_float32_bias(op):
    nd = int(op[-2])
    _check(lambda T: (getattr(T.nn.functional, op)(
        _half(T, _values((2, 2) + (5,) * nd, 1), "float16"),
        _half(T, _values((2, 3) + (2,) * nd, 2), "float16"),
        T.tensor(_values((3,), 3))),))


# ------------------------------------------------------------------------------------------------
# prod (NOTE [ Half-precision products ] in ember/_ops/reduction.py)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,dim,transposed", [
    ((40,), None, False),      # one by one
    ((3, 200), 1, False),      # blocks of 64 in 4 x 16 lanes, then the rest
    ((7, 130), None, False),   # everything as one contiguous run
    ((130, 5), 0, False),      # a strided dim: one by one
    ((5, 70), None, True),     # a transposed view: memory order
    ((4, 3, 90), 2, True),
])
def test_half_prod_rounds_as_torch(dtype, shape, dim, transposed):
    values = np.random.default_rng(1).uniform(0.9, 1.1, shape).astype(np.float32)

    def run(T):
        x = _half(T, values, dtype, True)
        v = x.transpose(0, -1) if transposed else x
        y = v.prod() if dim is None else v.prod(dim)
        g, = T.autograd.grad(y, x, T.ones_like(y))
        return y, g

    _check(run)


def test_half_prod_gradient_with_a_zero():
    values = np.random.default_rng(2).uniform(0.9, 1.1, (4, 70)).astype(np.float32)
    values[1, 5] = 0

    def run(T):
        x = _half(T, values, "float16", True)
        y = x.prod(1)
        return (y,) + T.autograd.grad(y, x, T.ones_like(y))

    _check(run)


# ------------------------------------------------------------------------------------------------
# embedding and embedding_bag (NOTE [ Half-precision bags ] in ember/_ops/nn_embedding.py)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_embedding_gradient_adds_duplicates_one_by_one(dtype):
    idx = np.random.default_rng(0).integers(0, 4, (6, 5))
    g = _values((6, 5, 3), 4)

    def run(T):
        w = _half(T, _values((4, 3), 3), dtype, True)
        y = T.nn.functional.embedding(T.tensor(idx), w)
        return T.autograd.grad(y, w, _half(T, g, dtype))

    _check(run)


_BAGS = [  # (mode, offsets, include_last_offset, padding_idx, per-sample weights)
    ("sum", [0, 3, 3, 7], False, None, False),
    ("mean", [0, 2, 7], False, None, False),
    ("mean", [0, 4, 9], True, 1, False),
    ("sum", [0, 5], False, None, True),
    ("sum", [0, 1, 9], True, 2, True),
    ("max", [0, 4], False, None, False),
    ("sum", [], False, None, False),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode,offsets,last,pad,psw", _BAGS)
def test_half_embedding_bag_as_torch(dtype, mode, offsets, last, pad, psw):
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 5, 9 if offsets else 0)
    weights = _values((len(idx),), 6)

    def run(T):
        w = _half(T, _values((5, 4), 7), dtype, True)
        kw = dict(mode=mode, include_last_offset=last, padding_idx=pad)
        if psw:
            kw["per_sample_weights"] = _half(T, weights, dtype)
        y = T.nn.functional.embedding_bag(T.tensor(idx), w, T.tensor(offsets,
                                                                     dtype=T.int64), **kw)
        if not y.numel():
            return (y,)
        return (y,) + T.autograd.grad(y, w, _half(T, _values(tuple(y.shape), 8), dtype))

    _check(run)


def test_embedding_bag_offsets_not_starting_at_zero_message():
    mine, theirs = _raises(lambda T: T.nn.functional.embedding_bag(
        T.tensor([1, 2, 3]), T.ones(4, 3), T.tensor([1, 2], dtype=T.int32)))
    assert mine == theirs


# ------------------------------------------------------------------------------------------------
# layer norm and group norm (NOTE [ Half-precision layer norm backward ], NOTE [ Half-precision
# group norm ] in ember/_ops/nn_norm.py)


def _same_threads():
    """torch on ember's thread count: the parameters' gradients depend on it."""
    torch = _torch()
    before = torch.get_num_threads()
    torch.set_num_threads(ember.get_num_threads())
    return torch, before


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape,nd", [((37, 6), 1), ((3, 5, 4, 3), 2), ((1, 9), 1)])
def test_half_layer_norm_parameter_gradients_as_torch(dtype, shape, nd):
    torch, before = _same_threads()
    try:
        def run(T):
            x = _half(T, _values(shape, 1, 3.0), dtype, True)
            w = _half(T, _values(shape[-nd:], 2), dtype, True)
            b = _half(T, _values(shape[-nd:], 3), dtype, True)
            y = T.nn.functional.layer_norm(x, shape[-nd:], w, b)
            return T.autograd.grad(y, (w, b), _half(T, _values(shape, 4), dtype))

        _check(run)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("affine", [True, False])
def test_half_group_norm_as_torch(dtype, affine):
    def run(T):
        x = _half(T, _values((3, 6, 5, 4), 5, 4.0), dtype, True)
        leaves = [x]
        if affine:
            leaves += [_half(T, _values((6,), 6), dtype, True),
                       _half(T, _values((6,), 7), dtype, True)]
        y = T.nn.functional.group_norm(x, 3, *leaves[1:])
        return (y,) + T.autograd.grad(y, leaves, _half(T, _values(y.shape, 8), dtype))

    _check(run)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("op", ["batch_norm", "instance_norm"])
def test_float16_batch_and_instance_norm_in_training_as_torch(op, affine):
    # (NOTE [ float16 batch norm in training ] in ember/_ops/nn_norm.py)
    def run(T):
        x = _half(T, _values((3, 4, 6), 9, 3.0), "float16", True)
        leaves = [x]
        if affine:
            leaves += [_half(T, _values((4,), 10), "float16", True),
                       _half(T, _values((4,), 11), "float16", True)]
        wb = leaves[1:] or [None, None]
        F = T.nn.functional
        y = F.batch_norm(x, None, None, *wb, training=True) if op == "batch_norm" else \
            F.instance_norm(x, weight=wb[0], bias=wb[1])
        return (y,) + T.autograd.grad(y, leaves, _half(T, _values(y.shape, 12), "float16"))

    _check(run)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_repeat_gradient_sums_copies_in_float32(dtype):
    def run(T):
        w = _half(T, _values((5,), 13), dtype, True)
        return T.autograd.grad(w.repeat(4), w, _half(T, _values((20,), 14, 3.0), dtype))

    _check(run)


# ------------------------------------------------------------------------------------------------
# the differential run (seed 252525)


def test_view_dtype_to_a_wider_type_checks_the_size_first():
    # torch checks size(-1), then the offset, then stride(-1) when the element grows
    mine, theirs = _raises(lambda T: T.tensor([[-7, 7]], dtype=T.int16).transpose(-1, -2)
                           .view(T.int32))
    assert mine == theirs


def test_strided_float32_batch_norm_with_squares_beyond_float32():
    # torch's strided path sums the squares in float64: a finite, subnormal invstd
    x = np.array([[1.0, 3.4e38], [-3.4e38, 0.5], [2.0, 1.0]], np.float32)

    def run(T):
        t = T.tensor(np.ascontiguousarray(x.T)).t()
        return T.native_batch_norm(t, None, None, None, None, True, 0.1, 1e-5)

    _check(run)


@pytest.mark.parametrize("op", ["i1", "i1e"])
def test_i1_gradient_takes_its_limit_at_nan_and_tiny_inputs(op):
    def run(T):
        x = T.tensor([float("nan"), 0.0, 1e-20, -1e-17, 2.0, -3.0], dtype=T.float64,
                     requires_grad=True)
        return T.autograd.grad(getattr(T.special, op)(x).sum(), x)

    _check(run)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_max_pool_gradient_adds_overlapping_windows_one_by_one(dtype):
    def run(T):
        x = _half(T, _values((2, 3, 7, 7), 15), dtype, True)
        y = T.nn.functional.max_pool2d(x, 3, stride=1, padding=1)
        return T.autograd.grad(y, x, _half(T, _values(tuple(y.shape), 16, 3.0), dtype))

    _check(run)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_half_mse_loss_as_torch(dtype, reduction):
    def run(T):
        x = _half(T, _values((7, 9), 17, 2.0), dtype, True)
        y = T.nn.functional.mse_loss(x, _half(T, _values((7, 9), 18, 2.0), dtype),
                                     reduction=reduction)
        return (y,) + T.autograd.grad(y, x, _half(T, _values(tuple(y.shape), 19), dtype))

    _check(run)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_half_smooth_l1_loss_as_torch(dtype, reduction):
    # (NOTE [ Half-precision smooth_l1_loss ] in ember/_ops/nn_loss.py)
    def run(T):
        x = _half(T, _values((5, 6), 20, 2.0), dtype, True)
        y = T.nn.functional.smooth_l1_loss(x, _half(T, _values((5, 6), 21), dtype),
                                           reduction=reduction)
        return (y,) + T.autograd.grad(y, x, _half(T, _values(tuple(y.shape), 22), dtype))

    _check(run)
