"""Regressions for bug classes the differential suite found: uint8 bicubic resizing without
antialias and float antialiased resizing (NOTE [ Separable taps with renormalised weights ]),
``max``/``min`` with ``out=`` of an empty input (NOTE [ max(x, out=) of nothing ]), complex
``maximum``/``minimum``, ``info`` and results of ``inv_ex``/``solve_ex`` on singular matrices
(NOTE [ Solves of singular matrices ]) and bfloat16 NaN made from a Python number (NOTE [ NaN
from a Python number in bfloat16 ]). Each expression runs with ``T = ember`` and
``T = torch``."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.differential.expressions import agree as _agree

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- uint8 bicubic without antialias ----------------------------------------------------------

_IMG = "(T.arange(2 * {c} * 5 * 7).reshape(2, {c}, 5, 7) * 37 % 256).to(T.uint8)"


@pytest.mark.parametrize("c", [3, 6])  # torch: AVX kernels up to 4 channels, generic above
@pytest.mark.parametrize("call", [
    "size=(3, 4)", "size=(9, 13)", "size=(9, 13), align_corners=True", "size=(2, 20)",
    "size=(2, 20), align_corners=True", "size=(5, 3)", "size=(17, 2)", "scale_factor=1.5",
    "scale_factor=(2.3, 0.4)", "scale_factor=(0.31, 0.77), recompute_scale_factor=True",
])
def test_uint8_bicubic_without_antialias(c, call):
    _agree(f"F.interpolate({_IMG.format(c=c)}, {call}, mode='bicubic')")


def test_uint8_bicubic_keeps_extremes():
    # the edge taps fold into the edge cell; overshoot clamps to [0, 255]
    _agree("F.interpolate(T.tensor([[[[0, 255, 0, 255], [255, 0, 255, 0]]]], dtype=T.uint8)"
           ".repeat(1, 3, 2, 1), size=(7, 9), mode='bicubic')")


# -- float antialiased interpolation ----------------------------------------------------------

_FLOAT = "(T.arange(528, dtype=T.float64) * 37 % 101 / 7 - 5).reshape(2, 3, 8, 11).to(T.{dt})"


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("call", [
    "size=(3, 4)", "size=(5, 13)", "size=(16, 3)", "size=(1, 1)", "size=(3, 4), align_corners=True",
    "scale_factor=0.25", "scale_factor=(0.6, 2.1)", "scale_factor=0.4, recompute_scale_factor=True",
    "size=(8, 5)",
])
def test_float_antialias_values(dt, mode, call):
    rtol = 1e-5 if dt == "float32" else 1e-12
    _agree(f"F.interpolate({_FLOAT.format(dt=dt)}, {call}, mode='{mode}', antialias=True)",
           exact=False, rtol=rtol)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_float_antialias_gradients(mode):
    import torch

    grads = []
    for T in (ember, torch):
        x = T.tensor(np.sin(np.arange(96.0)).reshape(1, 2, 6, 8)).requires_grad_()
        y = T.nn.functional.interpolate(x, size=(3, 11), mode=mode, antialias=True)
        w = T.tensor(np.cos(np.arange(66.0)).reshape(1, 2, 3, 11))
        (y * w).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("expr", [
    "F.interpolate(T.ones(1, 1, 3, 3), size=(1, 1), mode='bilinear', antialias=True)",
    "F.interpolate(T.tensor([[[[inf, 1., 2.], [nan, 0., 1.]]]]), size=(1, 2), mode='bilinear',"
    " antialias=True)",
    "F.interpolate(T.ones(1, 1, 4, 4, dtype=T.bfloat16), size=2, mode='bilinear', "
    "antialias=True)",
    "F.interpolate(T.ones(1, 1, 4, 4, dtype=T.float16), size=2, mode='bicubic', antialias=True)",
    "F.interpolate(T.ones(1, 1, 4, 4, dtype=T.int32), size=2, mode='bilinear', antialias=True)",
    "F.interpolate(T.ones(1, 1, 4), size=2, mode='linear', antialias=True)",
    "F.interpolate(T.ones(1, 1, 4), size=2, mode='bilinear', antialias=True)",
    "F.interpolate(T.ones(1, 1, 4, 4), size=2, mode='nearest', antialias=True)",
    "F.interpolate(T.ones(1, 1, 4, 4), size=(4, 4), mode='bicubic', antialias=True)",
])
def test_antialias_edges_and_refusals(expr):
    _agree(expr, exact=False)


def test_interpolate_returns_a_new_tensor_when_nothing_moves():
    x = ember.ones(1, 1, 3, 3)
    for kw in ({"mode": "nearest"}, {"mode": "bilinear", "antialias": True}):
        y = ember.nn.functional.interpolate(x, size=(3, 3), **kw)
        assert y is not x and y.data_ptr() != x.data_ptr()


# -- max / min with out= of an empty input; complex maximum ------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int8", "uint8", "bool"])
@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min_out_of_nothing_is_the_start_value(fn, dtype):
    _agree(f"T.{fn}(T.zeros(0, 3, dtype=T.{dtype}), out=T.empty(0, dtype=T.{dtype}))")


@pytest.mark.parametrize("expr", [
    "T.max(T.zeros(0, 3, dtype=T.complex64), out=T.empty(0, dtype=T.complex64))",
    "T.min(T.zeros(0, 3, dtype=T.complex128), out=T.empty(0, dtype=T.complex128))",
    "T.max(T.zeros(2, 3, dtype=T.complex64), out=T.empty(0, dtype=T.complex64))",
    "T.max(T.zeros(0, 3, dtype=T.complex64), out=T.empty(0))",
    "T.max(T.zeros(2, 3, dtype=T.complex64), out=T.empty(0))",
    "T.max(T.zeros(0, 3), out=T.empty(0, dtype=T.complex64))",
    "T.max(T.zeros(0, 3, dtype=T.int32), out=T.empty(0))",
    "T.max(T.ones(2, 3), out=T.empty(0, dtype=T.int32))",
    "T.max(T.zeros(0, 3))", "T.min(T.zeros(0, 3, dtype=T.complex64))",
    "T.max(T.zeros(0, 3, dtype=T.complex64), 1, out=(T.empty(0, dtype=T.complex64), "
    "T.empty(0, dtype=T.long)))",
    "T.maximum(T.zeros(2, dtype=T.complex64), T.zeros(2, dtype=T.complex64))",
    "T.minimum(T.zeros(2, dtype=T.complex64), T.zeros(2))",
    "T.fmax(T.zeros(2, dtype=T.complex128), T.zeros(2))",
    "T.fmin(T.zeros(2), T.zeros(2, dtype=T.complex64))",
    "T.max(T.zeros(2, dtype=T.complex64), T.zeros(2, dtype=T.complex64))",
])
def test_max_min_refusals(expr):
    _agree(expr)


# -- inv_ex / solve_ex on singular matrices ----------------------------------------------------

_SING = ("T.stack([T.eye(3), T.tensor([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]]), "
         "T.zeros(3, 3), T.tensor([[1., 2., 3.], [0., 0., 5.], [0., 0., 7.]])]).to(T.{dt})")


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("call", [
    "T.linalg.inv_ex({A})", "T.linalg.inv_ex({A}[1])", "T.linalg.solve_ex({A}, T.ones(4, 3, "
    "dtype=T.{dt}))", "T.linalg.solve_ex({A}, T.ones(3, 2, dtype=T.{dt}))",
    "T.linalg.solve_ex({A}, T.ones(2, 4, 2, 3, dtype=T.{dt}), left=False)",
    "T.linalg.solve_ex({A}[2], T.arange(6.).reshape(3, 2).to(T.{dt}))",
    "T.linalg.solve_ex({A}[:, None], T.ones(4, 5, 3, 1, dtype=T.{dt}))",
    "T.linalg.lu_factor_ex({A})[2]",
])
def test_singular_solves_report_getrf_info(dt, call):
    _agree(call.format(A=_SING.format(dt=dt), dt=dt), exact=False)


def test_inv_ex_check_errors_still_raises():
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.inv_ex(ember.zeros(2, 2), check_errors=True)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.solve_ex(ember.zeros(2, 2), ember.ones(2), check_errors=True)


# -- bfloat16 NaN from a Python number ---------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "T.tensor([nan, -nan, 1.], dtype=T.bfloat16).view(T.int16)",
    "T.tensor(-nan, dtype=T.bfloat16).view(T.int16)",
    "T.as_tensor([[-nan], [inf]], dtype=T.bfloat16).view(T.uint8)",
    "T.full((3,), -nan, dtype=T.bfloat16).view(T.int16)",
    "T.zeros(2, dtype=T.bfloat16).fill_(-nan).view(T.int16)",
    "T.zeros(2, dtype=T.bfloat16).fill_(T.tensor(-nan)).view(T.int16)",
    "T.zeros(2, dtype=T.bfloat16, requires_grad=True).clone().fill_(-nan).detach().view(T.int16)",
    "T.tensor([-nan, 1.], dtype=T.float16).view(T.int16)",  # float16 keeps the sign
])
def test_bfloat16_nan_from_a_number(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "T.tensor([nan, 1., -nan, inf]).to(T.bfloat16).view(T.int16)",
    "T.tensor([nan, 1., -nan, inf]).bfloat16().signbit()",
    "T.full((12,), nan)[::3].to(T.bfloat16).view(T.int16)",  # one at a time: 0x7FC0
    "T.full((3, 4), nan).t().to(T.bfloat16).view(T.int16)",
    "T.tensor([nan, -nan], dtype=T.float16).to(T.bfloat16).view(T.int16)",
])
def test_float32_to_bfloat16_copies_write_torch_nan(expr):
    # NOTE [ NaN in float32 to bfloat16 copies ]: torch's x86 copy kernel
    _agree(expr)


# -- index dtypes and empty repeats ------------------------------------------------------------

_U8 = "T.tensor([[7, 6], [1, 4]], dtype=T.uint8)"
_MASK = "T.tensor([[True, False], [False, True]])"


@pytest.mark.parametrize("expr", [
    # one value under one bool mask is masked_fill: any dtype, the value range-checked
    f"{_U8}.index_put(({_MASK},), T.tensor([3], dtype=T.int16))",
    f"{_U8}.index_put(({_MASK},), T.tensor([[3.7]]))",
    f"{_U8}.clone().index_put_(({_MASK},), T.tensor(3, dtype=T.int64))",
    f"{_U8}.index_put(({_MASK},), T.tensor([300], dtype=T.int16))",
    f"{_U8}.index_put(({_MASK},), T.tensor([3], dtype=T.int16), accumulate=True)",
    f"{_U8}.index_put(({_MASK},), T.tensor([3, 4], dtype=T.int16))",
    f"{_U8}.index_put(({_MASK}.to(T.uint8),), T.tensor([3], dtype=T.int16))",
    f"{_U8}.index_put((T.tensor([0]),), T.tensor([3], dtype=T.int16))",
    # index tensors: long, int, byte or bool (a 0-d one of any integer dtype is a number)
    "T.arange(12.).reshape(3, 4)[T.tensor([1, 0], dtype=T.int8)]",
    "T.arange(12.).reshape(3, 4)[:, T.tensor([1], dtype=T.int16)]",
    "T.arange(12.).reshape(3, 4)[T.tensor([0, 2]), T.tensor([1, 3], dtype=T.int8)]",
    "T.arange(12.).reshape(3, 4)[T.tensor(1, dtype=T.int8)]",
    "T.arange(12.).reshape(3, 4)[T.tensor([2, 1], dtype=T.int32)]",
    "T.take_along_dim(T.ones(2, 3), T.zeros(2, 1, dtype=T.int32), 1)",
    "T.take_along_dim(T.ones(2, 3), T.zeros(2, 1, dtype=T.int32))",
    "T.take_along_dim(T.ones(2, 3), T.zeros(2, 1, dtype=T.int16))",
    "T.take_along_dim(T.empty(0, 1, dtype=T.int32), T.empty(6, 0, dtype=T.int32).t(), 1, "
    "out=T.empty(0, dtype=T.int32))",
    "T.ones(4, 5).tensor_split(T.tensor([2], dtype=T.int8))",
    "T.ones(4, 5).tensor_split(T.tensor(2, dtype=T.int32))",
    "T.ones(4, 5).tensor_split(T.tensor([1, 3]))[1]",
    "T.repeat_interleave(T.empty((0, 3), dtype=T.int8), T.empty((0,), dtype=T.int64), dim=0)",
    "T.repeat_interleave(T.empty((0, 3)), T.empty((0,), dtype=T.int64))",
])
def test_index_dtypes_as_torch(expr):
    _agree(expr)
