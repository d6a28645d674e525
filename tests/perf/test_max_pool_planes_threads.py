"""The compiled 2x2 max pooling cut over threads by planes (NOTE [ Compiled max pooling ] in
ember/_kernels/_train.py): the values and indices of one call, NaN windows included, and
the split taken only from ``POOL_SPLIT`` elements."""

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _train


def _input(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::97] = np.nan
    return x


def _pool(x):
    n, c, h, w = x.shape
    return _kernels.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (h // 2, w // 2))


def test_pieces_give_the_one_call_results(numba_backend, threads, monkeypatch):
    x = _input((13, 37, 24, 26))  # an odd number of planes
    assert x.size >= _train.POOL_SPLIT
    got = _pool(x)
    assert threads == [True]
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    want = _pool(x)
    np.testing.assert_array_equal(got[0].view(np.int32), want[0].view(np.int32))
    np.testing.assert_array_equal(got[1], want[1])


def test_small_inputs_stay_whole(numba_backend, threads):
    _pool(_input((2, 3, 8, 8)))
    assert threads == []


def test_the_op_matches_torch_on_threads(numba_backend, threads):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((16, 64, 24, 24)).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ye, ie = ember.nn.functional.max_pool2d(xe, 2, return_indices=True)
    yt, it = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
    assert True in threads
    np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
