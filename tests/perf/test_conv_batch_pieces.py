"""Convolutions run in batch pieces on threads (NOTE [ Batch pieces on threads ] in
ember/_parallel.py, NOTE [ Convolutions in batch pieces ] in ember/_ops/nn_conv.py) give the
one-piece results, and leave the BLAS thread count as they found it."""

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._ops import nn_conv_winograd, nn_winograd

pytest.importorskip("threadpoolctl")


@pytest.fixture
def pieces(monkeypatch):
    """Two threads, every convolution split however small, and a count of the splits."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    # no OpenBLAS workers polling from an earlier test's product (NOTE [ Pieces and the BLAS
    # workers ]): pieces would be declined
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    seen = []
    real = _parallel.split_batch

    def spy(fn, n, work, min_work=None):
        r = real(fn, n, work, min_work)
        seen.append(r is not None)
        return r

    monkeypatch.setattr(_parallel, "split_batch", spy)
    yield seen
    ember.set_num_threads(before)


def _run(x, w, stride, padding, groups):
    """Forward, input gradient and weight gradient through the public ops."""
    xt = ember.from_numpy(x.copy()).requires_grad_()
    wt = ember.from_numpy(w.copy()).requires_grad_()
    y = ember.nn.functional.conv2d(xt, wt, stride=stride, padding=padding, groups=groups)
    y.backward(ember.from_numpy(np.cos(np.arange(y.numel(), dtype=x.dtype)).reshape(y.shape)))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def _compare(x, w, stride, padding, groups, seen, monkeypatch):
    split = _run(x, w, stride, padding, groups)
    assert seen and all(seen)  # every kernel call ran in pieces
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    seen.clear()
    whole = _run(x, w, stride, padding, groups)
    assert not any(seen)
    tol = 1e-5 if x.dtype == np.float32 else 1e-12
    for a, b in zip(split, whole):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(np.abs(b).max()))


# (name, x shape, w shape, stride, padding, groups): the NumPy kernels' paths
_CASES = [
    ("planar columns", (5, 3, 17, 17), (8, 3, 3, 3), 1, 1, 1),
    ("planar strided", (4, 6, 22, 22), (8, 6, 3, 3), 2, 1, 1),
    ("1x1 strided", (3, 8, 9, 9), (5, 8, 1, 1), 2, 0, 1),
    ("channels-last columns", (4, 6, 7, 7), (8, 6, 3, 3), 2, 1, 1),
    ("NumPy Winograd", (3, 64, 6, 6), (64, 64, 3, 3), 1, 1, 1),
    ("grouped", (4, 8, 16, 16), (8, 2, 3, 3), 1, 1, 4),
]


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_pieces_equal_one_piece(pieces, monkeypatch, case, dtype):
    _, xs, ws, stride, padding, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    _compare(x, w, stride, padding, groups, pieces, monkeypatch)


def test_conv_pieces_compiled_winograd_equal_one_piece(pieces, monkeypatch):
    pytest.importorskip("numba")
    old = _kernels.set_backend("numba")
    try:
        x = np.random.default_rng(1).standard_normal((5, 16, 14, 15)).astype(np.float32)
        w = np.random.default_rng(2).standard_normal((16, 16, 3, 3)).astype(np.float32)
        assert nn_conv_winograd.eligible(np, x.shape, w.shape, (1, 1), (1, 1), (1, 1), 1,
                                         x.dtype)
        _compare(x, w, 1, 1, 1, pieces, monkeypatch)
    finally:
        _kernels.set_backend(old)


def test_conv_pieces_match_torch(pieces):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64, 6, 6)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05
    assert nn_winograd.eligible(np, x.shape, w.shape, (1, 1), (1, 1), (1, 1), 1, x.dtype)
    y, gx, gw = _run(x, w, 1, 1, 1)
    xt = torch.from_numpy(x).requires_grad_()
    wt = torch.from_numpy(w).requires_grad_()
    yt = torch.nn.functional.conv2d(xt, wt, padding=1)
    yt.backward(torch.cos(torch.arange(yt.numel(), dtype=torch.float32)).reshape(yt.shape))
    for a, b in ((y, yt), (gx, xt.grad), (gw, wt.grad)):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-4, atol=1e-4)


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_split_batch_holds_blas_at_one_thread_and_restores_it(pieces):
    before = _blas_threads()
    inside = []
    r = _parallel.split_batch(lambda lo, hi: inside.append(_blas_threads()) or (lo, hi), 5, 1)
    assert r == [(0, 3), (3, 5)]
    assert all(set(t) == {1} for t in inside)
    assert _blas_threads() == before


def test_split_batch_restores_blas_after_an_error(pieces):
    before = _blas_threads()

    def fail(lo, hi):
        raise ValueError("piece failed")

    with pytest.raises(ValueError, match="piece failed"):
        _parallel.split_batch(fail, 4, 1)
    assert _blas_threads() == before


def test_split_batch_does_not_nest(pieces):
    inner = []
    _parallel.split_batch(lambda lo, hi: inner.append(_parallel.split_batch(
        lambda a, b: None, 4, 1)), 4, 1)
    assert inner == [None, None]


def test_split_batch_declines_one_thread_or_little_work(monkeypatch):
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert _parallel.split_batch(lambda lo, hi: None, 8, 1 << 40) is None
        ember.set_num_threads(2)
        assert _parallel.split_batch(lambda lo, hi: None, 8, 10, min_work=100) is None
        assert _parallel.split_batch(lambda lo, hi: None, 1, 1 << 40) is None
    finally:
        ember.set_num_threads(before)
