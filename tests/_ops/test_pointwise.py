"""Focused tests for the point-wise math family (ember/_ops/pointwise.py, special_ops.py):
special values, dtype rules, in-place errors, views, and gradients the OpInfo table cannot
express."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
nan, inf = math.nan, math.inf


def _torch(x):
    import torch

    if isinstance(x, ember.Tensor):
        a = x.detach().numpy()
        if x.dtype == ember.bfloat16:
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(a.copy())
    return x


def _same_as_torch(name, *args, **kwargs):
    """Call ``name`` in ember and torch on the same values; compare values and dtypes."""
    import torch

    obj_e, obj_t = ember, torch
    for part in name.split("."):
        obj_e, obj_t = getattr(obj_e, part), getattr(obj_t, part)
    got = obj_e(*args, **kwargs)
    want = obj_t(*[_torch(a) for a in args], **{k: _torch(v) for k, v in kwargs.items()})
    assert_close(got, want, msg=name)
    return got


# ------------------------------------------------------------------------------------------------
# special values


@needs_torch
@pytest.mark.parametrize("name", ["sign", "sgn", "sigmoid", "exp", "log", "sqrt", "rsqrt",
                                  "tanh", "atan", "floor", "round", "frac", "erf", "erfc",
                                  "lgamma", "digamma", "isnan", "isinf", "isfinite",
                                  "isposinf", "isneginf", "signbit", "angle", "nan_to_num",
                                  "sinc", "expm1", "log1p", "reciprocal", "i0"])
def test_unary_special_values_match_torch(name):
    x = ember.tensor([nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e30])
    _same_as_torch(name, x)


@needs_torch
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "atan2", "hypot",
                                  "copysign", "xlogy", "logaddexp", "logaddexp2",
                                  "nextafter", "special.xlog1py"])
def test_binary_special_values_match_torch(name):
    vals = [nan, inf, -inf, 0.0, -1.0, 2.0]
    a = ember.tensor([[v] for v in vals])
    b = ember.tensor([vals])
    _same_as_torch(name, a, b)


def test_sign_of_nan_is_zero():
    assert ember.sign(ember.tensor([nan])).item() == 0.0


def test_lgamma_of_negative_infinity_is_inf():
    assert ember.lgamma(ember.tensor([-inf])).item() == inf


def test_xlogy_zero_times_log_zero_is_zero():
    r = ember.xlogy(ember.tensor([0.0, 0.0, 1.0]), ember.tensor([0.0, nan, 0.0]))
    assert r[0].item() == 0.0 and math.isnan(r[1].item()) and r[2].item() == -inf


def test_nan_to_num_defaults_use_the_dtype_limits():
    x = ember.tensor([nan, inf, -inf], dtype=ember.float16)
    assert ember.nan_to_num(x).tolist() == [0.0, 65504.0, -65504.0]
    assert ember.nan_to_num(x, 1.0, 2.0, -2.0).tolist() == [1.0, 2.0, -2.0]


# ------------------------------------------------------------------------------------------------
# dtype rules


@pytest.mark.parametrize("name", ["exp", "sin", "sqrt", "sigmoid", "log", "erf", "atan",
                                  "deg2rad", "lgamma", "angle"])
def test_integer_input_promotes_to_default_float(name):
    for dtype in (ember.bool, ember.uint8, ember.int32, ember.int64):
        assert getattr(ember, name)(ember.ones(3, dtype=dtype)).dtype == ember.float32


def test_integer_input_follows_default_dtype():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.exp(ember.tensor([1, 2])).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "sign", "square"])
def test_integer_input_keeps_integer_dtype(name):
    x = ember.tensor([-3, 0, 4], dtype=ember.int32)
    r = getattr(ember, name)(x)
    assert r.dtype == ember.int32


def test_sign_of_bool_is_bool_and_square_of_bool_is_int64():
    b = ember.tensor([True, False])
    assert ember.sign(b).dtype == ember.bool
    assert ember.square(b).dtype == ember.int64


def test_isnan_of_integers_is_all_false_bool():
    r = ember.isnan(ember.tensor([1, 2, 3]))
    assert r.dtype == ember.bool and not r.any()


def test_floor_of_bool_raises():
    with pytest.raises(RuntimeError, match="floor"):
        ember.floor(ember.tensor([True]))


def test_round_decimals_of_integer_raises():
    with pytest.raises(RuntimeError, match="round"):
        ember.round(ember.tensor([12, 13]), decimals=1)


@needs_torch
def test_round_decimals_matches_torch():
    x = ember.tensor([1234.5678, -0.125, 2.5, 0.35])
    for d in (-2, -1, 0, 1, 2, 3):
        _same_as_torch("round", x, decimals=d)


@needs_torch
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
@pytest.mark.parametrize("name", ["sin", "exp", "sigmoid", "tanh", "log1p", "rsqrt", "erf",
                                  "erfinv", "lgamma", "digamma", "sinc", "logit"])
def test_half_precision_matches_torch(name, dtype):
    x = ember.tensor(np.linspace(0.05, 0.95, 17), dtype=dtype)
    _same_as_torch(name, x)


@needs_torch
def test_clamp_promotes_with_its_bounds():
    i = ember.tensor([1, 2, 3])
    f = ember.tensor([1.5, 2.5, 2.5])
    assert _same_as_torch("clamp", i, min=1.5).dtype == ember.float32
    assert _same_as_torch("clamp", i, min=f).dtype == ember.float32
    h = ember.tensor([1.0, 2.0], dtype=ember.float16)
    assert _same_as_torch("clamp", h, min=ember.tensor(1.5, dtype=ember.float64)).dtype == \
        ember.float16


def test_clamp_without_bounds_raises():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(ember.ones(2))


def test_clamp_mixing_tensor_and_number_bounds_raises():
    with pytest.raises(TypeError):
        ember.clamp(ember.ones(2), min=ember.zeros(2), max=1)


def test_clamp_min_above_max_gives_max():
    assert ember.clamp(ember.tensor([0.0, 5.0]), min=3, max=1).tolist() == [1.0, 1.0]


def test_clamp_propagates_nan():
    assert math.isnan(ember.clamp(ember.tensor([nan]), 0, 1).item())


def test_lerp_dtype_mismatch_raises():
    with pytest.raises(RuntimeError, match="expected dtype float for `end`"):
        ember.lerp(ember.ones(2), ember.ones(2, dtype=ember.float64), 0.5)


def test_lerp_zero_dim_weight_of_another_dtype_is_accepted():
    r = ember.lerp(ember.zeros(2), ember.ones(2), ember.tensor(0.25, dtype=ember.float64))
    assert r.dtype == ember.float32 and r.tolist() == [0.25, 0.25]


def test_addcdiv_of_integers_raises():
    i = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="Integer division"):
        ember.addcdiv(i, i, i)


def test_addcmul_value_is_cast_to_the_integer_dtype():
    i = ember.tensor([1, 2, 3])
    assert ember.addcmul(i, i, i, value=0.5).tolist() == [1, 2, 3]


def test_minimum_requires_a_tensor_other():
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.minimum(ember.ones(2), 1.0)


def test_complex_of_mismatched_dtypes_raises():
    with pytest.raises(RuntimeError, match="scalar type"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))


def test_complex_and_polar_give_complex_dtypes():
    assert ember.complex(ember.ones(2), ember.ones(2)).dtype == ember.complex64
    d = ember.ones(2, dtype=ember.float64)
    assert ember.polar(d, d).dtype == ember.complex128


# ------------------------------------------------------------------------------------------------
# in-place forms


@pytest.mark.parametrize("name", ["sqrt_", "exp_", "sin_", "sigmoid_", "erf_", "lgamma_"])
def test_inplace_float_op_on_integer_tensor_raises(name):
    x = ember.tensor([1, 4, 9])
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(x, name)()
    assert x.tolist() == [1, 4, 9]


def test_inplace_square_of_bool_raises():
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.tensor([True]).square_()


def test_inplace_clamp_writes_into_self_and_bumps_version():
    x = ember.tensor([-2.0, 0.5, 3.0])
    v = x._version
    assert x.clamp_(0, 1) is x
    assert x.tolist() == [0.0, 0.5, 1.0] and x._version == v + 1


def test_inplace_clamp_with_float_bound_on_integer_tensor_raises():
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.tensor([1, 2]).clamp_(min=1.5)


def test_inplace_on_noncontiguous_view_writes_through():
    base = ember.tensor([[4.0, 9.0], [16.0, 25.0]])
    base.t().sqrt_()
    assert base.tolist() == [[2.0, 3.0], [4.0, 5.0]]


# ------------------------------------------------------------------------------------------------
# where


@needs_torch
def test_where_promotes_its_operands():
    c = ember.tensor([True, False, True])
    i = ember.tensor([1, 2, 3])
    f = ember.tensor([1.0, 2.0, 3.0])
    h = f.half()
    assert _same_as_torch("where", c, i, 0.5).dtype == ember.float32
    assert _same_as_torch("where", c, 1, 0).dtype == ember.int64
    assert _same_as_torch("where", c, f, 0).dtype == ember.float32
    assert _same_as_torch("where", c, h, ember.tensor(0.0, dtype=ember.float64)).dtype == \
        ember.float16
    assert _same_as_torch("where", c, i.int(), f.double()).dtype == ember.float64


def test_where_broadcasts_all_three():
    c = ember.tensor([[True], [False]])
    r = ember.where(c, ember.tensor([1.0, 2.0, 3.0]), ember.tensor(0.0))
    assert r.shape == (2, 3) and r.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]


def test_where_shape_mismatch_raises_runtime_error():
    with pytest.raises(RuntimeError):
        ember.where(ember.tensor([True, False, True]), ember.ones(3), ember.ones(2))


def test_where_requires_bool_condition():
    with pytest.raises(RuntimeError, match="boolean"):
        ember.where(ember.ones(2), ember.ones(2), ember.ones(2))


def test_where_method_takes_condition_and_other():
    x = ember.tensor([1.0, -1.0])
    assert x.where(x > 0, 0.0).tolist() == [1.0, 0.0]


def test_where_single_argument_is_nonzero_as_tuple():
    if not hasattr(ember.Tensor, "nonzero"):
        pytest.skip("nonzero is not available yet")
    (idx,) = ember.where(ember.tensor([False, True, True]))
    assert idx.tolist() == [1, 2]


# ------------------------------------------------------------------------------------------------
# closeness and equality


def test_isclose_equal_nan():
    a = ember.tensor([nan, inf, 1.0])
    b = ember.tensor([nan, inf, inf])
    assert ember.isclose(a, b).tolist() == [False, True, False]
    assert ember.isclose(a, b, equal_nan=True).tolist() == [True, True, False]


def test_isclose_dtype_mismatch_raises():
    with pytest.raises(RuntimeError, match="did not match"):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))


def test_allclose_and_equal_return_python_bools():
    a = ember.tensor([1.0, 2.0])
    r1 = ember.allclose(a, a + 1e-9)
    r2 = ember.equal(a, a.clone())
    assert type(r1) is bool and r1
    assert type(r2) is bool and r2
    assert a.allclose(a) is True and a.equal(a) is True


def test_equal_needs_same_shape_and_ignores_dtype():
    assert ember.equal(ember.tensor([1.0, 2.0]), ember.tensor([1, 2])) is True
    assert ember.equal(ember.tensor([1.0, 2.0]), ember.tensor([1.0])) is False
    assert ember.equal(ember.tensor([nan]), ember.tensor([nan])) is False


# ------------------------------------------------------------------------------------------------
# complex numbers


def test_real_and_imag_are_views_that_write_through():
    z = ember.tensor([1 + 2j, 3 - 4j])
    re, im = z.real, z.imag
    assert re.dtype == ember.float32 and im.tolist() == [2.0, -4.0]
    re.mul_(10)
    assert z.tolist() == [10 + 2j, 30 - 4j]
    assert im._version == re._version


def test_real_part_setter_copies_values():
    z = ember.tensor([1 + 2j, 3 - 4j])
    z.imag = ember.tensor([0.0, 1.0])
    assert z.tolist() == [1 + 0j, 3 + 1j]


def test_real_of_real_tensor_is_itself_and_imag_raises():
    x = ember.ones(2)
    assert ember.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        ember.imag(x)


def test_conj_of_real_tensor_is_itself():
    x = ember.ones(2)
    assert x.conj() is x and ember.resolve_conj(x) is x
    assert not x.is_conj() and not ember.is_neg(x)


def test_conj_of_complex_tensor_conjugates():
    z = ember.tensor([1 + 2j])
    assert z.conj().tolist() == [1 - 2j]
    assert z.tolist() == [1 + 2j]


# ------------------------------------------------------------------------------------------------
# gradients


def _grad(fn, *xs):
    xs = [x.detach().requires_grad_(True) for x in xs]
    fn(*xs).sum().backward()
    return [x.grad for x in xs]


def _torch_grad(fn, *xs):
    xs = [_torch(x).requires_grad_(True) for x in xs]
    fn(*xs).sum().backward()
    return [x.grad for x in xs]


needs_autograd = pytest.mark.skipif(not hasattr(ember.autograd, "gradcheck"),
                                    reason="autograd is not available")


@needs_torch
@needs_autograd
def test_maximum_splits_the_gradient_on_ties():
    a, b = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 1.0, 5.0])
    ga, gb = _grad(ember.maximum, a, b)
    assert ga.tolist() == [0.5, 1.0, 0.0] and gb.tolist() == [0.5, 0.0, 1.0]
    import torch

    ta, tb = _torch_grad(torch.maximum, a, b)
    assert_close(ga, ta)
    assert_close(gb, tb)


@needs_torch
@needs_autograd
def test_clamp_gradient_passes_at_the_bounds():
    import torch

    x = ember.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    (g,) = _grad(lambda t: ember.clamp(t, 0, 1), x)
    (tg,) = _torch_grad(lambda t: torch.clamp(t, 0, 1), x)
    assert_close(g, tg)


@needs_torch
@needs_autograd
def test_clamp_tensor_bounds_gradient_matches_torch():
    import torch

    x = ember.tensor([-1.0, 0.5, 2.0])
    lo, hi = ember.tensor([0.0, 0.0, 0.0]), ember.tensor([1.0, 1.0, 1.0])
    got = _grad(lambda a, b, c: ember.clamp(a, b, c), x, lo, hi)
    want = _torch_grad(lambda a, b, c: torch.clamp(a, b, c), x, lo, hi)
    for g, w in zip(got, want):
        assert_close(g, w)


@needs_autograd
def test_xlogy_gradient_is_zero_where_x_is_zero():
    x, y = ember.tensor([0.0, 2.0]), ember.tensor([0.0, 3.0])
    gx, _ = _grad(ember.xlogy, x, y)
    assert gx[0].item() == 0.0 and gx[1].item() == pytest.approx(math.log(3.0))


@needs_autograd
def test_where_gradient_flows_to_the_chosen_operand():
    c = ember.tensor([True, False])
    gx, gy = _grad(lambda x, y: ember.where(c, x, y), ember.ones(2), ember.ones(2))
    assert gx.tolist() == [1.0, 0.0] and gy.tolist() == [0.0, 1.0]


@needs_torch
@needs_autograd
@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "tanh", "sigmoid", "sgn",
                                  "reciprocal", "angle"])
def test_complex_gradient_matches_torch(name):
    import torch

    z = ember.tensor([1 + 2j, -0.5 + 0.3j], dtype=ember.complex128)
    f = getattr(ember, name)
    tf = getattr(torch, name)
    (g,) = _grad(lambda t: f(t).abs() if f(t).is_complex() else f(t), z)
    (tg,) = _torch_grad(lambda t: tf(t).abs() if tf(t).is_complex() else tf(t), z)
    assert_close(g, tg)


@needs_torch
@needs_autograd
@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "i0", "special.i1",
                                  "special.i1e", "special.i0e", "special.erfcx",
                                  "special.ndtri", "special.log_ndtr", "special.entr"])
def test_special_function_gradient_matches_torch(name):
    import torch

    x = ember.tensor([0.2, 0.5, 0.7], dtype=ember.float64)
    f, tf = ember, torch
    for part in name.split("."):
        f, tf = getattr(f, part), getattr(tf, part)
    (g,) = _grad(f, x)
    (tg,) = _torch_grad(tf, x)
    assert_close(g, tg)


@needs_torch
@needs_autograd
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_min_max_gradients_with_ties_and_nan_match_torch(name):
    import torch

    a, b = ember.tensor([1.0, 2.0, nan, 3.0]), ember.tensor([1.0, 3.0, 1.0, nan])
    got = _grad(getattr(ember, name), a, b)
    want = _torch_grad(getattr(torch, name), a, b)
    for g, w in zip(got, want):
        assert_close(g, w)
