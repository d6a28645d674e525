"""Regressions for session 27's differential run against PyTorch 2.13: each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes, gradients or the exception raised."""

import itertools

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _both():
    return ember, _torch()


def _raised(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e).__name__, str(e)
    return None


def _np(x):
    x = x.detach().cpu()
    return (x.float() if str(x.dtype).endswith("bfloat16") else x).numpy()


# ---- ldexp of complex mantissas: the power of two in the exponents' complex dtype


@pytest.mark.parametrize("mantissa", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", ["float16", "bfloat16", "float32", "float64", "int32",
                                      "bool"])
def test_ldexp_complex_mantissa_dtype_and_value(mantissa, exponent):
    outs = []
    for T in _both():
        x = T.tensor([1 + 2j, -0.5 + 0.25j], dtype=getattr(T, mantissa))
        e = T.tensor([1.5, -3.0] if exponent != "bool" else [True, False]).to(
            getattr(T, exponent))
        err = _raised(lambda: T.ldexp(x, e))
        outs.append(err if err else (str(T.ldexp(x, e).dtype).split(".")[-1],
                                     _np(T.ldexp(x, e))))
    if isinstance(outs[1][1], str):  # torch refused: the same class and message
        assert outs[0] == outs[1]
        return
    assert outs[0][0] == outs[1][0]
    # bfloat16 exponents: torch takes 2 ** 1.5 in complex64 (was rounded to bfloat16)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-7)


# ---- renorm: a slice left as it is passes its gradient through, NaN or inf in it or not


@pytest.mark.parametrize("p", [2, 1, 0.5, 3, float("inf")])
@pytest.mark.parametrize("maxnorm", [5.0, 0.3])
def test_renorm_gradient_of_unscaled_nonfinite_slice(p, maxnorm):
    x = np.array([[np.nan, -8.0, -7.0, -1.7976931348623157e308], [1.0, 2, 3, 4],
                  [0.0, 0, 0, 0], [0.5, 0, -0.2, 0.1], [np.inf, 1, 2, 3]])
    w = np.arange(20.0).reshape(5, 4) % 7 - 3
    res = []
    for T in _both():
        a = T.tensor(x, requires_grad=True)
        out = a.renorm(p, 0, maxnorm)
        (g,) = T.autograd.grad((out * T.tensor(w)).sum(), a)
        res.append((_np(out), _np(g)))
    (o_e, g_e), (o_t, g_t) = res
    np.testing.assert_allclose(o_e, o_t, rtol=1e-12, equal_nan=True)
    # the NaN row's gradient was NaN (the norm's derivative times 0)
    np.testing.assert_allclose(g_e, g_t, rtol=1e-9, atol=1e-12, equal_nan=True)


# ---- sgn of complex numbers: each part divided by the magnitude


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_sgn_of_infinite_complex(dtype):
    v = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e30]
    z = np.array([complex(a, b) for a, b in itertools.product(v, v)])
    e, t = (_np(T.tensor(z, dtype=getattr(T, dtype)).sgn()) for T in _both())
    # 1 + inf j gave nan + nan j, torch 0 + nan j
    np.testing.assert_allclose(e.real, t.real, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(e.imag, t.imag, rtol=1e-6, equal_nan=True)


# ---- index_put: an index into a dimension of size 0 is refused before the values' dtype


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("values", ["bool", "float16"])
def test_index_put_into_empty_dim_before_dtype_check(shape, accumulate, values):
    errs = []
    for T in _both():
        x = T.zeros(shape, dtype=T.float16)
        v = T.tensor([1]).to(getattr(T, values))
        errs.append(_raised(lambda: T.index_put(x, (T.tensor([1]), T.tensor([1])), v,
                                                accumulate)))
    assert errs[0] == errs[1]
    assert errs[0][0] == "IndexError"


def test_index_put_dtype_check_on_nonempty_dims():
    errs = []
    for T in _both():
        x = T.zeros((2, 3), dtype=T.float16)
        errs.append(_raised(lambda: T.index_put(x, (T.tensor([5]), T.tensor([1])),
                                                T.tensor([True]))))
    assert errs[0] == errs[1]
    assert errs[0][0] == "RuntimeError"


# ---- embedding_bag: sums over a table whose rows are not contiguous fill offset2bag


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 1])
def test_embedding_bag_bookkeeping_by_table_layout(dtype, transposed, mode, padding_idx):
    res = []
    for T in _both():
        w = T.arange(18, dtype=getattr(T, dtype)).reshape(3, 6)
        w = w.t() if transposed else w.reshape(6, 3)
        r = T.embedding_bag(w, T.tensor([0, 1, 1, 2, 1, 1]), T.tensor([0, 2, 2, 5]), False,
                            mode, False, None, False, padding_idx)
        res.append([_np(x).tolist() for x in r])
    assert res[0] == res[1]


# ---- scatter_reduce amax / amin: the gradient of a NaN result is NaN for its members


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_extremum_gradient_of_nan_result(reduce, include_self):
    res = []
    for T in _both():
        a = T.tensor([1.0, 5.0, np.nan, 2.0, 4.0], dtype=T.float64, requires_grad=True)
        s = T.tensor([2.0, 3.0, np.nan, 7.0], dtype=T.float64, requires_grad=True)
        out = a.scatter_reduce(0, T.tensor([0, 1, 1, 3]), s, reduce, include_self=include_self)
        w = T.arange(5.0, dtype=T.float64)
        res.append([_np(g) for g in T.autograd.grad((out * w).sum(), [a, s])])
    for e, t in zip(*res):
        np.testing.assert_array_equal(e, t)  # NaN where torch has NaN, 0 elsewhere
