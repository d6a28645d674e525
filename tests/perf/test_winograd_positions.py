"""The NumPy Winograd path's products split by position on the smallest planes (NOTE [ Few
tiles: products split by position ] in ember/_ops/nn_winograd.py) give the batch pieces'
results, and PyTorch's."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._ops import nn_winograd

pytest.importorskip("threadpoolctl")


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads on a machine taken as quiet, every split allowed; yields the ``n`` of
    each ``split_batch`` call that ran pieces."""
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    # no OpenBLAS workers polling from an earlier product (NOTE [ Pieces and the BLAS
    # workers ]): the split would be declined
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    seen = []
    real = _parallel.split_batch

    def spy(fn, n, work, min_work=None, claim=True):
        r = real(fn, n, work, min_work, claim)
        if r is not None:
            seen.append(n)
        return r

    monkeypatch.setattr(_parallel, "split_batch", spy)
    yield seen
    ember.set_num_threads(before)


def _operands(n, c, o, size, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, size, size)).astype(dtype)
    w = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(dtype)
    g = rng.standard_normal((n, o, size, size)).astype(dtype)
    return x, w, g


def _all_forms(x, w, g, padding=(1, 1)):
    """Forward, input adjoint, weight adjoint alone, and both adjoints together."""
    y = nn_winograd.conv2d(np, x, w, None, padding)
    gx = nn_winograd.input_grad(np, g, w, padding)
    gw = nn_winograd.weight_grad(np, x, g, padding)
    gx2, gw2 = nn_winograd.backward(np, g, x, w, padding)
    return y, gx, gw, gx2, gw2


def _close(a, b, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(np.abs(b).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 64, 64, 4), (5, 64, 96, 4), (4, 96, 64, 6)],
                         ids=["4x4", "odd-batch", "6x6"])
def test_winograd_positions_equal_batch_pieces(two_threads, monkeypatch, dtype, shape):
    n, c, o, size = shape
    x, w, g = _operands(n, c, o, size, dtype)
    by_position = _all_forms(x, w, g)
    assert two_threads and all(k == 16 for k in two_threads)  # every call split by position
    monkeypatch.setattr(nn_winograd, "_POSITION_ROWS", 0)
    two_threads.clear()
    pieces = _all_forms(x, w, g)
    assert two_threads and all(k == n for k in two_threads)  # and now in batch pieces
    for a, b in zip(by_position, pieces):
        assert a.shape == b.shape and a.dtype == b.dtype
        _close(a, b, dtype)


def test_winograd_positions_declined_run_whole(two_threads, monkeypatch):
    # OpenBLAS's workers still polling: the split is declined and every position runs on
    # the calling thread, with the same values
    x, w, g = _operands(4, 64, 64, 4, np.float32)
    monkeypatch.setattr(_parallel, "_polling_until", [float("inf")])
    whole = _all_forms(x, w, g)
    assert not two_threads
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    split = _all_forms(x, w, g)
    assert two_threads
    for a, b in zip(whole, split):
        _close(a, b, np.float32)


def test_winograd_positions_only_on_few_tiles(two_threads):
    # 16 tiles a sample (8x8 planes) at batch 32: 256 rows a piece, batch pieces as before
    assert not nn_winograd._by_position(np, 32, 4, 4)
    assert nn_winograd._by_position(np, 32, 2, 2)
    assert not nn_winograd._by_position(np, 1, 2, 2)
    ember.set_num_threads(1)
    assert not nn_winograd._by_position(np, 32, 2, 2)


def test_winograd_positions_match_torch(two_threads):
    torch = pytest.importorskip("torch")
    x, w, g = _operands(8, 64, 128, 4, np.float32, seed=3)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    we = ember.from_numpy(w.copy()).requires_grad_()
    ye = ember.nn.functional.conv2d(xe, we, padding=1)
    ye.backward(ember.from_numpy(g))
    assert 16 in two_threads  # the public op took the position split
    xt = torch.from_numpy(x.copy()).requires_grad_()
    wt = torch.from_numpy(w.copy()).requires_grad_()
    yt = torch.nn.functional.conv2d(xt, wt, padding=1)
    yt.backward(torch.from_numpy(g))
    for a, b in ((ye, yt), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
