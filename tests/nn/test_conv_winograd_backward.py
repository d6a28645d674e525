"""Both adjoints of a planar F(2x2, 3x3) Winograd convolution from one transform of g
(NOTE [ One output transform for both adjoints ] in ember/_kernels/_winograd_backward.py)
against PyTorch and against the separate adjoints."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _winograd_backward as wb
from ember._ops import nn_conv_winograd

torch = pytest.importorskip("torch")
pytest.importorskip("numba")


@pytest.fixture
def numba_backend():
    old = _kernels.set_backend("numba")
    yield
    _kernels.set_backend(old)


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-4 * max(1.0, float(np.abs(b).max())))


def _case(seed, shape, out_channels, padding):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, shape[1], 3, 3)) * 0.2).astype(np.float32)
    ho, wo = (shape[2 + i] + 2 * padding - 2 for i in range(2))
    g = rng.standard_normal((shape[0], out_channels, ho, wo)).astype(np.float32)
    return x, w, g


# odd and even planes (a cropped last tile or not), every padding
@pytest.mark.parametrize("shape,padding", [((2, 16, 18, 17), 0), ((2, 16, 18, 17), 1),
                                           ((2, 16, 18, 17), 2), ((3, 16, 15, 14), 1),
                                           ((1, 4, 3, 3), 0)])
def test_backward_matches_torch(numba_backend, shape, padding):
    x, w, g = _case(padding, shape, 24, padding)
    gx, gw = wb.backward(x, g, w, (padding, padding))
    xt, wt, gt = (torch.from_numpy(a) for a in (x, w, g))
    gx_t, gw_t, _ = torch.ops.aten.convolution_backward(
        gt, xt, wt, None, [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1,
        [True, True, False])
    _close(gx, gx_t.numpy())
    _close(gw, gw_t.numpy())


def test_weight_grad_is_the_separate_paths_bit_for_bit(numba_backend):
    x, w, g = _case(7, (5, 16, 16, 17), 16, 1)
    gx, gw = wb.backward(x, g, w, (1, 1))
    np.testing.assert_array_equal(gw, nn_conv_winograd.weight_grad(x, g, (1, 1)))
    _close(gx, nn_conv_winograd.input_grad(g, w, (1, 1)))


def test_public_backward_takes_the_shared_path(numba_backend, monkeypatch):
    # (with MLAS the channels-last adjoints come first: tests/nn/test_conv_winograd22_tiles.py)
    monkeypatch.setattr(nn_conv_winograd, "_tiles_pay", lambda c, o: False)
    calls = []
    real = wb.backward
    monkeypatch.setattr(wb, "backward", lambda *a: calls.append(1) or real(*a))
    x, w, g = _case(8, (2, 16, 16, 16), 16, 1)
    got = []
    for fw in (ember, torch):
        xt, wt = fw.tensor(x, requires_grad=True), fw.tensor(w, requires_grad=True)
        fw.nn.functional.conv2d(xt, wt, padding=1).backward(fw.tensor(g))
        got.append((xt.grad.numpy(), wt.grad.numpy()))
    assert calls == [1]
    for a, e in zip(*got):
        _close(a, e)


def test_batch_pieces_agree_with_one_piece(numba_backend, monkeypatch):
    pytest.importorskip("threadpoolctl")
    x, w, g = _case(9, (4, 16, 16, 16), 16, 1)
    whole = wb.backward(x, g, w, (1, 1))
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    try:
        split = wb.backward(x, g, w, (1, 1))
    finally:
        ember.set_num_threads(before)
    # The input gradient is per sample, but BLAS may block a GEMM with fewer rows
    # differently (OpenBLAS's Haswell kernels do), so the bits can differ in the last place.
    _close(split[0], whole[0])
    _close(split[1], whole[1])  # the pieces' sums added
