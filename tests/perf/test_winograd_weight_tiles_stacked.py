"""Issue 22, helper h22 (session 18): the planar F(2x2, 3x3) weight adjoint multiplies a
chunk's 16 tile-space products as one stack (``nn_conv_winograd.weight_tiles_into``): on
NumPy's BLAS one stacked ``np.matmul``, whose sums are the bits of the 16 separate products;
on MLAS one fused call (NOTE [ Stacks of transposed members ] in ember/_kernels/_mlas.py),
equal to them to rounding. The whole weight gradient is torch's to float rounding."""

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


@pytest.fixture
def numpy_products(monkeypatch):
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])


@pytest.mark.parametrize("shape", _SHAPES)
def test_stacked_weight_tile_products_give_the_loops_bits(numba_backend, numpy_products, shape):
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


@pytest.mark.parametrize("shape", [(2, 128, 128, 16, (1, 1)), (64, 32, 64, 26, (0, 0))])
def test_mlas_takes_the_stack_in_one_call(numba_backend, monkeypatch, shape):
    # NOTE [ Weight adjoint products on MLAS ]: the 16 products are one MLAS call; the sums
    # agree with the loop of NumPy products to rounding and the weight gradient with torch's
    ort = pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    from ember._kernels import _mlas
    from ember._ops import nn_conv_winograd as planar

    monkeypatch.setattr(_mlas, "_state", [ort])
    calls = []
    real = _mlas.matmul
    monkeypatch.setattr(_mlas, "matmul", lambda *a, **k: calls.append(1) or real(*a, **k))
    *dims, pad = shape
    x, g = _operands(*dims, pad, seed=5)
    fused = _tile_sums(x, g, pad, True)
    assert len(calls) == 1
    loop = _tile_sums(x, g, pad, False)
    np.testing.assert_allclose(fused, loop, rtol=1e-5, atol=1e-5 * np.abs(loop).max())
    o, c = g.shape[1], x.shape[1]
    got = planar.weight_grad(x, g, pad)
    want = torch.nn.grad.conv2d_weight(torch.from_numpy(x).double(), (o, c, 3, 3),
                                       torch.from_numpy(g).double(), padding=pad).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
