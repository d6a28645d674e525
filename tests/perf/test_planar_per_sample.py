"""Issue 22, helper h22 (session 18): planar-column convolutions with few column rows
multiply sample by sample (NOTE [ Few-channel planar products per sample ] in
ember/_ops/nn_conv.py). The forward gives the one GEMM's values (the same dot products),
the weight gradient the one GEMM's to float rounding, and both are torch's to float
rounding; shapes the rule leaves out take the one GEMM."""

import numpy as np
import pytest

from ember._ops import nn_conv

# (N, C, O, H, W, kernel, stride, padding)
_FEW = [
    (64, 1, 32, 28, 28, 3, 1, 0),   # the MNIST CNN's conv1
    (6, 3, 16, 32, 20, 3, 1, 1),    # an RGB stem, non-square plane
    (5, 64, 24, 17, 17, 1, 2, 0),   # a 1x1 stride-2 shortcut (64 rows)
    (3, 2, 16, 18, 21, 3, 2, 1),    # strided 3x3
]


def _operands(n, c, o, h, w, k, s, p, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(dtype)
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    g = rng.standard_normal((n, o, ho, wo)).astype(dtype)
    return x, wt, g


def _forward(x, w, s, p):
    return nn_conv._planar_conv(np, x, w, (s, s), (p, p), (1, 1))


def _weight_grad(x, g, w_shape, s, p):
    return nn_conv._weight_grad_kernel(np, x, g, weight_shape=w_shape, stride=(s, s),
                                       padding=(p, p), dilation=(1, 1), groups=1)


def _one_gemm(monkeypatch):
    monkeypatch.setattr(nn_conv, "_PER_SAMPLE_ROWS", -1)
    monkeypatch.setattr(nn_conv, "_PER_SAMPLE_GRAD_ROWS", -1)


@pytest.mark.parametrize("shape", _FEW)
def test_per_sample_forward_matches_one_gemm(monkeypatch, shape):
    n, c, o, h, w, k, s, p = shape
    x, wt, _ = _operands(*shape)
    got = _forward(x, wt, s, p)
    with monkeypatch.context() as m:
        _one_gemm(m)
        want = _forward(x, wt, s, p)
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [sh for sh in _FEW if sh[1] * sh[5] ** 2 <= 32])
def test_per_sample_weight_grad_matches_one_gemm(monkeypatch, shape):
    n, c, o, h, w, k, s, p = shape
    x, wt, g = _operands(*shape, seed=1)
    got = _weight_grad(x, g, wt.shape, s, p)
    with monkeypatch.context() as m:
        _one_gemm(m)
        want = _weight_grad(x, g, wt.shape, s, p)
    assert got.shape == wt.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_per_sample_forward_float64_and_batch_chunks(monkeypatch):
    # several batch chunks: each writes its own samples' blocks of the output
    x, wt, _ = _operands(7, 3, 16, 20, 20, 3, 1, 1, seed=2, dtype=np.float64)
    monkeypatch.setattr(nn_conv, "_COLUMN_BYTES", 3 * 27 * 400 * 8)   # 3 samples a chunk
    got = _forward(x, wt, 1, 1)
    monkeypatch.setattr(nn_conv, "_PER_SAMPLE_ROWS", -1)
    want = _forward(x, wt, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_many_rows_and_few_outputs_keep_the_one_gemm(monkeypatch):
    calls = []
    real = nn_conv._channel_rows

    def spy(xp, a):
        calls.append(a.shape)
        return real(xp, a)

    monkeypatch.setattr(nn_conv, "_channel_rows", spy)
    x, wt, g = _operands(2, 8, 8, 20, 20, 3, 1, 1)        # 72 rows, 8 outputs
    _weight_grad(x, g, wt.shape, 1, 1)
    x, wt, g = _operands(2, 1, 32, 20, 20, 3, 1, 1)       # 9 rows, 32 outputs
    _weight_grad(x, g, wt.shape, 1, 1)
    assert calls == [(2, 8, 20, 20)]


@pytest.mark.parametrize("shape", _FEW[:3])
def test_few_channel_conv_matches_torch(shape):
    torch = pytest.importorskip("torch")
    import ember

    n, c, o, h, w, k, s, p = shape
    x, wt, g = _operands(*shape, seed=3)
    ex = ember.from_numpy(x)
    ew = ember.from_numpy(wt).requires_grad_(True)
    ey = ember.nn.functional.conv2d(ex, ew, stride=s, padding=p)
    ey.backward(ember.from_numpy(g))
    tx = torch.from_numpy(x)
    tw = torch.from_numpy(wt).requires_grad_(True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=s, padding=p)
    ty.backward(torch.from_numpy(g))
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    gw = tw.grad.numpy()
    np.testing.assert_allclose(ew.grad.numpy(), gw, rtol=1e-4, atol=1e-5 * np.abs(gw).max())
