"""The whole-batch channels-last F(2x2) path's transforms cut over threads by samples (NOTE
[ Whole-batch transforms on threads ] in ember/_ops/nn_conv_winograd.py): the forward and
both adjoints give the bits of one call, small transforms stay whole, and the gradients are
torch's to float rounding."""

import numpy as np
import pytest

import ember
from ember import _parallel

pytest.importorskip("numba")

# ResNet-18's whole-batch layers (256 on 8x8, 512 on 4x4) and odd sample counts
_SHAPES = [(32, 256, 8, (1, 1)), (7, 512, 4, (1, 1)), (5, 256, 9, (0, 0))]


def _operands(n, c, h, pad, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = (rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    g = rng.standard_normal((n, c, h + 2 * pad[0] - 2, h + 2 * pad[1] - 2)).astype(np.float32)
    return x, w, b, g


def _run(x, w, b, g, pad):
    from ember._kernels import _winograd_backward
    from ember._ops import nn_conv_winograd as planar
    from ember._ops import nn_winograd as winograd

    n, c, h, wd = x.shape
    _, _, th, tw = planar._tiles(h, wd, pad)
    assert planar._whole_batch(n, th, tw, c, w.shape[0])
    u = winograd.weight_tiles(np, w)
    y = planar._convolve_cl(x, u.transpose(0, 2, 1), pad, b)
    gx, gw = _winograd_backward.backward_cl(x, g, w, pad)
    return y, gx, gw


@pytest.mark.parametrize("shape", _SHAPES)
def test_split_transforms_give_one_calls_bits(numba_backend, threads, monkeypatch, shape):
    *dims, pad = shape
    x, w, b, g = _operands(*dims, pad)
    got = _run(x, w, b, g, pad)
    assert threads.count(True) >= 4      # x's tiles twice, y's tiles, g's tiles, gx
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    want = _run(x, w, b, g, pad)
    for a, e in zip(got, want):
        assert a.tobytes() == e.tobytes()


def test_small_transforms_stay_whole(numba_backend, threads):
    from ember._ops import nn_conv_winograd as planar

    calls = []
    planar.by_samples(lambda lo, hi: calls.append((lo, hi)), 8, planar._SPLIT_TRANSFORM - 1)
    assert calls == [(0, 8)] and threads == []
    planar.by_samples(lambda lo, hi: calls.append((lo, hi)), 8, planar._SPLIT_TRANSFORM)
    assert sorted(calls[1:]) == [(0, 4), (4, 8)] and threads == [True]


def test_whole_batch_layer_matches_torch_on_threads(numba_backend, threads):
    torch = pytest.importorskip("torch")
    x, w, b, g = _operands(8, 256, 8, (1, 1), seed=3)
    xe, we, be = (ember.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    xt, wt, bt = (torch.from_numpy(a.copy()).double().requires_grad_() for a in (x, w, b))
    ye = ember.nn.functional.conv2d(xe, we, be, padding=1)
    yt = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g).double())
    assert True in threads
    for a, e in ((ye, yt), (xe.grad, xt.grad), (we.grad, wt.grad), (be.grad, bt.grad)):
        e = e.detach().numpy()
        np.testing.assert_allclose(a.detach().numpy(), e, rtol=1e-4,
                                   atol=1e-4 * np.abs(e).max())
