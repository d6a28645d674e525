"""Regressions for bug classes the differential suite found (seeds 9301-9304): ``gcd`` with
the dtype's minimum (NOTE [ gcd of the dtype's minimum ]), ``cov`` weights that sum to zero
or hold NaN, ``nextafter``'s gradient where input equals other, ``polygamma(1, x)`` (and
``digamma``'s gradient) below 1/2 by reflection with the sine in the input's precision,
``cumulative_trapezoid`` scaling each interval by ``dx / 2``, ``special.zeta`` refusing half
dtypes only after promotion, and ``interpolate``: ``mode='lanczos'`` (new in torch 2.13)
and torch's argument checks in torch's order. Each expression runs with ``T = ember`` and
``T = torch``."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.differential.expressions import agree as _agree
from tests.differential.expressions import as_numpy

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- gcd of the dtype's minimum ---------------------------------------------------------------

@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64"])
def test_gcd_of_the_minimum(dt):
    m = f"T.iinfo(T.{dt}).min"
    a = f"T.tensor([{m}, {m}, {m}, {m}, 0, 4, {m}, 7, -12, {m}], dtype=T.{dt})"
    b = f"T.tensor([0, {m}, 6, 7, {m}, {m}, -1, {m}, 18, 3], dtype=T.{dt})"
    _agree(f"T.gcd({a}, {b})")
    _agree(f"T.gcd({b}, {a})")
    _agree(f"T.gcd({a}[:3, None], {b}[None, :3])")
    _agree(f"T.gcd({a}[0], {b}[2])")
    _agree(f"{a}.gcd_({b})")


def test_gcd_unsigned_and_ordinary_values():
    _agree("T.gcd(T.tensor([0, 255, 6, 4], dtype=T.uint8), T.tensor([3, 5, 9, 0], dtype=T.uint8))")
    _agree("T.gcd(T.tensor([-12, 0, 35, -7]), T.tensor([18, 0, -14, 0]))")


# -- cov weights ------------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "T.cov(T.tensor([[1., 2., 3.]]), fweights=T.tensor([0, 0, 0]))",
    "T.cov(T.tensor([[1., 2., 3.]]), aweights=T.tensor([0., 0., 0.]))",
    "T.cov(T.ones(2, 0), fweights=T.ones(0, dtype=T.long))",
    "T.cov(T.ones(2, 3), fweights=T.tensor([1, 0, 0]), aweights=T.tensor([0., 1., 1.]))",
    "T.cov(T.ones(2, 3, dtype=T.float16), aweights=T.tensor([0., 0., 0.], dtype=T.float16))",
    "T.cov(T.ones(2, 3), aweights=T.tensor([nan, 1., 1.]))",
    "T.cov(T.ones(2, 3), aweights=T.tensor([-1., 1., 1.]))",
    "T.cov(T.tensor([[1., 2., 4.], [0., 1., 3.]]), aweights=T.tensor([inf, 1., 1.]))",
    "T.cov(T.tensor([[1., 2., 4.], [0., 1., 3.]]), fweights=T.tensor([1, 2, 0]))",
])
def test_cov_weights(expr):
    _agree(expr, exact=False, rtol=1e-6)


# -- nextafter's gradient ---------------------------------------------------------------------

def _grads(T, expr, values, dtype):
    x = T.tensor(values, dtype=getattr(T, dtype)).requires_grad_()
    y = eval(expr, {"T": T, "F": T.nn.functional, "x": x, "inf": np.inf, "nan": np.nan})
    g, = T.autograd.grad((y * T.arange(1.0, y.numel() + 1, dtype=y.dtype).reshape(y.shape))
                         .sum(), x)
    return as_numpy(y), as_numpy(g)


def _same_grads(expr, values, dtype="float64", rtol=1e-12, atol=0.0):
    import torch

    (ye, ge), (yt, gt) = _grads(ember, expr, values, dtype), _grads(torch, expr, values, dtype)
    np.testing.assert_allclose(ye, yt, rtol=rtol, atol=atol, equal_nan=True, err_msg=expr)
    np.testing.assert_allclose(ge, gt, rtol=rtol, atol=atol, equal_nan=True, err_msg=expr)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nextafter_gradient_stops_where_input_is_other(dtype):
    vals = [np.inf, 1.0, 0.0, -np.inf, np.nan, 2.0]
    _same_grads("T.nextafter(x, T.tensor([inf, inf, 0., -inf, 1., 2.], dtype=x.dtype))", vals,
                dtype)
    _same_grads("T.nextafter(x, T.tensor(2., dtype=x.dtype))", vals, dtype)
    _same_grads("x.nextafter(T.tensor([nan, 0., 0., 1., nan, 2.], dtype=x.dtype))", vals, dtype)


# -- trigamma below 1/2 -----------------------------------------------------------------------

_TRIGAMMA_AT = ("[-0.5, -1.5, 0.25, 0.49, -2.7, -1e-8, -100.5, -1e6 - 0.5, 0.5, 0.1, -1., -2., "
                "0., -inf, inf, nan, -2147483648.]")


@pytest.mark.parametrize("dt", ["float64", "float32", "float16", "bfloat16", "int32"])
def test_polygamma_1_poles_and_reflection(dt):
    # torch's sine in the input's precision misses the poles: huge finite values there
    _agree(f"T.polygamma(1, T.tensor({_TRIGAMMA_AT}).to(T.{dt}))", exact=False, rtol=2e-6)


def test_digamma_gradient_is_trigamma():
    _same_grads("T.special.digamma(x)", [np.inf, -np.inf, 0.0, -1.0, np.nan, 2.0, -2.5],
                rtol=1e-8)
    _same_grads("T.lgamma(x)", [np.inf, -np.inf, 0.0, -1.0, np.nan, 2.0, -2.5], rtol=1e-8)


# -- cumulative_trapezoid ---------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "T.cumulative_trapezoid(T.tensor([0.5, -3.4028234663852886e+38, 1.]), dx=2.0)",
    "T.cumulative_trapezoid(T.tensor([[5.2, 2.6, -1.2], [0.5, -3.4028234663852886e+38, -1.], "
    "[4.6, 5.1, 0.9]]), dx=2.0, dim=0)",
    "T.cumulative_trapezoid(T.tensor([1, 3, 4]), dx=3)",
    "T.cumulative_trapezoid(T.tensor([1, 3, 4]))",
    "T.cumulative_trapezoid(T.tensor([[1, 3, 4]], dtype=T.float16), dx=0.3, dim=1)",
    "T.cumulative_trapezoid(T.ones(2, 1), dim=1)",
    "T.cumulative_trapezoid(T.tensor([0.1, 0.7, 1.3]), T.tensor([0., 0.3, 0.9]))",
])
def test_cumulative_trapezoid_scales_before_summing(expr):
    _agree(expr, exact=False, rtol=1e-6)


# -- zeta's half dtypes -----------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "T.special.zeta(T.tensor([1.5, 2.], dtype=T.float16), T.tensor([1.], dtype=T.bfloat16))",
    "T.special.zeta(T.tensor(2., dtype=T.float16), T.ones(2, dtype=T.float32))",
    "T.special.zeta(T.tensor([1.5, 2.], dtype=T.float16), T.tensor([1.], dtype=T.float16))",
    "T.special.zeta(T.ones(2, dtype=T.int32) * 2, T.ones(2, dtype=T.float16))",
    "T.special.zeta(T.ones(2, dtype=T.bfloat16) * 2, 1.)",
    "T.special.zeta(T.ones(2, dtype=T.int64) * 2, T.ones(2, dtype=T.int64))",
])
def test_zeta_refuses_half_after_promotion(expr):
    _agree(expr, exact=False, rtol=1e-6)


# -- interpolate: lanczos and the argument checks ---------------------------------------------

_IMG = "T.tensor(np.sin(np.arange(2 * 3 * 9 * 13.) * 1.3).reshape(2, 3, 9, 13))"


@pytest.mark.parametrize("dt", ["float64", "float32", "uint8"])
@pytest.mark.parametrize("call", [
    "size=(4, 20)", "size=(9, 5)", "size=(30, 2)", "scale_factor=0.5",
    "scale_factor=(2.3, 0.37)", "scale_factor=(0.4, 1.7), recompute_scale_factor=True",
    "size=(9, 13)",
])
def test_lanczos_values(dt, call):
    src = f"({_IMG} * 120 + 128).to(T.uint8)" if dt == "uint8" else f"{_IMG}.to(T.{dt})"
    expr = f"F.interpolate({src}, {call}, mode='lanczos', antialias=True)"
    import torch

    for T in (ember, torch):  # the expression needs NumPy next to T
        env = {"T": T, "F": T.nn.functional, "np": np}
        if T is torch:
            want = eval(expr, env)
        else:
            got = eval(expr, env)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    assert tuple(got.shape) == tuple(want.shape)
    rtol = {"float64": 1e-12, "float32": 1e-5, "uint8": 0}[dt]
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=rtol,
                               atol=rtol, err_msg=expr)


def test_lanczos_gradient():
    import torch

    grads = []
    for T in (ember, torch):
        x = T.tensor(np.sin(np.arange(2 * 3 * 9 * 13.0) * 1.3).reshape(2, 3, 9, 13))
        x.requires_grad_()
        y = T.nn.functional.interpolate(x, size=(4, 20), mode="lanczos", antialias=True)
        (y * T.tensor(np.cos(np.arange(y.numel() * 1.0)).reshape(y.shape))).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("expr", [
    "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='lanczos')",
    "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='lanczos', antialias=True, "
    "align_corners=True)",
    "F.interpolate(T.ones(1, 1, 3), size=2, mode='lanczos', antialias=True)",
    "F.interpolate(T.ones(1, 1, 3, 3, 3), size=2, mode='lanczos')",
    "F.interpolate(T.ones(1, 1, 3, 3, dtype=T.float16), size=2, mode='lanczos', antialias=True)",
    "F.interpolate(T.ones(1, 1, 3, 3, dtype=T.int32), size=2, mode='lanczos', antialias=True)",
    "F.interpolate(T.ones(1, 1, 0, 3), size=2, mode='lanczos', antialias=True)",
    "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='foo')",
    "F.interpolate(T.ones(1, 3), size=2, mode='bilinear')",
    "F.interpolate(T.ones(1, 3), size=2, mode='lanczos', antialias=True)",
    "F.interpolate(T.ones(3), size=(), mode='nearest')",
    "F.interpolate(T.ones(1, 1, 3), size=(2, 2), mode='linear')",
    "F.interpolate(T.ones(1, 1, 3), scale_factor=(0.5, 0.5), mode='nearest')",
    "F.interpolate(T.ones(1, 1, 3), size=2, mode='bicubic')",
    "F.interpolate(T.ones(1, 1, 3, 3, 3), size=2, mode='bicubic')",
    "F.interpolate(T.ones(1, 1, 3, 3), size=2, scale_factor=2.)",
    "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='linear', antialias=True)",
    "F.interpolate(T.ones(1, 1, 3, 3, 3), size=2, mode='bilinear')",
])
def test_interpolate_checks(expr):
    _agree(expr)


def test_interpolate_check_messages():
    import torch

    from tests.differential.expressions import run

    for expr in ("F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='foo')",
                 "F.interpolate(T.ones(1, 1, 3), size=(2, 2), mode='linear')",
                 "F.interpolate(T.ones(1, 1, 3), scale_factor=(0.5, 0.5), mode='nearest')",
                 "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='lanczos')",
                 "F.interpolate(T.ones(1, 1, 3, 3), size=2, mode='linear', antialias=True)"):
        assert str(run(expr, ember)[1]) == str(run(expr, torch)[1]), expr


# -- var / std and prod gradients -------------------------------------------------------------

def test_var_gradient_scales_before_centring():
    # PyTorch: (2 / (n - correction) * g) * (x - mean); no overflow between the two products
    _same_grads("x.var(-1, keepdim=True) * 1.5",
                [[2.40, 2.98, -4.81, -1.7976931348623157e+308]], rtol=1e-15)
    _same_grads("x.std(-1) * 1.5", [[2.40, 2.98, -4.81, -1.7976931348623157e+308]],
                rtol=1e-15)


@pytest.mark.parametrize("correction", [0, 1, 2, 3, 1.5])
def test_var_and_std_gradients_past_the_sample_count(correction):
    # a correction past n gives 2 / (n - correction) < 0, as PyTorch computes it
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_grads(f"T.var(x, -1, correction={correction})", [[1.0, 2.5]])
        _same_grads(f"T.std(x, -1, correction={correction})", [[1.0, 2.5]])


def test_prod_gradient_with_an_infinite_product():
    vals = [[-1.74, -1.91, 0.5], [1.42, np.inf, 1.82], [2.2250738585072014e-308, 1.17, -1.27],
            [1.7976931348623157e+308, -0.86, -1.0]]
    _same_grads("x.prod()", vals)
    _same_grads("x.prod(0)", vals)
    _same_grads("x.prod(1)", [[0.0, np.inf, 2.0], [1.0, np.inf, -3.0]])


@pytest.mark.parametrize("expr", ["x.prod().abs()", "x.prod(1).abs()", "x.prod(0).real",
                                  "(x.prod(1) * T.tensor([1 + 2j, -1j])).imag"])
@pytest.mark.parametrize("vals", [
    [[1.0, 2 + 1j], [1j, 3.0]], [[1.0, 2 + 1j], [0.0, 3.0]], [[0.0, 2 + 1j], [0.0, 3 - 1j]],
])
def test_prod_gradient_of_complex_input_is_conjugated(expr, vals):
    # each input's gradient is the conjugated product of the others (it was not conjugated)
    _same_grads(expr, vals, dtype="complex128", atol=1e-12)


@pytest.mark.parametrize("expr", ["x.prod()", "x.prod(0)", "x.prod(1)", "x.prod(1, keepdim=True)"])
@pytest.mark.parametrize("vals", [
    [[0.0, np.inf, 2.0], [1.0, np.inf, -3.0], [np.nan, 0.0, 1.0]],  # zeros beside inf
    [[0.0, 3.0], [0.0, 2.0]], [[0.0, 3.0], [1.0, 2.0]], [[1.5, -2.0], [4.0, 0.5]],
])
def test_prod_gradient_with_zeros(expr, vals):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_grads(expr, vals)


def test_prod_double_backward_with_zeros():
    import torch

    res = []
    for T in (ember, torch):
        x = T.tensor([[0.0, 3.0], [0.0, 2.0]], dtype=T.float64, requires_grad=True)
        g, = T.autograd.grad(x.prod(), x, create_graph=True)
        res.append((g.detach().numpy(), T.autograd.grad(g.sum(), x)[0].numpy()))
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


# -- repeat_interleave sizes past int64 -------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "T.repeat_interleave(T.tensor([1, 2]), T.tensor([2 ** 62, 2 ** 62]))",
    "T.repeat_interleave(T.tensor([1, 2]), 2 ** 62)",
    "T.repeat_interleave(T.ones(3, 2), 2 ** 62, 1)",
    "T.repeat_interleave(T.tensor([1, 2]), T.tensor([2, 3]))",
])
def test_repeat_interleave_overflow_is_a_runtime_error(expr):
    _agree(expr)
