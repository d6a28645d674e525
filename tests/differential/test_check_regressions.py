"""Regressions for the check and dtype-support classes the differential runner found (issue
16): which calls PyTorch refuses (and with which exception type), which it runs, and the
dtype it answers in. Each expression runs with ``T = ember`` and ``T = torch``; ``B(...)``
is a bool tensor of ones, ``I(...)`` an int8 one, ``x`` a complex tensor that requires grad."""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _outcome(expr, T):
    """The exception type ``expr`` raises with ``T``, or its results' dtypes, shapes, values."""
    env = {
        "T": T, "F": T.nn.functional,
        "B": lambda *s: T.ones(*s, dtype=T.bool), "I": lambda *s: T.ones(*s, dtype=T.int8),
        "A": T.eye(3, dtype=T.float64) + 0.25,
        "x": T.ones(2, 2, dtype=T.complex128).requires_grad_(),
        "lp": T.log_softmax(T.arange(40.).reshape(5, 2, 4).sin(), 2),
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(expr, env)
    except Exception as e:  # noqa: BLE001 - the builtin exception class is what is compared
        return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    r = r if isinstance(r, (tuple, list)) else (r,)
    return [(str(t.dtype).split(".")[-1], tuple(t.shape),
             t.detach().resolve_conj().numpy().astype(np.complex128)) for t in r]


def _same(expr):
    import torch

    e, t = _outcome(expr, ember), _outcome(expr, torch)
    if isinstance(t, str) or isinstance(e, str):
        assert e == t, expr
        return
    assert [r[:2] for r in e] == [r[:2] for r in t], expr
    for a, b in zip(e, t):
        np.testing.assert_allclose(a[2], b[2], rtol=1e-5, atol=1e-6, err_msg=expr)


# CTC: torch's argument checks, in its order
@pytest.mark.parametrize("expr", [
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [5, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [5], [2, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [5, 4], [2, 1, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [6, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [-1, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [5, 4], [3, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2], [1, 1]]), [5, 4], [-1, 1])",
    "T.ctc_loss(lp, T.tensor([[1, 2]]), [5, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([1, 2, 3]), [5, 4], [2, 2])",
    "T.ctc_loss(lp, T.tensor([1, 2, 3.]), [5, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([1, 2, 3]), [5, 4], [2, 1], 4)",
    "T.ctc_loss(lp, T.tensor([[[1, 2, 3]]]), [5, 4], [2, 1])",
    "T.ctc_loss(lp, T.tensor([[[1, 2, 3]]]), [5], [2])",
    "T.ctc_loss(lp, T.tensor([1, 2, 3]), [5, 4], [2], 9)",
    "T.ctc_loss(T.empty(0, 2, 4), T.tensor([1, 2, 3]), [5, 4], [2, 1])",
    "T.ctc_loss(T.empty(0, 2, 4, dtype=T.float16), T.tensor([1, 2, 3]), [5, 4], [2, 1])",
    "T.ctc_loss(T.empty(5, 2, 4, 1), T.tensor([[[1, 2, 3]]]), [5, 4], [2])",
    "T.ctc_loss(lp, T.tensor([1, 2, 3]), [5, 4], [2, 1], reduction='mean')",
    "T.ctc_loss(lp, T.tensor([1, 2, 3]), 5, (2, 1))",
    "F.ctc_loss(lp, T.tensor([1, 2, 3]), T.tensor([5., 3]), T.tensor([2, 1]))",
    "F.ctc_loss(lp, T.tensor([1, 2, 3]), T.tensor([5, 3]), [2, 1])",
    "F.ctc_loss(lp, T.tensor([1, 2, 3]), T.tensor([5, 3]), T.tensor([2, 1], dtype=T.uint8))",
])
def test_ctc_loss_checks_as_torch(expr):
    _same(expr)


# bool products: the BLAS-style kernel refuses only when it has arithmetic to do
@pytest.mark.parametrize("expr", [
    "T.mm(B(0, 3), B(3, 2))", "T.mm(B(2, 0), B(0, 2))", "T.mm(B(2, 3), B(3, 2))",
    "T.mv(B(2, 0), B(0))", "T.mv(B(2, 3), B(3))", "T.bmm(B(2, 1, 0), B(2, 0, 2))",
    "T.bmm(B(2, 1, 3), B(2, 3, 2))", "T.matmul(B(0), B(0))", "T.matmul(B(3), B(3, 0))",
    "T.matmul(B(2, 2, 0), B(0, 2))", "T.matmul(B(2, 2, 3), B(0, 3, 2))",
    "T.matmul(B(2, 3), B(4, 3, 2))", "T.matmul(B(2, 0), B(0, 2), out=T.empty(0, dtype=T.bool))",
    "T.inner(B(3), B(3))", "T.inner(B(0), B(0))", "T.inner(B(0, 3), B(3))",
    "T.inner(B(2, 3), B(2, 3))", "T.tensordot(B(2, 3), B(3, 2), dims=1)",
    "T.tensordot(B(2, 0), B(0, 2), dims=1)", "T.tensordot(B(2, 3), B(2, 3), dims=2)",
    "T.tensordot(B(2), B(2), dims=0)",
])
def test_bool_products_refuse_as_torch(expr):
    _same(expr)


# einsum: bool contractions refuse; a label summed inside one operand sums to int64
@pytest.mark.parametrize("expr", [
    "T.einsum('ii', I(2, 2))", "T.einsum('ii', B(2, 2))", "T.einsum('ii->i', I(2, 2))",
    "T.einsum('ij->i', B(2, 2))", "T.einsum('ij->', I(0, 3))",
    "T.einsum('ij,jk', I(2, 3), I(3, 2))",
    "T.einsum('ij,j->j', I(2, 3), I(3))", "T.einsum('ij,j->', I(2, 3), I(3))",
    "T.einsum('ij,jk->', I(2, 3), I(3, 2))", "T.einsum('i,j->', B(2), B(2))",
    "T.einsum('ij,jk', B(2, 3), B(3, 2))", "T.einsum('ij,jk', B(2, 0), B(0, 2))",
    "T.einsum('ij,ij->ij', B(2, 3), B(2, 3))", "T.einsum('i,i', B(0), B(0))",
])
def test_einsum_integer_and_bool_as_torch(expr):
    _same(expr)


# one-sided bool clamps take tensor bounds; number bounds and two-sided clamps refuse
@pytest.mark.parametrize("expr", [
    "T.clamp_min(B(2), T.tensor([True, False]))", "T.clamp_max(B(2), T.tensor([True, False]))",
    "T.clamp_min(B(2), True)", "T.clamp_max(B(2), False)", "T.clamp(B(2), True, False)",
    "T.clamp(B(2), T.tensor([True, False]), T.tensor([False, False]))",
    "T.clamp(B(2), 0, 1)", "T.clamp(B(2), T.tensor([1, 0]))",
    "B(2).clamp_min_(T.tensor([False, True]))",
    "T.clamp_min(B(2), T.tensor([True, False]), out=T.empty(2, dtype=T.bool))",
])
def test_bool_clamp_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.abs(B(2))", "T.abs(B(0))", "B(2).abs_()", "T.absolute(B(2))", "T.abs(I(2))",
])
def test_abs_refuses_bool(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "F.silu(T.tensor([1+2j, -0.5+0.3j, 3-1j]))",
    "F.silu(T.tensor([1+2j, -0.5+0.3j], dtype=T.complex64), inplace=True)",
    "F.silu(T.tensor([1, 2]))",
])
def test_silu_complex_as_torch(expr):
    _same(expr)


# ops without complex derivatives refuse to record a complex result
@pytest.mark.parametrize("expr", [
    "T.select_copy(x, 0, 1)", "T.slice_copy(x, 0, 0, 1)",
    "T.view_as_complex_copy(T.ones(2, 2, 2).requires_grad_())",
    "T.select_scatter(x, T.ones(2, dtype=T.complex128), 0, 0)", "T.slice_scatter(x, x, 0)",
    "T.nan_to_num(x)", "F.silu(x)", "F.embedding(T.tensor([0]), x)",
    "F.bilinear(x, x, x[None])",
    "T.index_reduce(x, 0, T.tensor([0]), x[:1], 'prod')",
    "T.scatter_reduce(x, 0, T.zeros(1, 2, dtype=T.long), x[:1], 'sum')",
    "T.nan_to_num(x.detach())", "T.select_copy(x.detach(), 0, 1)",
    "T.nan_to_num(T.ones(2, requires_grad=True))",
])
def test_complex_autograd_refusal_as_torch(expr):
    _same(expr)


def test_complex_autograd_refusal_lifts_under_no_grad():
    import torch

    for T in (ember, torch):
        x = T.ones(2, dtype=T.complex64, requires_grad=True)
        with T.no_grad():
            assert T.nan_to_num(x).dtype == T.complex64


# linalg.lu_solve: dtype and shape checks, then pivots in [1, n] when there is work to do
@pytest.mark.parametrize("expr", [
    "T.linalg.lu_solve(A, T.tensor([1, 2, 3], dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 4], dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 0, 3], dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 3]), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 3], dtype=T.int32), T.ones(3, 2))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 3], dtype=T.int32), T.ones(3, 2).to(A.dtype)[:2])",
    "T.linalg.lu_solve(A, T.tensor([1, 2], dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([[1, 2, 3]], dtype=T.int32), T.ones(3, 2, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 5], dtype=T.int32), T.empty(3, 0, dtype=T.float64))",
    "T.linalg.lu_solve(A, T.tensor([1, 2, 3], dtype=T.int32), T.ones(3, dtype=T.float64))",
    "T.linalg.lu_solve(T.empty(0, 0), T.empty(0, dtype=T.int32), T.empty(4, 0, dtype=T.uint8),"
    " left=False)",
    "T.lu_solve(T.ones(3, 2, dtype=T.float64), A, T.tensor([0, 2, 3], dtype=T.int32))",
    "T.lu_solve(T.ones(3, 2, dtype=T.float64), A, T.tensor([1, 2, 3], dtype=T.int64))",
])
def test_lu_solve_checks_as_torch(expr):
    _same(expr)


# sum over everything has no out= overload in PyTorch
@pytest.mark.parametrize("expr", [
    "T.sum(I(3), out=T.tensor([0]))", "T.sum(B(2), dtype=T.float64, out=T.tensor([0.]))",
    "T.sum(I(3), None, out=T.tensor([0]))", "T.sum(I(3), 0, out=T.tensor([0]))", "T.sum(I(3))",
    "I(3).sum()",
])
def test_sum_out_needs_dim(expr):
    _same(expr)


# index ops: torch's index dtypes and its exception types for bad indices
@pytest.mark.parametrize("expr", [
    "T.zeros(3, 4).index_fill_(1, T.tensor([1], dtype=T.int32), -1.5)",
    "T.index_fill(T.zeros(3, 4), 1, T.empty(0, dtype=T.bfloat16), -1.5)",
    "T.index_fill(T.zeros(3, 4), 1, T.tensor([5]), T.tensor([2.]))",
    "T.index_fill(T.zeros(3, 4), 1, T.tensor([[1]]), 1.)",
    "T.index_fill(T.zeros(3, 4), 1, T.tensor([5]), 1.)",
    "T.index_copy(T.zeros(3, 4), 1, T.tensor([1], dtype=T.int32), T.ones(3, 1))",
    "T.index_select(T.zeros(3, 4), 1, T.tensor([5]))",
    "T.index_select(T.zeros(3, 4), 0, T.tensor([5]))",
    "T.index_select(T.zeros(3, 4, 2), 2, T.tensor([5]))",
    "T.index_select(T.empty(3, 0), 1, T.tensor([0]))",
    "T.index_add(T.zeros(3, 4), 0, T.tensor([7]), T.ones(1, 4))",
    "T.index_add(T.zeros(3, 4), 0, T.tensor([7]), T.ones(1, 4), alpha=2)",
    "T.index_add(T.zeros(2, 3, 4), 1, T.tensor([7]), T.ones(2, 1, 4))",
    "T.index_add(T.zeros(4), 0, T.tensor([7]), T.ones(1))",
    "T.index_add(T.empty(1, 0), 0, T.tensor([1, 2]), T.empty(2, 0))",
    "T.index_put(T.zeros(3, 4), (T.tensor([0, 2], dtype=T.int16),), T.ones(2, 4))",
    "T.index_put(T.zeros(3, 4), (T.tensor([0, 2], dtype=T.int32),), T.ones(2, 4))",
    "T.index_put(T.zeros(3, 4), (None, T.tensor([1, 3])), T.ones(3, 2))",
    "T.zeros(3, 4).index_put_((None, T.tensor([1, 3])), T.ones(3, 2))",
])
def test_index_op_errors_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.svd_lowrank(T.ones(6, 1, dtype=T.float64), q=3)[1]",
    "T.svd_lowrank(T.ones(2, 4), q=4, niter=1)[1]", "T.svd_lowrank(T.ones(2, 4), q=-1)",
    "T.svd_lowrank(T.ones(2, 4, dtype=T.float16), q=1)",
    "T.pca_lowrank(T.ones(2, 4, dtype=T.float16), q=1)", "T.pca_lowrank(T.ones(2, 4), q=5)",
    "T.svd_lowrank(T.ones(2, 4, dtype=T.int32), q=1)",
])
def test_lowrank_checks_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "F.binary_cross_entropy_with_logits(x.real, T.ones(2, 2, dtype=T.float64), x.real)",
    "F.binary_cross_entropy_with_logits(x.real, T.ones(2, 2, dtype=T.float64), "
    "pos_weight=x.real)",
    "T.binary_cross_entropy_with_logits(x.real, T.ones(2, 2, dtype=T.float64), None, x.real)",
    "F.binary_cross_entropy(T.full((2,), .5, dtype=T.float64), T.ones(2, dtype=T.float64), "
    "x.real[0])",
    "F.binary_cross_entropy_with_logits(x.real, x.real.detach(), x.real.detach())",
    "T.mvlgamma(T.tensor([True]), 1)", "T.tensor([True]).mvlgamma(1)",
    "T.special.multigammaln(T.tensor([True]), 1)", "T.mvlgamma(T.tensor([3]), 1)",
    "T.view_copy(T.arange(12.).reshape(4, 3).t(), (-1,))",
    "T.view_copy(T.arange(12.).reshape(4, 3).t(), (2, 6))",
    "T.view_copy(T.ones(4, 3), (5,))", "T.view_copy(T.ones(4, 3), 2, 6)",
    "T.view_copy(T.ones(4, 3), -1)", "T.view_copy(T.ones(4, 3), T.int32)",
    "T.linalg.eigvalsh(T.eye(3, dtype=T.complex64), out=T.empty(0, dtype=T.complex64))",
    "T.linalg.eigvalsh(T.eye(3), out=T.empty(0, dtype=T.float64))",
])
def test_argument_checks_as_torch(expr):
    _same(expr)


# results recorded in the graph even where nothing is computed (requires_grad as torch's)
@pytest.mark.parametrize("expr", [
    "T.linalg.matrix_power(x.real, 0)", "T.combinations(x.real[0, :0])",
    "T.combinations(x.real[0, :1])", "T.linalg.householder_product(x.real, x.real[0, :0])",
    "T.linalg.householder_product(x.real[:, :0], x.real[0, :0])",
])
def test_requires_grad_of_empty_results_as_torch(expr):
    import torch

    e, t = eval(expr, {"T": ember, "x": ember.ones(2, 2, dtype=ember.complex128,
                                                    requires_grad=True)}), \
        eval(expr, {"T": torch, "x": torch.ones(2, 2, dtype=torch.complex128,
                                                requires_grad=True)})
    assert (e.requires_grad, tuple(e.shape)) == (t.requires_grad, tuple(t.shape))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy())


@pytest.mark.parametrize("expr", [
    "T.kthvalue(T.empty(3, 0, dtype=T.complex64), 5, -1)",
    "T.kthvalue(T.empty(3, 0, dtype=T.complex64), 1, 0)", "T.kthvalue(T.empty(3, 0), 1, -1)",
    "T.kthvalue(T.empty(0, 3), 1, -1)", "T.kthvalue(T.empty(0, 3), 4, -1)",
    "T.kthvalue(T.ones(3, dtype=T.bool), 9)", "T.kthvalue(T.tensor(2.), 1)",
])
def test_kthvalue_checks_as_torch(expr):
    _same(expr)


def test_kthvalue_ties_name_torchs_index():
    import torch

    rng = np.random.default_rng(0)
    for n in range(1, 12):
        a = rng.integers(-2, 3, size=(6, n)).astype(np.float32)
        a[rng.random(a.shape) < 0.15] = np.nan
        for k in range(1, n + 1):
            want = torch.kthvalue(torch.tensor(a), k, 1).indices.numpy()
            np.testing.assert_array_equal(ember.kthvalue(ember.tensor(a), k, 1).indices.numpy(),
                                          want)


# the aten form computes in theta's dtype (integers truncate); F.affine_grid wants floats
@pytest.mark.parametrize("expr", [
    "T.affine_grid_generator(T.tensor([[[1, 0, 2], [0, 1, 3]]], dtype=T.int32), [1, 1, 2, 3], False)",  # noqa: E501
    "T.affine_grid_generator(T.tensor([[[1, 0, 2], [0, 1, 3]]], dtype=T.int32), [1, 1, 2, 3], True)",  # noqa: E501
    "T.affine_grid_generator(T.ones(2, 2, 3, dtype=T.complex64), [2, 1, 3, 4], False)",
    "T.affine_grid_generator(T.ones(1, 4, 6, dtype=T.int32), [1, 1, 2, 3, 2], True)",
    "T.affine_grid_generator(T.ones(2, 2, 3, dtype=T.bool), [2, 1, 3, 4], False)",
    "F.affine_grid(T.ones(2, 2, 3, dtype=T.int32), [2, 1, 3, 4], False)",
])
def test_affine_grid_generator_dtypes_as_torch(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.inner(T.ones(3), T.ones(3, dtype=T.float64))",
    "T.inner(T.ones(2, 3), T.ones(3, dtype=T.int64))",
    "T.inner(T.ones(3), T.tensor(2, dtype=T.int64))",
    "T.inner(T.tensor(2.), T.ones(3, dtype=T.int64))",
    "T.addr(B(2, 2), T.tensor([True, False]), T.tensor([True, True]))",
    "T.addr(T.zeros(2, 2, dtype=T.bool), T.tensor([True, False]), T.tensor([True, True]), beta=False)",  # noqa: E501
    "T.addr(B(2, 2), T.tensor([True, False]), T.tensor([True, True]), alpha=False)",
    "T.addr(B(2, 2), T.tensor([True, False]), T.tensor([True, True]), beta=0.5)",
    "T.addr(T.ones(2, 2), T.tensor([1., 2]), T.tensor([1., 2], dtype=T.float64))",
    "T.addr(T.ones(2, 2, dtype=T.int64), T.tensor([1., 2], dtype=T.float16), "
    "T.tensor([1., 2], dtype=T.float16))",
    "T.addr(T.ones(2, 2, dtype=T.int8), T.tensor([1, 2], dtype=T.int16), T.tensor([1, 2]))",
    "T.ones(2, 2, dtype=T.float64).addr_(T.tensor([1., 2], dtype=T.complex64), "
    "T.tensor([1., 2], dtype=T.complex64))",
    "T.ones(2, 2, dtype=T.complex64).addr_(T.tensor([1., 2], dtype=T.float64), "
    "T.tensor([1., 2], dtype=T.float64))",
    "T.addr(T.ones(2, 2, dtype=T.float16), T.tensor([1, 2]), T.tensor([1, 2]), "
    "out=T.empty(0, dtype=T.int64))",
])
def test_inner_and_addr_promotion_as_torch(expr):
    _same(expr)


def test_view_as_real_gradient_of_empty_input():
    import torch

    grads = []
    for T in (ember, torch):
        a = T.empty(0, 2, dtype=T.complex128).requires_grad_()
        (g,) = T.autograd.grad((T.view_as_real(a) * 1).sum(), a)
        grads.append((tuple(g.shape), str(g.dtype).split(".")[-1]))
    assert grads[0] == grads[1]
