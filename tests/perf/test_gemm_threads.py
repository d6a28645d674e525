"""The BLAS thread choice by product shape (NOTE [ GEMM threads by shape ] in
ember/_kernels/_blas.py): which products hold the BLAS at one thread, that the count comes
back afterwards, and that results equal the plain products."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._kernels import _blas

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_count():
    return _parallel._blas_controllers()[0].get_num_threads()


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads on a machine taken to be oversubscribed, where the hold applies."""
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    monkeypatch.setattr(_parallel, "contended", lambda: True)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def test_idle_machine_keeps_every_thread(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    # (no convolution wanting batch pieces in the last second: an earlier test's would keep
    # mid-size products at one thread, NOTE [ Side products on one thread ])
    monkeypatch.setattr(_parallel, "_pieces_wanted_at", [-1e9])
    assert not _blas.one_thread(64, 9216, 128)


def test_contention_follows_load_average(monkeypatch):
    monkeypatch.setattr(_parallel, "_load", [False, -10.0])
    monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (_parallel._CPUS + 5.0, 0.0, 0.0))
    assert _parallel.contended()
    monkeypatch.setattr(_parallel, "_load", [True, -10.0])
    monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    assert not _parallel.contended()


def test_one_thread_small_products_only(two_threads):
    assert _blas.one_thread(64, 9216, 128)          # the MNIST CNN's fully connected GEMMs
    assert not _blas.one_thread(8, 8, 8)            # OpenBLAS uses one thread by itself
    assert not _blas.one_thread(1024, 1024, 1024)   # large: every thread


def test_one_thread_off_with_one_thread_configured(two_threads):
    ember.set_num_threads(1)
    assert not _blas.one_thread(64, 9216, 128)


def test_matmul_holds_blas_at_one_thread_and_restores(two_threads, monkeypatch):
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])  # the products on NumPy's BLAS
    seen = []
    real = np.matmul

    def spy(a, b, **kw):
        seen.append(_blas_count())
        return real(a, b, **kw)

    monkeypatch.setattr(_blas.np, "matmul", spy)
    a = np.ones((64, 128), np.float32)
    b = np.ones((128, 9216), np.float32)
    _blas.matmul(a, b)
    big = np.ones((1024, 1024), np.float32)
    _blas.matmul(big, big)
    assert seen == [1, 2]
    assert _blas_count() == 2


def test_matmul_restores_count_after_error(two_threads):
    a = np.ones((64, 128), np.float32)
    with pytest.raises(ValueError):
        _blas.matmul(a, np.ones((128, 9216), np.float32), out=np.empty((3, 3), np.float32))
    assert _blas_count() == 2


def test_matmul_equals_plain_product(two_threads):
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64, np.complex64):
        a = rng.standard_normal((64, 128)).astype(dtype)
        b = rng.standard_normal((128, 2304)).astype(dtype)
        np.testing.assert_allclose(_blas.matmul(a, b), a @ b, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(_blas.matmul(a, b[:, ::2]), a @ b[:, ::2], rtol=1e-5,
                                   atol=1e-4)
    ints = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(_blas.matmul(ints, ints.T), ints @ ints.T)


def test_one_thread_for_nests_inside_a_hold(two_threads):
    with _blas.one_thread_for(64 * 9216 * 128):
        assert _blas_count() == 1
        with _blas.one_thread_for(64 * 9216 * 128):
            assert _blas_count() == 1
        assert _blas_count() == 1
    assert _blas_count() == 2


def test_linear_forward_backward_matches_torch(two_threads):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 576)).astype(np.float32)
    w = rng.standard_normal((128, 576)).astype(np.float32) * 0.05
    g = rng.standard_normal((64, 128)).astype(np.float32)
    res = []
    for fw in (ember, torch):
        xt, wt = fw.from_numpy(x).requires_grad_(), fw.from_numpy(w).requires_grad_()
        y = fw.nn.functional.linear(xt, wt)
        y.backward(fw.from_numpy(g))
        res.append([t.detach().numpy() for t in (y, xt.grad, wt.grad)])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-4)
