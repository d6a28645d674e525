"""Issue 22, helper h22 (session 17): the shared F(2x2, 3x3) backward runs its input adjoint
over pieces of a few samples (NOTE [ The input adjoint in cache-sized pieces ] in
ember/_kernels/_winograd_backward.py): both gradients the bits of whole chunks, and torch's
gradients to float rounding."""

import numpy as np
import pytest

import ember
from tests.perf.conftest import assert_same_bits_or_close

_SHAPES = [
    (64, 32, 64, 26, (0, 0)),   # the MNIST CNN's conv2: pieces of one sample
    (7, 16, 24, 14, (1, 1)),    # pieces of several samples, a short last piece
    (5, 64, 16, 20, (1, 0)),
    (9, 48, 48, 16, (2, 2)),
]


def _operands(n, c, o, h, pad, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    g = rng.standard_normal((n, o, h + 2 * pad[0] - 2, h + 2 * pad[1] - 2)).astype(np.float32)
    return x, w, g


def _backward(monkeypatch, x, g, w, pad, adjoint_bytes):
    from ember._kernels import _winograd_backward

    with monkeypatch.context() as m:
        m.setattr(_winograd_backward, "_ADJOINT_BYTES", adjoint_bytes)
        return _winograd_backward.backward(x, g, w, pad)


@pytest.mark.parametrize("shape", _SHAPES)
def test_input_adjoint_pieces_give_whole_chunks_bits(numba_backend, monkeypatch, shape):
    *dims, pad = shape
    x, w, g = _operands(*dims, pad)
    whole = _backward(monkeypatch, x, g, w, pad, 0)        # 0: whole chunks, as before
    for adjoint_bytes in (2**16, 2**19, 2**21):
        pieces = _backward(monkeypatch, x, g, w, pad, adjoint_bytes)
        for p, q in zip(pieces, whole):
            assert_same_bits_or_close(p, q)


def test_input_adjoint_pieces_on_threads_give_one_threads_bits(numba_backend, monkeypatch):
    pytest.importorskip("threadpoolctl")
    from ember import _parallel

    x, w, g = _operands(64, 32, 64, 26, (0, 0), seed=1)
    before = ember.get_num_threads()
    seen = []
    real = _parallel.split_batch

    def spy(fn, n, work, min_work=None):
        r = real(fn, n, work, min_work)
        seen.append(r is not None)
        return r

    monkeypatch.setattr(_parallel, "split_batch", spy)
    # no OpenBLAS workers polling from an earlier product (NOTE [ Pieces and the BLAS
    # workers ] in ember/_parallel.py): the batch pieces would be declined
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    try:
        ember.set_num_threads(2)
        two = _backward(monkeypatch, x, g, w, (0, 0), 2**19)
        ember.set_num_threads(1)
        one = _backward(monkeypatch, x, g, w, (0, 0), 2**19)
    finally:
        ember.set_num_threads(before)
    assert seen == [True, False]
    assert_same_bits_or_close(two[0], one[0])
    # (the weight gradient's per-thread parts are added in another grouping)
    np.testing.assert_allclose(two[1], one[1], rtol=0, atol=1e-6 * np.abs(one[1]).max())


@pytest.mark.parametrize("shape", _SHAPES[:2])
def test_conv_backward_with_pieces_matches_torch(numba_backend, shape):
    torch = pytest.importorskip("torch")
    *dims, pad = shape
    x, w, g = _operands(*dims, pad, seed=2)
    got = []
    for fw in (ember, torch):
        xs, ws = fw.tensor(x, requires_grad=True), fw.tensor(w, requires_grad=True)
        fw.nn.functional.conv2d(xs, ws, padding=pad).backward(fw.tensor(g))
        got.append((xs.grad.numpy(), ws.grad.numpy()))
    for e, t in zip(*got):
        scale = np.abs(t).max()
        np.testing.assert_allclose(e, t, rtol=0, atol=2e-5 * scale)


def _adjoint_calls(monkeypatch, x, g, w, pad, adjoint_bytes):
    """The input adjoint's piece sizes (samples a call) in one shared backward, and its
    result."""
    from ember._kernels import _winograd_backward

    k, ka = _winograd_backward._impl()
    sizes = []

    class Spy:
        @staticmethod
        def input_adjoint(dv, ph, pw, gx):
            sizes.append(gx.shape[0])
            return ka.input_adjoint(dv, ph, pw, gx)

    before = ember.get_num_threads()
    ember.set_num_threads(1)   # one batch piece: the chunks are the whole batch's
    try:
        with monkeypatch.context() as m:
            m.setattr(_winograd_backward, "_impl", lambda: (k, Spy))
            out = _backward(m, x, g, w, pad, adjoint_bytes)
    finally:
        ember.set_num_threads(before)
    return sizes, out


def test_input_adjoint_sample_at_the_bound_runs_whole_chunks(numba_backend, monkeypatch):
    # ResNet-18's stage 2: one sample's dV, 16 x 128 x 64 tiles x 4 bytes, is 2**19 exactly
    x, w, g = _operands(4, 128, 16, 16, (1, 1), seed=3)
    sizes, whole = _adjoint_calls(monkeypatch, x, g, w, (1, 1), 2**19)
    assert sizes == [4]
    # one byte more and the pieces are single samples, with the same bits
    sizes, pieces = _adjoint_calls(monkeypatch, x, g, w, (1, 1), 2**19 + 1)
    assert sizes == [1, 1, 1, 1]
    for p, q in zip(pieces, whole):
        assert_same_bits_or_close(p, q)
