"""Medium 2-D float32 products on MLAS (NOTE [ Medium products on MLAS ] in
ember/_kernels/_mlas.py): which go there, their values against NumPy's, the raw bindings
against onnxruntime's public ones, and equal rows and columns of the product."""

import numpy as np
import pytest

import ember
from ember._kernels import _blas, _mlas

ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def mlas_on(monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [ort])


def _close(got, a, b):
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)


@pytest.mark.parametrize("m,k,n", [(2, 1024, 512), (32, 128, 256), (63, 256, 256),
                                   (1024, 32, 32), (5, 300, 700)])
def test_medium_products_go_to_mlas(mlas_on, m, k, n):
    assert m * k * n >= _mlas.MIN_WORK_2D
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for x, y in ((a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b))):
        got = _mlas.matmul(x, y)
        assert got is not None
        _close(got, a, b)
        np.testing.assert_array_equal(_blas.matmul(x, y), got)


@pytest.mark.parametrize("m,k,n", [(1, 2048, 2048), (64, 64, 64), (8, 256, 256)])
def test_one_row_and_small_products_stay_on_numpy(mlas_on, m, k, n):
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    assert _mlas.matmul(a, b) is None
    np.testing.assert_array_equal(_blas.matmul(a, b), np.full((m, n), k, np.float32))


def test_stacks_keep_their_own_rule(mlas_on):
    a = np.ones((4, 32, 256), np.float32)     # 2**20 together, members of 32 rows
    b = np.ones((4, 256, 32), np.float32)
    assert _mlas.matmul(a, b) is None


def test_raw_bindings_give_the_public_bindings_values(mlas_on, monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 200)).astype(np.float32)
    fast = _mlas.matmul(a, b)
    assert _mlas._raw[0], "this onnxruntime should offer its raw bindings"
    monkeypatch.setattr(_mlas, "_raw", [False])
    np.testing.assert_array_equal(_mlas.matmul(a, b), fast)


def test_unknown_bindings_fall_back_to_the_public_ones(mlas_on, monkeypatch):
    class Strange:
        def __init__(self, sess):
            raise TypeError("not the bindings this code knows")

    monkeypatch.setattr(_mlas, "_raw", [(Strange, None)])
    a = np.ones((40, 300), np.float32)
    b = np.ones((300, 200), np.float32)
    np.testing.assert_array_equal(_mlas.matmul(a, b), np.full((40, 200), 300, np.float32))
    assert _mlas._raw[0] is False


@pytest.mark.parametrize("seed", range(8))
def test_equal_rows_and_columns_stay_equal(mlas_on, seed):
    rng = np.random.default_rng(seed)
    m, k, n = (int(v) for v in rng.integers(8, 300, 3))
    k = max(k, _mlas.MIN_WORK_2D // (m * n) + 1)
    row = rng.standard_normal(k).astype(np.float32)
    x = np.ascontiguousarray(np.broadcast_to(row, (m, k)))
    w = rng.standard_normal((n, k)).astype(np.float32)
    y = _blas.matmul(x, w.T)
    assert (y == y[0]).all()
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = np.ascontiguousarray(np.broadcast_to(row, (n, k)))
    y = _blas.matmul(x, w.T)
    assert (y == y[:, :1]).all()


def test_linear_layer_gives_equal_rows(mlas_on):
    ember.manual_seed(0)
    layer = ember.nn.Linear(256, 256)
    y = layer(ember.randn(256).expand(48, 256).contiguous())
    assert bool((y == y[0]).all())
