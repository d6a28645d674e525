"""Winograd F(4x4, 3x3) with compiled transforms (NOTE [ Winograd F(4x4, 3x3) ] in
ember/_kernels/_winograd43.py), planar and through channels-last tiles, against PyTorch and
against the paths they replace."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _winograd43 as w43
from ember._ops import nn_conv, nn_conv_winograd

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

_TOL = 2e-4  # of the largest value (F(4x4)'s rounding is a few times F(2x2)'s)


@pytest.fixture
def numba_backend():
    old = _kernels.set_backend("numba")
    yield
    _kernels.set_backend(old)


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=_TOL * max(1.0, float(np.abs(b).max())))


def _case(seed, shape, out_channels, padding):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, shape[1], 3, 3)) * 0.2).astype(np.float32)
    ho, wo = (shape[2 + i] + 2 * padding - 2 for i in range(2))
    g = rng.standard_normal((shape[0], out_channels, ho, wo)).astype(np.float32)
    return x, w, g


def _torch(x, w, g, padding, b=None):
    xt, wt, gt = (torch.from_numpy(a) for a in (x, w, g))
    y = torch.nn.functional.conv2d(xt, wt, None if b is None else torch.from_numpy(b), 1,
                                   padding)
    gx, _, _ = torch.ops.aten.convolution_backward(
        gt, xt, wt, None, [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1,
        [True, False, False])
    return y.numpy(), gx.numpy()


# planes whose output is and is not a whole number of 4x4 tiles, every padding
@pytest.mark.parametrize("shape,padding", [((2, 16, 18, 17), 0), ((2, 16, 18, 17), 1),
                                           ((2, 16, 18, 17), 2), ((3, 8, 10, 10), 1),
                                           ((1, 4, 3, 5), 0)])
def test_kernels_match_torch_any_plane_and_padding(numba_backend, shape, padding):
    x, w, g = _case(padding, shape, 12, padding)
    b = np.linspace(-1, 1, 12, dtype=np.float32)
    y_t, gx_t = _torch(x, w, g, padding)
    _close(w43.conv2d(x, w, b, (padding, padding)), y_t + b.reshape(-1, 1, 1))
    _close(w43.input_grad(g, w, (padding, padding)), gx_t)


def test_kernels_match_the_f2x2_path(numba_backend):
    x, w, g = _case(5, (2, 16, 20, 20), 16, 1)
    _close(w43.conv2d(x, w, None, (1, 1)), nn_conv_winograd.conv2d(x, w, None, (1, 1)))
    _close(w43.input_grad(g, w, (1, 1)), nn_conv_winograd.input_grad(g, w, (1, 1)))


def test_eligible_only_for_large_planes_and_many_channels(numba_backend):
    f32 = np.dtype(np.float32)
    ok = ((2, 64, 32, 32), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    assert w43.eligible(np, *ok, f32)
    assert not w43.eligible(np, *ok, np.dtype(np.float64))
    assert not w43.eligible(np, ok[0], ok[1], (2, 2), *ok[3:], f32)
    assert not w43.eligible(np, ok[0], ok[1], ok[2], ok[3], (2, 2), 1, f32)
    assert not w43.eligible(np, ok[0], ok[1], ok[2], (3, 3), *ok[4:], f32)
    assert not w43.eligible(np, (2, 64, 16, 16), *ok[1:], f32)        # small planes
    assert not w43.eligible(np, (2, 32, 32, 32), (64, 32, 3, 3), *ok[2:], f32)
    assert not w43.eligible(np, (0, 64, 32, 32), *ok[1:], f32)        # empty batch
    _kernels.set_backend("numpy")
    assert not w43.eligible(np, *ok, f32)


@pytest.fixture
def spy(monkeypatch):
    """Counts of the planar F(4x4) forward and input adjoint calls. The planar kernels serve
    layers of more than 256 channels; to reach them with small layers the channels-last
    tiles, which take every 64-256 channel layer, are turned off."""
    monkeypatch.setattr(w43, "channels_last_pays", lambda c, o, ho, wo: False)
    return _spy(monkeypatch, ("conv2d", "input_grad"))


def _spy(monkeypatch, names):
    calls = dict.fromkeys(names, 0)
    for name in calls:
        real = getattr(w43, name)

        def counted(*a, _real=real, _name=name):
            calls[_name] += 1
            return _real(*a)

        monkeypatch.setattr(w43, name, counted)
    return calls


def _public(fw, x, w, g, padding, b=None):
    xt, wt = fw.tensor(x, requires_grad=True), fw.tensor(w, requires_grad=True)
    bt = None if b is None else fw.tensor(b, requires_grad=True)
    y = fw.nn.functional.conv2d(xt, wt, bt, padding=padding)
    y.backward(fw.tensor(g))
    grads = (xt.grad.numpy(), wt.grad.numpy()) + (() if b is None else (bt.grad.numpy(),))
    return (y.detach().numpy(),) + grads


def test_public_conv_takes_f4x4_and_matches_torch(numba_backend, spy):
    x, w, g = _case(11, (2, 64, 28, 28), 64, 1)
    got, want = _public(ember, x, w, g, 1), _public(torch, x, w, g, 1)
    assert spy == {"conv2d": 1, "input_grad": 1}
    for a, e in zip(got, want):
        _close(a, e)


def test_input_grad_alone_takes_f4x4(numba_backend, spy):
    x, w, g = _case(12, (1, 64, 30, 30), 64, 0)
    xt = ember.tensor(x, requires_grad=True)
    y = ember.nn.functional.conv2d(xt, ember.tensor(w))
    y.backward(ember.tensor(g))
    assert spy == {"conv2d": 1, "input_grad": 1}
    _close(xt.grad.numpy(), _torch(x, w, g, 0)[1])


def test_numpy_backend_declines_and_agrees(numba_backend, spy):
    x, w, g = _case(13, (1, 64, 28, 28), 64, 1)
    fast = _public(ember, x, w, g, 1)
    _kernels.set_backend("numpy")
    spy.update(conv2d=0, input_grad=0)
    plain = _public(ember, x, w, g, 1)
    assert spy == {"conv2d": 0, "input_grad": 0}
    for a, e in zip(fast, plain):
        _close(a, e)


# the planar kernels (three samples of 28x28) and the channels-last tiles (five of 16x16, one
# sample a chunk)
@pytest.mark.parametrize("tiles", [False, True])
def test_batch_pieces_equal_one_piece(numba_backend, monkeypatch, tiles):
    pytest.importorskip("threadpoolctl")
    x, w, g = _case(14, (5, 64, 16, 16) if tiles else (3, 64, 28, 28), 64, 1)
    conv, adjoint = ((w43.conv2d_cl, w43.input_grad_cl) if tiles else
                     (w43.conv2d, w43.input_grad))
    whole = conv(x, w, None, (1, 1)), adjoint(g, w, (1, 1))
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(w43, "_CL_TILE_BYTES", 1)
    try:
        split = conv(x, w, None, (1, 1)), adjoint(g, w, (1, 1))
    finally:
        ember.set_num_threads(before)
    for a, e in zip(split, whole):
        _close(a, e)  # (the GEMMs of other chunk sizes may sum in another order)


def test_conv_kernel_dispatch_uses_planar_f4x4_without_the_tiles(numba_backend, spy):
    x, w, _ = _case(15, (1, 64, 32, 32), 64, 1)
    nn_conv._conv_kernel(np, x, w, None, stride=(1, 1), padding=(1, 1), dilation=(1, 1),
                         groups=1)
    assert spy["conv2d"] == 1


# -- channels-last tiles (NOTE [ Channels-last Winograd tiles ]) -------------------------


# output planes that are and are not whole 4x4 tiles, every padding, channel counts that
# are not a multiple of the vector width, one sample and several
@pytest.mark.parametrize("shape,out_channels,padding", [
    ((2, 16, 18, 17), 12, 0), ((2, 16, 18, 17), 20, 1), ((2, 9, 10, 13), 7, 2),
    ((3, 64, 16, 16), 64, 1), ((1, 5, 3, 5), 3, 0), ((2, 33, 6, 6), 17, 1)])
def test_tiles_match_torch_any_plane_and_padding(numba_backend, shape, out_channels,
                                                padding):
    x, w, g = _case(padding, shape, out_channels, padding)
    b = np.linspace(-1, 1, out_channels, dtype=np.float32)
    y_t, gx_t = _torch(x, w, g, padding, b)
    _close(w43.conv2d_cl(x, w, b, (padding, padding)), y_t)
    _close(w43.conv2d_cl(x, w, None, (padding, padding)), y_t - b.reshape(-1, 1, 1))
    _close(w43.input_grad_cl(g, w, (padding, padding)), gx_t)


def test_tiles_match_the_planar_f4x4_kernels(numba_backend):
    x, w, g = _case(5, (2, 16, 20, 20), 24, 1)
    _close(w43.conv2d_cl(x, w, None, (1, 1)), w43.conv2d(x, w, None, (1, 1)))
    _close(w43.input_grad_cl(g, w, (1, 1)), w43.input_grad(g, w, (1, 1)))


def test_non_contiguous_input_and_weight(numba_backend):
    x, w, g = _case(6, (2, 40, 12, 12), 40, 1)
    xs = np.asfortranarray(x)[:, ::-1]                  # neither C- nor F-ordered
    ws = np.ascontiguousarray(w[:, ::-1])[:, ::-1]      # the same weight, another layout
    wt = w.transpose(1, 0, 2, 3).copy().transpose(1, 0, 2, 3)
    want = _torch(np.ascontiguousarray(xs), w, g, 1)
    _close(w43.conv2d_cl(xs, ws, None, (1, 1)), want[0])
    _close(w43.conv2d_cl(np.ascontiguousarray(xs), wt, None, (1, 1)), want[0])
    _close(w43.input_grad_cl(g[:, :, :, :], wt, (1, 1)), want[1])


def test_eligible_shapes(numba_backend):
    f32 = np.dtype(np.float32)
    rest = ((1, 1), (1, 1), (1, 1), 1)
    ok = ((2, 128, 16, 16), (128, 128, 3, 3))
    assert w43.channels_last_eligible(np, *ok, *rest, f32)
    assert w43.channels_last_eligible(np, *ok, *rest, f32, adjoint=True)
    assert not w43.channels_last_eligible(np, *ok, *rest, np.dtype(np.float64))
    assert not w43.channels_last_eligible(np, *ok, (2, 2), *rest[1:], f32)
    assert not w43.channels_last_eligible(np, *ok, (1, 1), (1, 1), (2, 2), 1, f32)
    assert not w43.channels_last_eligible(np, (2, 512, 4, 4), (512, 512, 3, 3), *rest, f32)
    assert not w43.channels_last_eligible(np, (2, 320, 32, 32), (64, 320, 3, 3), *rest, f32)
    assert not w43.channels_last_eligible(np, (2, 64, 8, 8), (64, 64, 3, 3), *rest, f32)
    # wide planes too, since the transforms run in float32 (NOTE [ Float32 constants in the
    # transforms ])
    assert w43.channels_last_eligible(np, (2, 64, 32, 32), (64, 64, 3, 3), *rest, f32)
    assert w43.channels_last_eligible(np, (2, 64, 56, 56), (64, 64, 3, 3), *rest, f32)
    assert not w43.channels_last_eligible(np, (2, 16, 16, 16), (16, 16, 3, 3), *rest, f32)
    assert not w43.channels_last_eligible(np, (0, 128, 16, 16), ok[1], *rest, f32)
    # the MNIST CNN's second layer (32 -> 64 channels) keeps F(2x2) for its accuracy
    mnist = ((64, 32, 26, 26), (64, 32, 3, 3), (1, 1), (0, 0), (1, 1), 1, f32)
    assert not w43.channels_last_eligible(np, *mnist)
    # 64 -> 64 onto 8x8 from 10x10: the forward declines the tiles, its input adjoint (onto
    # 10x10) takes them
    small = ((2, 64, 10, 10), (64, 64, 3, 3), (1, 1), (0, 0), (1, 1), 1, f32)
    assert not w43.channels_last_eligible(np, *small)
    assert w43.channels_last_eligible(np, *small, adjoint=True)
    _kernels.set_backend("numpy")
    assert not w43.channels_last_eligible(np, *ok, *rest, f32)


@pytest.fixture
def cl_spy(monkeypatch):
    """Counts of the channels-last forward and input adjoint calls."""
    return _spy(monkeypatch, ("conv2d_cl", "input_grad_cl"))


def test_public_conv_takes_the_tiles_and_matches_torch(numba_backend, cl_spy):
    x, w, g = _case(11, (2, 128, 16, 16), 128, 1)
    b = np.linspace(-0.5, 0.5, 128, dtype=np.float32)
    got, want = _public(ember, x, w, g, 1, b), _public(torch, x, w, g, 1, b)
    assert cl_spy == {"conv2d_cl": 1, "input_grad_cl": 1}
    for a, e in zip(got, want):
        _close(a, e)
    # the weight gradient stays with F(2x2): as close to torch's as that path is
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-4)


def test_input_adjoint_alone_where_the_forward_declines(numba_backend, cl_spy):
    x, w, g = _case(12, (2, 64, 10, 10), 64, 0)
    b = np.zeros(64, np.float32)
    got, want = _public(ember, x, w, g, 0, b), _public(torch, x, w, g, 0, b)
    assert cl_spy == {"conv2d_cl": 0, "input_grad_cl": 1}
    for a, e in zip(got, want):
        _close(a, e)


def test_public_conv_on_a_wide_plane_takes_the_tiles(numba_backend, cl_spy):
    x, w, g = _case(17, (2, 64, 30, 33), 72, 1)
    b = np.linspace(-0.5, 0.5, 72, dtype=np.float32)
    got, want = _public(ember, x, w, g, 1, b), _public(torch, x, w, g, 1, b)
    assert cl_spy == {"conv2d_cl": 1, "input_grad_cl": 1}
    for a, e in zip(got, want):
        _close(a, e)


def test_input_grad_alone_takes_the_tiles(numba_backend, cl_spy):
    x, w, g = _case(13, (1, 64, 12, 12), 64, 1)
    xt = ember.tensor(x, requires_grad=True)
    y = ember.nn.functional.conv2d(xt, ember.tensor(w), padding=1)
    y.backward(ember.tensor(g))
    assert cl_spy == {"conv2d_cl": 1, "input_grad_cl": 1}
    _close(xt.grad.numpy(), _torch(x, w, g, 1)[1])


def test_numpy_backend_declines_the_tiles_and_agrees(numba_backend, cl_spy):
    x, w, g = _case(14, (2, 64, 12, 12), 64, 1)
    b = np.zeros(64, np.float32)
    fast = _public(ember, x, w, g, 1, b)
    _kernels.set_backend("numpy")
    cl_spy.update(conv2d_cl=0, input_grad_cl=0)
    plain = _public(ember, x, w, g, 1, b)
    assert cl_spy == {"conv2d_cl": 0, "input_grad_cl": 0}
    for a, e in zip(fast, plain):
        _close(a, e)


def test_conv_kernel_dispatch_uses_the_tiles_for_stage_two_layers(numba_backend, cl_spy):
    x, w, _ = _case(16, (1, 128, 16, 16), 128, 1)
    nn_conv._conv_kernel(np, x, w, None, stride=(1, 1), padding=(1, 1), dilation=(1, 1),
                         groups=1)
    assert cl_spy["conv2d_cl"] == 1
