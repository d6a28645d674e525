"""Convolutions' BLAS calls and batch pieces keep out of each other's way (NOTE [ Side
products on one thread ] in ember/_kernels/_blas.py, NOTE [ Pieces and the BLAS workers ]
in ember/_parallel.py): side products on one thread with the values of the plain product,
pieces declined while OpenBLAS's workers poll, mid-size products on one thread while
pieces are wanted, and planar-column convolutions through the tracked products giving
the values they gave before."""

import os

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._kernels import _blas
from ember._ops import nn_conv

pytest.importorskip("threadpoolctl")


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads configured, an idle machine, no workers polling, no pieces wanted, every
    product on NumPy's BLAS (MLAS's workers sleep between products: NOTE [ Products past a
    pinned OpenBLAS ])."""
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    monkeypatch.setattr(_parallel, "_pieces_wanted_at", [-1e9])
    yield
    ember.set_num_threads(before)


@pytest.fixture
def holds(monkeypatch):
    """A count of the BLAS holds taken."""
    seen = []
    real = _parallel._hold_blas

    def spy():
        seen.append(1)
        real()

    monkeypatch.setattr(_parallel, "_hold_blas", spy)
    return seen


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_side_matmul_equals_matmul_and_holds_one_thread(two_threads, holds):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 9), dtype=np.float32)
    b = rng.standard_normal((9, 128 * 128), dtype=np.float32)
    before = _blas_threads()
    # (equal up to rounding: OpenBLAS's Haswell kernels round differently at one thread)
    np.testing.assert_allclose(_blas.side_matmul(a, b), a @ b, rtol=2e-6, atol=1e-5)
    assert holds == [1]
    assert _blas_threads() == before


def test_side_matmul_skips_the_hold_for_tiny_products(two_threads, holds):
    a = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(_blas.side_matmul(a, a.T), a @ a.T)
    assert holds == []


def test_two_thread_product_marks_the_workers_polling(two_threads):
    a = np.ones((256, 256), np.float32)
    _blas.matmul(a, a)
    assert _parallel._polling_until[0] > 0


def test_held_product_leaves_the_workers_idle(two_threads):
    a = np.ones((256, 256), np.float32)
    _parallel._hold_blas()
    try:
        _blas.matmul(a, a)
    finally:
        _parallel._release_blas()
    assert _parallel._polling_until[0] == 0.0


def test_split_batch_declines_while_the_workers_poll(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "BLAS_POLL_S", 0.12)  # (a BLAS whose workers poll long)
    _parallel.blas_split()
    assert _parallel.split_batch(lambda lo, hi: (lo, hi), 4, 1 << 40) is None
    assert _parallel.pieces_wanted()


def test_split_batch_runs_once_the_workers_rest(two_threads):
    assert _parallel.split_batch(lambda lo, hi: (lo, hi), 4, 1 << 40) == [(0, 2), (2, 4)]


def test_mid_size_products_stay_on_one_thread_while_pieces_are_wanted(two_threads):
    assert not _blas.one_thread(64, 128, 9216)
    _parallel.split_batch(lambda lo, hi: None, 4, 1 << 40)
    assert _blas.one_thread(64, 128, 9216)
    assert not _blas.one_thread(4096, 4096, 4096)  # large products keep every thread


@pytest.mark.skipif(os.environ.get("EMBER_BATCH_PIECES") == "0", reason="pieces off")
def test_pieces_are_on_by_default():
    assert _parallel.SPLIT_MIN_WORK == 1 << 24


@pytest.mark.parametrize("stride", [1, 2])
def test_planar_conv_values_unchanged(monkeypatch, stride):
    # the planar-column GEMMs through _blas.matmul: the same arrays reach np.matmul (the one
    # GEMM; few-row columns multiply per sample, tests/perf/test_planar_per_sample.py)
    monkeypatch.setattr(nn_conv, "_PER_SAMPLE_ROWS", -1)
    rng = np.random.default_rng(stride)
    x = rng.standard_normal((3, 4, 20, 20), dtype=np.float32)
    w = rng.standard_normal((6, 4, 3, 3), dtype=np.float32)
    kw = dict(stride=(stride, stride), padding=(1, 1), dilation=(1, 1))
    y = nn_conv._planar_conv(np, x, w, **kw)
    cols, out = nn_conv._planar_columns(np, x, (3, 3), **kw)
    want = np.moveaxis((w.reshape(6, -1) @ cols).reshape((6, 3) + out), 0, 1)
    np.testing.assert_array_equal(y, want)


def test_planar_conv_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 20, 20), dtype=np.float32)
    w = rng.standard_normal((6, 4, 3, 3), dtype=np.float32)
    xe, we = ember.from_numpy(x).requires_grad_(), ember.from_numpy(w).requires_grad_()
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    ye = ember.nn.functional.conv2d(xe, we, stride=2, padding=1)
    yt = torch.nn.functional.conv2d(xt, wt, stride=2, padding=1)
    ye.sum().backward()
    yt.sum().backward()
    for a, b in ((ye, yt), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
