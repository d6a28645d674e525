"""ember.linalg and ember.fft expose PyTorch's names, signatures and named-tuple results."""

import inspect

import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@pytest.mark.parametrize("mod", ["linalg", "fft"])
def test_all_names_exist(mod):
    ns = getattr(ember, mod)
    for name in ns.__all__:
        assert callable(getattr(ns, name)), f"ember.{mod}.{name}"


@needs_torch
@pytest.mark.parametrize("mod", ["linalg", "fft"])
def test_names_exist_in_torch(mod):
    import torch

    for name in getattr(ember, mod).__all__:
        assert hasattr(getattr(torch, mod), name), f"torch.{mod}.{name} does not exist"


@needs_torch
@pytest.mark.parametrize("name", ["vector_norm", "matrix_norm", "norm", "solve", "lstsq",
                                  "svd", "eigh", "pinv", "matrix_rank", "qr", "cholesky",
                                  "solve_triangular", "cross", "vecdot"])
def test_linalg_keyword_names_match_torch(name):
    import torch

    ours = inspect.signature(getattr(ember.linalg, name)).parameters
    doc = getattr(torch.linalg, name).__doc__ or ""
    # every keyword torch documents in the signature line is accepted by ours
    first = doc.strip().splitlines()[0]
    for kw in ("ord", "dim", "keepdim", "dtype", "left", "upper", "UPLO", "full_matrices",
               "hermitian", "atol", "rtol", "mode", "driver", "unitriangular", "rcond"):
        if f"{kw}=" in first or f", {kw}" in first:
            assert kw in ours, f"linalg.{name} lacks keyword {kw!r}"


def test_named_tuple_fields():
    a = ember.eye(3, dtype=ember.float64) * 2
    assert ember.linalg.slogdet(a)._fields == ("sign", "logabsdet")
    assert ember.linalg.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert ember.linalg.svd(a)._fields == ("U", "S", "Vh")
    assert ember.linalg.qr(a)._fields == ("Q", "R")
    assert ember.linalg.lstsq(a, a)._fields == ("solution", "residuals", "rank",
                                                "singular_values")
    assert ember.linalg.inv_ex(a)._fields == ("inverse", "info")
    assert ember.linalg.cholesky_ex(a)._fields == ("L", "info")
    assert ember.svd(a)._fields == ("U", "S", "V")
    assert type(ember.linalg.eig(a)).__name__ == "linalg_eig"


def test_linalg_error_exported():
    # named as PyTorch's torch._C._LinAlgError, and found there
    assert ember.linalg.LinAlgError.__name__ == "_LinAlgError"
    assert ember._C._LinAlgError is ember.linalg.LinAlgError
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


def test_top_level_functions_exist():
    for name in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
                 "addmv", "addr", "addbmm", "baddbmm", "einsum", "tensordot", "kron", "cross",
                 "trace", "chain_matmul", "cdist", "cartesian_prod", "combinations",
                 "block_diag", "cov", "corrcoef", "vander", "logdet", "det", "inverse",
                 "cholesky_solve", "matrix_power", "matrix_exp", "pinverse", "slogdet",
                 "cholesky", "qr", "svd", "norm", "lu_unpack", "cholesky_inverse"):
        assert callable(getattr(ember, name)), name
    for name in ("matmul", "mm", "addmm_", "baddbmm_", "addr_", "inverse", "det", "norm",
                 "cholesky", "svd", "qr", "matrix_power", "matrix_exp", "pinverse", "trace",
                 "kron", "cross", "outer", "inner", "dot", "vdot", "mv", "bmm"):
        assert callable(getattr(ember.Tensor, name)), f"Tensor.{name}"
