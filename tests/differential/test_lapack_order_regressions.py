"""Regressions for the classes the differential runner found where ember's answer depended on
the order LAPACK works in (issue 16): Cholesky's partial factor when it stops, Householder
reflectors applied as orgqr/ormqr apply them (NOTE [ Householder reflectors as LAPACK applies
them ] in ember/_ops/linalg_func.py), the sign of a -0.0 QR pivot; and, in the same families,
histogram's non-finite ranges and empty or mixed-dtype products. Each expression runs with
``T = ember`` and ``T = torch`` (see test_linalg_regressions._same)."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH, skip_unless_intel_avx512
from tests.differential.test_linalg_regressions import _outcome, _same

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

INF, NAN = "float('inf')", "float('nan')"


# ------------------------------------------------------------------------------------------------
# cholesky_ex: LAPACK's partial factor where it stops


@pytest.mark.parametrize("expr", [
    # fails at order 3: two columns factored, the negative pivot on the diagonal
    "T.linalg.cholesky_ex(T.tensor([[4.1, -0.4, -0.1], [-0.4, 3.7, -0.6], [1e308, 0., 4.3]], "
    "dtype=T.float64))",
    # fails at order 2; the later columns stay as read
    "T.linalg.cholesky_ex(T.tensor([[3.5, 0., 0.], [-0.01, -1e308, 0.6], [" + INF + ", 0.6, "
    "-1e308]], dtype=T.float64))",
    "T.linalg.cholesky_ex(T.tensor([[1., 5.], [2., 1.]]), upper=True)",
    "T.linalg.cholesky_ex(T.tensor([[[1., 2.], [2., 1.]], [[2., 0.], [0., 2.]]]))",
    "T.linalg.cholesky_ex(T.tensor([[" + NAN + ", 0.], [0., 1.]]))",
    "T.linalg.cholesky_ex(T.tensor([[2., 1j], [3j, -1.]], dtype=T.complex128))",
])
def test_cholesky_ex_partial_factor_as_torch(expr):
    _same(expr)


def test_cholesky_upper_reads_the_upper_triangle():
    _same("T.linalg.cholesky(T.tensor([[4., 1., 2.], [0.5, 3., 0.1], [0.3, 0.2, 5.]], "
          "dtype=T.float64), upper=True)")


def test_cholesky_ex_failed_factor_requires_grad():
    for T in (ember, pytest.importorskip("torch")):
        a = T.tensor([[1., 2.], [2., 1.]], requires_grad=True)
        L, info = T.linalg.cholesky_ex(a)
        assert L.requires_grad and int(info) == 2


# ------------------------------------------------------------------------------------------------
# householder_product / orgqr / ormqr


@pytest.mark.parametrize("expr", [
    # the diagonal and upper triangle of A are never read (NaN there must not spread)
    "T.linalg.householder_product(T.tensor([[" + NAN + ", " + INF + "], [0.5, 0.2], [0.1, "
    "-0.3]]), T.tensor([1.2, 0.7]))",
    "T.orgqr(T.tensor([[complex(" + NAN + ", 1.0)]], dtype=T.complex128), "
    "T.tensor([complex(1.7976931348623157e+308, 0.0)], dtype=T.complex128))",
    # the last reflector touches only its own column: a NaN in v stays below row 0
    "T.orgqr(T.tensor([[-3.9], [" + NAN + "], [-1.9]], dtype=T.float64), "
    "T.tensor([0.5], dtype=T.float64))",
    # tau = 0: the reflector is skipped, its NaN never read
    "T.linalg.householder_product(T.tensor([[1., 2.], [" + NAN + ", 1.], [0.3, 0.4]]), "
    "T.tensor([0., 1.5]))",
    # v's trailing zeros leave the rows below them alone
    "T.linalg.householder_product(T.tensor([[1., 2.], [0.5, 1.], [0., " + INF + "]]), "
    "T.tensor([1.1, 0.]))",
])
def test_householder_product_applies_reflectors_as_lapack(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    # one fused update: 1.79e308 * (1 - 1.99) does not overflow on the way
    "T.ormqr(T.tensor([[-0.04]], dtype=T.float64), T.tensor([1.99], dtype=T.float64), "
    "T.tensor([[1.79e308], [" + NAN + "]], dtype=T.float64), left=False, transpose=True)",
    # no column is skipped: tau NaN reaches the -0.0 column too
    "T.ormqr(T.tensor([[-1.07]], dtype=T.float64), T.tensor([" + NAN + "], dtype=T.float64), "
    "T.tensor([[-0.21, -0.0]], dtype=T.float64))",
    "T.ormqr(T.tensor([[-1.5], [1.9], [1.5]], dtype=T.float64), T.tensor([1.79e308], "
    "dtype=T.float64), T.tensor([[1.77], [-1.13], [0.23]], dtype=T.float64))",
])
def test_ormqr_applies_reflectors_as_mkl(expr):
    skip_unless_intel_avx512("MKL's ormqr order with inf and NaN")
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.ormqr(T.randn(4, 3), T.randn(2), T.randn(4, 2))",
    "T.ormqr(T.randn(4, 3), T.randn(2), T.randn(2, 4), left=False)",
    "T.ormqr(T.empty(0, 1), T.ones(1), T.empty(0, 1))",
])
def test_ormqr_tau_length_must_match(expr):
    assert _outcome(expr, ember) == "RuntimeError"
    _same(expr)


def _grads(T, name, shapes, left=True, transpose=False, cplx=False):
    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal(s) + (1j * rng.standard_normal(s) if cplx else 0)
            for s in shapes]
    ts = [T.tensor(a, requires_grad=True) for a in arrs]
    if name == "ormqr":
        r = T.ormqr(*ts, left=left, transpose=transpose)
    else:
        r = T.linalg.householder_product(*ts)
    w = T.tensor(np.cos(np.arange(r.numel())).reshape(tuple(r.shape)))
    loss = (r * w).real.sum() if cplx else (r * w).sum()
    return [None if g is None else g.numpy() for g in T.autograd.grad(loss, ts,
                                                                          allow_unused=True)]


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("case", [
    ("householder_product", [(2, 5, 3), (2, 2)], True, False),
    ("ormqr", [(4, 3), (3,), (4, 2)], True, True),
    ("ormqr", [(4, 3), (3,), (2, 4)], False, False),
])
def test_reflector_gradients_as_torch(case, cplx):
    torch = pytest.importorskip("torch")
    name, shapes, left, transpose = case
    e = _grads(ember, name, shapes, left, transpose, cplx)
    t = _grads(torch, name, shapes, left, transpose, cplx)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_ormqr_without_reflectors_gives_no_reflector_gradient():
    a = ember.zeros(3, 0, requires_grad=True)
    tau = ember.zeros(0, requires_grad=True)
    c = ember.ones(3, 2, requires_grad=True)
    ga, gt, gc = ember.autograd.grad(ember.ormqr(a, tau, c).sum(), [a, tau, c],
                                     allow_unused=True)
    assert ga is None and gt is None and bool((gc == 1).all())


def test_householder_product_grad_fn_and_layout_as_torch():
    torch = pytest.importorskip("torch")
    r = []
    for T in (ember, torch):
        q = T.linalg.householder_product(T.randn(2, 4, 3, requires_grad=True), T.randn(2, 2))
        o = T.ormqr(T.randn(4, 3, requires_grad=True), T.randn(3), T.randn(4, 2))
        r.append((type(q.grad_fn).__name__, tuple(q.stride()), type(o.grad_fn).__name__,
                  tuple(o.stride())))
    assert r[0] == r[1]


# ------------------------------------------------------------------------------------------------
# QR: the sign of a -0.0 pivot


@pytest.mark.parametrize("expr", [
    "T.geqrf(T.tensor([[-0.0, 0.72], [-0.66, 0.90], [-1.83, -1.55]]))",
    "T.linalg.qr(T.tensor([[-0.0, 0.72], [-0.66, 0.90], [-1.83, -1.55]]))",
    "T.geqrf(T.tensor([[complex(-0.0, 0.0)], [complex(1.08, 0.99)], [complex(1.6, 1.8)]], "
    "dtype=T.complex128))",
])
def test_negative_zero_qr_pivot_counts_as_positive(expr):
    _same(expr)


# ------------------------------------------------------------------------------------------------
# histogram ranges; empty and mixed-dtype products


@pytest.mark.parametrize("expr", [
    "T.histogram(T.tensor([" + INF + "], dtype=T.float64), 5)",
    "T.histogram(T.tensor([1., " + NAN + "]), 3)",
    "T.histogram(T.tensor([1., 2.]), 3, range=(0., " + INF + "))",
    "T.histogram(T.tensor([1., 2.]), 3, range=(2., 1.))",
])
def test_histogram_non_finite_or_reversed_range_raises(expr):
    assert _outcome(expr, ember) == "RuntimeError"
    _same(expr)


def test_histogram_of_nothing_spans_the_unit_range():
    _same("T.histogram(T.tensor([]), 2)")


@pytest.mark.parametrize("expr", [
    "T.bmm(T.empty((0, 4, 3), dtype=T.bfloat16).transpose(-1, -2), T.empty((0, 4, 2)))",
    "T.bmm(T.empty((2, 3, 0), dtype=T.bool), T.empty((2, 0, 4), dtype=T.int32))",
    "T.bmm(T.empty((2, 3, 0), dtype=T.float16), T.empty((2, 0, 3), dtype=T.int64))",
    "T.bmm(T.ones((2, 3, 1), dtype=T.float16), T.ones((2, 1, 3), dtype=T.int64))",
])
def test_bmm_mixed_dtypes_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.einsum('i,j->ij', T.tensor([0.4, 0.5]), T.tensor([-1], dtype=T.int8))",
    "T.einsum('i,i,i->i', T.ones(2, dtype=T.int64), T.ones(2, dtype=T.float64), T.ones(2))",
    "T.einsum('ij,ij->i', T.empty((0, 3), dtype=T.int64), T.empty((0, 3), dtype=T.complex64))",
    "T.einsum('ij,jk->ik', T.ones(2, 0), T.ones(0, 2, dtype=T.float64))",
    "T.einsum('ij,jk->ik', T.ones(2, 3), T.ones(3, 2, dtype=T.float64))",
])
def test_einsum_mixed_dtypes_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.histc(T.tensor([-3.5997860431671143]))",  # the bin found in float32, as torch
    "T.histc(T.tensor([-1.7976931348623157e+308, 3.45, -5.53], dtype=T.float64), 4)",
    "T.histc(T.tensor([0., 1., 2., 3., 5., -1.]), 3, min=0, max=3)",
])
def test_histc_bins_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.tensor([[1.1]]).unique_consecutive(dim=0, return_counts=True)",
    "T.empty((6, 0)).unique_consecutive(dim=0)",
    "T.empty((0, 0)).unique_consecutive(dim=0)",
    "T.empty((6, 0)).unique(dim=0)",
    "T.empty((0, 3)).unique_consecutive(dim=0)",
])
def test_unique_over_a_dim_with_size_0_or_1_dims_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.histogram(T.tensor([0.68, 0.0, -1.5, 1.9, 2.0], dtype=T.float16), 4, range=(-2., 2.))",
    "T.histogram(T.tensor([3.86], dtype=T.float16), 4, range=(-2., 2.), density=True)",
    "T.histogram(T.tensor([3.86], dtype=T.float16), 4)",  # the data's range: no half kernel
])
def test_half_histogram_needs_a_range_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.isin(T.tensor([True, False]), T.tensor([True]))",
    "T.isin(T.tensor([1, 2]), T.tensor([True]))",
    "T.isin(True, T.tensor([True]))",
])
def test_isin_refuses_bool_as_torch(expr):
    import ember
    torch = pytest.importorskip("torch")
    for T in (ember, torch):
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
            eval(expr, {"T": T})
