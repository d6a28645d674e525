"""Regressions for the linear-algebra classes the differential runner found (issue 16): which
dtypes an empty input may have (torch never calls a LAPACK kernel for one, so the kernel's
dtype refusal never runs), norms and condition numbers of empty matrices, and which check a
half-precision or integer input meets first. Each expression runs with ``T = ember`` and
``T = torch`` (see test_check_regressions._same)."""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _outcome(expr, T):
    """The builtin exception class ``expr`` raises with ``T``, or its results' dtypes, shapes
    and values (bfloat16 read through float32)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, {"T": T})
    except Exception as e:  # noqa: BLE001 - the builtin exception class is what is compared
        return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    r = r if isinstance(r, (tuple, list)) else (r,)
    out = []
    for t in r:
        v = t.detach().resolve_conj()
        v = v.float() if str(v.dtype).endswith("bfloat16") else v
        out.append((str(t.dtype).split(".")[-1], tuple(t.shape),
                    v.numpy().astype(np.complex128)))
    return out


def _same(expr):
    import torch

    e, t = _outcome(expr, ember), _outcome(expr, torch)
    if isinstance(t, str) or isinstance(e, str):
        assert e == t, expr
        return
    assert [r[:2] for r in e] == [r[:2] for r in t], expr
    for a, b in zip(e, t):
        np.testing.assert_allclose(a[2], b[2], rtol=1e-3, atol=1e-3, err_msg=expr)


def E(*shape, dt):
    return f"T.empty({', '.join(map(str, shape))}, dtype=T.{dt})"


# the kernels torch skips for an empty input take it in any dtype their table names...
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "int16", "bool"])
@pytest.mark.parametrize("expr", [
    "T.linalg.lu({a})", "T.linalg.lu_factor({a})", "T.linalg.lu_factor_ex({a})",
    "T.linalg.eigh({a})", "T.linalg.eigvalsh({a})", "T.cholesky({a})",
    "T.linalg.lu(T.empty(2, 0, 3, dtype=T.{dt}))",
])
def test_empty_kernel_inputs_of_any_dtype_as_torch(expr, dt):
    _same(expr.format(a=E(2, 0, 0, dt=dt), dt=dt))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("expr", [
    "T.linalg.cholesky({a})", "T.linalg.cholesky_ex({a})", "T.linalg.det({a})",
    "T.linalg.svd({a})", "T.linalg.svdvals({a})", "T.svd({a})", "T.linalg.ldl_factor({a})",
    "T.linalg.solve({a}, T.empty(0, 2, 2, dtype=T.{dt}))",
    "T.linalg.solve_ex({a}, T.empty(0, 2, 2, dtype=T.{dt}))",
    "T.linalg.lu_solve({a}, T.empty(0, 2, dtype=T.int32), T.empty(0, 2, 3, dtype=T.{dt}))",
    "T.linalg.svd(T.empty(3, 2, 0, dtype=T.{dt}))",
    "T.linalg.tensorsolve(T.empty(0, 0, dtype=T.{dt}), T.empty(0, dtype=T.{dt}))",
])
def test_empty_half_inputs_as_torch(expr, dt):
    _same(expr.format(a=E(0, 2, 2, dt=dt), dt=dt))


# ... the kernels that check first refuse even an empty input
@pytest.mark.parametrize("expr", [
    "T.linalg.qr(T.empty(0, 0, dtype=T.float16))", "T.geqrf(T.empty(0, 0, dtype=T.int16))",
    "T.linalg.eig(T.empty(0, 0, dtype=T.bfloat16))", "T.linalg.inv(T.empty(0, 0, dtype=T.float16))",
    "T.linalg.cholesky(T.empty(0, 0, dtype=T.int16))",
    "T.linalg.svd(T.empty(0, 0, dtype=T.int16))",
    "T.linalg.slogdet(T.empty(0, 0, dtype=T.float16))",
    "T.cholesky_inverse(T.empty(0, 0, dtype=T.float16))",
    "T.linalg.solve_triangular(T.empty(0, 0, dtype=T.int16), T.empty(0, 2, dtype=T.int16), "
    "upper=True)",
    "T.linalg.ldl_factor(T.empty(0, 0, dtype=T.int16))",
])
def test_empty_inputs_still_refused_as_torch(expr):
    _same(expr)


# non-empty inputs: the first check torch runs decides the exception type
@pytest.mark.parametrize("expr", [
    "T.cholesky(T.eye(2, dtype=T.int16))",
    "T.linalg.cond(T.eye(2, dtype=T.float16), 'fro')",
    "T.linalg.cond(T.eye(2, dtype=T.float16), 'nuc')",
    "T.linalg.cond(T.eye(2, dtype=T.bfloat16), 1)",
    "T.linalg.cond(T.eye(2, dtype=T.float16))",
    "T.linalg.matrix_rank(T.eye(2, dtype=T.float16), atol=1.0, rtol=0.0)",
    "T.linalg.matrix_rank(T.eye(2, dtype=T.float16), tol=0.5)",
    "T.linalg.matrix_rank(T.eye(2, dtype=T.float16), rtol=1.0, hermitian=True)",
    "T.linalg.matrix_rank(T.eye(2, dtype=T.int16), rtol=1.0)",
    "T.linalg.matrix_rank(T.eye(2, dtype=T.float16), atol=1.0)",
    "T.linalg.matrix_rank(T.empty(0, 2, dtype=T.int16), rtol=1.0)",
    "T.linalg.matrix_norm(T.eye(2, dtype=T.float16), 2)",
    "T.linalg.matrix_norm(T.empty(3, 0, dtype=T.bfloat16), 'nuc')",
    "T.linalg.matrix_norm(T.eye(2, dtype=T.float16), 1)",
])
def test_first_check_decides_exception_type_as_torch(expr):
    _same(expr)


def test_matrix_exp_half_runs_as_torch():
    _same("T.linalg.matrix_exp(T.empty(0, 2, 2, dtype=T.bfloat16))")
    _same("T.matrix_exp(T.zeros(2, 2, dtype=T.float16))")


# norms of empty matrices: the largest of nothing is 0, the smallest raises IndexError
@pytest.mark.parametrize("ord", [2, -2, "nuc", "fro", 1, -1, "inf", "-inf"])
@pytest.mark.parametrize("shape", ["3, 0", "0, 3", "2, 3, 0", "2, 0, 3", "0, 3, 3"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_of_empty_matrices_as_torch(ord, shape, keepdim):
    o = {"inf": "float('inf')", "-inf": "-float('inf')"}.get(ord, repr(ord))
    _same(f"T.linalg.matrix_norm(T.empty({shape}, dtype=T.complex64), {o}, keepdim={keepdim})")


@pytest.mark.parametrize("ord", [-1, "-inf"])
def test_matrix_norm_empty_error_names_torch_dim(ord):
    import torch

    o = {"-inf": -float("inf")}.get(ord, ord)
    for shape, dim in (((2, 3, 0), (0, 2)), ((2, 0, 3), (-2, -1)), ((3, 0), (1, 0))):
        for kd in (False, True):
            msgs = []
            for T in (ember, torch):
                try:
                    T.linalg.matrix_norm(T.empty(shape), o, dim=dim, keepdim=kd)
                    msgs.append(None)
                except IndexError as e:
                    msgs.append(str(e))
            assert msgs[0] == msgs[1], (shape, dim, kd)


# condition numbers of empty matrices: zeros of the real dtype, before other checks
@pytest.mark.parametrize("dt", ["float32", "complex128", "float16", "int16", "bool"])
@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, "'fro'", "'nuc'"])
@pytest.mark.parametrize("shape", ["0, 0", "2, 0, 0", "0, 3", "2, 3, 0", "0, 2, 2"])
def test_cond_of_empty_as_torch(dt, p, shape):
    _same(f"T.linalg.cond(T.empty({shape}, dtype=T.{dt}), {p})")


def test_cond_of_empty_has_no_history():
    r = ember.linalg.cond(ember.empty(2, 0, 0, requires_grad=True))
    assert not r.requires_grad and r.grad_fn is None


# determinants and LU factors of non-finite matrices: torch's pivot order, replayed
# (NOTE [ Determinants of non-finite matrices ])
_ODD = [
    "[[-0.4, 1.8, -1.5], [-0.0, -float('inf'), -0.1], [-0.6, 0.2, 0.5]]",
    "[[-0.3, -0.4, -1.9], [0.5, -float('inf'), 1.2], [-0.3, 1.0, -0.6]]",
    "[[-2.2, -0.8, 0.8], [-float('inf'), 0.8, -0.2], [0.1, 1.3, -0.9]]",
    "[[0.8, 0.6, 2.2], [-1e308, -1.0, -1.2], [-0.6, 0.4, -0.7]]",
    "[[float('nan'), 1.0], [1.0, 1.0]]", "[[1.0, 2.0], [3.0, float('nan')]]",
    "[[float('inf'), -0.32], [-2.97, 0.0]]",
]


@pytest.mark.parametrize("m", _ODD)
@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("op", ["T.linalg.det", "T.linalg.slogdet", "T.logdet",
                                "T.linalg.lu_factor_ex", "T.linalg.lu"])
def test_non_finite_matrices_factor_as_torch(op, m, dt):
    _same(f"{op}(T.tensor({m}, dtype=T.{dt}))")


def test_non_finite_matrices_in_a_batch_as_torch():
    _same(f"T.linalg.slogdet(T.tensor([{_ODD[0]}, [[1., 2, 3], [0, 1, 4], [5, 6, 0]]]))")


# solve_triangular: B takes A's dtype; a zero on the diagonal gives inf/NaN, no error
@pytest.mark.parametrize("expr", [
    "T.linalg.solve_triangular(T.eye(3, dtype=T.float64), T.ones(3, 2), upper=True)",
    "T.linalg.solve_triangular(T.eye(3), T.ones(3, 2, dtype=T.int64), upper=False)",
    "T.linalg.solve_triangular(T.eye(3, dtype=T.complex64), T.ones(3, 2, dtype=T.float64), "
    "upper=True)",
    "T.linalg.solve_triangular(T.eye(3, dtype=T.int64), T.ones(3, 2), upper=True)",
    "T.linalg.solve_triangular(T.tensor([[1., 2], [0, 0]]), T.ones(2, 3), upper=True)",
    "T.linalg.solve_triangular(T.tensor([[0., 0], [1, 2]]), T.ones(3, 2), upper=False, "
    "left=False)",
    "T.triangular_solve(T.ones(2, 3), T.tensor([[1., 2], [0, 0]]))",
    "T.linalg.solve_triangular(T.empty(0, 0), T.empty(0, 6), upper=True)",
])
def test_solve_triangular_as_torch(expr):
    _same(expr)


def test_solve_triangular_grad_stays_in_the_triangle():
    import torch

    import ember

    got = []
    for T in (ember, torch):
        a = T.tensor([[0.5, 0.0, 0.0], [1.0, 2.0, 0.0], [float("inf"), -0.4, 2.9]],
                     dtype=T.float64, requires_grad=True)
        b = T.tensor([[1.0, -2.0], [0.5, 1.0], [1.0, 0.0]], dtype=T.float64)
        T.linalg.solve_triangular(a, b, upper=False).sum().backward()
        got.append(a.grad.numpy())
    np.testing.assert_array_equal(np.triu(got[0], 1), 0)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12, atol=1e-12)


# lu_unpack reads the first min(m, n) pivots, each in [1, m]
@pytest.mark.parametrize("lu, piv", [
    ("T.tensor([[-0.94, 1.22, -0.99]]).mT", "[1, 3, 3]"), ("T.ones(3, 2)", "[1, 0]"),
    ("T.ones(2, 1)", "[4]"), ("T.ones(1, 3)", "[1, 1, 1]"),
    ("T.arange(6.).reshape(3, 2)", "[3, 3, 1]"),
    ("T.ones(3, 1)", "[1, 5, 1]"),
])
def test_lu_unpack_pivots_as_torch(lu, piv):
    _same(f"T.lu_unpack({lu}, T.tensor({piv}, dtype=T.int32))")


# one variable: cov/corrcoef are 0-d; bool is refused
@pytest.mark.parametrize("x", ["T.ones(1, 3)", "T.ones(1, 0)", "T.ones(3)",
                               "T.ones(2, 3, dtype=T.bool)",
                               "T.tensor([[1, 2, 4]], dtype=T.int16)"])
@pytest.mark.parametrize("f", ["cov", "corrcoef"])
def test_cov_of_one_variable_as_torch(f, x):
    _same(f"T.{f}({x})")


# lu_solve solves with the packed factors (getrs), as torch: no rebuilt A, so the same
# rounding, and inf in the factors lands where torch's does
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
@pytest.mark.parametrize("dt", ["float32", "complex128"])
def test_lu_solve_with_the_factors_as_torch(left, adjoint, dt):
    import torch

    import ember

    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 3)) + (1j * rng.standard_normal((2, 3, 3)) if "c" in dt
                                          else 0)
    a[0, 0, 0] = np.inf
    b = rng.standard_normal((2, 3, 2) if left else (2, 2, 3))
    A = torch.tensor(a).to(getattr(torch, dt))
    LU, piv, _ = torch.linalg.lu_factor_ex(A)
    B = torch.tensor(b).to(A.dtype)
    want = torch.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint).resolve_conj()
    got = ember.linalg.lu_solve(ember.tensor(LU.numpy()), ember.tensor(piv.numpy()),
                                ember.tensor(B.numpy()), left=left, adjoint=adjoint)
    np.testing.assert_allclose(got.resolve_conj().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
