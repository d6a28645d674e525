"""Regressions for session 27's differential run against PyTorch 2.13: each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes, gradients or the exception raised."""

import itertools

import numpy as np
import pytest

import ember
from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised
from tests.differential._cases import torch_or_skip as _torch


# ---- ldexp of complex mantissas: the power of two in the exponents' complex dtype


@pytest.mark.parametrize("mantissa", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", ["float16", "bfloat16", "float32", "float64", "int32",
                                      "bool"])
def test_ldexp_complex_mantissa_dtype_and_value(mantissa, exponent):
    outs = []
    for T in _both():
        x = T.tensor([1 + 2j, -0.5 + 0.25j], dtype=getattr(T, mantissa))
        e = T.tensor([1.5, -3.0] if exponent != "bool" else [True, False]).to(
            getattr(T, exponent))
        err = _raised(lambda: T.ldexp(x, e))
        outs.append(err if err else (str(T.ldexp(x, e).dtype).split(".")[-1],
                                     _np(T.ldexp(x, e))))
    if isinstance(outs[1][1], str):  # torch refused: the same class and message
        assert outs[0] == outs[1]
        return
    assert outs[0][0] == outs[1][0]
    # bfloat16 exponents: torch takes 2 ** 1.5 in complex64 (was rounded to bfloat16)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-7)


# ---- renorm: a slice left as it is passes its gradient through, NaN or inf in it or not


@pytest.mark.parametrize("p", [2, 1, 0.5, 3, float("inf")])
@pytest.mark.parametrize("maxnorm", [5.0, 0.3])
def test_renorm_gradient_of_unscaled_nonfinite_slice(p, maxnorm):
    x = np.array([[np.nan, -8.0, -7.0, -1.7976931348623157e308], [1.0, 2, 3, 4],
                  [0.0, 0, 0, 0], [0.5, 0, -0.2, 0.1], [np.inf, 1, 2, 3]])
    w = np.arange(20.0).reshape(5, 4) % 7 - 3
    res = []
    for T in _both():
        a = T.tensor(x, requires_grad=True)
        out = a.renorm(p, 0, maxnorm)
        (g,) = T.autograd.grad((out * T.tensor(w)).sum(), a)
        res.append((_np(out), _np(g)))
    (o_e, g_e), (o_t, g_t) = res
    np.testing.assert_allclose(o_e, o_t, rtol=1e-12, equal_nan=True)
    # the NaN row's gradient was NaN (the norm's derivative times 0)
    np.testing.assert_allclose(g_e, g_t, rtol=1e-9, atol=1e-12, equal_nan=True)


# ---- index_put: an index into a dimension of size 0 is refused before the values' dtype


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("values", ["bool", "float16"])
def test_index_put_into_empty_dim_before_dtype_check(shape, accumulate, values):
    errs = []
    for T in _both():
        x = T.zeros(shape, dtype=T.float16)
        v = T.tensor([1]).to(getattr(T, values))
        errs.append(_raised(lambda: T.index_put(x, (T.tensor([1]), T.tensor([1])), v,
                                                accumulate)))
    assert errs[0] == errs[1]
    assert errs[0][0] == "IndexError"


def test_index_put_dtype_check_on_nonempty_dims():
    errs = []
    for T in _both():
        x = T.zeros((2, 3), dtype=T.float16)
        errs.append(_raised(lambda: T.index_put(x, (T.tensor([5]), T.tensor([1])),
                                                T.tensor([True]))))
    assert errs[0] == errs[1]
    assert errs[0][0] == "RuntimeError"


# ---- embedding_bag: sums over a table whose rows are not contiguous fill offset2bag


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 1])
def test_embedding_bag_bookkeeping_by_table_layout(dtype, transposed, mode, padding_idx):
    res = []
    for T in _both():
        w = T.arange(18, dtype=getattr(T, dtype)).reshape(3, 6)
        w = w.t() if transposed else w.reshape(6, 3)
        r = T.embedding_bag(w, T.tensor([0, 1, 1, 2, 1, 1]), T.tensor([0, 2, 2, 5]), False,
                            mode, False, None, False, padding_idx)
        res.append([_np(x).tolist() for x in r])
    assert res[0] == res[1]


# ---- scatter_reduce amax / amin: the gradient of a NaN result is NaN for its members


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_extremum_gradient_of_nan_result(reduce, include_self):
    res = []
    for T in _both():
        a = T.tensor([1.0, 5.0, np.nan, 2.0, 4.0], dtype=T.float64, requires_grad=True)
        s = T.tensor([2.0, 3.0, np.nan, 7.0], dtype=T.float64, requires_grad=True)
        out = a.scatter_reduce(0, T.tensor([0, 1, 1, 3]), s, reduce, include_self=include_self)
        w = T.arange(5.0, dtype=T.float64)
        res.append([_np(g) for g in T.autograd.grad((out * w).sum(), [a, s])])
    for e, t in zip(*res):
        np.testing.assert_array_equal(e, t)  # NaN where torch has NaN, 0 elsewhere


# ---- __setitem__ under one bool mask with a one-element value: masked_fill semantics


def _setitem_cases(T):
    values = [T.tensor([4], dtype=T.int8), T.tensor([[4]], dtype=T.int8),
              T.tensor(4, dtype=T.int64), T.tensor([4.5]), T.tensor([300]), T.tensor(300),
              T.tensor([2.5 + 1j]), T.tensor([2.5 + 0j]), T.tensor([float("nan")]),
              T.tensor([True]), T.tensor([1.0, 2.0])]
    mask = T.tensor([True, False, True])
    writes = [
        (T.float64, lambda x, v: x.__setitem__(mask, v)),
        (T.uint8, lambda x, v: x.__setitem__(
            T.tensor([[True, False], [False, False], [True, True]]), v)),
        (T.float64, lambda x, v: x.__setitem__(mask.to(T.uint8), v)),
        (T.float64, lambda x, v: x.__setitem__((Ellipsis, T.tensor([True, False])), v)),
        (T.float64, lambda x, v: x.__setitem__((mask, 1), v)),
        (T.int32, lambda x, v: x.__setitem__(mask, v)),
        (T.float64, lambda x, v: x.__setitem__(T.tensor([0, 2]), v)),
    ]
    return [(dt, w, v) for v in values for dt, w in writes]


def _setitem_outcomes(T, grad):
    out = []
    for dt, write, v in _setitem_cases(T):
        x = T.zeros(3, 2, dtype=dt)
        if grad and dt == T.float64:
            x = x.requires_grad_().clone()
        err = _raised(lambda: write(x, v))
        out.append(err[0] if err else _np(x).tolist())
    return out


@pytest.mark.parametrize("grad", [False, True])
def test_setitem_one_element_value_under_one_mask(grad):
    e, t = (_setitem_outcomes(T, grad) for T in _both())
    # an int8 [4] under a bool mask of a float64 tensor raised (dtypes differ); a uint8
    # mask took it (torch: masked_fill refuses uint8 masks); 300 wrapped to 44 in uint8
    assert [str(x) for x in e] == [str(x) for x in t]


# ---- index_fill of an empty tensor: torch refuses only when other sizes are all nonzero


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (0,), (2, 0, 0), (0, 2, 3)])
@pytest.mark.parametrize("dim", [0, -1])
def test_index_fill_empty_tensor(shape, dim):
    outs = []
    for T in _both():
        x = T.empty(shape, dtype=T.float64)
        err = _raised(lambda: x.index_fill(dim, T.tensor([1]), -1.5))
        outs.append(err[0] if err else tuple(x.index_fill(dim, T.tensor([1]), -1.5).shape))
    assert outs[0] == outs[1]


# ---- the harness builds empty tensors as torch.empty does (torch.from_numpy keeps NumPy's
# zero strides of an empty array, which view(dtype) and view_as_complex then refused)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0,), (2, 0, 3)])
def test_harness_empty_tensor_strides(shape):
    from tests.differential import harness as H

    spec = H.to_spec(ember.empty(shape))
    assert H.build(spec, ember).stride() == H.build(spec, _torch()).stride()


@pytest.mark.parametrize("op, seed", [("view.dtype", 2787547857941314720),
                                      ("view_as_complex", 4524948992246226103)])
def test_harness_empty_view_cases(op, seed):
    from tests.differential import harness as H

    torch = _torch()
    case = H.make_case(H.entry(op), seed)
    outcome = H.run_case(case, torch)
    assert not [m for m in outcome.mismatches if m[0] not in H.NOT_COUNTED]


# ---- nll_loss / cross_entropy over class indices refuse class weights that require grad


def _nll_weight_outcomes(T):
    F = T.nn.functional
    out = []
    w = T.ones(3, dtype=T.float64, requires_grad=True)
    for shape, tshape in [((3,), ()), ((2, 3), (2,)), ((2, 3, 4), (2, 4)),
                          ((2, 3, 4, 5), (2, 4, 5)), ((0, 3), (0,))]:
        x = T.zeros(shape, dtype=T.float64, requires_grad=True)
        t = T.zeros(tshape, dtype=T.int64)
        calls = [lambda: F.nll_loss(x, t, weight=w),
                 lambda: F.nll_loss(x, t + 7, weight=w),  # refused before the range check
                 lambda: F.nll_loss(x, t, weight=T.ones(4, dtype=T.float64,
                                                        requires_grad=True)),
                 lambda: F.nll_loss(x.detach(), t, weight=w),
                 lambda: F.cross_entropy(x, t, weight=w),
                 lambda: F.cross_entropy(x, t, weight=w, label_smoothing=0.2),
                 lambda: F.cross_entropy(x, T.zeros(shape, dtype=T.float64), weight=w)]
        for call in calls:
            err = _raised(call)
            out.append(err if err else ("ok", tuple(call().shape)))
        with T.no_grad():
            out.append(("ok", tuple(F.nll_loss(x, t, weight=w).shape)))
    return out


def test_nll_loss_refuses_weight_requiring_grad():
    e, t = (_nll_weight_outcomes(T) for T in _both())
    assert e == t


# ---- max_pool2d: a window that dilation steps wholly over the input (only padding)


def test_max_pool2d_window_of_padding_only():
    res = []
    for T in _both():
        a = T.tensor([[[[1.86, -1.24, 1.48]]]], dtype=T.float64).transpose(-1, -2)
        a.requires_grad_()
        out, idx = T.nn.functional.max_pool2d(a, (3, 2), stride=(2, 1), padding=1,
                                              dilation=2, return_indices=True)
        (g,) = T.autograd.grad(out.sum(), a)  # raised (a negative index) in ember
        res.append((_np(out).tolist(), _np(idx).tolist(), _np(g).tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_dilated_padded_indices(dtype):
    rng = np.random.default_rng(0)
    for (h, w), k, stride, dil, ceil in itertools.product(
            [(3, 1), (4, 5), (1, 3)], [(3, 2), (2, 2), 3], [(2, 1), 1, 2], [2, (1, 3), 3],
            [False, True]):
        x = rng.standard_normal((1, 2, h, w))
        res = []
        for T in _both():
            a = T.tensor(x, dtype=getattr(T, dtype))
            err = _raised(lambda: T.nn.functional.max_pool2d(a, k, stride, 1, dil, ceil))
            if err:
                res.append(err[0])
                continue
            out, idx = T.nn.functional.max_pool2d(a, k, stride, 1, dil, ceil,
                                                  return_indices=True)
            res.append((_np(out).tolist(), _np(idx).tolist()))
        assert res[0] == res[1], (h, w, k, stride, dil, ceil)


# ---- multi_margin_loss / multilabel_margin_loss: torch's shape and target checks, and the
# hinge taken where it is positive (no gradient at the kink, NaN and a target's inf skipped)


def _margin_outcomes(T):
    F = T.nn.functional
    out = []

    def z(*s):
        return T.zeros(s, dtype=T.float64)

    def ints(v):
        return T.tensor(v, dtype=T.int64)

    for red in ("mean", "sum", "none"):
        calls = [
            lambda: F.multilabel_margin_loss(z(3, 0), T.zeros((3, 0), dtype=T.int64),
                                             reduction=red),
            lambda: F.multilabel_margin_loss(z(0), T.zeros((0,), dtype=T.int64),
                                             reduction=red),
            lambda: F.multilabel_margin_loss(z(1, 3), ints([[1, -1, 5]]), reduction=red),
            lambda: F.multilabel_margin_loss(z(1, 3), ints([[-2, 1, 1]]), reduction=red),
            lambda: F.multilabel_margin_loss(z(1, 1), ints([[1]]), reduction=red),
            lambda: F.multilabel_margin_loss(z(3, 0), T.zeros((2, 0), dtype=T.int64),
                                             reduction=red),
            lambda: F.multi_margin_loss(z(0, 0), T.zeros((0,), dtype=T.int64), reduction=red),
            lambda: F.multi_margin_loss(z(3, 0), T.zeros((3,), dtype=T.int64), reduction=red),
            lambda: F.multi_margin_loss(z(2, 3), ints([0, 5]), reduction=red),
            lambda: F.multi_margin_loss(z(2, 3), ints([0, -1]), reduction=red),
            lambda: F.multi_margin_loss(z(2, 3), ints([0, 1, 2]), reduction=red),
            lambda: F.multi_margin_loss(z(3, 3), ints([0, 1, 2]), weight=T.ones(2)),
            lambda: F.multi_margin_loss(z(), ints(0), reduction=red),
        ]
        for call in calls:
            err = _raised(call)
            out.append(err if err else ("ok", tuple(call().shape)))
    return out


def test_margin_loss_checks():
    e, t = (_margin_outcomes(T) for T in _both())
    assert e == t


_HINGE_ROWS = [[-0.22, -np.inf, 2.2e-308, -1.0], [0.5, np.nan, 1.0, 0.0], [1.0, 2, 3, 4],
               [0.0, 1, 0, -1], [np.inf, 0, 1, 2]]


@pytest.mark.parametrize("row", range(len(_HINGE_ROWS)))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_loss_hinge_values_and_gradients(row, reduction):
    res = []
    for T in _both():
        F = T.nn.functional
        x = T.tensor(_HINGE_ROWS[row], dtype=T.float64, requires_grad=True)
        calls = [
            lambda: F.multilabel_margin_loss(x, T.tensor([2, -1, 1, 1]), reduction=reduction),
            lambda: F.multilabel_margin_loss(x.reshape(1, 4), T.tensor([[0, 3, -1, 1]]),
                                             reduction=reduction),
            lambda: F.multi_margin_loss(x.reshape(2, 2), T.tensor([1, 0]), reduction=reduction),
            lambda: F.multi_margin_loss(x.reshape(1, 4), T.tensor([2]), p=2, margin=0.5,
                                        weight=T.tensor([1.0, 2, 3, 4], dtype=T.float64),
                                        reduction=reduction)]
        for call in calls:
            out = call()
            (g,) = T.autograd.grad(out.sum(), x)
            res.append((_np(out), _np(g)))
    half = len(res) // 2
    for (o_e, g_e), (o_t, g_t) in zip(res[:half], res[half:]):
        np.testing.assert_allclose(o_e, o_t, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(g_e, g_t, rtol=1e-12, equal_nan=True)


def test_multi_margin_loss_refuses_weight_requiring_grad():
    outs = []
    for T in _both():
        F = T.nn.functional
        w = T.ones(3, requires_grad=True)
        x = T.zeros(2, 3)
        outs.append([_raised(lambda: F.multi_margin_loss(x, T.tensor([0, 5]), weight=w)),
                     _raised(lambda: F.multi_margin_loss(x, T.tensor([0, 1, 2]), weight=w)),
                     _raised(lambda: F.multi_margin_loss(x, T.tensor([0, 1]), weight=w))])
        with T.no_grad():
            outs[-1].append(_raised(lambda: F.multi_margin_loss(x, T.tensor([0, 1]), weight=w)))
    assert outs[0] == outs[1]
