"""Regressions for bug classes of session 17's differential runs against torch: bfloat16
powers by products (``x ** 0.5`` at -inf and -0.0), complex powers as C's ``cpow``, det's
gradient of a 1 x 1 matrix and complex logdet of a singular matrix, the addmm family's refusal
of a ``beta`` its input's dtype cannot hold when the product sums nothing, the bias dtypes
torch's transposed convolutions refuse, LU factors of complex non-finite matrices, and the
NaN gradients of hardtanh/relu6/hardshrink/softshrink in torch's vectorized loop. Each
repro runs with ``T = ember`` and ``T = torch`` where torch is installed; the stated
expectations are torch 2.13's."""

import numpy as np
import pytest

import ember

INF, NAN = float("inf"), float("nan")


def _torch():
    return pytest.importorskip("torch")


def _values(t):
    """A tensor's values as complex128 or float64 NumPy (bfloat16 and float16 widened)."""
    t = t.detach()
    lib = _lib(t)
    return t.to(lib.complex128 if t.is_complex() else lib.float64).numpy()


def _lib(t):
    return ember if isinstance(t, ember.Tensor) else __import__("torch")


def _same(a, b):
    """Equal values, NaN where the other has NaN, the same signs of zeros (parts of complex
    values compared one by one)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        _same(a.real, b.real)
        _same(a.imag, b.imag)
        return
    a, b = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(a, b)
    fin = ~np.isnan(a)
    np.testing.assert_array_equal(np.signbit(a[fin]), np.signbit(b[fin]))


def _both(f):
    """``f(T)`` for ember and torch, as NumPy values."""
    torch = _torch()
    return [_values(f(T)) for T in (ember, torch)]


def _raises_like_torch(f):
    """``f(T)`` raises the same builtin exception class in ember as in torch."""
    torch = _torch()
    with pytest.raises(Exception) as t_exc:
        f(torch)
    base = next(k for k in type(t_exc.value).__mro__ if k.__module__ == "builtins")
    with pytest.raises(base):
        f(ember)


# ------------------------------------------------------------------------------------------------
# bfloat16 powers: NOTE [ Powers by products ]

SPECIALS = [-INF, -0.0, 0.0, 4.0, INF, -1.0, NAN, 2.5, 0.1, 7.0]


@pytest.mark.parametrize("exponent", [0.5, -0.5, 3, -2, 2, -1, 1.5])
def test_bfloat16_power_of_a_number(exponent):
    e, t = _both(lambda T: T.tensor(SPECIALS, dtype=T.bfloat16) ** exponent)
    _same(e, t)


def test_bfloat16_sqrt_power_at_minus_inf_and_minus_zero():
    # torch 2.13: ``x ** 0.5`` is sqrt for bfloat16 as for float32: NaN at -inf, -0.0 at -0.0
    r = ember.tensor([-INF, -0.0], dtype=ember.bfloat16) ** 0.5
    assert np.isnan(float(r[0])) and np.signbit(float(r[1]))


def test_bfloat16_power_of_a_zero_dim_tensor_is_the_general_pow():
    # a zero-dim tensor exponent takes pow (inf at -inf, +0 at -0.0), as in torch
    e, t = _both(lambda T: T.tensor([-INF, -0.0, 2.0], dtype=T.bfloat16) ** T.tensor(0.5))
    _same(e, t)


def test_bfloat16_power_in_place_and_function_forms():
    e, t = _both(lambda T: T.pow(T.tensor(SPECIALS, dtype=T.bfloat16), 0.5))
    _same(e, t)
    e, t = _both(lambda T: T.tensor(SPECIALS, dtype=T.bfloat16).pow_(3))
    _same(e, t)


def test_bfloat16_cube_rounds_after_each_product():
    rng = np.random.default_rng(0)
    v = (rng.standard_normal(4000) * 3).astype(np.float32).tolist()
    e, t = _both(lambda T: T.tensor(v, dtype=T.bfloat16) ** 3)
    _same(e, t)


# ------------------------------------------------------------------------------------------------
# complex powers: NOTE [ Complex powers ]

COMPLEX = [complex(INF, 0), complex(0, INF), complex(INF, INF), 1 + 1j, 0j, complex(-INF, 0),
           complex(NAN, 0), -4 + 0j, complex(-0.0, -0.0), complex(-1, -0.0), complex(0.3, -2.5),
           complex(-INF, 1), complex(1, -INF), -1j]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, -2, 2, 3, 1, 0, 4, 1.5, -3, 0.5 + 0j, 1j])
def test_complex_power_of_a_number(dtype, exponent):
    e, t = _both(lambda T: T.tensor(COMPLEX, dtype=getattr(T, dtype)) ** exponent)
    if exponent in (4, 1.5, -3, 1j):  # cpow: the same special values, finite ones to rounding
        np.testing.assert_array_equal(np.isnan(e.real), np.isnan(t.real))
        np.testing.assert_array_equal(np.isnan(e.imag), np.isnan(t.imag))
        np.testing.assert_allclose(np.nan_to_num(e), np.nan_to_num(t), rtol=1e-5, atol=1e-6)
    else:
        _same(e, t)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_power_of_tensors_is_cpow(dtype):
    # torch: 0 ** 0 is NaN through exp(0 * log(0)); a zero-dim exponent is cpow, not sqrt
    def f(T):
        z = T.tensor(COMPLEX, dtype=getattr(T, dtype))
        return T.stack([z ** z.flip(0), z ** T.tensor(0.5), z ** T.tensor(2.0)])

    e, t = _both(f)
    np.testing.assert_array_equal(np.isnan(e.real), np.isnan(t.real))
    np.testing.assert_array_equal(np.isnan(e.imag), np.isnan(t.imag))
    np.testing.assert_allclose(np.nan_to_num(e), np.nan_to_num(t), rtol=1e-5, atol=1e-6)


def test_complex_zero_to_the_zero_tensor_is_nan():
    r = ember.tensor([0j]) ** ember.tensor([0j])
    assert np.isnan(r.numpy().real).all() and np.isnan(r.numpy().imag).all()


def test_complex_reciprocal_power_at_infinity_and_zero():
    r = ember.tensor([complex(INF, 0), 0j]) ** -1
    assert r.tolist()[0] == 0j and r.numpy()[1].real == INF


# ------------------------------------------------------------------------------------------------
# det / logdet


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("value", [0.0, -0.0, 1e-300, 3.0])
def test_det_gradient_of_one_by_one_matrix_is_one(dtype, value):
    # the cofactor of a 1 x 1 matrix is 1, singular or not (ember gave 0 at 0)
    def f(T):
        a = T.tensor([[[value]], [[2.0]]], dtype=getattr(T, dtype), requires_grad=True)
        return T.autograd.grad(T.linalg.det(a).sum().real, a)[0]

    e, t = _both(f)
    _same(e, t)


def test_det_gradient_of_one_by_one_matrix_under_vmap():
    g = ember.func.vmap(ember.func.grad(ember.linalg.det))(ember.zeros(3, 1, 1,
                                                                       dtype=ember.float64))
    assert g.tolist() == [[[1.0]], [[1.0]], [[1.0]]]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_logdet_of_singular_matrix_has_nan_imaginary_part(dtype):
    # torch adds log|det| to log(sign) with its complex add: -inf brings a NaN imaginary part
    def f(T):
        return T.logdet(T.tensor([[[1 + 1j, 2 + 2j], [1 + 1j, 2 + 2j]], [[0j, 0j], [0j, 0j]],
                                  [[1 + 2j, 0j], [0j, 3j]]], dtype=getattr(T, dtype)))

    e, t = _both(f)
    np.testing.assert_array_equal(np.isnan(e.imag), np.isnan(t.imag))
    np.testing.assert_allclose(e, t, rtol=1e-5)


# ------------------------------------------------------------------------------------------------
# addmm / addbmm / baddbmm whose product sums nothing


def _bool(T, *shape):
    return T.zeros(*shape, dtype=T.bool)


EMPTY_SUMS = [
    lambda T: T.addbmm(T.ones(2, 3, dtype=T.bool), _bool(T, 4, 2, 0), _bool(T, 4, 0, 3)),
    lambda T: T.addbmm(T.ones(2, 3, dtype=T.bool), _bool(T, 0, 2, 5), _bool(T, 0, 5, 3)),
    lambda T: T.addbmm(T.ones(3, dtype=T.bool), _bool(T, 0, 2, 5), _bool(T, 0, 5, 3)),
    lambda T: T.ones(2, 3, dtype=T.bool).addbmm_(_bool(T, 0, 2, 5), _bool(T, 0, 5, 3)),
    lambda T: T.addmm(T.ones(2, 3, dtype=T.bool), _bool(T, 2, 0), _bool(T, 0, 3)),
    lambda T: T.baddbmm(T.ones(2, 2, 3, dtype=T.bool), _bool(T, 2, 2, 0), _bool(T, 2, 0, 3)),
    lambda T: T.addbmm(T.ones(2, 3, dtype=T.long), T.zeros(0, 2, 5, dtype=T.long),
                       T.zeros(0, 5, 3, dtype=T.long), beta=0.5),
    lambda T: T.addmm(T.ones(2, 3), T.ones(2, 0), T.ones(0, 3), beta=1j),
]


@pytest.mark.parametrize("case", range(len(EMPTY_SUMS)))
def test_empty_product_refuses_beta_the_input_cannot_hold(case):
    # torch scales ``input`` by ``beta`` in place: an int beta beside bool, a float beside
    # integers, a complex beside reals cannot be cast back
    _raises_like_torch(EMPTY_SUMS[case])


EMPTY_SUMS_ACCEPTED = [
    lambda T: T.addbmm(T.ones(2, 3, dtype=T.bool), _bool(T, 0, 2, 5), _bool(T, 0, 5, 3),
                       beta=0),
    lambda T: T.addmm(T.ones(2, 3, dtype=T.bool), _bool(T, 2, 0), _bool(T, 0, 3), beta=True),
    lambda T: T.addmm(T.ones(2, 3, dtype=T.long), T.ones(2, 0, dtype=T.long),
                      T.ones(0, 3, dtype=T.long), beta=0.0),
    lambda T: T.addmm(T.ones(2, 3, dtype=T.long), T.ones(2, 0, dtype=T.long),
                      T.ones(0, 3, dtype=T.long), beta=2),
    lambda T: T.addmm(T.ones(0, 3, dtype=T.bool), _bool(T, 0, 0), _bool(T, 0, 3)),
    lambda T: T.addbmm(T.ones(2, 3, dtype=T.long), T.ones(1, 2, 5, dtype=T.long),
                       T.ones(1, 5, 3, dtype=T.long), beta=0.5),
]


@pytest.mark.parametrize("case", range(len(EMPTY_SUMS_ACCEPTED)))
def test_empty_product_with_castable_beta_runs(case):
    e, t = _both(EMPTY_SUMS_ACCEPTED[case])
    _same(e, t)


# ------------------------------------------------------------------------------------------------
# transposed convolutions' bias dtypes


def _conv_transpose(nd, xd, bd, batch=1):
    def f(T):
        fn = getattr(T.nn.functional, f"conv_transpose{nd}d")
        x = T.ones((batch, 2) + (3,) * nd, dtype=getattr(T, xd))
        w = T.ones((2, 2) + (2,) * nd, dtype=getattr(T, xd))
        return fn(x, w, T.ones(2, dtype=getattr(T, bd)))
    return f


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("xd, bd, batch", [
    ("float32", "complex64", 1), ("float64", "complex128", 0), ("complex64", "float32", 1),
    ("complex128", "complex64", 0), ("bfloat16", "float32", 1), ("float16", "complex64", 1)])
def test_conv_transpose_refuses_bias_dtype(nd, xd, bd, batch):
    _raises_like_torch(_conv_transpose(nd, xd, bd, batch))


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("xd, bd, batch", [
    ("float32", "float64", 1), ("float64", "float32", 1), ("float32", "int64", 1),
    ("float16", "float32", 1), ("bfloat16", "float16", 0)])
def test_conv_transpose_casts_real_bias(nd, xd, bd, batch):
    torch = _torch()
    e, t = (_conv_transpose(nd, xd, bd, batch)(T) for T in (ember, torch))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)


# ------------------------------------------------------------------------------------------------
# LU of complex non-finite matrices: NOTE [ Determinants of non-finite matrices ]

LU_MATRICES = [
    [[NAN, 1.0], [2.0, 3.0]],
    [[NAN, NAN], [NAN, NAN]],
    [[-INF, 1.0], [2.0, 3.0]],
    [[1.0, 2.0, NAN], [2.0, 5.0, 1.0], [NAN, 1.0, 2.0]],
    [[complex(INF, 1), 1], [2, 3]],
    [[complex(3, INF), 1], [2, 3]],
    [[1e200 + 1e200j, 1], [2, 3]],
]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("m", range(len(LU_MATRICES)))
def test_lu_factor_ex_of_complex_non_finite_matrix(dtype, m):
    torch = _torch()
    res = [T.linalg.lu_factor_ex(T.tensor(LU_MATRICES[m], dtype=getattr(T, dtype)))
           for T in (ember, torch)]
    (elu, epiv, einfo), (tlu, tpiv, tinfo) = res
    a, b = elu.numpy(), tlu.numpy()
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(np.isnan(part(a)), np.isnan(part(b)))
        np.testing.assert_allclose(np.nan_to_num(part(a)), np.nan_to_num(part(b)), rtol=1e-5)
    assert epiv.tolist() == tpiv.tolist() and einfo.tolist() == tinfo.tolist()


# ------------------------------------------------------------------------------------------------
# NaN gradients of hard activations: NOTE [ NaN in vectorized backward loops ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", ["hardtanh", "relu6", "hardshrink", "softshrink"])
@pytest.mark.parametrize("shape, view", [((7,), None), ((9,), None), ((17,), None),
                                         ((40,), None), ((3, 20), "t"), ((3, 20), "step"),
                                         ((2, 3, 7), "perm")])
def test_nan_gradient_follows_torchs_vector_loop(dtype, fn, shape, view):
    def f(T):
        x = T.full(shape, NAN, dtype=getattr(T, dtype))
        x[..., ::3] = 0.5
        if view == "t":
            x = x.t()
        elif view == "step":
            x = x[:, ::2]
        elif view == "perm":
            x = x.permute(2, 0, 1)
        x.requires_grad_()
        return T.autograd.grad((getattr(T.nn.functional, fn)(x) * 2).sum(), x)[0]

    e, t = _both(f)
    _same(e, t)


def test_relu6_nan_gradient_in_vector_loop_is_zero():
    # 8 float64 values fill one step of torch's vector loop: a NaN there gets no gradient
    x = ember.full((8,), NAN, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.grad(ember.nn.functional.relu6(x).sum(), x)[0].tolist() == [0.0] * 8
    x = ember.full((7,), NAN, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.grad(ember.nn.functional.relu6(x).sum(), x)[0].tolist() == [1.0] * 7


# ------------------------------------------------------------------------------------------------
# the order of the matmul family's refusals


def _ones(T, dtype, *shape):
    return T.ones(*shape, dtype=getattr(T, dtype))


REFUSAL_ORDER = [
    # bmm's kernel refuses a bool first operand before comparing the two dtypes
    lambda T: T.bmm(_ones(T, "bool", 2, 2, 3), _ones(T, "float32", 2, 3, 2)),
    lambda T: T.matmul(_ones(T, "bool", 2, 2, 3), _ones(T, "int64", 2, 3, 2)),
    # addmm/baddbmm compare input's dtype with the factors' before refusing bool factors
    lambda T: T.addmm(_ones(T, "int8", 2, 2), _ones(T, "bool", 2, 3), _ones(T, "bool", 3, 2)),
    lambda T: T.baddbmm(_ones(T, "float32", 2, 2, 2), _ones(T, "bool", 2, 2, 3),
                        _ones(T, "bool", 2, 3, 2)),
    # an out= tensor's dtype is checked before the kernel refuses bool
    lambda T: T.mm(_ones(T, "bool", 2, 3), _ones(T, "bool", 3, 2),
                   out=_ones(T, "float32", 2, 2)),
    lambda T: T.matmul(_ones(T, "bool", 2, 3), _ones(T, "bool", 3, 2),
                       out=_ones(T, "int64", 2, 2)),
    lambda T: T.bmm(_ones(T, "bool", 2, 2, 3), _ones(T, "bool", 2, 3, 2),
                    out=_ones(T, "int8", 2, 2, 2)),
    lambda T: T.baddbmm(_ones(T, "bool", 2, 2, 2), _ones(T, "bool", 2, 2, 3),
                        _ones(T, "bool", 2, 3, 2), out=_ones(T, "float64", 2, 2, 2)),
    # aten::convolution itself has no complex kernel (the named convolutions split it)
    lambda T: T.convolution(_ones(T, "complex64", 1, 2, 3, 3), _ones(T, "complex64", 2, 2, 2, 2),
                            None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    lambda T: T.convolution(_ones(T, "complex128", 1, 2, 3), _ones(T, "complex128", 2, 2, 2),
                            None, [2], [1], [1], True, [1], 1),
]


@pytest.mark.parametrize("case", range(len(REFUSAL_ORDER)))
def test_refusal_order_of_products(case):
    _raises_like_torch(REFUSAL_ORDER[case])


@pytest.mark.parametrize("da, db", [("bool", "int8"), ("int8", "float64"),
                                    ("float16", "complex64")])
def test_addbmm_without_batches_ignores_factor_dtypes(da, db):
    # no batches: torch returns ``beta * input`` and compares no dtypes
    e, t = _both(lambda T: T.addbmm(_ones(T, "float32", 2, 2), _ones(T, da, 0, 2, 3),
                                    _ones(T, db, 0, 3, 2), beta=2))
    _same(e, t)


def test_convolution_of_complex_empty_batch_runs():
    r = ember.convolution(ember.ones(0, 2, 3, 3, dtype=ember.complex64),
                          ember.ones(2, 2, 2, 2, dtype=ember.complex64), None, [1, 1], [0, 0],
                          [1, 1], False, [0, 0], 1)
    assert tuple(r.shape) == (0, 2, 2, 2)


CELLS_BOOL = [
    # an LSTM and an Elman cell run the hidden product first, a GRU the input one: the first
    # all-bool product refuses bool before the other's dtypes are compared
    lambda T: T.lstm_cell(_ones(T, "bool", 2, 4), (_ones(T, "bool", 2, 3), _ones(T, "bool", 2, 3)),
                          _ones(T, "int32", 12, 4), _ones(T, "bool", 12, 3)),
    lambda T: T.gru_cell(_ones(T, "bool", 2, 4), _ones(T, "bool", 2, 3), _ones(T, "bool", 9, 4),
                         _ones(T, "int8", 9, 3)),
    lambda T: T.rnn_tanh_cell(_ones(T, "bool", 2, 4), _ones(T, "bool", 2, 3),
                              _ones(T, "bfloat16", 3, 4), _ones(T, "bool", 3, 3)),
    lambda T: T.gru_cell(_ones(T, "int8", 2, 4), _ones(T, "bool", 2, 3), _ones(T, "int8", 9, 4),
                         _ones(T, "bool", 9, 3)),
    # the base grid's linspace refuses bool before the product checks theta's shape
    lambda T: T.affine_grid_generator(_ones(T, "bool", 3, 3, 1), [2, 1, 3, 4], False),
]


@pytest.mark.parametrize("case", range(len(CELLS_BOOL)))
def test_refusal_order_of_cells_and_grids(case):
    _raises_like_torch(CELLS_BOOL[case])


EMPTY_MIXED = [
    # a batched product with nothing to compute skips bmm's dtype check: other's dtype wins
    lambda T: T.matmul(_ones(T, "int32", 1, 2, 0), _ones(T, "float32", 1, 0, 3)),
    lambda T: T.matmul(_ones(T, "int32", 0, 2, 2), _ones(T, "float32", 0, 2, 3)),
    lambda T: T.matmul(_ones(T, "int32", 2, 0), _ones(T, "float32", 2, 0, 3)),
    lambda T: T.baddbmm(_ones(T, "int32", 2, 2, 3), _ones(T, "int32", 2, 2, 0),
                        _ones(T, "float32", 2, 0, 3)),
    lambda T: T.baddbmm(_ones(T, "uint8", 2, 2, 0), _ones(T, "uint8", 2, 2, 1),
                        _ones(T, "float64", 2, 1, 0), beta=2, alpha=3),
    # instance norm of an empty input returns before its dtype checks, as batch norm's
    lambda T: T.instance_norm(T.empty((1, 2, 0), dtype=T.bool), _ones(T, "bool", 2),
                              _ones(T, "bool", 2), None, None, True, 0.1, 1e-5, False),
    lambda T: T.nn.functional.instance_norm(T.empty((1, 2, 0), dtype=T.int64)),
]


@pytest.mark.parametrize("case", range(len(EMPTY_MIXED)))
def test_empty_products_and_norms_run(case):
    torch = _torch()
    e, t = (EMPTY_MIXED[case](T) for T in (ember, torch))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)


# ------------------------------------------------------------------------------------------------
# LDL of real non-finite matrices: NOTE [ LDL of non-finite matrices ]

LDL_MATRICES = [
    [[NAN, 2.0], [2.0, 3.0]],
    [[NAN, NAN], [NAN, NAN]],
    [[-0.2697, -0.3986, NAN], [-0.3986, -3.3828, 0.9060], [NAN, 0.9060, 3.6576]],
    [[-1.1651, 0.1282, -5.1647, 1.7597], [0.1282, 1.4344, 0.0, 3.5664],
     [-5.1647, 0.0, -6.8142, NAN], [1.7597, 3.5664, NAN, -0.9916]],
    [[1.0, 2.0, NAN], [2.0, 5.0, 1.0], [NAN, 1.0, 2.0]],
    [[-INF, 1.0], [1.0, 3.0]],
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", range(len(LDL_MATRICES)))
def test_ldl_factor_ex_of_real_non_finite_matrix(dtype, m):
    torch = _torch()
    (eld, epiv, einfo), (tld, tpiv, tinfo) = (
        T.linalg.ldl_factor_ex(T.tensor(LDL_MATRICES[m], dtype=getattr(T, dtype)))
        for T in (ember, torch))
    assert epiv.tolist() == tpiv.tolist() and einfo.tolist() == tinfo.tolist()
    a, b = eld.numpy(), tld.numpy()
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(np.nan_to_num(a), np.nan_to_num(b), rtol=1e-5)


def test_ldl_factor_ex_nan_column_takes_a_two_by_two_pivot():
    # torch 2.13: a NaN diagonal makes no stop (info 0 there): the NaN compares false
    LD, pivots, info = ember.linalg.ldl_factor_ex(ember.tensor([[NAN, 2.0], [2.0, 3.0]]))
    assert pivots.tolist() == [2, 2] and info.item() == 2


# ------------------------------------------------------------------------------------------------
# small value classes of the runs


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64"])
def test_bce_with_logits_integer_pos_weight_minus_one_wraps(dtype):
    # torch takes ``pos_weight - 1`` in the weight's own dtype: a uint8 0 becomes 255
    def f(T):
        x = T.tensor([[-1.04, -0.90, 1.09, -0.12], [-0.82, -0.93, -0.37, -1.55]])
        y = T.tensor([[0.6, 0.94, 0.4, 0.21], [0.63, 0.24, 0.05, 0.68]])
        pw = T.tensor([0, 5, 1, 1], dtype=getattr(T, dtype))
        return T.nn.functional.binary_cross_entropy_with_logits(x, y, pos_weight=pw)

    e, t = _both(f)
    np.testing.assert_allclose(e, t, rtol=1e-6)


def test_gelu_tanh_at_the_largest_float_does_not_overflow():
    # torch computes 0.5 * x * (1 + tanh(...)): the largest float32 stays finite
    e, t = _both(lambda T: T.nn.functional.gelu(
        T.tensor([3.4028234663852886e38, -3.4028234663852886e38, 1.0]), approximate="tanh"))
    _same(e, t)
