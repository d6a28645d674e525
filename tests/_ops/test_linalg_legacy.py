"""Behaviour of the ops in ember/_ops/linalg_extra.py and linalg_legacy.py that the OpInfo
table (ember/testing/opinfos/linalg_extra.py) does not reach: failures reported or raised,
missing derivatives, and the randomized low-rank SVD."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

SINGULAR = [[1.0, 2.0], [2.0, 4.0]]


def _sym(rng, n=4):
    a = rng.standard_normal((n, n))
    return ember.tensor(a + a.T)


def test_ldl_factor_solves_a_symmetric_indefinite_system(rng):
    A = _sym(rng)
    B = ember.tensor(rng.standard_normal((4, 2)))
    LD, pivots = ember.linalg.ldl_factor(A)
    assert pivots.dtype == ember.int32
    assert_close(A @ ember.linalg.ldl_solve(LD, pivots, B), B, rtol=1e-10, atol=1e-10)


@needs_torch
def test_ldl_factor_pivots_match_torch(rng):
    import torch

    a = rng.standard_normal((3, 5, 5))
    a = a + np.swapaxes(a, -1, -2)
    got = ember.linalg.ldl_factor_ex(ember.tensor(a))
    want = torch.linalg.ldl_factor_ex(torch.tensor(a))
    assert got.pivots.tolist() == want.pivots.tolist()
    assert_close(got.LD, want.LD.numpy())


def test_ldl_factor_ex_reports_zero_pivot_in_info():
    info = ember.linalg.ldl_factor_ex(ember.zeros(2, 2)).info
    assert info.item() == 1


def test_ldl_factor_ex_check_errors_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match="not invertible"):
        ember.linalg.ldl_factor_ex(ember.zeros(2, 2), check_errors=True)


def test_ldl_factor_backward_raises(rng):
    A = _sym(rng).requires_grad_()
    LD, _ = ember.linalg.ldl_factor(A)
    assert LD.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex"):
        LD.sum().backward()


def test_ldl_solve_rejects_non_integer_pivots(rng):
    # any integer type is taken (torch casts them); floating pivots are refused
    LD, pivots = ember.linalg.ldl_factor(_sym(rng))
    with pytest.raises(RuntimeError, match="integers"):
        ember.linalg.ldl_solve(LD, pivots.double(), ember.ones(4, 1, dtype=ember.float64))


def test_lu_factor_ex_reports_singular_input_in_info():
    r = ember.linalg.lu_factor_ex(ember.tensor(SINGULAR))
    assert r.info.item() == 2 and r.pivots.tolist() == [2, 2]


def test_lu_factor_ex_check_errors_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.lu_factor_ex(ember.tensor(SINGULAR), check_errors=True)


def test_torch_lu_get_infos_returns_three_named_results():
    r = ember.lu(ember.tensor(SINGULAR), get_infos=True)
    assert type(r).__name__ == "_lu_with_info" and r.infos.item() == 2


@pytest.mark.parametrize("p", ["fro", 1, -1, math.inf, -math.inf])
def test_cond_of_singular_matrix_is_inf(p):
    r = ember.linalg.cond(ember.tensor([SINGULAR, [[1.0, 0.0], [0.0, 2.0]]]), p)
    assert math.isinf(r[0].item()) and math.isfinite(r[1].item())


def test_cond_gradient_passes_gradcheck(rng):
    from ember.autograd import gradcheck

    A = ember.tensor(rng.standard_normal((3, 3)) + 3 * np.eye(3), requires_grad=True)
    for p in (None, "fro", 1):
        assert gradcheck(lambda a: ember.linalg.cond(a, p), (A,))


def test_vander_gradient_at_zero_is_finite():
    x = ember.tensor([0.0, 2.0], dtype=ember.float64, requires_grad=True)
    ember.linalg.vander(x, N=3).sum().backward()
    assert x.grad.tolist() == [1.0, 5.0]


def test_geqrf_backward_raises_not_implemented(rng):
    A = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    a, _ = ember.geqrf(A)
    with pytest.raises(NotImplementedError, match="geqrf"):
        a.sum().backward()


def test_orgqr_and_ormqr_rebuild_the_input(rng):
    A = ember.tensor(rng.standard_normal((5, 3)))
    a, tau = ember.geqrf(A)
    R = a[:3].triu()
    assert_close(ember.orgqr(a, tau) @ R, A, rtol=1e-10, atol=1e-10)
    padded = ember.cat([R, ember.zeros(2, 3, dtype=R.dtype)])
    assert_close(ember.ormqr(a, tau, padded), A, rtol=1e-10, atol=1e-10)


def test_triangular_solve_gradient_matches_solve_triangular(rng):
    b = ember.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    A = ember.tensor(np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3), requires_grad=True)
    ember.triangular_solve(b, A).solution.sum().backward()
    gb, gA = b.grad.clone(), A.grad.clone()
    b.grad = A.grad = None
    ember.linalg.solve_triangular(A, b, upper=True).sum().backward()
    assert_close(gb, b.grad)
    assert_close(gA, A.grad)


def test_svd_lowrank_reconstructs_a_low_rank_matrix(rng):
    A = ember.tensor(rng.standard_normal((20, 3)) @ rng.standard_normal((3, 12)))
    for M in (A, A.mT):
        U, S, V = ember.svd_lowrank(M, q=5)
        assert_close(U @ ember.diag_embed(S) @ V.mT, M, rtol=1e-8, atol=1e-8)


@needs_torch
def test_svd_lowrank_q_above_min_dim_gives_min_rank_as_torch():
    import torch

    shapes = [tuple(t.shape) for t in ember.svd_lowrank(ember.ones(4, 3), q=5)]
    assert shapes == [tuple(t.shape) for t in torch.svd_lowrank(torch.ones(4, 3), q=5)]


@needs_torch
def test_pca_lowrank_singular_values_match_torch(rng):
    import torch

    X = rng.standard_normal((30, 5)) * np.array([5.0, 3.0, 1.0, 0.5, 0.1])
    _, S, _ = ember.pca_lowrank(ember.tensor(X), q=5, niter=4)
    _, St, _ = torch.pca_lowrank(torch.tensor(X), q=5, niter=4)
    assert_close(S, St.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_frobenius_and_nuclear_norm_match_torch(rng):
    import torch

    X = rng.standard_normal((2, 3, 4))
    assert_close(ember.frobenius_norm(ember.tensor(X), (0, 2)),
                 torch.frobenius_norm(torch.tensor(X), (0, 2)).numpy())
    assert_close(ember.nuclear_norm(ember.tensor(X), (0, 2), True),
                 torch.nuclear_norm(torch.tensor(X), (0, 2), True).numpy())


@pytest.mark.parametrize("name", [
    "linalg.cond", "linalg.diagonal", "linalg.ldl_factor", "linalg.ldl_factor_ex",
    "linalg.ldl_solve", "linalg.lu_factor_ex", "linalg.tensorinv", "linalg.tensorsolve",
    "linalg.vander", "lu", "lu_solve", "triangular_solve", "geqrf", "orgqr", "ormqr",
    "nuclear_norm", "frobenius_norm", "svd_lowrank", "pca_lowrank"])
def test_docstring_example_runs(name):
    import doctest

    fn = ember
    for part in name.split("."):
        fn = getattr(fn, part)
    ember.manual_seed(0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(fn, name, globs={"ember": ember})
    assert tests and any(t.examples for t in tests), f"{name} has no example"
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0
