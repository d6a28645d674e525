"""Regressions for bug classes of the differential runs against torch: a Python number with a
float16/bfloat16 tensor (NOTE [ A number in half-precision opmath ], NOTE [ Half-precision
alpha ]), determinant gradients at singular matrices (NOTE [ Determinant gradients at
singular matrices ]), group norm with an infinite weight, and the smaller element-wise
classes found beside them (remainder's and elu's signed zeros, ``x ** 0.5``, xlogy and
leaky_relu in half precision). Each compares with torch where it is installed; the stated
expectations are torch 2.13's."""

import numpy as np
import pytest

import ember

HALF = ["float16", "bfloat16"]


def _torch():
    return pytest.importorskip("torch")


def _values(dtype, n=2000, seed=0):
    """float32 values with the specials of a differential run: infinities, NaN, signed
    zeros, subnormals and values beyond the half types' range."""
    v = np.random.default_rng(seed).standard_normal(n).astype(np.float32) * 10
    v[:12] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-6, -3e-8, 65504, 70000, 1e38, 0.1, -0.3]
    return v


def _pair(T, v, dtype):
    return T.tensor(v).to(getattr(T, dtype))


def _bits(t):
    """The values as float32 (exact for the half types), NaN-equal and sign-aware."""
    a = np.asarray(t.float().numpy() if t.dtype.is_floating_point else t.numpy())
    return np.where(np.isnan(a), np.nan, a)


def _assert_same(e, t):
    a, b = _bits(e), _bits(t)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    if a.dtype.kind == "f":
        fin = ~np.isnan(a)
        np.testing.assert_array_equal(np.signbit(a[fin]), np.signbit(b[fin]))


# ------------------------------------------------------------------------------------------------
# a Python number with a half-precision tensor

NUMBER_OPS = {
    "mul": lambda T, x: x * 0.1,
    "rmul": lambda T, x: 0.1 * x,
    "mul_fn": lambda T, x: T.mul(x, 0.1),
    "mul_zero_dim": lambda T, x: x * T.tensor(0.1),
    "mul_zero_dim_float64": lambda T, x: x * T.tensor(0.1, dtype=T.float64),
    "zero_dim_mul": lambda T, x: T.tensor(0.1) * x,
    "mul_": lambda T, x: x.clone().mul_(0.1),
    "div": lambda T, x: x / 3,
    "div_tenth": lambda T, x: x / 0.1,
    "rdiv": lambda T, x: 3 / x,
    "div_": lambda T, x: x.clone().div_(0.1),
    "div_zero_dim_": lambda T, x: x.clone().div_(T.tensor(0.1)),
    "true_divide": lambda T, x: T.true_divide(x, 0.1),
    "div_floor": lambda T, x: T.div(x, 0.1, rounding_mode="floor"),
    "div_trunc": lambda T, x: T.div(x, 0.1, rounding_mode="trunc"),
    "floordiv": lambda T, x: x // 0.3,
    "rfloordiv": lambda T, x: 0.3 // x,
    "add": lambda T, x: x + 0.1,
    "rsub": lambda T, x: 0.1 - x,
    "add_alpha": lambda T, x: T.add(x, x, alpha=0.1),
    "add_number_alpha": lambda T, x: T.add(x, 0.3, alpha=0.1),
    "sub_alpha": lambda T, x: T.sub(x, x, alpha=0.1),
    "rsub_alpha": lambda T, x: T.rsub(x, 0.1, alpha=0.3),
    "sgd_step": lambda T, x: x.clone().add_(x.flip(0), alpha=-0.01),
    "remainder": lambda T, x: x % 0.3,
    "rremainder": lambda T, x: 0.3 % x,
    "fmod": lambda T, x: T.fmod(x, 0.3),
    "pow": lambda T, x: x ** 2,
    "gt": lambda T, x: x > 0.1,
    "eq": lambda T, x: x == 0.1,
    "clamp": lambda T, x: T.clamp(x, -0.1, 0.1),
    "lerp": lambda T, x: T.lerp(x, T.ones_like(x), 0.3),
    "addcmul": lambda T, x: T.addcmul(x, x, x, value=0.1),
    "addcdiv": lambda T, x: T.addcdiv(x, x, x + 1, value=0.1),
    "where": lambda T, x: T.where(x > 0, x, 0.1),
    "xlogy": lambda T, x: T.xlogy(x, 0.1),
    "xlogy_tensors": lambda T, x: T.xlogy(x, x.abs()),
    "leaky_relu": lambda T, x: T.nn.functional.leaky_relu(x, 0.1),
    "elu": lambda T, x: T.nn.functional.elu(x, 0.1),
}


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
def test_number_with_half_tensor_matches_torch_bits(dtype, name):
    torch = _torch()
    v = _values(dtype)
    f = NUMBER_OPS[name]
    _assert_same(f(ember, _pair(ember, v, dtype)), f(torch, _pair(torch, v, dtype)))


@pytest.mark.parametrize("dtype", HALF)
def test_half_times_number_rounds_once(dtype):
    # without torch: the product in float32 with the number as float32, rounded once
    v = _values(dtype)
    x = _pair(ember, v, dtype)
    x32 = x.float().numpy()
    with np.errstate(all="ignore"):
        expect = ember.tensor(x32 * np.float32(0.1)).to(x.dtype)
        quotient = ember.tensor(x32 / np.float32(0.1)).to(x.dtype)
    _assert_same(x * 0.1, expect)
    _assert_same(0.1 * x, expect)
    _assert_same(x.clone().mul_(0.1), expect)
    _assert_same(x / 0.1, quotient)
    assert (x * 0.1).dtype == x.dtype


@pytest.mark.parametrize("dtype", HALF)
def test_half_alpha_rounds_once(dtype):
    # add's alpha is cast to half, then ``a + alpha * b`` rounds once (rows shorter than the
    # vector loop's step have no scalar tail)
    v = _values(dtype, n=32)
    x = _pair(ember, v, dtype)
    y = x.flip(0)
    al = np.float32(float(ember.tensor(0.1).to(x.dtype)))
    with np.errstate(all="ignore"):
        expect = ember.tensor(x.float().numpy() + al * y.float().numpy()).to(x.dtype)
    _assert_same(ember.add(x, y, alpha=0.1), expect)


@pytest.mark.parametrize("dtype", HALF)
def test_half_number_gradient_matches_torch(dtype):
    torch = _torch()
    v = _values(dtype, n=64)[12:]
    grads = []
    for T in (ember, torch):
        x = _pair(T, v, dtype).requires_grad_()
        ((x * 0.1) * _pair(T, v[::-1].copy(), dtype)).sum().backward()
        grads.append(x.grad)
    _assert_same(*grads)


def test_reflected_mul_records_torch_operands():
    torch = _torch()
    nodes = []
    for T in (ember, torch):
        x = T.ones(3, requires_grad=True)
        nodes.append((0.1 * x).grad_fn)
    assert nodes[0]._saved_self is None and nodes[1]._saved_self is None
    assert float(nodes[0]._saved_other) == float(nodes[1]._saved_other) == 0.1


def test_float32_numbers_untouched():
    x = ember.tensor([1.0, 3.0, 1e-3])
    assert (x * 0.1).tolist() == (np.float32([1.0, 3.0, 1e-3]) * np.float32(0.1)).tolist()
    assert (x / 3).dtype == ember.float32


# ------------------------------------------------------------------------------------------------
# element-wise signed zeros and special exponents


def test_remainder_zero_keeps_dividend_sign():
    x = ember.tensor([-0.6, 0.6, -0.0, 0.0, 3.0, -3.0])
    r = x % 0.3
    assert np.signbit(r.numpy()[[0, 2]]).all() and not np.signbit(r.numpy()[[1, 3]]).any()
    r = ember.remainder(0.3, ember.tensor([-0.3, 0.3, -0.15]))
    assert not np.signbit(r.numpy()).any()


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_remainder_and_elu_match_torch(dtype):
    torch = _torch()
    v = _values(dtype)
    for f in (lambda T, x: x % 0.3, lambda T, x: T.remainder(0.3, x),
              lambda T, x: T.nn.functional.elu(x), lambda T, x: T.nn.functional.celu(x, 0.5)):
        e, t = f(ember, _pair(ember, v, dtype)), f(torch, _pair(torch, v, dtype))
        if dtype in ("float32", "float64"):  # elu's expm1: libm's last bit may differ
            np.testing.assert_allclose(_bits(e), _bits(t), rtol=1e-6, atol=0)
            fin = ~np.isnan(_bits(t))
            assert (np.signbit(_bits(e)[fin]) == np.signbit(_bits(t)[fin])).all()
        else:
            _assert_same(e, t)


def test_elu_negative_zero():
    y = ember.nn.functional.elu(ember.tensor([-0.0, 0.0]))
    assert np.signbit(y.numpy()).tolist() == [True, False]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_square_root_power_as_sqrt(dtype):
    x = ember.tensor([-float("inf"), -0.0, 4.0], dtype=getattr(ember, dtype))
    y = (x ** 0.5).numpy()
    assert np.isnan(y[0]) and np.signbit(y[1]) and y[2] == 2.0


# ------------------------------------------------------------------------------------------------
# determinant gradients at singular matrices

SINGULAR = [[1.0, 2.0], [2.0, 4.0]]


def _grad(T, fn, a, create_graph=False):
    x = T.tensor(a, dtype=T.float64, requires_grad=True)
    y = fn(T, x)
    g, = T.autograd.grad(y, x, create_graph=create_graph)
    return g


DET_FNS = {
    "det": lambda T, x: T.det(x),
    "linalg.det": lambda T, x: T.linalg.det(x),
    "logdet": lambda T, x: T.logdet(x),
    "slogdet": lambda T, x: T.slogdet(x)[1],
    "linalg.slogdet": lambda T, x: T.linalg.slogdet(x)[1],
}


@pytest.mark.parametrize("name", sorted(DET_FNS))
def test_singular_determinant_gradient(name):
    g = _grad(ember, DET_FNS[name], SINGULAR).numpy()
    if "det" == name.split(".")[-1]:
        assert g.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        assert np.signbit(g).tolist() == [[False, True], [True, False]]
    else:
        inf = float("inf")
        assert g.tolist() == [[-inf, inf], [inf, -inf]]


@pytest.mark.parametrize("name", sorted(DET_FNS))
@pytest.mark.parametrize("matrix", [
    SINGULAR,
    [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]],  # rank 1
    [[0.0, 0.0], [0.0, 0.0]],
    [[1.0, 2.0], [3.0, 4.0]],
])
def test_determinant_gradient_matches_torch(name, matrix):
    torch = _torch()
    e = _grad(ember, DET_FNS[name], matrix).numpy()
    t = _grad(torch, DET_FNS[name], matrix).numpy()
    np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)
    assert (np.signbit(e) == np.signbit(t)).all() or not np.isfinite(t).all()


def test_singular_det_sign_of_zero_matches_torch():
    torch = _torch()
    for T in (ember, torch):
        a = T.tensor(SINGULAR)
        assert np.signbit(float(T.det(a)))
        assert np.signbit(float(T.linalg.slogdet(a)[0]))


def test_det_double_backward_at_singular_matrices():
    torch = _torch()
    a = [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]],
         [[2.0, 1.0], [4.0, 2.0]]]
    out = []
    for T in (ember, torch):
        x = T.tensor(a, dtype=T.float64, requires_grad=True)
        g, = T.autograd.grad(T.det(x).sum(), x, create_graph=True)
        gg, = T.autograd.grad((g * g).sum(), x)
        out.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["logdet", "slogdet"])
def test_log_determinant_graph_refuses_singular(name):
    # with a graph, log|det|'s gradient is a solve, which refuses a singular matrix (as torch)
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        _grad(ember, DET_FNS[name], SINGULAR, create_graph=True)


def test_complex_singular_determinant_gradients_match_torch():
    torch = _torch()
    m = [[1 + 1j, 2], [2 + 2j, 4]]
    res = []
    for T in (ember, torch):
        x = T.tensor(m, dtype=T.complex128, requires_grad=True)
        g1, = T.autograd.grad(T.det(x).real, x)
        x = T.tensor(m, dtype=T.complex128, requires_grad=True)
        g2, = T.autograd.grad(T.linalg.slogdet(x)[1], x)
        res.append((g1.numpy(), g2.numpy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    assert np.isnan(res[0][1]).all() and np.isnan(res[1][1]).all()


def test_nonsingular_determinant_gradients_unchanged():
    torch = _torch()
    rng = np.random.default_rng(3)
    for dt in ("float32", "float64", "complex128"):
        v = rng.standard_normal((2, 4, 4))
        if dt == "complex128":
            v = v + 1j * rng.standard_normal((2, 4, 4))
        res = []
        for T in (ember, torch):
            x = T.tensor(v, dtype=getattr(T, dt), requires_grad=True)
            y = T.det(x).abs().sum() + T.linalg.slogdet(x)[1].sum()
            g, = T.autograd.grad(y, x)
            res.append(g.numpy())
        np.testing.assert_allclose(res[0], res[1], rtol=1e-4 if dt == "float32" else 1e-10)


# ------------------------------------------------------------------------------------------------
# group norm with an infinite weight


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_group_norm_infinite_weight_matches_torch(dtype, with_bias):
    torch = _torch()
    v = np.random.default_rng(0).standard_normal((2, 4, 3))
    res = []
    for T in (ember, torch):
        dt = getattr(T, dtype)
        w = T.tensor([1.0, float("inf"), -float("inf"), float("nan")], dtype=dt)
        b = T.tensor([0.0, 1.0, 2.0, 3.0], dtype=dt) if with_bias else None
        res.append(T.nn.functional.group_norm(T.tensor(v, dtype=dt), 2, w, b).numpy())
    e, t = res
    assert (np.isnan(e) == np.isnan(t)).all()
    fin = ~np.isnan(t)
    np.testing.assert_allclose(e[fin], t[fin], rtol=1e-5)


def test_group_norm_infinite_weight_nan_where_infinities_cancel():
    x = ember.tensor([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]])
    y = ember.nn.functional.group_norm(x, 1, ember.tensor([1.0, float("inf")]))
    # the mean (3.5) times an infinite scale cancels x times it where x > 0: NaN, not inf
    assert np.isnan(y[0, 1].numpy()).all()
    assert np.isfinite(y[0, 0].numpy()).all()


# ------------------------------------------------------------------------------------------------
# mixed dtypes beside empty operands: einsum, cdist, inner

EINSUM_CASES = [
    ("ij,jk->ik", (2, 3), (3, 0)), ("ij,jk->ik", (0, 3), (3, 2)), ("ij,jk->ik", (2, 0), (0, 3)),
    ("bij,bjk->bik", (4, 4, 1), (4, 1, 0)), ("bij,bjk->bik", (4, 0, 1), (4, 1, 4)),
    ("bij,bjk->bik", (4, 2, 0), (4, 0, 3)), ("bij,bjk->bik", (0, 2, 1), (0, 1, 3)),
    ("i,j->ij", (0,), (3,)), ("ij,ij->i", (0, 3), (0, 3)), ("ij,j->i", (2, 1), (1,)),
    ("ij,jk->ik", (0, 1), (1, 2)),
]


@pytest.mark.parametrize("eq,s1,s2", EINSUM_CASES)
@pytest.mark.parametrize("dtypes", [("int64", "bool"), ("bool", "int64"), ("float32", "float64"),
                                    ("float64", "float32")])
def test_einsum_mixed_dtypes_match_torch(eq, s1, s2, dtypes):
    # a label of size 1 is no contraction: the dtypes promote (a contraction over a wider
    # label takes the second operand's dtype, as torch's bmm when it has nothing to do)
    torch = _torch()
    res = []
    for T in (ember, torch):
        r = T.einsum(eq, T.zeros(s1, dtype=getattr(T, dtypes[0])),
                     T.zeros(s2, dtype=getattr(T, dtypes[1])))
        res.append((str(r.dtype).split(".")[-1], tuple(r.shape)))
    assert res[0] == res[1]


def test_einsum_size_one_label_promotes():
    r = ember.einsum("bij,bjk->bik", ember.zeros(4, 4, 1, dtype=ember.int64),
                     ember.empty((4, 1, 0), dtype=ember.bool))
    assert r.dtype == ember.int64 and r.shape == (4, 4, 0)


@pytest.mark.parametrize("s1,s2", [((0, 3), (2, 3)), ((2, 3), (0, 3)), ((2, 0), (3, 0)),
                                   ((0, 2, 3), (2, 3))])
def test_cdist_empty_operand_of_another_dtype(s1, s2):
    r = ember.cdist(ember.zeros(s1), ember.zeros(s2, dtype=ember.float64))
    assert r.dtype == ember.float32
    assert r.shape == tuple(np.broadcast_shapes(s1[:-2], s2[:-2])) + (s1[-2], s2[-2])
    assert not bool(r.any())
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.cdist(ember.zeros(2, 3), ember.zeros(3, 3, dtype=ember.float64))


def test_inner_zero_dim_bool_into_another_out_dtype():
    a = ember.tensor([[True, False], [True, True]])
    out = ember.empty(0, dtype=ember.int64)
    r = ember.inner(ember.tensor(True), a, out=out)
    assert r is out and out.tolist() == [[1, 0], [1, 1]]
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.inner(ember.tensor(2.5), ember.ones(2, 2), out=ember.empty(0, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="tensordot: Expected the output tensor to have dtype"):
        ember.inner(ember.zeros(2, 0, dtype=ember.bool), ember.zeros(3, 0, dtype=ember.bool),
                    out=ember.empty(0))


# ------------------------------------------------------------------------------------------------
# lu_factor refuses a zero pivot, as torch's (its _ex form reports it)


@pytest.mark.parametrize("matrix,where", [
    ([[1.0, 2.0], [2.0, 4.0]], "U[2,2]"),
    ([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]]], "(Batch element 1): U[1,1]"),
    ([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], "U[1,1]"),
])
def test_lu_factor_refuses_zero_pivot(matrix, where):
    a = ember.tensor(matrix)
    with pytest.raises(RuntimeError, match="is zero and using it on lu_solve") as info:
        ember.linalg.lu_factor(a)
    assert where in str(info.value)
    assert not isinstance(info.value, ember.linalg.LinAlgError)
    assert int(ember.linalg.lu_factor_ex(a).info.reshape(-1).max()) > 0


def test_lu_factor_refusal_matches_torch():
    torch = _torch()
    msgs = []
    for T in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            T.linalg.lu_factor(T.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]]]))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    LU, piv = ember.linalg.lu_factor(ember.eye(3))  # nonsingular: unchanged
    assert LU.tolist() == ember.eye(3).tolist()
