"""The convolution kernels' fast paths against PyTorch and against the plain paths:
shifted-plane columns (NOTE [ Shifted-plane columns ]) and the numba Winograd transforms
(NOTE [ Planar Winograd ])."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels
from ember._ops import nn_conv, nn_conv_grid, nn_conv_winograd

torch = pytest.importorskip("torch")

_TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _torch_all(x, w, stride, padding, dilation, groups, g):
    """PyTorch's forward, input gradient and weight gradient."""
    nd = w.ndim - 2
    xt, wt, gt = (torch.from_numpy(a) for a in (x, w, g))
    y = torch.ops.aten.convolution(xt, wt, None, [stride] * nd, [padding] * nd,
                                   [dilation] * nd, False, [0] * nd, groups)
    gx, gw, _ = torch.ops.aten.convolution_backward(
        gt, xt, wt, None, [stride] * nd, [padding] * nd, [dilation] * nd, False, [0] * nd,
        groups, [True, True, False])
    return y.numpy(), gx.numpy(), gw.numpy()


def _close(a, b, dtype):
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=0, atol=_TOL[dtype] * scale)


# (nd, stride, padding, dilation, groups): strided, padded, dilated, grouped and depthwise
_GRID_CASES = [(nd,) + c for nd in (1, 2) for c in [
    (1, 0, 1, 1), (1, 1, 1, 1), (1, 2, 2, 1), (1, 1, 1, 6), (1, 2, 1, 2), (2, 0, 1, 1),
    (2, 1, 1, 1), (2, 1, 2, 2), (2, 1, 1, 6), (3, 2, 1, 1), (3, 0, 2, 6)]]


@pytest.mark.parametrize("nd,stride,padding,dilation,groups", _GRID_CASES)
def test_grid_kernels_match_torch(nd, stride, padding, dilation, groups):
    rng = np.random.default_rng(nd * 100 + stride * 10 + padding + dilation * 7 + groups)
    spatial, ksize = ((11, 9), (3, 2)) if nd == 2 else ((13,), (3,))
    x = rng.standard_normal((2, 6) + spatial)
    w = rng.standard_normal((12, 6 // groups) + ksize)
    s, p, d = (stride,) * nd, (padding,) * nd, (dilation,) * nd
    y = nn_conv_grid.conv(np, x, w, s, p, d, groups)
    g = rng.standard_normal(y.shape)
    y_t, gx_t, gw_t = _torch_all(x, w, stride, padding, dilation, groups, g)
    _close(y, y_t, np.float64)
    _close(nn_conv_grid.weight_grad(np, x, g, w.shape, s, p, d, groups), gw_t, np.float64)
    _close(nn_conv_grid.input_grad_scatter(np, g, w, x.shape, s, p, d, groups), gx_t,
           np.float64)
    if stride == 1 and padding <= dilation * (min(ksize) - 1):
        gx, gw = nn_conv_grid.backward_stride1(np, g, x, w, p, d, groups)
        _close(gx, gx_t, np.float64)
        _close(gw, gw_t, np.float64)


def test_grid_kernels_3d_match_torch():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 4, 6, 7, 5)), rng.standard_normal((6, 2, 2, 3, 2))
    s, p, d = (2, 1, 1), (1, 0, 1), (1, 2, 1)
    y = nn_conv_grid.conv(np, x, w, s, p, d, 2)
    g = rng.standard_normal(y.shape)
    xt, wt, gt = (torch.from_numpy(a) for a in (x, w, g))
    y_t = torch.ops.aten.convolution(xt, wt, None, s, p, d, False, [0] * 3, 2)
    gx_t, gw_t, _ = torch.ops.aten.convolution_backward(gt, xt, wt, None, s, p, d, False,
                                                        [0] * 3, 2, [True, True, False])
    _close(y, y_t.numpy(), np.float64)
    _close(nn_conv_grid.weight_grad(np, x, g, w.shape, s, p, d, 2), gw_t.numpy(), np.float64)
    _close(nn_conv_grid.input_grad_scatter(np, g, w, x.shape, s, p, d, 2), gx_t.numpy(),
           np.float64)


def _public_grads(fw, x, w, b, g, **kw):
    """Forward and the three gradients through a framework's public conv function."""
    nd = x.ndim - 2
    xt, wt, bt = (fw.tensor(a, requires_grad=True) for a in (x, w, b))
    y = getattr(fw.nn.functional, f"conv{nd}d")(xt, wt, bt, **kw)
    y.backward(fw.tensor(g))
    return [np.asarray(a.detach().numpy()) for a in (y, xt.grad, wt.grad, bt.grad)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nd,groups,stride,padding,dilation", [
    (2, 8, 1, 1, 1),     # depthwise
    (2, 8, 2, 1, 1),     # depthwise, strided
    (2, 4, 1, 2, 2),     # grouped, dilated
    (2, 2, 2, 0, 1),     # grouped, strided
    (1, 8, 1, 1, 1),     # depthwise 1-d
    (1, 4, 2, 2, 2),
])
def test_grouped_conv_public_matches_torch(dtype, nd, groups, stride, padding, dilation):
    rng = np.random.default_rng(groups * 10 + stride + nd)
    spatial, ksize = ((18, 17), (3, 3)) if nd == 2 else ((40,), (5,))
    x = rng.standard_normal((3, 8) + spatial).astype(dtype)
    w = rng.standard_normal((16, 8 // groups) + ksize).astype(dtype)
    b = rng.standard_normal(16).astype(dtype)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    assert nn_conv._grid_grouped(np, x.shape, w.shape, groups)
    y = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv1d
    g = rng.standard_normal(tuple(y(torch.from_numpy(x), torch.from_numpy(w), None,
                                    **kw).shape)).astype(dtype)
    got, want = _public_grads(ember, x, w, b, g, **kw), _public_grads(torch, x, w, b, g, **kw)
    for a, e in zip(got, want):
        assert a.dtype == e.dtype
        _close(a, e, dtype)


@pytest.fixture
def numba_backend():
    pytest.importorskip("numba")
    old = _kernels.set_backend("numba")
    yield
    _kernels.set_backend(old)


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_fast_winograd_matches_torch(numba_backend, padding):
    rng = np.random.default_rng(padding)
    x = rng.standard_normal((2, 16, 18, 17)).astype(np.float32)
    w = (rng.standard_normal((24, 16, 3, 3)) * 0.2).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    assert nn_conv_winograd.eligible(np, x.shape, w.shape, (1, 1), (padding,) * 2, (1, 1), 1,
                                     x.dtype)
    g = rng.standard_normal((2, 24, 16 + 2 * padding, 15 + 2 * padding)).astype(np.float32)
    got = _public_grads(ember, x, w, b, g, padding=padding)
    want = _public_grads(torch, x, w, b, g, padding=padding)
    for a, e in zip(got, want):
        _close(a, e, np.float32)


def test_fast_winograd_matches_numpy_backend(numba_backend):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 16, 16, 17)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    g = rng.standard_normal((3, 16, 16, 17)).astype(np.float32)
    fast = _public_grads(ember, x, w, b, g, padding=1)
    _kernels.set_backend("numpy")
    assert not nn_conv_winograd.eligible(np, x.shape, w.shape, (1, 1), (1, 1), (1, 1), 1,
                                         x.dtype)
    plain = _public_grads(ember, x, w, b, g, padding=1)
    for a, e in zip(fast, plain):
        _close(a, e, np.float32)


def test_fast_winograd_declines_other_cases(numba_backend):
    f32 = np.dtype(np.float32)
    ok = ((2, 16, 16, 16), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    assert nn_conv_winograd.eligible(np, *ok, f32)
    assert not nn_conv_winograd.eligible(np, *ok, np.dtype(np.float64))
    assert not nn_conv_winograd.eligible(np, ok[0], ok[1], (2, 2), *ok[3:], f32)
    assert not nn_conv_winograd.eligible(np, ok[0], ok[1], ok[2], ok[3], (2, 2), 1, f32)
    assert not nn_conv_winograd.eligible(np, (2, 8, 16, 16), (16, 8, 3, 3), *ok[2:], f32)
    assert not nn_conv_winograd.eligible(np, (2, 16, 3, 3), *ok[1:], f32)
    # small planes only through the channels-last tiles, which need MLAS, from 64 channels
    small = nn_conv_winograd.eligible(np, (2, 64, 6, 6), (64, 64, 3, 3), *ok[2:], f32)
    assert small == (nn_conv_winograd._mlas.engine() == "mlas")
    assert not nn_conv_winograd.eligible(np, (2, 16, 6, 6), *ok[1:], f32)


@pytest.mark.parametrize("nd,stride,padding,dilation", [
    (2, 1, 1, 1), (2, 2, 1, 1), (2, 1, 2, 2), (2, 3, 0, 1), (1, 1, 2, 1), (1, 2, 3, 2),
])
def test_depthwise_loops_match_torch(numba_backend, nd, stride, padding, dilation):
    rng = np.random.default_rng(stride * 10 + padding + dilation + nd)
    spatial, ksize = ((13, 12), (3, 3)) if nd == 2 else ((30,), (5,))
    x = rng.standard_normal((3, 6) + spatial).astype(np.float32)
    w = rng.standard_normal((6, 1) + ksize).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=6)
    assert nn_conv_grid.depthwise_eligible(np, x.dtype, w.shape, 6)
    conv = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv1d
    g = rng.standard_normal(tuple(conv(torch.from_numpy(x), torch.from_numpy(w), None,
                                       **kw).shape)).astype(np.float32)
    got, want = _public_grads(ember, x, w, b, g, **kw), _public_grads(torch, x, w, b, g, **kw)
    for a, e in zip(got, want):
        _close(a, e, np.float32)


def test_depthwise_loops_match_numpy_backend(numba_backend):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 10, 9)).astype(np.float32)
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    g = rng.standard_normal((2, 5, 5, 5)).astype(np.float32)
    kw = dict(stride=2, padding=1, groups=5)
    fast = _public_grads(ember, x, w, b, g, **kw)
    _kernels.set_backend("numpy")
    assert not nn_conv_grid.depthwise_eligible(np, x.dtype, w.shape, 5)
    plain = _public_grads(ember, x, w, b, g, **kw)
    for a, e in zip(fast, plain):
        _close(a, e, np.float32)


def test_depthwise_loops_decline_other_cases(numba_backend):
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert nn_conv_grid.depthwise_eligible(np, f32, (8, 1, 3, 3), 8)
    assert not nn_conv_grid.depthwise_eligible(np, f64, (8, 1, 3, 3), 8)
    assert not nn_conv_grid.depthwise_eligible(np, f32, (16, 1, 3, 3), 8)  # multiplier 2
    assert not nn_conv_grid.depthwise_eligible(np, f32, (8, 2, 3, 3), 4)
    assert not nn_conv_grid.depthwise_eligible(np, f32, (1, 1, 3, 3), 1)


@pytest.mark.parametrize("groups,out_channels", [(2, 8), (4, 4)])
def test_grouped_kernels_empty_batch(groups, out_channels):
    x = np.zeros((0, 4, 18, 18), np.float32)
    w = np.ones((out_channels, 4 // groups, 3, 3), np.float32)
    g = np.zeros((0, out_channels, 18, 18), np.float32)
    kw = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=groups)
    assert nn_conv._conv_kernel(np, x, w, None, **kw).shape == (0, out_channels, 18, 18)
    assert nn_conv._input_grad_kernel(np, g, w, input_shape=x.shape, **kw).shape == x.shape
    gw = nn_conv._weight_grad_kernel(np, x, g, weight_shape=w.shape, **kw)
    assert gw.shape == w.shape and not gw.any()
    gx, gw = nn_conv_grid.backward_stride1(np, g, x, w, (1, 1), (1, 1), groups)
    assert gx.shape == x.shape and gw.shape == w.shape and not gw.any()


@pytest.mark.parametrize("padding", [0, 1])
def test_grouped_conv_wide_channels_shares_backward(padding):
    # enough channels and a wide enough plane for the Winograd paths' size tests, which a
    # grouped convolution must still not take; both adjoints come from one gather
    rng = np.random.default_rng(padding)
    x = rng.standard_normal((2, 64, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((64, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    g = rng.standard_normal((2, 64, 14 + 2 * padding, 14 + 2 * padding)).astype(np.float32)
    kw = dict(padding=padding, groups=4)
    got, want = _public_grads(ember, x, w, b, g, **kw), _public_grads(torch, x, w, b, g, **kw)
    for a, e in zip(got, want):
        _close(a, e, np.float32)
