"""Large element-wise ufuncs split over threads give exactly the one-thread results
(NOTE [ Threaded element-wise ops ] in ember/_parallel.py)."""

import numpy as np
import pytest

import ember
from ember import _parallel

N = _parallel.MIN_ELEMENTS * 2 + 3  # above the threshold, not a multiple of the chunking


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)  # split whatever the load
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def test_literal_threshold_matches_module_constant():
    import inspect

    from ember._ops import _elementwise

    assert f"ad.size < {_parallel.MIN_ELEMENTS}" in inspect.getsource(_elementwise.binary_fast)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16])
@pytest.mark.parametrize("name", ["add", "mul", "sub", "maximum"])
def test_threaded_binary_equals_numpy(two_threads, name, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(N) * 100).astype(dtype)
    b = (rng.standard_normal(N) * 100).astype(dtype)
    got = getattr(ember, name)(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    want = {"add": np.add, "mul": np.multiply, "sub": np.subtract,
            "maximum": np.maximum}[name](a, b)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_threaded_scalar_and_unary_equal_numpy(two_threads):
    a = np.random.default_rng(1).standard_normal((N // 3, 3)).astype(np.float32)
    t = ember.from_numpy(a)
    np.testing.assert_array_equal((t * 2.5).numpy(), a * 2.5)
    np.testing.assert_array_equal((1.5 - t).numpy(), 1.5 - a)
    from ember import _kernels

    old = _kernels.set_backend("numpy")  # NumPy's exp on threads (numba's is its own kernel)
    try:
        np.testing.assert_array_equal(t.exp().numpy(), np.exp(a))
    finally:
        _kernels.set_backend(old)
    np.testing.assert_array_equal(ember.sqrt(t.abs()).numpy(), np.sqrt(np.abs(a)))


def test_threaded_ops_keep_autograd(two_threads):
    x = ember.randn(N, requires_grad=True)
    y = ember.randn(N)
    (x * y + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.numpy() + 1, rtol=1e-6)


def test_not_split_for_broadcast_or_strided(two_threads):
    a = np.ones((N, 2), np.float32)
    assert _parallel.ufunc_on_threads(np.add, a[:, 0], a[:, 1]) is None  # strided
    assert _parallel.ufunc_on_threads(np.add, a, np.ones(2, np.float32)) is None  # broadcast
    assert _parallel.ufunc_on_threads(np.add, a, a) is not None


def test_one_thread_setting_turns_splitting_off():
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        a = np.ones(N, np.float32)
        assert _parallel.ufunc_on_threads(np.add, a, a) is None
    finally:
        ember.set_num_threads(before)


def test_forked_child_gets_its_own_pool(two_threads):
    import multiprocessing as mp

    a = ember.ones(N)
    (a + a).sum()  # the parent's pool exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_sum, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and q.get(timeout=5) == 2.0 * N


def _child_sum(q):
    a = ember.ones(N)
    q.put(float((a + a).sum()))


def test_threaded_large_sum_equals_one_thread_result():
    a = np.random.default_rng(2).random(4 * N + 5).astype(np.float32)
    t = ember.from_numpy(a)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = t.sum().item()
        ember.set_num_threads(2)
        two = t.sum().item()
    finally:
        ember.set_num_threads(before)
    assert one == two
    assert abs(two - a.sum(dtype=np.float64)) <= 1e-6 * a.size
