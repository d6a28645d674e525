"""The input adjoint's scatter of planar and of channels-last columns in one compiled pass
(NOTE [ Planar columns scattered in one pass ] in ember/_ops/nn_conv.py) gives the NumPy
tap-by-tap scatter's bits, and PyTorch's gradients."""

import numpy as np
import pytest

import ember
from ember._ops import nn_conv

# (x shape, w shape, stride, padding): strides 1-3, padding 0-2, square and oblong kernels,
# planes that the windows do not cover to the last row or column
_CASES = [
    ((3, 4, 22, 22), (5, 4, 3, 3), (2, 2), (1, 1)),
    ((2, 3, 21, 23), (4, 3, 3, 3), (2, 2), (0, 0)),
    ((2, 3, 25, 25), (4, 3, 5, 5), (3, 3), (2, 2)),
    ((2, 2, 20, 24), (3, 2, 3, 2), (2, 1), (1, 0)),
    ((1, 3, 17, 19), (2, 3, 2, 4), (1, 3), (0, 2)),
    ((4, 6, 32, 32), (8, 6, 3, 3), (2, 2), (1, 1)),
]


def _grad(g, w, x_shape, stride, padding):
    return nn_conv._planar_input_grad(np, g, w, x_shape, stride, padding, (1, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _CASES, ids=[str(c[2:]) + str(c[1]) for c in _CASES])
def test_planar_col2im_same_bits_as_numpy_scatter(numba_backend, monkeypatch, dtype, case):
    x_shape, w_shape, stride, padding = case
    rng = np.random.default_rng(1)
    out = [(x_shape[2 + i] + 2 * padding[i] - w_shape[2 + i]) // stride[i] + 1
           for i in range(2)]
    g = rng.standard_normal((x_shape[0], w_shape[0], *out)).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    assert nn_conv._compiled_scatter(np, w_shape[2:], (1, 1), g.dtype) is not None
    compiled = _grad(g, w, x_shape, stride, padding)
    monkeypatch.setattr(nn_conv, "_compiled_scatter", lambda *a: None)
    plain = _grad(g, w, x_shape, stride, padding)
    assert compiled.shape == plain.shape == x_shape and compiled.dtype == plain.dtype
    assert compiled.flags.c_contiguous
    np.testing.assert_array_equal(compiled, plain)


def test_planar_col2im_keeps_inf_and_nan(numba_backend, monkeypatch):
    x_shape, w_shape, stride, padding = (2, 3, 22, 22), (4, 3, 3, 3), (2, 2), (1, 1)
    rng = np.random.default_rng(2)
    g = rng.standard_normal((2, 4, 11, 11)).astype(np.float32)
    g[0, 1, 3, 4], g[1, 2, 0, 0], g[1, 0, 10, 10] = np.inf, np.nan, -0.0
    w = rng.standard_normal(w_shape).astype(np.float32)
    compiled = _grad(g, w, x_shape, stride, padding)
    monkeypatch.setattr(nn_conv, "_compiled_scatter", lambda *a: None)
    np.testing.assert_array_equal(compiled, _grad(g, w, x_shape, stride, padding))


def test_planar_col2im_not_for_one_tap_or_dilation(numba_backend):
    assert nn_conv._compiled_scatter(np, (1, 1), (1, 1), np.dtype(np.float32)) is None
    assert nn_conv._compiled_scatter(np, (3, 3), (2, 2), np.dtype(np.float32)) is None
    assert nn_conv._compiled_scatter(np, (3, 3, 3), (1, 1, 1), np.dtype(np.float32)) is None
    assert nn_conv._compiled_scatter(np, (3, 3), (1, 1), np.dtype(np.float16)) is None


def test_planar_col2im_off_with_numpy_kernels(numpy_backend):
    assert nn_conv._compiled_scatter(np, (3, 3), (1, 1), np.dtype(np.float32)) is None


def test_planar_col2im_strided_conv_grad_matches_torch(numba_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8, 24, 24)).astype(np.float32)
    w = (rng.standard_normal((16, 8, 3, 3)) / 8).astype(np.float32)
    g = rng.standard_normal((4, 16, 12, 12)).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    ember.nn.functional.conv2d(xe, ember.from_numpy(w), stride=2, padding=1).backward(
        ember.from_numpy(g))
    xt = torch.from_numpy(x.copy()).requires_grad_()
    torch.nn.functional.conv2d(xt, torch.from_numpy(w), stride=2, padding=1).backward(
        torch.from_numpy(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


# (x shape, w shape, stride, padding, groups): rows too short for planar columns
_SHORT_ROWS = [
    ((4, 6, 7, 7), (8, 6, 3, 3), (2, 2), (1, 1), 1),
    ((3, 8, 9, 11), (6, 4, 3, 3), (2, 2), (0, 1), 2),
    ((2, 3, 12, 12), (4, 3, 5, 5), (3, 3), (2, 2), 1),
    ((2, 4, 8, 10), (5, 4, 2, 3), (2, 1), (1, 0), 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _SHORT_ROWS, ids=[str(c[2:]) for c in _SHORT_ROWS])
def test_channels_last_col2im_same_bits_as_numpy_scatter(numba_backend, monkeypatch, dtype,
                                                         case):
    x_shape, w_shape, stride, padding, groups = case
    rng = np.random.default_rng(4)
    out = [(x_shape[2 + i] + 2 * padding[i] - w_shape[2 + i]) // stride[i] + 1
           for i in range(2)]
    g = rng.standard_normal((x_shape[0], w_shape[0], *out)).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    assert not nn_conv._planar(x_shape[-1], w_shape[2:], stride, groups)

    def grad():
        return nn_conv._input_grad_kernel(np, g, w, input_shape=x_shape, stride=stride,
                                          padding=padding, dilation=(1, 1), groups=groups)

    compiled = grad()
    monkeypatch.setattr(nn_conv, "_compiled_scatter", lambda *a: None)
    plain = grad()
    assert compiled.shape == plain.shape == x_shape and compiled.dtype == plain.dtype
    assert compiled.flags.c_contiguous
    np.testing.assert_array_equal(compiled, plain)


def test_channels_last_col2im_conv_grad_matches_torch(numba_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 16, 8, 8)).astype(np.float32)
    w = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)
    g = rng.standard_normal((4, 32, 4, 4)).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    ember.nn.functional.conv2d(xe, ember.from_numpy(w), stride=2, padding=1).backward(
        ember.from_numpy(g))
    xt = torch.from_numpy(x.copy()).requires_grad_()
    torch.nn.functional.conv2d(xt, torch.from_numpy(w), stride=2, padding=1).backward(
        torch.from_numpy(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
