"""Focused tests for products and ember.linalg beyond the generic OpInfo ones: error types,
the *_ex info results, lstsq's driver rules, gradients against PyTorch's and matmul details."""

import re

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _pd(n, rng, dtype=np.float64):
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype)


# ------------------------------------------------------------------------------------------------
# matmul


def test_matmul_float32_stays_float32(rng):
    a = ember.tensor(rng.standard_normal((8, 8)).astype(np.float32))
    r = a @ a
    assert r.dtype == ember.float32
    np.testing.assert_allclose(r.numpy(), a.numpy() @ a.numpy(), rtol=1e-5)


def test_matmul_operator_forms(rng):
    a = ember.tensor(rng.standard_normal((3, 3)))
    b = ember.tensor(rng.standard_normal((3, 3)))
    want = a.numpy() @ b.numpy()
    np.testing.assert_allclose(a.matmul(b).numpy(), want)
    np.testing.assert_allclose(a.__rmatmul__(b).numpy(), b.numpy() @ a.numpy())
    c = a.clone()
    c @= b
    np.testing.assert_allclose(c.numpy(), want)


def test_matmul_out_resizes(rng):
    a = ember.tensor(rng.standard_normal((2, 3)))
    b = ember.tensor(rng.standard_normal((3, 4)))
    out = ember.empty(0, dtype=ember.float64)
    r = ember.matmul(a, b, out=out)
    assert r is out and tuple(out.shape) == (2, 4)


def test_matmul_mixed_dtypes_raise():
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.ones(2, 3) @ ember.ones(3, 2, dtype=ember.float64)


def test_matmul_shape_message_names_shapes():
    with pytest.raises(RuntimeError, match=r"\(2x3 and 4x5\)"):
        ember.mm(ember.ones(2, 3), ember.ones(4, 5))


def test_matmul_int_wraps_like_torch():
    a = ember.full((2, 2), 100, dtype=ember.uint8)
    assert (a @ a).dtype == ember.uint8
    assert (a @ a)[0, 0].item() == (100 * 100 * 2) % 256


def test_matmul_wrong_type_is_type_error():
    with pytest.raises(TypeError):
        ember.matmul(ember.ones(2, 2), [[1.0, 2.0]])


@needs_torch
def test_matmul_broadcast_gradients_match_torch(rng):
    import torch

    a = rng.standard_normal((2, 1, 3, 4))
    b = rng.standard_normal((5, 4, 2))
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (ea @ eb).sum().backward()
    (ta @ tb).sum().backward()
    assert_close(ea.grad, ta.grad)
    assert_close(eb.grad, tb.grad)


@needs_torch
def test_addmm_beta_zero_ignores_nan():
    import torch

    c = ember.full((2, 2), float("nan"))
    r = ember.addmm(c, ember.ones(2, 3), ember.ones(3, 2), beta=0)
    t = torch.addmm(torch.full((2, 2), float("nan")), torch.ones(2, 3), torch.ones(3, 2),
                    beta=0)
    assert_close(r, t)


def test_addmm_inplace_returns_self(rng):
    c = ember.zeros(2, 2)
    r = c.addmm_(ember.ones(2, 3), ember.ones(3, 2), alpha=2)
    assert r is c
    assert_close(c, ember.full((2, 2), 6.0))


# ------------------------------------------------------------------------------------------------
# einsum


@needs_torch
def test_einsum_sublist_form_matches_torch(rng):
    import torch

    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    r = ember.einsum(ember.tensor(a), [0, 1], ember.tensor(b), [1, 2], [0, 2])
    t = torch.einsum(torch.tensor(a), [0, 1], torch.tensor(b), [1, 2], [0, 2])
    assert_close(r, t)


def test_einsum_operands_as_list(rng):
    a = ember.tensor(rng.standard_normal((3, 3)))
    assert_close(ember.einsum("ij->ji", [a]), ember.tensor(a.numpy().T))


@needs_torch
def test_einsum_size_one_broadcasts_like_torch(rng):
    import torch

    a, b = rng.standard_normal((2, 1)), rng.standard_normal((1, 3))
    r = ember.einsum("ij,ij->ij", ember.tensor(a), ember.tensor(b))
    t = torch.einsum("ij,ij->ij", torch.tensor(a), torch.tensor(b))
    assert_close(r, t)


# ------------------------------------------------------------------------------------------------
# errors and the *_ex variants


def test_linalg_error_is_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


def test_inv_singular_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.inv: \(Batch element 1\)"):
        ember.linalg.inv(ember.stack([ember.eye(2), ember.zeros(2, 2)]))


def test_solve_singular_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.solve(ember.zeros(3, 3), ember.ones(3))


def test_cholesky_not_pd_raises_linalg_error():
    with pytest.raises(ember.linalg.LinAlgError, match="positive-definite"):
        ember.linalg.cholesky(-ember.eye(3))


@pytest.mark.parametrize("dtype", [ember.int64, ember.float16])
def test_linalg_rejects_int_and_low_precision(dtype):
    with pytest.raises(RuntimeError, match="linalg.inv"):
        ember.linalg.inv(ember.ones(2, 2, dtype=dtype))


@needs_torch
def test_inv_ex_info_matches_torch():
    import torch

    a = np.stack([np.eye(2), np.zeros((2, 2))])
    r = ember.linalg.inv_ex(ember.tensor(a))
    t = torch.linalg.inv_ex(torch.tensor(a))
    assert r.info.dtype == ember.int32
    assert (r.info.numpy() != 0).tolist() == (t.info.numpy() != 0).tolist()
    assert_close(r.inverse[0], t.inverse[0])


@needs_torch
def test_cholesky_ex_info_matches_torch(rng):
    import torch

    a = np.stack([_pd(3, rng), -np.eye(3), np.diag([1.0, -1.0, 1.0])])
    r = ember.linalg.cholesky_ex(ember.tensor(a))
    t = torch.linalg.cholesky_ex(torch.tensor(a))
    assert r.info.tolist() == t.info.tolist()
    assert_close(r.L[0], t.L[0])


def test_solve_ex_reports_singular():
    r = ember.linalg.solve_ex(ember.zeros(2, 2), ember.ones(2))
    assert r.info.item() != 0


# ------------------------------------------------------------------------------------------------
# lstsq


@needs_torch
@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_lstsq_results_match_torch(rng, driver, shape):
    import torch

    m, n = shape
    if driver == "gels" and m < n:
        pytest.skip("gels needs full rank m >= n in this test")
    a, b = rng.standard_normal(shape), rng.standard_normal((m, 2))
    r = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
    t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for x, y in zip(r, t):
        assert tuple(x.shape) == tuple(y.shape)
        assert x.dtype.name == str(y.dtype).replace("torch.", "")
    assert_close(r.solution, t.solution)
    if t.residuals.numel():
        assert_close(r.residuals, t.residuals)
    if t.rank.numel():
        assert r.rank.tolist() == t.rank.tolist()


# ------------------------------------------------------------------------------------------------
# decompositions: modes and gradients against torch


def test_qr_mode_r_returns_empty_q(rng):
    Q, R = ember.linalg.qr(ember.tensor(rng.standard_normal((4, 3))), mode="r")
    assert Q.numel() == 0 and tuple(R.shape) == (3, 3)


def test_qr_bad_mode_raises():
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        ember.linalg.qr(ember.ones(2, 2), mode="economic")


def test_svd_compute_uv_false_zero_fills(rng):
    a = rng.standard_normal((4, 3))
    U, S, V = ember.svd(ember.tensor(a), compute_uv=False)
    assert not U.numpy().any() and not V.numpy().any()
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False))


@needs_torch
@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigvalsh", "svdvals", "pinv",
                                  "matrix_exp"])
def test_linalg_gradients_match_torch(rng, name):
    import torch

    a = _pd(4, rng)
    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    w = rng.standard_normal(getattr(torch.linalg, name)(ta).shape)
    (getattr(ember.linalg, name)(ea) * ember.tensor(w)).sum().backward()
    (getattr(torch.linalg, name)(ta) * torch.tensor(w)).sum().backward()
    assert_close(ea.grad, ta.grad, rtol=1e-6, atol=1e-8)


@needs_torch
def test_svd_gradient_matches_torch_complex(rng):
    import torch

    a = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))

    def loss(mod, x):
        U, S, Vh = mod.linalg.svd(x, full_matrices=False)
        return (U @ Vh).abs().sum() + S.sum()

    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    loss(ember, ea).backward()
    loss(torch, ta).backward()
    assert_close(ea.grad, ta.grad.resolve_conj(), rtol=1e-6, atol=1e-8)


def test_matrix_power_zero_is_identity(rng):
    a = ember.tensor(rng.standard_normal((2, 3, 3)))
    r = ember.linalg.matrix_power(a, 0)
    np.testing.assert_array_equal(r.numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))


def test_matrix_power_rejects_float_exponent():
    with pytest.raises(TypeError):
        ember.linalg.matrix_power(ember.eye(2), 2.0)


# ------------------------------------------------------------------------------------------------
# norms


@needs_torch
@pytest.mark.parametrize("kwargs", [{}, {"ord": 1}, {"ord": "nuc"}, {"ord": float("inf")},
                                    {"ord": -2}, {"dim": 1}, {"ord": 3, "dim": 0},
                                    {"dim": (0, 1), "keepdim": True}])
def test_linalg_norm_matches_torch(rng, kwargs):
    import torch

    a = rng.standard_normal((3, 4))
    assert_close(ember.linalg.norm(ember.tensor(a), **kwargs),
                 torch.linalg.norm(torch.tensor(a), **kwargs))


@needs_torch
def test_vector_norm_gradient_at_zero_matches_torch():
    import torch

    ea = ember.zeros(3, requires_grad=True)
    ta = torch.zeros(3, requires_grad=True)
    ember.linalg.vector_norm(ea).backward()
    torch.linalg.vector_norm(ta).backward()
    assert_close(ea.grad, ta.grad)


def test_vector_norm_dtype_argument(rng):
    a = ember.tensor(rng.standard_normal(4).astype(np.float32))
    assert ember.linalg.vector_norm(a, dtype=ember.float64).dtype == ember.float64


# ------------------------------------------------------------------------------------------------
# misc


@needs_torch
def test_cdist_mm_path_matches_torch(rng):
    import torch

    a, b = rng.standard_normal((40, 5)), rng.standard_normal((30, 5))
    assert_close(ember.cdist(ember.tensor(a), ember.tensor(b)),
                 torch.cdist(torch.tensor(a), torch.tensor(b)))


@needs_torch
def test_cov_weights_gradients_match_torch(rng):
    import torch

    x = rng.standard_normal((3, 6))
    aw = rng.uniform(0.5, 2, 6)
    fw = rng.integers(1, 4, 6)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ember.cov(ex, fweights=ember.tensor(fw), aweights=ember.tensor(aw)).sum().backward()
    torch.cov(tx, fweights=torch.tensor(fw), aweights=torch.tensor(aw)).sum().backward()
    assert_close(ex.grad, tx.grad)


def test_block_diag_promotes(rng):
    r = ember.block_diag(ember.ones(1, 2, dtype=ember.int32), ember.ones(2, 1))
    assert r.dtype == ember.float32 and tuple(r.shape) == (3, 3)


def test_list_ops_has_linalg():
    names = {row["name"] for row in ember.list_ops()}
    for n in ("matmul", "einsum", "linalg_inv", "linalg_svd", "linalg_vector_norm", "cdist"):
        assert n in names


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("kwargs", [
    {"fweights": [1.0, 2.0, 3.0, 4.0]}, {"aweights": [1, 2, 3, 4]}, {"fweights": [1, 2, 3]},
    {"aweights": [1.0, -2.0, 3.0, 4.0]}, {"fweights": [[1, 2], [3, 4]]}])
def test_cov_weight_errors_match_torch(kwargs):
    import torch

    (name, value), = kwargs.items()
    x = np.ones((2, 4))
    with pytest.raises(RuntimeError) as theirs:
        torch.cov(torch.tensor(x), **{name: torch.tensor(value)})
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        ember.cov(ember.tensor(x), **{name: ember.tensor(value)})


@pytest.mark.parametrize("name,shape,args", [
    ("addmm", (2, 2), ((2, 2), (2, 2))), ("addmv", (2,), ((2, 2), (2,))),
    ("addr", (2, 2), ((2,), (2,))), ("baddbmm", (1, 2, 2), ((1, 2, 2), (1, 2, 2))),
    ("addbmm", (2, 2), ((1, 2, 2), (1, 2, 2)))])
def test_add_products_beta_zero_give_input_zero_gradient(name, shape, args):
    # PyTorch: beta=0 ignores input's values but its gradient is zeros, not None
    i = ember.zeros(shape, requires_grad=True)
    getattr(ember, name)(i, *(ember.ones(s) for s in args), beta=0).sum().backward()
    assert i.grad is not None and not i.grad.any()
