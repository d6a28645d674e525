"""Issue 22, session 21 (helper h22): the caller's head start in ``split_on_threads``.

Where a split's pieces may be cut anywhere (``even=False``), the workers' pieces are shortened
by the work the caller does while they wake (NOTE [ The caller's head start ] in
ember/_parallel.py). These tests check that the uneven cut covers every index once, keeps
its bounds (never more than half an even share moved), leaves the default cut equal, and that
every kernel that opted in gives the same bits as the one-thread path (and, where PyTorch is
installed, its values): softmax and log-softmax rows with their backward, the blocked float
sums, row sums and threaded ufuncs.
"""

import threading

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _reduce


def _one_call(monkeypatch, fn):
    """``fn()`` with every split declined (the one-thread path)."""
    with monkeypatch.context() as m:
        m.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
        return fn()


@pytest.fixture
def timings(monkeypatch):
    """A known lag and cost per unit for the uneven cut, restored afterwards."""
    monkeypatch.setattr(_parallel, "_lag", [0.0])
    monkeypatch.setattr(_parallel, "_unit_s", {})
    return _parallel


# ------------------------------------------------------------------------------------------------
# the cut


def test_bounds_equal_without_timings(timings):
    assert _parallel._bounds(10, 2, "k") == [(0, 5), (5, 10)]
    assert _parallel._bounds(9, 3, "k") == [(0, 3), (3, 6), (6, 9)]


def test_bounds_shorten_the_workers_pieces_by_the_lag(timings):
    _parallel._lag[0] = 10e-6
    _parallel._unit_s["k"] = 1e-6  # 10 units of the caller's work in the lag
    assert _parallel._bounds(100, 2, "k") == [(0, 45), (45, 100)]
    b = _parallel._bounds(100, 3, "k")
    assert [hi - lo for lo, hi in b] == [30, 30, 40]


def test_bounds_move_at_most_half_an_even_share(timings):
    _parallel._lag[0] = 1.0  # far longer than the whole call
    _parallel._unit_s["k"] = 1e-6
    b = _parallel._bounds(100, 2, "k")
    assert b == [(0, 25), (25, 100)]
    assert [hi - lo for lo, hi in _parallel._bounds(100, 4, "k")] == [12, 12, 12, 64]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 100, 1001])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_bounds_cover_every_index_once(timings, size, n):
    _parallel._lag[0] = 3e-6
    _parallel._unit_s["k"] = 1e-6
    b = _parallel._bounds(size, n, "k")
    hits = np.zeros(size, np.int64)
    for lo, hi in b:
        hits[lo:hi] += 1
    assert (hits == 1).all()
    assert len(b) <= n and all(lo < hi for lo, hi in b[:-1])


def test_uneven_split_runs_every_piece_once_and_learns_its_timings(threads, timings):
    hits = np.zeros(4001, np.int64)
    callers = set()

    def fill(lo, hi):
        hits[lo:hi] += 1
        callers.add(threading.get_ident())

    for _ in range(3):
        assert _parallel.split_on_threads(fill, hits.size, min_size=1, even=False)
    assert (hits == 3).all()
    assert len(callers) == 2 and threading.get_ident() in callers
    assert (fill.__code__, hits.size) in _parallel._unit_s
    assert _parallel._lag[0] >= 0.0


def test_even_split_learns_nothing(threads, timings):
    out = np.zeros(100)

    def fill(lo, hi):
        out[lo:hi] = 1

    assert _parallel.split_on_threads(fill, out.size, min_size=1)
    assert out.sum() == 100 and _parallel._unit_s == {}


def test_uneven_split_raises_a_pieces_error(threads, timings):
    def bad(lo, hi):
        if lo == 0:  # the worker's piece
            raise ValueError("piece failed")

    with pytest.raises(ValueError, match="piece failed"):
        _parallel.split_on_threads(bad, 10, min_size=1, even=False)
    out = np.zeros(10)

    def fill(lo, hi):
        out[lo:hi] = 1

    assert _parallel.split_on_threads(fill, 10, min_size=1, even=False)
    assert out.sum() == 10


# ------------------------------------------------------------------------------------------------
# kernels that opted in: the one-thread bits under a skewed cut


@pytest.fixture
def skewed(timings):
    """Every uneven cut moved as far as it may go (half an even share to the caller)."""
    _parallel._lag[0] = 1.0

    class _Always(dict):
        def get(self, key, default=None):
            return 1e-9

    _parallel._unit_s = _Always()
    return _parallel


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_skewed_cut_same_bits(numba_backend, threads, skewed, monkeypatch, log):
    x = np.random.default_rng(0).standard_normal((512, 600)).astype(np.float32)
    g = np.random.default_rng(1).standard_normal((512, 600)).astype(np.float32)
    y = _kernels.softmax(x, 1, log=log)
    gx = _kernels.softmax_backward(g, y, 1, log=log)
    assert threads and all(threads)
    y1 = _one_call(monkeypatch, lambda: _kernels.softmax(x, 1, log=log))
    gx1 = _one_call(monkeypatch, lambda: _kernels.softmax_backward(g, y1, 1, log=log))
    np.testing.assert_array_equal(y, y1)
    np.testing.assert_array_equal(gx, gx1)


def test_softmax_skewed_cut_matches_torch(numba_backend, threads, skewed):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((512, 600)).astype(np.float32)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ye, yt = ember.softmax(xe, -1), torch.softmax(xt, -1)
    (ye * ember.tensor(x)).sum().backward()
    (yt * torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_float_sum_skewed_cut_same_bits(numba_backend, threads, skewed, monkeypatch):
    a = np.random.default_rng(3).random((1 << 21) + 77).astype(np.float32)
    s = _reduce.float_sum(a)
    assert threads and all(threads)
    s1 = _one_call(monkeypatch, lambda: _reduce.float_sum(a))
    assert s.tobytes() == s1.tobytes()
    np.testing.assert_allclose(float(s), float(a.astype(np.float64).sum()), rtol=1e-6)


def test_row_sums_skewed_cut_same_bits(numba_backend, threads, skewed, monkeypatch):
    a = np.random.default_rng(4).random((4096, 300)).astype(np.float32)
    r = _reduce.row_sums(a)
    assert threads and all(threads)
    r1 = _one_call(monkeypatch, lambda: _reduce.row_sums(a))
    np.testing.assert_array_equal(r, r1)


def test_sum_skewed_cut_matches_torch(threads, skewed):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).random(1 << 21).astype(np.float32)
    np.testing.assert_allclose(float(ember.tensor(a).sum()), float(torch.tensor(a).sum()),
                               rtol=1e-6)


def test_ufunc_on_threads_skewed_cut_same_bits(threads, skewed):
    rng = np.random.default_rng(6)
    a = rng.random(1 << 20).astype(np.float32)
    b = rng.random(1 << 20).astype(np.float32)
    r = _parallel.ufunc_on_threads(np.add, a, b)
    assert r is not None and threads == [True]
    np.testing.assert_array_equal(r, a + b)


def test_layer_norm_backward_keeps_equal_pieces(numba_backend, threads, skewed, monkeypatch):
    # its weight gradient sums per piece: the cut must stay equal whatever the timings
    cuts = []
    real = _parallel._bounds

    def spy(size, n, key):
        cuts.append(size)
        return real(size, n, key)

    monkeypatch.setattr(_parallel, "_bounds", spy)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2048, 256)).astype(np.float32)
    g = rng.standard_normal((2048, 256)).astype(np.float32)
    w = rng.standard_normal(256).astype(np.float32)
    _, mean, rstd = _kernels.layer_norm(x, w, None, 1, 1e-5)
    cuts.clear()
    assert _kernels.layer_norm_backward(g, x, w, mean, rstd, 1) is not None
    assert cuts == []
