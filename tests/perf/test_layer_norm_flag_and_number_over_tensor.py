"""Layer norm's check for rows near the top of float32 made inside the compiled kernel
(NOTE [ Welford lanes of torch's norms ]), and ``c / t`` in one compiled pass (NOTE [ A
number over a tensor ]), each against the plain path."""

import numpy as np
import pytest

import ember
from ember import _kernels
from ember._ops import arithmetic, nn_norm
from ember._ops.pointwise import reciprocal_op


def _rows_of_every_kind(rng, n=48):
    rows = [rng.standard_normal(n) for _ in range(6)]
    rows += [rng.standard_normal(n) + 3e18,          # a mean beyond the bound
             rng.standard_normal(n) * 2e18,          # a spread beyond it
             np.full(n, 1e38),                       # the sum overflows
             np.r_[np.inf, rng.standard_normal(n - 1)],
             np.r_[np.inf, -np.inf, rng.standard_normal(n - 2)],
             np.r_[np.nan, rng.standard_normal(n - 1)],
             rng.standard_normal(n) * 1e17]          # close to, below, the bounds
    return np.array(rows, dtype=np.float32)


def _old_path(x, w, b):
    """The statistics and the check as before: the kernel, then the check's reductions."""
    y, mean, rstd = nn_norm._layer_norm_parts(np, x, w, b, 1, 1e-5)
    y, mean, rstd = nn_norm._welford_lane_nan(x, w, b, y, mean, rstd, 1, 1e-5)
    inf = np.isinf(mean)
    if inf.any():
        inf &= np.isinf(x).any(axis=1, keepdims=True).reshape(inf.shape)
        mean = np.where(inf, np.float32(np.nan), mean)
    return y, mean, rstd


@pytest.mark.parametrize("pick", [slice(0, 6), slice(None), slice(6, 7), slice(11, 12),
                                  slice(12, 13), slice(9, 10)])
def test_layer_norm_flag_in_the_kernel_equals_the_reductions(numba_backend, pick):
    rng = np.random.default_rng(0)
    x = _rows_of_every_kind(rng)[pick]
    w = rng.standard_normal(x.shape[1]).astype(np.float32)
    b = rng.standard_normal(x.shape[1]).astype(np.float32)
    with np.errstate(all="ignore"):
        new = nn_norm._layer_norm_kernel(np, x, w, b, ndim=1, eps=1e-5)
        old = _old_path(x, w, b)
    for p, q in zip(new, old):
        assert p.shape == q.shape and p.tobytes() == q.tobytes()


def test_layer_norm_flag_is_the_bounds_test(numba_backend):
    rng = np.random.default_rng(1)
    x = _rows_of_every_kind(rng)
    big, small = nn_norm._WELFORD_BOUNDS[x.dtype]
    for i in range(len(x)):
        with np.errstate(all="ignore"):
            y, mean, rstd, near = _kernels.layer_norm(x[i:i + 1], None, None, 1, 1e-5,
                                                      near=(big, small))
        expect = bool(np.abs(mean[0, 0]) >= big or rstd[0, 0] <= small)
        assert near is expect, i
    assert near is False                  # the last row stays below the bounds
    assert len(_kernels.layer_norm(x[:2], None, None, 1, 1e-5)) == 3


def test_layer_norm_module_matches_torch_on_huge_rows(numba_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = _rows_of_every_kind(rng)[[0, 1, 2, 3, 4, 5, 8, 9, 11]]
    e = ember.nn.functional.layer_norm(ember.tensor(x), [x.shape[1]])
    t = torch.nn.functional.layer_norm(torch.tensor(x), [x.shape[1]])
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5, equal_nan=True)


def _special(dtype, n, rng):
    a = (rng.standard_normal(n) * 3).astype(dtype)
    a[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).tiny / 4, 1e-30, -7.0]
    return a


def _plain(a, c):
    """``c / a`` by the two ops, each through dispatch."""
    r = ember._dispatch.apply(reciprocal_op, (ember.tensor(a),), {}, None)
    return (r * c).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [100, 1 << 13, 300_000, 1_100_000])
@pytest.mark.parametrize("c", [2.5, -3, 1e-3, 7])
def test_number_over_tensor_one_pass_equals_two_ops(numba_backend, dtype, n, c):
    rng = np.random.default_rng(n)
    a = _special(dtype, n, rng)
    with np.errstate(all="ignore"):
        r = c / ember.tensor(a)
        plain = _plain(a, c)
    assert r.dtype == ember.tensor(a).dtype and r.shape == (n,)
    assert r.numpy().tobytes() == plain.tobytes()


def test_number_over_tensor_kernel_on_threads_equals_one_call(numba_backend, threads):
    rng = np.random.default_rng(3)
    a = _special(np.float32, 1 << 20, rng)
    with np.errstate(all="ignore"):
        one = np.empty_like(a)
        numba_backend.reciprocal_times_into(a, np.float32(0.5), one)
        r = _kernels.reciprocal_times(a, 0.5)
    assert r.tobytes() == one.tobytes()


def test_number_over_tensor_numpy_route(numpy_backend):
    rng = np.random.default_rng(4)
    for n in (100, 1 << 13, 1_100_000):
        a = _special(np.float32, n, rng)
        assert _kernels.reciprocal_times(a, 2.0) is None
        with np.errstate(all="ignore"):
            assert (2.0 / ember.tensor(a)).numpy().tobytes() == _plain(a, 2.0).tobytes()


def test_number_over_tensor_takes_only_what_it_covers(numba_backend):
    a = np.ones(1 << 14, np.float32)
    assert _kernels.reciprocal_times(a, 2.0) is not None
    assert _kernels.reciprocal_times(a[::2], 2.0) is None            # not contiguous
    assert _kernels.reciprocal_times(a.astype(np.float16), 2.0) is None
    assert _kernels.reciprocal_times(a[:100], 2.0) is None           # NumPy's is cheaper
    t = ember.ones(1 << 14, requires_grad=True)
    r = 2.0 / t
    assert r.grad_fn is not None and type(r.grad_fn).__name__ == "MulBackward0"
    r.sum().backward()
    assert float(t.grad[0]) == -2.0


def test_number_over_tensor_is_torchs_bits(numba_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        a = _special(dtype, 50_000, rng)
        with np.errstate(all="ignore"):
            assert (1.7 / ember.tensor(a)).numpy().tobytes() == \
                (1.7 / torch.tensor(a)).numpy().tobytes()
    assert arithmetic._reciprocal_times_fast is not None


def test_cross_entropy_short_rows_take_their_maxima_in_the_kernel(numba_backend, monkeypatch):
    # NOTE [ Short rows' maxima in the kernel ]: the same bits as NumPy's row maxima, and NaN
    # where a row holds one
    rng = np.random.default_rng(6)
    for c in (1, 7, 98, 256):
        rows = (rng.standard_normal((300, c)) * 4).astype(np.float32)
        rows[3, 0] = np.inf
        rows[4, -1] = -np.inf
        rows[5, c // 2] = np.nan
        rows[6] = -np.inf
        target = rng.integers(0, c, 300)
        weight = rng.random(300).astype(np.float32)
        with np.errstate(all="ignore"):
            own = _kernels.cross_entropy(rows, target, weight)
            monkeypatch.setattr(_kernels, "_OWN_MAX_ROW", 0)
            given = _kernels.cross_entropy(rows, target, weight)
            monkeypatch.undo()
        for p, q in zip(own, given):
            nan = np.isnan(q)
            assert np.array_equal(np.isnan(p), nan)
            assert p[~nan].tobytes() == q[~nan].tobytes()
        assert np.isnan(own[1][5]) and np.isnan(own[0][5]).all()


def test_cross_entropy_short_rows_match_torch(numba_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1024, 98)).astype(np.float32)
    y = rng.integers(0, 98, 1024)
    e = ember.nn.functional.cross_entropy(ember.tensor(x), ember.tensor(y), reduction="none")
    t = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(y), reduction="none")
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-6, atol=2e-6)
