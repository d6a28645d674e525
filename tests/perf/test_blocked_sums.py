"""Full sums and means of large float arrays in fixed blocks (NOTE [ Blocked float sums ] in
ember/_kernels/_reduce.py): pairwise-level accuracy, the same bits for any thread count,
both kernel backends, and the hot and general paths agreeing."""

import math

import numpy as np
import pytest

import ember
from ember._kernels import _reduce
from tests.conftest import spy_thread_splits

N = 2 * _reduce.SUM_SPLIT + 777  # splits over threads, and leaves a tail past the blocks


@pytest.fixture(params=["numba", "numpy"])
def backend(request):
    """Each test under both kernel backends (numba's skips without numba)."""
    yield request.getfixturevalue(request.param + "_backend")


def _data(kind, dtype, n=N):
    rng = np.random.default_rng(5)
    if kind == "uniform":
        return rng.random(n).astype(dtype)
    if kind == "normal":
        return rng.standard_normal(n).astype(dtype)
    return (rng.random(n) + 1000).astype(dtype)  # an offset: large partial sums


def _rel_error(value, a):
    exact = math.fsum(a.astype(np.float64).tolist())
    return abs(float(value) - exact) / abs(exact)


@pytest.mark.parametrize("kind", ["uniform", "normal", "offset"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_sum_error_at_pairwise_level(backend, kind, dtype):
    a = _data(kind, dtype)
    got = _reduce.float_sum(a)
    assert got is not None and got.dtype == dtype
    eps = np.finfo(dtype).eps
    # NumPy's pairwise sum and PyTorch's stay within a few eps of the exact sum here; a
    # sequential float32 sum of 2M elements would be off by ~1e-4
    assert _rel_error(got, a) <= max(4 * _rel_error(np.add.reduce(a), a), 8 * eps)


def test_blocked_sum_same_bits_for_any_thread_count(backend, threads):
    a = _data("normal", np.float32)
    two = _reduce.float_sum(a)
    assert True in threads  # the blocks really split
    ember.set_num_threads(1)
    assert _reduce.float_sum(a).tobytes() == two.tobytes()
    for _ in range(3):  # and run to run
        ember.set_num_threads(2)
        assert _reduce.float_sum(a).tobytes() == two.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_and_mean_match_torch(backend, dtype):
    torch = pytest.importorskip("torch")
    a = _data("uniform", dtype)
    t = ember.from_numpy(a)
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(float(t.sum()), torch.from_numpy(a).sum().item(), rtol=rtol)
    np.testing.assert_allclose(float(t.mean()), torch.from_numpy(a).mean().item(), rtol=rtol)
    assert t.sum().dtype == t.mean().dtype == t.dtype


def test_hot_and_general_paths_agree(backend):
    a = _data("normal", np.float32)
    t = ember.from_numpy(a)
    hot = t.sum().numpy()
    general = ember.sum(t, dim=None, dtype=ember.float32).numpy()  # through sum's Op
    assert hot.tobytes() == general.tobytes()
    assert t.mean().numpy().tobytes() == ember.mean(t, dtype=ember.float32).numpy().tobytes()
    x = ember.from_numpy(a.reshape(-1, 1)).requires_grad_()
    s = x.sum()
    assert s.detach().numpy().tobytes() == hot.tobytes()
    s.backward()  # the recorded node is sum's
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(a.reshape(-1, 1)))


def test_nan_and_inf_propagate(backend):
    a = _data("uniform", np.float32)
    a[12345] = np.inf
    assert float(ember.from_numpy(a).sum()) == np.inf
    a[777] = -np.inf
    assert math.isnan(float(ember.from_numpy(a).sum()))
    b = _data("uniform", np.float64)
    b[-1] = np.nan  # in the tail past the last block
    assert math.isnan(float(ember.from_numpy(b).mean()))


def test_uncovered_arrays_take_numpy_sum(backend):
    a = _data("uniform", np.float32)
    strided = a[::2]
    assert _reduce.float_sum(strided) is None
    assert _reduce.float_sum(a.astype(np.float16)) is None
    assert _reduce.float_sum(a[:100]) is None  # small: NumPy's own loop
    t = ember.from_numpy(a)[::2]
    assert t.sum().numpy() == np.add.reduce(strided)
    small = ember.from_numpy(a[:100])
    assert small.sum().numpy() == np.add.reduce(a[:100])


def test_split_declines_under_contention(backend, monkeypatch):
    seen = spy_thread_splits(monkeypatch, contended=True)
    a = _data("uniform", np.float32)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        got = _reduce.float_sum(a)
    finally:
        ember.set_num_threads(before)
    assert seen == [False]
    assert _rel_error(got, a) < 1e-6


# ------------------------------------------------------------------------------------------------
# sums along the last axis


@pytest.mark.parametrize("shape", [(128, 128), (3, 50, 700), (4096, 16)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_dim_sums_match_numpy_and_torch(numba_backend, shape, dtype):
    a = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    t = ember.from_numpy(a)
    rtol = 2e-6 if dtype == np.float32 else 1e-13
    for keepdim in (False, True):
        want = np.add.reduce(a, -1, keepdims=keepdim)
        got = t.sum(-1, keepdim=keepdim).numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * shape[-1])
        np.testing.assert_allclose(t.mean(dim=-1, keepdim=keepdim).numpy(),
                                   want / shape[-1], rtol=rtol, atol=rtol)
    assert _reduce.row_sums(a) is not None  # the compiled rows really ran
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(t.sum(-1).numpy(), torch.from_numpy(a).sum(-1).numpy(),
                               rtol=rtol, atol=rtol * shape[-1])


def test_last_dim_sums_same_bits_for_any_thread_count(numba_backend, threads):
    a = np.random.default_rng(3).standard_normal((1030, 1024)).astype(np.float32)
    two = ember.from_numpy(a).sum(-1).numpy()
    assert True in threads
    ember.set_num_threads(1)
    assert ember.from_numpy(a).sum(-1).numpy().tobytes() == two.tobytes()
    # the general op (through ``sum_op``) and the hot path give the same bits
    general = ember.sum(ember.from_numpy(a), dim=(1,), dtype=ember.float32).numpy()
    assert general.tobytes() == two.tobytes()


def test_last_dim_sums_uncovered_take_numpy(numba_backend):
    rng = np.random.default_rng(4)
    long_rows = rng.random((16, _reduce.BLOCK + 1)).astype(np.float32)
    assert _reduce.row_sums(long_rows) is None
    np.testing.assert_array_equal(ember.from_numpy(long_rows).sum(-1).numpy(),
                                  np.add.reduce(long_rows, -1))
    a = rng.random((256, 128)).astype(np.float32)
    np.testing.assert_array_equal(ember.from_numpy(a).sum(0).numpy(), np.add.reduce(a, 0))
    assert _reduce.row_sums(a.T) is None  # not C-contiguous
    np.testing.assert_array_equal(ember.from_numpy(a).t().sum(-1).numpy(),
                                  np.add.reduce(a.T, -1))


def test_last_dim_sums_nan_stays_in_its_row(numba_backend):
    a = np.ones((128, 128), np.float32)
    a[5, 7] = np.nan
    assert _reduce.row_sums(a) is not None
    got = ember.from_numpy(a).sum(-1).numpy()
    assert np.isnan(got[5]) and np.isfinite(np.delete(got, 5)).all()


def test_last_dim_sum_gradient(numba_backend):
    a = np.random.default_rng(6).random((200, 100)).astype(np.float32)
    assert _reduce.row_sums(a) is not None
    x = ember.from_numpy(a).requires_grad_()
    x.mean(-1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(a, 1 / 100), rtol=1e-6)
