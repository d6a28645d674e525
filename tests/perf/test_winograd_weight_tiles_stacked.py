"""Issue 22, helper h22 (session 18): the planar F(2x2, 3x3) weight adjoint multiplies a
chunk's 16 tile-space products in one stacked ``np.matmul``
(``nn_conv_winograd.weight_tiles_into``); the sums it adds are the bits of the 16 separate
products it replaced, and the whole weight gradient is torch's to float rounding."""

import numpy as np
import pytest

_SHAPES = [
    (64, 32, 64, 26, (0, 0)),   # the MNIST CNN's conv2
    (3, 1, 32, 28, (0, 0)),     # one input channel (the MNIST CNN's conv1)
    (5, 16, 24, 14, (1, 1)),
    (2, 8, 4, 9, (2, 1)),
]


def _operands(n, c, o, h, pad, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    g = rng.standard_normal((n, o, h + 2 * pad[0] - 2, h + 2 * pad[1] - 2)).astype(np.float32)
    return x, g


def _tile_sums(x, g, pad, stacked):
    """du (16, O, C) of one chunk, by the stacked product or by 16 products in a loop."""
    from ember._ops import nn_conv_winograd as planar

    k = planar._impl()
    n, c, h, w = x.shape
    o = g.shape[1]
    _, _, th, tw = planar._tiles(h, w, pad)
    du = np.full((16, o, c), 0.25, np.float32)     # added into, as across chunks
    if stacked:
        planar.weight_tiles_into(k, x, g, pad, th, tw, du, np.empty((16, o, c), np.float32))
        return du
    v = np.empty((16, c, n * th * tw), np.float32)
    k.winograd_input(x, pad[0], pad[1], th, tw, v, 0, c)
    dm = np.empty((16, o, n * th * tw), np.float32)
    k.winograd_output_adjoint(g, th, tw, dm, 0, o)
    part = np.empty((o, c), np.float32)
    for i in range(16):
        np.matmul(dm[i], v[i].T, out=part)
        du[i] += part
    return du


@pytest.mark.parametrize("shape", _SHAPES)
def test_stacked_weight_tile_products_give_the_loops_bits(numba_backend, shape):
    *dims, pad = shape
    x, g = _operands(*dims, pad)
    stacked = _tile_sums(x, g, pad, True)
    loop = _tile_sums(x, g, pad, False)
    assert stacked.tobytes() == loop.tobytes()


@pytest.mark.parametrize("shape", _SHAPES[1:3])
def test_weight_grad_with_stacked_products_matches_torch(numba_backend, shape):
    torch = pytest.importorskip("torch")
    from ember._ops import nn_conv_winograd as planar

    *dims, pad = shape
    x, g = _operands(*dims, pad, seed=3)
    got = planar.weight_grad(x, g, pad)
    o, c = g.shape[1], x.shape[1]
    want = torch.nn.grad.conv2d_weight(torch.from_numpy(x), (o, c, 3, 3), torch.from_numpy(g),
                                       padding=pad).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_many_channel_pairs_take_per_position_mlas_products(numba_backend, monkeypatch):
    # NOTE [ Weight adjoint products on MLAS ]: from 128 x 128 channel pairs the 16 products
    # run one by one on MLAS; the sums agree with the stacked NumPy products to rounding and
    # the weight gradient with torch's
    pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    from ember._kernels import _mlas
    from ember._ops import nn_conv_winograd as planar

    monkeypatch.setattr(_mlas, "_state", [pytest.importorskip("onnxruntime")])
    calls = []
    real = _mlas.matmul
    monkeypatch.setattr(_mlas, "matmul", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, g = _operands(2, 128, 128, 16, (1, 1), seed=5)
    per_position = _tile_sums(x, g, (1, 1), True)
    assert len(calls) == 16
    monkeypatch.setattr(planar, "_MLAS_WEIGHT_PAIRS", 1 << 30)
    stacked = _tile_sums(x, g, (1, 1), True)
    np.testing.assert_allclose(per_position, stacked, rtol=1e-5, atol=1e-5 * np.abs(stacked).max())
    monkeypatch.setattr(planar, "_MLAS_WEIGHT_PAIRS", 128 * 128)
    got = planar.weight_grad(x, g, (1, 1))
    want = torch.nn.grad.conv2d_weight(torch.from_numpy(x), (128, 128, 3, 3),
                                       torch.from_numpy(g), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
