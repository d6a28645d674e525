"""Compiled batch norm with its channels split over threads (NOTE [ Compiled batch norm ] in
ember/_kernels/_train.py) gives the one-thread results bit for bit."""

import numpy as np
import pytest

import ember
from tests.conftest import spy_thread_splits
from ember import _kernels
from ember._kernels import _train


@pytest.fixture
def numba_two_threads(monkeypatch):
    """The numba backend, two threads on an idle machine, and a count of the splits."""
    pytest.importorskip("numba")
    old = _kernels.set_backend("numba")
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    splits = spy_thread_splits(monkeypatch)
    yield splits
    ember.set_num_threads(before)
    _kernels.set_backend(old)


def _case(seed, shape=(8, 32, 24, 24)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32) * 3 + 1
    g = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape[1], dtype=np.float32)
    b = rng.standard_normal(shape[1], dtype=np.float32)
    return x, g, w, b


def test_batch_norm_forward_split_equals_one_thread(numba_two_threads, monkeypatch):
    x, _, w, b = _case(0)
    split = _train.batch_norm(x, w, b, 1e-5)
    assert numba_two_threads == [True]
    monkeypatch.setattr(_train, "BATCH_NORM_SPLIT", 1 << 62)
    whole = _train.batch_norm(x, w, b, 1e-5)
    for a, e in zip(split, whole):
        np.testing.assert_array_equal(a, e)


def test_batch_norm_backward_split_equals_one_thread(numba_two_threads, monkeypatch):
    x, g, w, b = _case(1)
    _, mean, rstd = _train.batch_norm(x, w, b, 1e-5)
    split = _train.batch_norm_backward(g, x, w, mean, rstd)
    assert numba_two_threads[-1] is True
    monkeypatch.setattr(_train, "BATCH_NORM_SPLIT", 1 << 62)
    whole = _train.batch_norm_backward(g, x, w, mean, rstd)
    for a, e in zip(split, whole):
        np.testing.assert_array_equal(a, e)


def test_batch_norm_small_input_stays_on_one_thread(numba_two_threads):
    x, _, w, b = _case(2, (2, 4, 5, 5))
    _train.batch_norm(x, w, b, 1e-5)
    assert numba_two_threads == []


def test_batch_norm_split_matches_torch(numba_two_threads):
    torch = pytest.importorskip("torch")
    x, g, w, b = _case(3)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    we, be = ember.from_numpy(w.copy()).requires_grad_(), ember.from_numpy(b.copy())
    xt = torch.from_numpy(x.copy()).requires_grad_()
    wt, bt = torch.from_numpy(w.copy()).requires_grad_(), torch.from_numpy(b.copy())
    ye = ember.nn.functional.batch_norm(xe, None, None, we, be, training=True)
    yt = torch.nn.functional.batch_norm(xt, None, None, wt, bt, training=True)
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    assert any(numba_two_threads)
    for a, e in ((ye, yt), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
