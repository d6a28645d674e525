"""The portable array helpers (NOTE [ Portable array code ]) on NumPy and on a strict
stand-in for a device array library: a NumPy-array subclass whose namespace has only what
CuPy 14 has (``ufunc.at`` for add/subtract/maximum/minimum on its dtypes, ``ufunc.reduce``
and ``accumulate`` for add/multiply, no ``indices(sparse=)``, no bfloat16 sort or
``where``), and which refuses NumPy functions applied to its arrays."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._core import dtype as _dt
from ember._ops import _xp_compat as xc

BF16 = _dt.bfloat16.np


class Foreign(np.ndarray):
    """An array of another library: NumPy's functions refuse it (as CuPy's arrays refuse
    implicit conversion); its own namespace ``STRICT`` serves it."""

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"np.{func.__name__} called on a foreign array")


def _wrap(x):
    if type(x) is np.ndarray:
        return x.view(Foreign)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _unwrap(x):
    if isinstance(x, Foreign):
        return x.view(np.ndarray)
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


_AT = {"add": {"int32", "int64", "uint32", "uint64", "float16", "float32", "float64"},
       "subtract": {"int32", "int64", "uint32", "uint64", "float16", "float32", "float64"},
       "maximum": {"int32", "int64", "uint32", "uint64", "float32", "float64"},
       "minimum": {"int32", "int64", "uint32", "uint64", "float32", "float64"}}


class _StrictUfunc:
    def __init__(self, f):
        self.f = f
        self.__name__ = f.__name__

    def __call__(self, *args, **kwargs):
        return _wrap(self.f(*_unwrap(args), **_unwrap(kwargs)))

    def at(self, a, key, values=None):
        if self.__name__ not in _AT:
            raise NotImplementedError(f"`{self.__name__}.at` is not supported yet")
        if a.dtype.name not in _AT[self.__name__]:
            raise TypeError(f"{self.__name__}.at does not support {a.dtype}")
        self.f.at(_unwrap(a), _unwrap(key), _unwrap(values))

    def reduce(self, a, **kwargs):
        if self.__name__ not in ("add", "multiply"):
            raise NotImplementedError(f"`{self.__name__}.reduce` is not supported yet")
        return _wrap(np.asarray(self.f.reduce(_unwrap(a), **_unwrap(kwargs))))

    def accumulate(self, a, **kwargs):
        if self.__name__ not in ("add", "multiply"):
            raise NotImplementedError(f"`{self.__name__}.accumulate` is not supported yet")
        return _wrap(self.f.accumulate(_unwrap(a), **_unwrap(kwargs)))


class _StrictNamespace:
    """NumPy's functions on unwrapped arrays, minus what CuPy lacks."""

    def __init__(self, module=np):
        self._module = module

    def __getattr__(self, name):
        obj = getattr(self._module, name)
        if name == "linalg":
            return _StrictNamespace(np.linalg)
        if isinstance(obj, np.ufunc):
            return _StrictUfunc(obj)
        if isinstance(obj, type) or not callable(obj):
            return obj

        def call(*args, **kwargs):
            return _wrap(obj(*_unwrap(args), **_unwrap(kwargs)))

        return call

    def indices(self, dimensions, dtype=int):
        return _wrap(np.indices(dimensions, dtype))

    def _no_bf16(self, *arrays):
        if any(getattr(a, "dtype", None) == BF16 for a in arrays):
            raise NotImplementedError("Sorting arrays with dtype 'bfloat16' is not supported")

    def argsort(self, a, axis=-1, kind=None):
        self._no_bf16(a)
        return _wrap(np.argsort(_unwrap(a), axis=axis, kind="stable"))

    def isin(self, a, b, assume_unique=False, invert=False):
        self._no_bf16(a, b)
        return _wrap(np.isin(_unwrap(a), _unwrap(b), assume_unique=assume_unique,
                             invert=invert))

    def where(self, c, x, y):  # no bfloat16 loop: computed and returned in float32
        x, y = _unwrap(x), _unwrap(y)
        if BF16 in (getattr(x, "dtype", None), getattr(y, "dtype", None)):
            x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
        return _wrap(np.where(_unwrap(c), x, y))


STRICT = _StrictNamespace()


def _foreign(a):
    return np.array(a).view(Foreign)


def _at_reference(name, a, key, values):
    r = a.copy()
    getattr(np, name).at(r, key, values)
    return r


# ------------------------------------------------------------------------------------------
# the stand-in itself


def test_strict_namespace_refuses_what_cupy_lacks():
    a = _foreign(np.zeros(3, np.float32))
    with pytest.raises(NotImplementedError):
        STRICT.multiply.at(a, _foreign([0, 0]), 2.0)
    with pytest.raises(NotImplementedError):
        STRICT.minimum.reduce(a)
    with pytest.raises(TypeError):
        STRICT.indices((2, 3), sparse=True)
    with pytest.raises(TypeError):
        np.sum(a)


# ------------------------------------------------------------------------------------------
# ufunc_at


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "subtract"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int8",
                                   "uint8", "complex64"])
def test_ufunc_at_duplicates_match_numpy(name, dtype):
    if dtype == "complex64" and name in ("maximum", "minimum"):
        pytest.skip("no ordering of complex values in torch")
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (4, 3)).astype(dt)
    if dt.kind == "u":
        a = rng.integers(0, 4, (4, 3)).astype(dt)
    idx = np.array([0, 2, 0, 3, 0, 2])
    v = rng.integers(1, 3, (6, 3)).astype(dt)
    expected = _at_reference(name, a, idx, v)
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, name, got, _foreign(idx), _foreign(v))
    if name in ("add", "subtract") and dt.itemsize == 2 and dt.kind in "fV":
        # half sums accumulate in float32 and round once: equal on these small integers
        np.testing.assert_array_equal(got.view(np.ndarray).astype(np.float32),
                                      expected.astype(np.float32))
    else:
        np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_ufunc_at_bool_add_is_logical_or():
    a = np.array([False, False, True])
    expected = _at_reference("add", a, np.array([0, 0, 1]), np.array([True, False, False]))
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, "add", got, _foreign([0, 0, 1]), _foreign([True, False, False]))
    np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_ufunc_at_multiply_keeps_numpy_order_of_rounding():
    # float32 products in NumPy's order, bit for bit
    rng = np.random.default_rng(1)
    a = rng.standard_normal(5).astype(np.float32)
    idx = rng.integers(0, 5, 40)
    v = rng.standard_normal(40).astype(np.float32)
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, "multiply", got, _foreign(idx), _foreign(v))
    np.testing.assert_array_equal(got.view(np.ndarray), _at_reference("multiply", a, idx, v))


def test_ufunc_at_tuple_key_and_scalar_value():
    a = np.ones((3, 4), np.float32)
    key = (np.array([[0], [2], [0]]), np.array([[1, 1, 3]]))
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, "multiply", got, (_foreign(key[0]), _foreign(key[1])), 3.0)
    np.testing.assert_array_equal(got.view(np.ndarray), _at_reference("multiply", a, key, 3.0))


def test_ufunc_at_key_with_slice():
    a = np.full((2, 3), 2, np.int8)
    key = (slice(None), np.array([1, 1, 2]))
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, "multiply", got, (key[0], _foreign(key[1])), 3)
    np.testing.assert_array_equal(got.view(np.ndarray), _at_reference("multiply", a, key, 3))


def test_ufunc_at_non_contiguous_view_writes_through():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = base.copy()
    np.multiply.at(expected.T, np.array([1, 1, 3]), np.float32(2))
    got = _foreign(base.copy())
    xc.ufunc_at(STRICT, "multiply", got.T, _foreign([1, 1, 3]), 2.0)
    np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_ufunc_at_half_max_propagates_nan():
    a = np.array([1.0, 2.0], np.float16)
    v = np.array([np.nan, 5.0, 0.0], np.float16)
    got = _foreign(a.copy())
    xc.ufunc_at(STRICT, "maximum", got, _foreign([0, 1, 1]), _foreign(v))
    np.testing.assert_array_equal(got.view(np.ndarray), _at_reference("maximum", a,
                                                                       [0, 1, 1], v))


def test_ufunc_at_empty_index_changes_nothing():
    got = _foreign(np.ones(3, BF16))
    xc.ufunc_at(STRICT, "multiply", got, _foreign(np.zeros(0, np.int64)),
                _foreign(np.zeros(0, BF16)))
    np.testing.assert_array_equal(got.view(np.ndarray).astype(np.float32), np.ones(3))


def test_ufunc_at_numpy_is_numpys_own():
    a = np.zeros(3, np.float16)
    xc.ufunc_at(np, "add", a, np.array([0, 0]), np.float16(0.1))
    np.testing.assert_array_equal(a, _at_reference("add", np.zeros(3, np.float16), [0, 0],
                                                   np.float16(0.1)))


# ------------------------------------------------------------------------------------------
# ufunc_reduce / ufunc_accumulate


@pytest.mark.parametrize("name", ["maximum", "minimum", "logical_or", "logical_and",
                                  "bitwise_xor", "add"])
@pytest.mark.parametrize("axis", [0, 1, None, (0, 2)])
def test_ufunc_reduce_matches_numpy(name, axis):
    rng = np.random.default_rng(2)
    a = rng.integers(0, 5, (3, 4, 2)).astype(np.int64)
    if name.startswith("logical"):
        a = a > 2
    for keepdims in (False, True):
        expected = getattr(np, name).reduce(a, axis=axis, keepdims=keepdims)
        got = xc.ufunc_reduce(STRICT, name, _foreign(a), axis=axis, keepdims=keepdims)
        np.testing.assert_array_equal(np.asarray(got.view(np.ndarray)), expected)


def test_ufunc_reduce_maximum_propagates_nan():
    a = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    got = xc.ufunc_reduce(STRICT, "maximum", _foreign(a), axis=1)
    np.testing.assert_array_equal(got.view(np.ndarray), np.maximum.reduce(a, axis=1))


def test_ufunc_reduce_empty_with_initial():
    a = np.zeros((0, 3), np.float32)
    got = xc.ufunc_reduce(STRICT, "minimum", _foreign(a), axis=0, keepdims=True, initial=0)
    expected = np.minimum.reduce(a, axis=0, keepdims=True, initial=0)
    assert got.shape == expected.shape and got.dtype == expected.dtype


@pytest.mark.parametrize("name", ["maximum", "minimum", "logaddexp"])
def test_ufunc_accumulate_matches_numpy(name):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 7)).astype(np.float32)
    a[1, 2] = np.nan
    for axis in (0, 1, -1):
        expected = getattr(np, name).accumulate(a, axis=axis)
        got = xc.ufunc_accumulate(STRICT, name, _foreign(a), axis=axis).view(np.ndarray)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# sparse_indices / where / to_host / batched_expm


def test_sparse_indices_equal_numpy_sparse_grid():
    for got, expected in zip(xc.sparse_indices(STRICT, (2, 3, 4)),
                             np.indices((2, 3, 4), sparse=True)):
        np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_where_keeps_bfloat16():
    x = _foreign(np.array([1.5, 2.5], BF16))
    y = _foreign(np.array(-1.5, BF16))
    r = xc.where(STRICT, _foreign([True, False]), x, y)
    assert r.dtype == BF16
    np.testing.assert_array_equal(r.view(np.ndarray).astype(np.float32), [1.5, -1.5])


def test_where_promotes_python_scalars_as_numpy():
    x = np.array([1.5, 2.5], BF16)
    c = np.array([True, False])
    r = xc.where(STRICT, _foreign(c), _foreign(x), 0.5)
    assert r.dtype == np.where(c, x, 0.5).dtype


def test_where_on_numpy_is_numpys_own():
    x = np.array([1.5, 2.5], BF16)
    assert xc.where(np, np.array([True, False]), x, np.float32(0)).dtype == np.float32


def test_to_host_copies_explicitly():
    class Device:  # an array library whose arrays come back through .get()
        def __init__(self, a):
            self.a = a

        def get(self):
            return self.a.copy()

    r = xc.to_host(object(), Device(np.arange(3)))
    assert type(r) is np.ndarray and r.tolist() == [0, 1, 2]


def test_batched_expm_matches_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 4)) * np.array([0.1, 2.0, 9.0])[:, None, None]
    got = xc.batched_expm(STRICT, _foreign(a)).view(np.ndarray)
    expected = np.stack([scipy_linalg.expm(m) for m in a])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------
# kernels on the strict namespace: the sweep's failures


def test_scatter_reduce_prod_kernel_on_strict_namespace():
    from ember._ops import scatter

    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    idx = rng.integers(0, 3, (5, 4))
    src = rng.standard_normal((5, 4)).astype(np.float32)
    params = dict(dim=0, value=None, reduce="prod", include_self=True, src_shape=(5, 4))
    expected = scatter._scatter_kernel(np, a, idx, src, **params)
    got = scatter._scatter_kernel(STRICT, _foreign(a), _foreign(idx), _foreign(src), **params)
    np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_index_add_bfloat16_kernel_on_strict_namespace():
    from ember._ops import scatter

    a = np.zeros((3, 2), BF16)
    src = np.ones((3, 2), BF16)
    idx = np.array([0, 2, 0])
    got = scatter._index_add_kernel(STRICT, _foreign(a), _foreign(idx), _foreign(src), dim=0,
                                    alpha=1)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.ndarray).astype(np.float32),
                                  [[2, 2], [0, 0], [1, 1]])


def test_reduction_kernels_on_strict_namespace():
    from ember._ops import reduction

    a = np.array([[3.0, np.nan, 1.0], [2.0, 5.0, 4.0]], np.float32)
    for largest in (True, False):
        got = reduction._extreme_kernel(STRICT, _foreign(a), dim=1, keepdim=False,
                                        largest=largest)
        expected = reduction._extreme_kernel(np, a, dim=1, keepdim=False, largest=largest)
        np.testing.assert_array_equal(got.view(np.ndarray), expected)
    for is_all in (True, False):
        got = reduction._logical_kernel(STRICT, _foreign(a > 2), dim=0, keepdim=True,
                                        is_all=is_all)
        expected = reduction._logical_kernel(np, a > 2, dim=0, keepdim=True, is_all=is_all)
        np.testing.assert_array_equal(got.view(np.ndarray), expected)
    got = reduction._logsumexp_kernel(STRICT, _foreign(a), dim=(1,), keepdim=False)
    expected = reduction._logsumexp_kernel(np, a, dim=(1,), keepdim=False)
    np.testing.assert_array_equal(got.view(np.ndarray), expected)


def test_put_along_kernel_on_strict_namespace():
    from ember._ops import reduction

    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([[0, 0, 1], [1, 1, 1]])
    kw = dict(dim=1, keepdim=True, shape=(2, 3))
    got = reduction._put_along_kernel(STRICT, _foreign(g), _foreign(idx), **kw)
    np.testing.assert_array_equal(got.view(np.ndarray),
                                  reduction._put_along_kernel(np, g, idx, **kw))


def test_matrix_exp_kernel_batched_on_strict_namespace():
    from ember._ops import linalg_func

    a = np.random.default_rng(8).standard_normal((2, 3, 3)).astype(np.float32)
    got = linalg_func._matrix_exp_kernel(STRICT, _foreign(a)).view(np.ndarray)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, linalg_func._matrix_exp_kernel(np, a), rtol=1e-5)


def test_masked_fill_kernel_keeps_bfloat16_on_strict_namespace():
    from ember._ops import masked

    a = _foreign(np.zeros((2, 2), BF16))
    mask = _foreign(np.array([[True, False], [False, True]]))
    r = masked._masked_fill_kernel(STRICT, a, mask, None, value=-1.5)
    assert r.dtype == BF16


def test_isin_kernel_bfloat16_on_strict_namespace():
    from ember._ops import sorting

    a = np.array([1.0, 2.5, np.nan], BF16)
    b = np.array([2.5, np.nan], BF16)
    got = sorting._isin_kernel(STRICT, _foreign(a), _foreign(b), assume_unique=False,
                               invert=False)
    np.testing.assert_array_equal(got.view(np.ndarray), [False, True, False])


# ------------------------------------------------------------------------------------------
# the touched ops still agree with torch on the CPU


def test_batch_norm_backward_without_weight_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).standard_normal((2, 3, 5)).astype(np.float32)
    xe = ember.tensor(x, requires_grad=True)
    ember.instance_norm(xe, None, None, None, None, True, 0.1, 1e-5, False).pow(2).sum() \
        .backward()
    xt = torch.tensor(x, requires_grad=True)
    torch.instance_norm(xt, None, None, None, None, True, 0.1, 1e-5, False).pow(2).sum() \
        .backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_lstsq_rank_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(7).standard_normal((5, 3)).astype(np.float32)
    b = np.ones((5, 2), np.float32)
    r = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver="gelsd")
    t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    assert r.rank.item() == t.rank.item() and r.rank.dtype == ember.int64
    np.testing.assert_allclose(r.solution.numpy(), t.solution.numpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------
# on CuPy itself (GPU machines only)

needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


def _cupy():
    from ember.cuda import _runtime

    return _runtime.cupy()


@needs_gpu
@pytest.mark.parametrize("name,dtype", [("multiply", "float32"), ("add", "bfloat16"),
                                        ("maximum", "float16"), ("add", "int8"),
                                        ("multiply", "int64"), ("minimum", "bfloat16")])
def test_ufunc_at_on_cupy_matches_numpy(name, dtype):
    cp = _cupy()
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(9)
    a = rng.integers(1, 4, (5, 3)).astype(dt)
    idx = rng.integers(0, 5, 12)
    v = rng.integers(1, 3, (12, 3)).astype(dt)
    got = cp.asarray(a)
    xc.ufunc_at(cp, name, got, cp.asarray(idx), cp.asarray(v))
    np.testing.assert_array_equal(cp.asnumpy(got).astype(np.float64),
                                  _at_reference(name, a, idx, v).astype(np.float64))


@needs_gpu
def test_reduce_accumulate_where_expm_on_cupy():
    cp = _cupy()
    a = np.random.default_rng(10).standard_normal((3, 5)).astype(np.float32)
    d = cp.asarray(a)
    np.testing.assert_array_equal(cp.asnumpy(xc.ufunc_reduce(cp, "minimum", d, axis=1)),
                                  a.min(1))
    np.testing.assert_array_equal(cp.asnumpy(xc.ufunc_reduce(cp, "logical_or", d > 1,
                                                             axis=0)), (a > 1).any(0))
    np.testing.assert_array_equal(cp.asnumpy(xc.ufunc_accumulate(cp, "maximum", d, axis=1)),
                                  np.maximum.accumulate(a, axis=1))
    assert [g.shape for g in xc.sparse_indices(cp, (2, 3))] == [(2, 1), (1, 3)]
    x = cp.asarray(a.astype(BF16))
    assert xc.where(cp, x > 0, x, cp.zeros((), x.dtype)).dtype == BF16
    e = xc.batched_expm(cp, cp.asarray(a[:2, :2].reshape(1, 2, 2) * 0.5))
    scipy_linalg = pytest.importorskip("scipy.linalg")
    np.testing.assert_allclose(cp.asnumpy(e)[0], scipy_linalg.expm(a[:2, :2] * 0.5),
                               rtol=1e-5)
    assert type(xc.to_host(cp, d)) is np.ndarray
