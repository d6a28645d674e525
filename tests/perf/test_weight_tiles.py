"""Winograd weight transforms: one per layer and step, kept from the forward for the
backward (NOTE [ One weight transform per step ] in ember/_kernels/_weight_tiles.py), and
computed in column blocks on the threads (NOTE [ Weight transforms on threads ])."""

import gc

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._kernels import _blas, _weight_tiles
from ember._ops import nn_winograd

pytest.importorskip("threadpoolctl")


@pytest.fixture(autouse=True)
def nothing_kept():
    _weight_tiles.clear()
    yield
    _weight_tiles.clear()


@pytest.fixture
def two_threads(monkeypatch):
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    monkeypatch.setattr(_weight_tiles, "_SPLIT_COLUMNS", 1)
    monkeypatch.setattr(_weight_tiles, "_BLOCK", 100)
    yield
    ember.set_num_threads(before)


@pytest.fixture
def counted(monkeypatch):
    """How many weight transforms ran."""
    seen = []
    real = _weight_tiles.transform

    def spy(kw, w):
        seen.append(w.shape)
        return real(kw, w)

    monkeypatch.setattr(_weight_tiles, "transform", spy)
    return seen


def _kw():
    return nn_winograd._WEIGHT_TRANSFORM.astype(np.float32)


def test_transform_in_blocks_on_threads_equals_one_product(two_threads):
    w = np.random.default_rng(0).standard_normal((37, 29, 3, 3)).astype(np.float32)
    want = _blas.side_matmul(_kw(), w.reshape(37 * 29, 9).T).reshape(16, 37, 29)
    # (equal up to rounding: OpenBLAS may round a column block differently from the whole
    # product, as its Haswell kernels on AMD EPYC do)
    np.testing.assert_allclose(_weight_tiles.transform(_kw(), w), want, rtol=2e-6, atol=1e-6)


def test_inverse_in_blocks_on_threads_equals_sum_then_product(two_threads):
    rng = np.random.default_rng(1)
    parts = [rng.standard_normal((16, 31, 23)).astype(np.float32) for _ in range(3)]
    total = parts[0] + parts[1] + parts[2]
    want = (total.reshape(16, -1).T @ _kw()).reshape(31, 23, 9)
    np.testing.assert_allclose(_weight_tiles.inverse(parts, _kw()), want, rtol=2e-6, atol=1e-6)


def test_transform_inside_a_batch_piece_runs_on_its_thread(two_threads):
    # a nested split would wait for the pool thread that runs the piece itself
    w = np.ones((64, 64, 3, 3), np.float32)
    parts = _parallel.split_batch(lambda lo, hi: _weight_tiles.transform(_kw(), w)[0, 0, 0],
                                  2, 1, min_work=0)
    assert parts is None or parts == [1.0, 1.0]  # U[0] is the kernel's first tap


def test_backward_takes_the_forwards_transform(counted):
    rng = np.random.default_rng(2)
    x = ember.from_numpy(rng.standard_normal((2, 64, 6, 6)).astype(np.float32))
    w = ember.from_numpy(rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05)
    x.requires_grad_(), w.requires_grad_()
    assert nn_winograd.eligible(np, x.shape, w.shape, (1, 1), (1, 1), (1, 1), 1, np.float32)
    ember.nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert len(counted) == 1 and not _weight_tiles._kept


def test_kept_transform_gives_the_recomputed_gradients(monkeypatch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((3, 64, 5, 7)).astype(np.float32)
    wa = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05
    got = []
    for keep_min in (_weight_tiles.MIN_ELEMENTS, 1 << 62):
        monkeypatch.setattr(_weight_tiles, "MIN_ELEMENTS", keep_min)
        x = ember.from_numpy(xa.copy()).requires_grad_()
        w = ember.from_numpy(wa.copy()).requires_grad_()
        ember.nn.functional.conv2d(x, w, padding=1).square().sum().backward()
        got.append((x.grad.numpy(), w.grad.numpy()))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    xt = torch.from_numpy(xa).requires_grad_()
    wt = torch.from_numpy(wa).requires_grad_()
    torch.nn.functional.conv2d(xt, wt, padding=1).square().sum().backward()
    np.testing.assert_allclose(got[0][0], xt.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_weight_written_behind_autograd_is_noticed(counted):
    rng = np.random.default_rng(4)
    x = ember.from_numpy(rng.standard_normal((2, 64, 6, 6)).astype(np.float32))
    w = ember.from_numpy(rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05)
    x.requires_grad_(), w.requires_grad_()
    y = ember.nn.functional.conv2d(x, w, padding=1)
    w.detach().numpy()[...] *= 2  # no version bump: the kept transform no longer fits
    y.sum().backward()
    assert len(counted) == 2


def test_no_transform_is_kept_without_grad_or_after_the_graph_dies():
    rng = np.random.default_rng(5)
    w = ember.from_numpy(rng.standard_normal((64, 64, 3, 3)).astype(np.float32))
    with ember.no_grad():
        ember.nn.functional.conv2d(ember.ones(2, 64, 6, 6), w, padding=1)
    assert not _weight_tiles._kept
    w.requires_grad_()
    y = ember.nn.functional.conv2d(ember.ones(2, 64, 6, 6), w, padding=1)
    assert len(_weight_tiles._kept) == 1
    del y
    gc.collect()
    assert not _weight_tiles._kept


def test_small_transform_holds_the_blas_at_one_thread(monkeypatch):
    # below the split size the transform runs whole on the calling thread, but still with the
    # BLAS at one thread: a product OpenBLAS split itself would leave its workers polling a
    # core the next convolution's batch pieces need (NOTE [ Pieces and the BLAS workers ])
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    threads_seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        threads_seen.append([lib.get_num_threads() for lib in _parallel._blas_controllers()])
        return real(*args, **kwargs)

    try:
        if not _parallel._blas_controllers():
            pytest.skip("no BLAS threads to control")
        monkeypatch.setattr(_weight_tiles.np, "matmul", spy)
        w = np.ones((8, 8, 3, 3), np.float32)   # 64 columns: far below _SPLIT_COLUMNS
        u = _weight_tiles.transform(_kw(), w)
    finally:
        ember.set_num_threads(before)
    assert threads_seen and all(n == [1] * len(n) for n in threads_seen)
    assert u[0, 0, 0] == 1.0
