"""The BLAS-backed sums of the fused kernels (NOTE [ Sums through BLAS ]) against NumPy in
float64, for every path: GEMV, strided input, rows over the cap, other dtypes, empty."""

import numpy as np
import pytest

from ember._ops import linalg


def _close(got, want, dtype):
    tol = {np.float32: 2e-5, np.float64: 1e-12, np.float16: 2e-2, np.int64: 0}[dtype]
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("shape,ndim", [((6, 5, 7), 1), ((6, 5, 7), 2), ((3, 0, 4), 1),
                                        ((2, linalg._BLAS_SUM_ROW + 3), 1), ((9,), 1)])
def test_row_and_col_sums(dtype, shape, ndim):
    a = (np.random.default_rng(0).standard_normal(shape) * 10).astype(dtype)
    exact = a.astype(np.float64)
    tail = tuple(range(a.ndim - ndim, a.ndim))
    _close(linalg.row_sums(np, a, ndim), exact.sum(axis=tail, keepdims=True), dtype)
    _close(linalg.col_sums(np, a, ndim), exact.sum(axis=tuple(range(a.ndim - ndim))), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (4, 3), (0, 3, 2, 2), (2, 3, 7)])
def test_channel_sums(dtype, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    want = a.astype(np.float64).sum(axis=(0,) + tuple(range(2, a.ndim)), keepdims=True)
    _close(linalg.channel_sums(np, a), want, dtype)


def test_strided_inputs_give_the_same_bits():
    a = np.random.default_rng(2).standard_normal((5, 8, 6)).astype(np.float32)
    strided = np.asfortranarray(a)
    for f in (lambda x: linalg.row_sums(np, x), lambda x: linalg.col_sums(np, x),
              lambda x: linalg.channel_sums(np, x)):
        np.testing.assert_array_equal(f(strided), f(a))
