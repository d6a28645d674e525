"""F(2x2, 3x3) through channels-last tiles -- the forward (NOTE [ Channels-last F(2x2)
tiles ] in ember/_ops/nn_conv_winograd.py) and both adjoints (NOTE [ Channels-last F(2x2)
adjoints ] in ember/_kernels/_winograd_backward.py) -- against PyTorch and against the
planar kernels they replace."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _mlas
from ember._kernels import _winograd_backward as winograd_backward
from ember._ops import nn_conv_winograd as f2, nn_winograd

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

_TOL = 2e-5  # of the largest value: F(2x2) rounds about as the direct form does


@pytest.fixture
def numba_backend():
    old = _kernels.set_backend("numba")
    yield
    _kernels.set_backend(old)


@pytest.fixture
def tiles(monkeypatch):
    """Counts of the channels-last forward's calls (MLAS taken as present, so the rule
    reaches the tiles on machines where it is not the default engine)."""
    calls = {"cl": 0}
    real = f2._convolve_cl

    def counted(*a, **k):
        calls["cl"] += 1
        return real(*a, **k)

    monkeypatch.setattr(f2, "_convolve_cl", counted)
    monkeypatch.setattr(f2, "_tiles_pay", lambda c, o: min(c, o) >= 16)
    return calls


def _case(seed, shape, out_channels):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, shape[1], 3, 3)) * 0.2).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)
    return x, w, b


def _close(a, e):
    np.testing.assert_allclose(a, e, rtol=0, atol=_TOL * max(1.0, float(np.abs(e).max())))


def _torch(x, w, b, padding):
    return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                      None if b is None else torch.from_numpy(b),
                                      padding=padding).numpy()


# output planes of odd and even sizes, every padding, channel counts that are not a
# multiple of the vector width, one sample and several, with and without bias
@pytest.mark.parametrize("shape,out_channels,padding,bias", [
    ((2, 16, 16, 16), 16, 1, True), ((3, 17, 15, 14), 20, 0, True),
    ((1, 33, 14, 19), 18, 2, False), ((4, 32, 26, 26), 64, 0, True),
    ((2, 20, 30, 17), 40, 1, False)])
def test_kernels_match_torch(numba_backend, shape, out_channels, padding, bias):
    x, w, b = _case(padding, shape, out_channels)
    b = b if bias else None
    u = np.ascontiguousarray(nn_winograd.weight_tiles(np, w).transpose(0, 2, 1))
    _close(f2._convolve_cl(x, u, (padding, padding), b), _torch(x, w, b, padding))


def test_public_forward_takes_the_tiles_and_matches_torch(numba_backend, tiles):
    x, w, b = _case(7, (3, 32, 26, 26), 64)
    y = ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    assert tiles["cl"] == 1
    _close(y.numpy(), _torch(x, w, b, 0))


def test_tiles_match_the_planar_kernels(numba_backend, tiles, monkeypatch):
    x, w, b = _case(8, (5, 24, 18, 18), 40)
    xt, wt, bt = ember.tensor(x), ember.tensor(w), ember.tensor(b)
    y = ember.nn.functional.conv2d(xt, wt, bt, padding=1).numpy()
    assert tiles["cl"] == 1
    monkeypatch.setattr(f2, "_tiles_pay", lambda c, o: False)
    planar = ember.nn.functional.conv2d(xt, wt, bt, padding=1).numpy()
    assert tiles["cl"] == 1
    _close(y, planar)
    if _mlas.engine() == "mlas" and min(w.shape[:2]) >= _mlas.MIN_ROWS:
        # both sum each product over C in order on MLAS: the same bits
        np.testing.assert_array_equal(y, planar)


def test_gradients_match_torch(numba_backend, tiles, monkeypatch):
    calls = {"backward_cl": 0}
    real = winograd_backward.backward_cl

    def counted(*a, **k):
        calls["backward_cl"] += 1
        return real(*a, **k)

    monkeypatch.setattr(winograd_backward, "backward_cl", counted)
    x, w, b = _case(9, (2, 16, 20, 20), 24)
    got = []
    for fw in (ember, torch):
        xt = fw.tensor(x, requires_grad=True)
        wt = fw.tensor(w, requires_grad=True)
        y = fw.nn.functional.conv2d(xt, wt, fw.tensor(b), padding=1)
        (y * y).sum().backward()
        got.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    assert tiles["cl"] == 1 and calls["backward_cl"] == 1
    for a, e in zip(*got):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-3)


def _torch_grads(x, w, g, padding):
    gx, gw, _ = torch.ops.aten.convolution_backward(
        torch.from_numpy(g), torch.from_numpy(x), torch.from_numpy(w), None, [1, 1],
        [padding] * 2, [1, 1], False, [0, 0], 1, [True, True, False])
    return gx.numpy(), gw.numpy()


# odd planes, every padding, channel counts off the vector width, one sample and several
@pytest.mark.parametrize("shape,out_channels,padding", [
    ((2, 16, 16, 16), 16, 1), ((3, 17, 15, 14), 20, 0), ((1, 33, 14, 19), 18, 2),
    ((4, 32, 26, 26), 64, 0), ((2, 5, 7, 9), 3, 1), ((2, 130, 10, 10), 129, 1)])
def test_adjoint_kernels_match_torch(numba_backend, shape, out_channels, padding):
    x, w, _ = _case(padding + 20, shape, out_channels)
    ho, wo = (shape[2 + i] + 2 * padding - 2 for i in range(2))
    g = np.random.default_rng(3).standard_normal((shape[0], out_channels, ho, wo)).astype(
        np.float32)
    want = _torch_grads(x, w, g, padding)
    gx, gw = winograd_backward.backward_cl(x, g, w, (padding, padding))
    _close(gx, want[0])
    np.testing.assert_allclose(gw, want[1], rtol=0, atol=1e-4 * np.abs(want[1]).max())
    none, gw2 = winograd_backward.backward_cl(x, g, w, (padding, padding), want_input=False)
    assert none is None
    np.testing.assert_array_equal(gw2, gw)


def test_adjoints_match_the_planar_kernels_in_pieces(numba_backend, monkeypatch):
    pytest.importorskip("threadpoolctl")
    x, w, _ = _case(30, (5, 24, 18, 18), 40)
    g = np.random.default_rng(4).standard_normal((5, 40, 18, 18)).astype(np.float32)
    planar = winograd_backward.backward(x, g, w, (1, 1))
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(winograd_backward, "_CL_TILE_BYTES", 1)     # one sample a chunk
    try:
        pieces = winograd_backward.backward_cl(x, g, w, (1, 1))
    finally:
        ember.set_num_threads(before)
    _close(pieces[0], planar[0])
    np.testing.assert_allclose(pieces[1], planar[1], rtol=0,
                               atol=1e-5 * np.abs(planar[1]).max())


def test_batch_pieces_equal_one_piece(numba_backend, tiles, monkeypatch):
    pytest.importorskip("threadpoolctl")
    x, w, b = _case(10, (5, 16, 16, 16), 32)
    xt, wt, bt = ember.tensor(x), ember.tensor(w), ember.tensor(b)
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        whole = ember.nn.functional.conv2d(xt, wt, bt, padding=1).numpy()
        ember.set_num_threads(2)
        monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
        monkeypatch.setattr(_parallel, "contended", lambda: False)
        monkeypatch.setattr(f2, "_CL_TILE_BYTES", 1)     # one sample a chunk
        pieces = ember.nn.functional.conv2d(xt, wt, bt, padding=1).numpy()
    finally:
        ember.set_num_threads(before)
    assert tiles["cl"] == 2
    _close(pieces, whole)  # (products over other chunk sizes may sum in another order)


def test_rule():
    assert not f2._tiles_pay(8, 64)
    assert f2._tiles_pay(16, 64) == (_mlas.engine() == "mlas")


# small planes (4-13 wide) with 64 to 512 channels take the tiles only (``_pays``)
@pytest.mark.parametrize("shape,out_channels,padding", [
    ((4, 64, 8, 8), 64, 1), ((3, 128, 10, 10), 96, 0), ((2, 64, 9, 9), 72, 1),
    ((4, 80, 4, 4), 72, 1)])
@pytest.mark.parametrize("wants", [(True, True), (True, False), (False, True)])
def test_small_planes_take_the_tiles_and_match_torch(numba_backend, shape, out_channels,
                                                     padding, wants):
    if _mlas.engine() != "mlas":
        pytest.skip("the tiles take small planes only with MLAS for the products")
    x, w, _ = _case(40, shape, out_channels)
    assert f2.eligible(np, x.shape, w.shape, (1, 1), (padding,) * 2, (1, 1), 1, x.dtype)
    got = []
    for fw in (ember, torch):
        xt = fw.tensor(x, requires_grad=wants[0])
        wt = fw.tensor(w, requires_grad=wants[1])
        y = fw.nn.functional.conv2d(xt, wt, padding=padding)
        (y * y).sum().backward()
        got.append([y.detach().numpy()] + [t.grad.numpy() for t in (xt, wt) if t.grad is not None])
    for a, e in zip(*got):
        _close(a, e)


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_batch_by_position_matches_torch(numba_backend, monkeypatch, threads):
    # few tiles a piece: the whole batch's transforms, products split by position
    pytest.importorskip("threadpoolctl")
    x, w, _ = _case(41, (6, 48, 4, 4), 40)
    g = np.random.default_rng(5).standard_normal((6, 40, 4, 4)).astype(np.float32)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(f2, "_WHOLE_BATCH_U_BYTES", 0)     # whole at one thread too
    try:
        u = nn_winograd.weight_tiles(np, w)
        y = f2._convolve_cl(x, u.transpose(0, 2, 1), (1, 1))
        gx, gw = winograd_backward.backward_cl(x, g, w, (1, 1))
    finally:
        ember.set_num_threads(before)
    _close(y, _torch(x, w, None, 1))
    want = _torch_grads(x, w, g, 1)
    _close(gx, want[0])
    np.testing.assert_allclose(gw, want[1], rtol=0, atol=1e-4 * np.abs(want[1]).max())


def test_small_planes_rule():
    f32 = np.dtype(np.float32)
    rest = ((1, 1), (1, 1), (1, 1), 1, f32)
    mlas = _mlas.engine() == "mlas"
    assert f2.eligible(np, (2, 128, 8, 8), (128, 128, 3, 3), *rest) == mlas
    assert f2.eligible(np, (2, 512, 4, 4), (512, 512, 3, 3), *rest) == mlas
    assert not f2.eligible(np, (2, 512, 3, 3), (512, 512, 3, 3), *rest)   # 3x3
    assert not f2.eligible(np, (2, 1024, 8, 8), (512, 1024, 3, 3), *rest)  # 1024 channels
    assert not f2.eligible(np, (2, 8, 8, 8), (8, 8, 3, 3), *rest)         # 8 channels
    assert not f2.eligible(np, (2, 16, 8, 8), (16, 16, 3, 3), *rest)   # under 64 channels
    assert not f2.eligible(np, (2, 48, 12, 12), (96, 48, 3, 3), *rest)


@pytest.mark.parametrize("channels", [8, 16, 40])
def test_few_channel_small_planes_keep_exact_zero_weight_gradients(channels):
    # NOTE [ Exact zeros of few-channel weight gradients ]: sparse ReLU activations whose
    # taps' products are all zero give exactly zero there, as PyTorch's do (Adam's first
    # steps turn any residue into a visible step)
    rng = np.random.default_rng(channels)
    x = np.maximum(rng.standard_normal((4, channels, 8, 8)), 0).astype(np.float32)
    x *= rng.random(x.shape) < 0.08
    w = (rng.standard_normal((channels, channels, 3, 3)) * 0.2).astype(np.float32)
    g = rng.standard_normal((4, channels, 8, 8)).astype(np.float32)
    g *= rng.random(g.shape) < 0.1
    grads = []
    for fw in (ember, torch):
        wt = fw.tensor(w, requires_grad=True)
        fw.nn.functional.conv2d(fw.tensor(x), wt, padding=1).backward(fw.tensor(g))
        grads.append(wt.grad.numpy())
    assert (grads[1] == 0).sum() > 0
    np.testing.assert_array_equal(grads[0] == 0, grads[1] == 0)
    _close(grads[0], grads[1])
