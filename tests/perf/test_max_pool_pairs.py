"""The NumPy path's 2x2 max pooling in pairs and its scatter-free backward (NOTE [ 2x2 max
pooling in pairs ] in ember/_ops/nn_pool.py) against the general kernel and against torch."""

import numpy as np
import pytest

import ember
from tests.conftest import spy_thread_splits
from ember import _kernels
from ember._ops import _scatter_planes, nn_pool


@pytest.fixture
def numpy_kernels():
    old = _kernels.set_backend("numpy")
    yield
    _kernels.set_backend(old)


@pytest.fixture(params=[1, 2], ids=["one-thread", "two-threads"])
def threads(request, monkeypatch):
    """One thread, or two on an idle machine with blocks of a few planes (so that the
    pieces and the blocks within them both come out uneven); yields whether each call
    split."""
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    monkeypatch.setattr(nn_pool, "_PAIR_BLOCK", 3 * 20)
    monkeypatch.setattr(_scatter_planes, "_PAIR_BLOCK", 3 * 20)
    monkeypatch.setattr(nn_pool, "_PAIR_SPLIT", 1)
    monkeypatch.setattr(_scatter_planes, "_PAIR_SPLIT", 1)
    splits = spy_thread_splits(monkeypatch)
    yield splits
    ember.set_num_threads(before)


def _input(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, shape).astype(dtype)  # many ties: the first maximal tap wins
    x.reshape(-1)[5::41] = -np.inf
    x.reshape(-1)[7::43] = np.inf
    return x


def _pool(x, g):
    xt = ember.from_numpy(x.copy()).requires_grad_()
    v, i = ember.nn.functional.max_pool2d(xt, 2, return_indices=True)
    v.backward(ember.from_numpy(g))
    return v.detach().numpy(), i.numpy(), xt.grad.numpy()


def _grad(shape, dtype, seed=1):
    g = np.random.default_rng(seed).standard_normal(
        shape[:2] + (shape[2] // 2, shape[3] // 2)).astype(dtype)
    g.reshape(-1)[::13] *= -1
    g.reshape(-1)[3:4] = np.inf  # (a one-window case has neither)
    g.reshape(-1)[4:5] = np.nan
    return g


def _same(a, b):
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))  # +0.0 off the chosen tap


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(4, 5, 8, 10), (3, 7, 4, 4), (1, 1, 2, 2), (2, 3, 2, 12)])
def test_pairs_equal_the_general_kernel(numpy_kernels, threads, monkeypatch, shape, dtype):
    x, g = _input(shape, dtype), _grad(shape, dtype)
    calls = []
    real = nn_pool._max_pool_2x2
    monkeypatch.setattr(nn_pool, "_max_pool_2x2", lambda a: calls.append(1) or real(a))
    fast = _pool(x, g)
    assert calls, "the pairs kernel did not run"
    expect = ember.get_num_threads() == 2 and shape[0] * shape[1] > 1
    assert threads == [expect, expect]  # forward and backward
    monkeypatch.setattr(nn_pool, "tiles_2x2", lambda *a: False)
    plain = _pool(x, g)
    for a, b in zip(fast, plain):
        _same(a, b)


def test_pairs_match_torch(numpy_kernels, threads):
    torch = pytest.importorskip("torch")
    shape = (4, 6, 12, 8)
    x, g = _input(shape, np.float32), _grad(shape, np.float32)
    fast = _pool(x, g)
    xt = torch.from_numpy(x.copy()).requires_grad_()
    v, i = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
    v.backward(torch.from_numpy(g))
    for a, b in zip(fast, (v.detach().numpy(), i.numpy(), xt.grad.numpy())):
        _same(a, b)


def test_nan_input_takes_the_general_kernel(numpy_kernels):
    # a NaN maximum comes from the window's last NaN tap: the general kernel's rule
    x = _input((2, 3, 4, 6), np.float32)
    x[0, 1, 0, 0] = x[0, 1, 1, 1] = np.nan
    assert nn_pool._max_pool_2x2(x) is None
    _, i = ember.nn.functional.max_pool2d(ember.from_numpy(x), 2, return_indices=True)
    assert i.numpy()[0, 1, 0, 0] == 7


@pytest.mark.parametrize("kw", [dict(kernel_size=2, stride=1), dict(kernel_size=3),
                                dict(kernel_size=2, padding=1), dict(kernel_size=2,
                                                                     dilation=2)])
def test_other_windows_are_not_tiles(kw):
    k = nn_pool._tuple(kw.get("kernel_size"), 2, "kernel_size", "max_pool2d")
    s = nn_pool._tuple(kw.get("stride", kw["kernel_size"]), 2, "stride", "max_pool2d")
    p = nn_pool._tuple(kw.get("padding", 0), 2, "padding", "max_pool2d")
    d = nn_pool._tuple(kw.get("dilation", 1), 2, "dilation", "max_pool2d")
    assert not nn_pool.tiles_2x2((1, 1, 6, 6), k, s, p, d)
    assert not nn_pool.tiles_2x2((1, 1, 5, 6), (2, 2), (2, 2), (0, 0), (1, 1))  # odd height


def test_channels_last_input_keeps_its_values(numpy_kernels):
    x = _input((2, 4, 6, 6), np.float32)
    xc = ember.from_numpy(x).contiguous(memory_format=ember.channels_last)
    v, i = ember.nn.functional.max_pool2d(xc, 2, return_indices=True)
    w, j = ember.nn.functional.max_pool2d(ember.from_numpy(x), 2, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), w.numpy())
    np.testing.assert_array_equal(i.numpy(), j.numpy())
