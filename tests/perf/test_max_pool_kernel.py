"""The compiled 2x2 max pooling and its scatter backward (NOTE [ Compiled max pooling ] in
ember/_kernels/_train.py) against the NumPy path and against torch."""

import numpy as np
import pytest

import ember
from ember import _kernels

pytest.importorskip("numba")


def _input(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::37] = np.nan
    flat[5::41] = -np.inf
    flat[7::43] = np.inf
    flat[9::29] = flat[10::29]  # ties: the first maximal tap wins
    return x


def _pool(backend, x, g, **kw):
    _kernels.set_backend(backend)
    xt = ember.from_numpy(x.copy()).requires_grad_()
    v, i = ember.nn.functional.max_pool2d(xt, return_indices=True, **kw)
    v.backward(ember.from_numpy(g))
    return v.detach().numpy(), i.numpy(), xt.grad.numpy()


@pytest.mark.parametrize("shape", [(4, 3, 8, 10), (2, 5, 9, 7), (1, 1, 2, 2)])
def test_max_pool2x2_equals_numpy_path(numba_backend, shape):
    x = _input(shape)
    oh, ow = shape[2] // 2, shape[3] // 2
    g = np.random.default_rng(1).standard_normal(shape[:2] + (oh, ow)).astype(np.float32)
    fast = _pool("numba", x, g, kernel_size=2)
    plain = _pool("numpy", x, g, kernel_size=2)
    for a, b in zip(fast, plain):
        np.testing.assert_array_equal(a, b)


def test_max_pool2x2_takes_the_compiled_kernel(numba_backend):
    x = _input((2, 3, 6, 6))
    r = _kernels.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (3, 3))
    assert r is not None and r[1].dtype == np.int64


def test_max_pool_declines_other_windows(numba_backend):
    x = _input((2, 3, 6, 6))
    assert _kernels.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), (3, 3)) is None
    assert _kernels.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (4, 4)) is None  # ceil
    assert _kernels.max_pool2d(x.astype(np.float64), (2, 2), (2, 2), (0, 0), (1, 1),
                               (3, 3)) is None
    assert _kernels.max_pool2d(x.transpose(0, 1, 3, 2), (2, 2), (2, 2), (0, 0), (1, 1),
                               (3, 3)) is None


def test_max_pool_backward_rejects_bad_index(numba_backend):
    g = np.ones((1, 1, 2), np.float32)
    assert _kernels.max_pool_backward(g, np.array([[[0, 9]]]), (1, 1, 4)) is None
    assert _kernels.max_pool_backward(g, np.array([[[0, -1]]]), (1, 1, 4)) is None


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True, dilation=2)])
def test_overlapping_windows_backward_equals_numpy_path(numba_backend, kw):
    x = _input((2, 3, 11, 9), seed=2)
    xt = ember.from_numpy(x)
    v = ember.nn.functional.max_pool2d(xt, **kw)
    g = np.random.default_rng(3).standard_normal(tuple(v.shape)).astype(np.float32)
    fast = _pool("numba", x, g, **kw)
    plain = _pool("numpy", x, g, **kw)
    np.testing.assert_array_equal(fast[0], plain[0])
    np.testing.assert_array_equal(fast[1], plain[1])
    np.testing.assert_allclose(fast[2], plain[2], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)])
def test_max_pool_matches_torch(numba_backend, kw):
    torch = pytest.importorskip("torch")
    x = _input((3, 4, 12, 10), seed=4)
    res = []
    for fw in (ember, torch):
        xt = fw.from_numpy(x.copy()).requires_grad_()
        v, i = fw.nn.functional.max_pool2d(xt, return_indices=True, **kw)
        g = np.random.default_rng(5).standard_normal(tuple(v.shape)).astype(np.float32)
        v.backward(fw.from_numpy(g))
        res.append((v.detach().numpy(), i.numpy(), xt.grad.numpy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6, atol=1e-6)
