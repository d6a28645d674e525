"""Regressions for bugs the differential suite (tests/differential) found in the
pointwise, arithmetic and reduction families; each compares with torch when installed."""

import math

import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _same(expr):
    """``expr`` (with ``T``) gives the same values and dtype in ember and torch."""
    import torch

    e, t = eval(expr, {"T": ember}), eval(expr, {"T": torch})
    assert e.dtype.name == str(t.dtype).replace("torch.", ""), expr
    assert e.tolist() == t.tolist() or all(
        (a != a and b != b) or a == b for a, b in zip(e.flatten().tolist(), t.flatten().tolist())
    ), expr


@needs_torch
@pytest.mark.parametrize("expr", [
    "7 // T.tensor([2, 3])", "7 // T.tensor([2., -3.])", "2.5 // T.tensor([2, 3])",
    "7 % T.tensor([2, -3])", "7 % T.tensor([2., 3.])",
    "T.div(7, T.tensor([2, -3]), rounding_mode='trunc')",
    "1 << T.tensor([1, 2])", "64 >> T.tensor([1, 2])", "1 << T.tensor([1], dtype=T.uint8)",
])
def test_python_number_left_operand_matches_torch(expr):
    _same(expr)


def test_floor_divide_python_int_by_int_zero_raises():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        7 // ember.tensor([2, 0])


def test_floor_divide_int_tensor_by_float_zero_gives_inf():
    assert ember.tensor([3]) // 0.0 == math.inf


@needs_torch
def test_pow_int_tensor_negative_int_tensor_matches_torch():
    _same("T.tensor([0, 2, 1, -1, -1, -3, 5]) ** T.tensor([-1, -1, -2, -2, -3, -1, 2])")


def test_pow_int_tensor_negative_python_int_raises():
    with pytest.raises(RuntimeError, match="negative integer powers"):
        ember.tensor([1, 2]) ** -1


@needs_torch
@pytest.mark.parametrize("fn", ["nansum", "nanmean"])
def test_nan_reductions_bfloat16_skip_nan(fn):
    _same(f"T.{fn}(T.tensor([[float('nan'), 1.], [2., 3.]], dtype=T.bfloat16), 1)")


@needs_torch
@pytest.mark.parametrize("fn", ["any", "all"])
def test_any_all_empty_dim_tuple_reduces_nothing(fn):
    _same(f"T.{fn}(T.tensor([[0., 1.], [2., 0.]]), dim=())")
    _same(f"T.{fn}(T.tensor([[0, 1]], dtype=T.uint8), dim=())")


@pytest.mark.parametrize("call", [
    lambda: ember.clamp_min(ember.ones(2), None), lambda: ember.clamp_max(ember.ones(2), None),
    lambda: ember.ones(2).clamp_min(None), lambda: ember.ones(2).clamp_min_(None),
    lambda: ember.ones(2).clamp_max_(None),
])
def test_clamp_min_max_none_bound_raises_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_invert_float_tensor_raises_type_error():
    with pytest.raises(TypeError, match="integer and Boolean"):
        ~ember.ones(2)


def test_invert_int_and_bool_tensors():
    assert (~ember.tensor([1, 2])).tolist() == [-2, -3]
    assert (~ember.tensor([True, False])).tolist() == [False, True]


def test_floor_divide_empty_result_by_int_zero_does_not_raise():
    r = ember.empty((0, 3), dtype=ember.int16) // ember.tensor([6, 0, 1], dtype=ember.uint8)
    assert tuple(r.shape) == (0, 3) and r.dtype == ember.int16


@pytest.mark.parametrize("call", [
    lambda: ember.bitwise_and(ember.ones(2), ember.ones(2)),
    lambda: ember.lt(ember.ones(2, dtype=ember.complex64), ember.ones(2, dtype=ember.complex64)),
    lambda: ember.floor_divide(ember.tensor([True]), ember.tensor([True])),
    lambda: ember.clamp(ember.ones(2, dtype=ember.complex64), 0, 1),
    lambda: ember.round(ember.tensor([1, 2]), decimals=2),
])
def test_unsupported_dtype_raises_not_implemented_error(call):
    with pytest.raises(NotImplementedError, match="not"):
        call()


@needs_torch
@pytest.mark.parametrize("expr", [
    "T.add(T.tensor([True]), T.tensor([True]), alpha=2)",
    "T.add(T.tensor([1], dtype=T.int32), T.tensor([True]), alpha=2)",
    "T.add(T.tensor([1.5], dtype=T.float16), T.tensor([3]), alpha=2)",
    "T.add(T.tensor([1], dtype=T.int8), T.tensor([True, False]), alpha=3)",
])
def test_add_alpha_keeps_promoted_dtype(expr):
    _same(expr)


def test_add_bool_alpha_with_integer_result_raises():
    with pytest.raises(RuntimeError, match="[Bb]oolean alpha"):
        ember.add(ember.tensor([1]), ember.tensor([1]), alpha=True)


@needs_torch
@pytest.mark.parametrize("expr", [
    "T.trapezoid(T.tensor([[float('inf'), -6.1, 0.2], [-3.1, -1e308, -1.5]], dtype=T.float64))",
    "T.trapezoid(T.tensor([[1., 2., 4.]], dtype=T.float16), dx=0.5)",
    "T.trapezoid(T.tensor([[1, 2, 3]]), dx=2)",
    "T.trapezoid(T.tensor([float('inf')]))",
    "T.trapezoid(T.empty(0, dtype=T.bool))",
])
def test_trapezoid_constant_spacing_matches_torch(expr):
    _same(expr)


def test_trapezoid_bool_input_raises():
    with pytest.raises(RuntimeError, match="bool"):
        ember.trapezoid(ember.tensor([True, False]))
    with pytest.raises(RuntimeError, match="bool"):
        ember.cumulative_trapezoid(ember.tensor([True, False]))


def test_trapezoid_empty_input_result_does_not_require_grad():
    assert not ember.trapezoid(ember.empty(4, 0, requires_grad=True)).requires_grad


def test_mean_empty_complex_is_nan_in_both_parts():
    r = ember.mean(ember.empty((0, 2), dtype=ember.complex64), 0)
    assert all(math.isnan(v.real) and math.isnan(v.imag) for v in r.tolist())


def test_nanmean_complex_raises():
    with pytest.raises(RuntimeError, match="complex"):
        ember.tensor([1 + 1j]).nanmean()


def test_diff_gradient_of_empty_dim_keeps_input_shape():
    x = ember.empty((0, 1), dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(ember.diff(x, 2, 0).sum(), x)
    assert tuple(g.shape) == (0, 1)


@needs_torch
def test_renorm_float16_norm_does_not_overflow():
    _same("T.renorm(T.tensor([[6.97265625], [65504.0]], dtype=T.float16), 2, 0, 5.0)")


@needs_torch
def test_logsumexp_complex_imaginary_part_is_principal():
    import torch

    expr = "T.logsumexp(T.tensor([[85 + 80j, 1 + 2j], [3 - 70j, 2 + 1j]], dtype=T.complex64), 1)"
    e, t = eval(expr, {"T": ember}), eval(expr, {"T": torch})
    assert e.dtype == ember.complex64
    for a, b in zip(e.tolist(), t.tolist()):
        assert abs(a - b) < 1e-4
