"""Tests for the ``ember.special`` namespace (torch.special's functions)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.special as special
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

UNARY = ["bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
         "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "logit",
         "ndtr", "ndtri", "psi", "round", "sinc"]


def _x(dtype=ember.float64):
    return ember.tensor(np.array([-2.5, -0.7, 0.0, 0.3, 0.9, 1.7, 4.0, np.nan, np.inf]),
                        dtype=dtype)


def test_namespace_has_torch_special_names():
    for name in special.__all__:
        assert callable(getattr(special, name)), name


def test_aliases_are_the_top_level_ops():
    assert special.expit is ember.sigmoid
    assert special.gammaln is ember.lgamma
    assert special.psi is ember.digamma
    assert special.multigammaln is ember.mvlgamma
    assert special.i0 is ember.i0


def test_special_only_functions_are_not_top_level():
    assert not hasattr(ember, "erfcx") and not hasattr(ember, "special_erfcx")
    assert not hasattr(ember.Tensor, "erfcx")


@needs_torch
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch_on_special_values(name):
    import torch

    x = _x()
    got = getattr(special, name)(x)
    want = getattr(torch.special, name)(torch.from_numpy(x.numpy().copy()))
    assert_close(got, want, rtol=1e-6, atol=1e-6, msg=name)


@needs_torch
@pytest.mark.parametrize("name", ["erfcx", "ndtri", "log_ndtr", "bessel_j0", "bessel_j1"])
def test_half_precision_is_rejected_like_torch(name):
    import torch

    with pytest.raises(RuntimeError):
        getattr(special, name)(ember.ones(2, dtype=ember.float16))
    with pytest.raises(RuntimeError):
        getattr(torch.special, name)(torch.ones(2, dtype=torch.float16))


@needs_torch
@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta"])
def test_binary_accepts_numbers_on_either_side(name):
    import torch

    x = ember.tensor([0.0, 0.5, 2.0, 3.0], dtype=ember.float64)
    tx = torch.from_numpy(x.numpy().copy())
    f, tf = getattr(special, name), getattr(torch.special, name)
    assert_close(f(x, 2.0), tf(tx, 2.0))
    assert_close(f(3.0, x + 1), tf(3.0, tx + 1))


def test_binary_with_two_numbers_raises():
    with pytest.raises(TypeError):
        special.xlog1py(1.0, 2.0)


def test_integer_inputs_promote_to_default_float():
    i = ember.tensor([1, 2, 3])
    for name in ("erfcx", "ndtr", "i1", "entr", "bessel_j0"):
        assert getattr(special, name)(i).dtype == ember.float32, name


def test_out_argument_is_written():
    x = ember.tensor([0.5, 1.5])
    out = ember.empty(0)
    assert special.i1(x, out=out) is out
    assert_close(out, special.i1(x))


@needs_torch
def test_polygamma_and_multigammaln_match_torch():
    import torch

    x = ember.tensor([1.5, 2.5, 4.0], dtype=ember.float64)
    tx = torch.from_numpy(x.numpy().copy())
    for n in range(4):
        assert_close(special.polygamma(n, x), torch.special.polygamma(n, tx))
    assert_close(special.multigammaln(x + 1, 3), torch.special.multigammaln(tx + 1, 3))
    assert_close(x.polygamma(2), tx.polygamma(2))


def test_polygamma_rejects_negative_n():
    with pytest.raises(RuntimeError, match="negative n"):
        special.polygamma(-1, ember.ones(2))


@needs_torch
def test_softmax_log_softmax_logsumexp_match_torch():
    import torch

    x = ember.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 10.0]])
    tx = torch.from_numpy(x.numpy().copy())
    for dim in (0, 1, -1):
        assert_close(special.softmax(x, dim), torch.special.softmax(tx, dim))
        assert_close(special.log_softmax(x, dim), torch.special.log_softmax(tx, dim))
        assert_close(special.logsumexp(x, dim), torch.special.logsumexp(tx, dim))
    assert_close(special.softmax(x, 1, dtype=ember.float64),
                 torch.special.softmax(tx, 1, dtype=torch.float64))


def test_softmax_of_integers_raises():
    with pytest.raises(RuntimeError, match="not implemented"):
        special.log_softmax(ember.tensor([1, 2]), 0)


@pytest.mark.skipif(not hasattr(ember.autograd, "gradcheck"), reason="no autograd")
@pytest.mark.parametrize("name", ["erfcx", "ndtr", "ndtri", "log_ndtr", "i0e", "i1", "i1e",
                                  "entr", "logit", "expit", "sinc"])
def test_gradcheck(name):
    from ember.autograd import gradcheck

    x = ember.tensor([0.2, 0.45, 0.8], dtype=ember.float64, requires_grad=True)
    assert gradcheck(getattr(special, name), (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_round_rejects_integer_tensors_unlike_top_level_round():
    i = ember.tensor([1, 2])
    assert ember.round(i).tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="not implemented"):
        special.round(i)
    assert special.round(ember.tensor([1.25]), decimals=1).tolist() == [1.2000000476837158]
