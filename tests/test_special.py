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


# ------------------------------------------------------------------------------------------------
# Bessel and Airy functions, orthogonal polynomials, incomplete gamma (issue 17)

BESSEL = ["bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
          "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
          "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@needs_torch
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_matches_torch_on_edges(name):
    import torch

    x = np.array([-3.0, -1.0, -0.0, 0.0, 1e-3, 0.5, 1.0, 5.0, 30.0, 800.0, np.inf, -np.inf,
                  np.nan])
    got = getattr(special, name)(ember.tensor(x))
    want = getattr(torch.special, name)(torch.tensor(x))
    assert_close(got, want.numpy(), rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", BESSEL + POLYNOMIALS[:1])
def test_bessel_and_polynomial_results_never_require_grad(name):
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    fn = getattr(special, name)
    r = fn(x) if name in BESSEL else fn(x, 3)
    assert not r.requires_grad


@needs_torch
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_matches_torch_on_grid(name):
    import torch

    x = np.concatenate([np.linspace(-2.5, 2.5, 41), [-1.0, 1.0, 0.0, 0.5, np.inf, -np.inf]])
    n = np.array([-3, -1, 0, 1, 2, 3, 6, 7, 8, 9, 10, 15, 25, 2.5, -0.5, np.nan, np.inf])
    X, N = np.meshgrid(x, n)
    got = getattr(special, name)(ember.tensor(X), ember.tensor(N))
    want = getattr(torch.special, name)(torch.tensor(X), torch.tensor(N))
    assert_close(got, want.numpy(), rtol=1e-8, atol=1e-8, equal_nan=True)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_takes_a_number_for_either_argument(name):
    fn = getattr(special, name)
    x = ember.tensor([0.25, 0.75])
    assert_close(fn(x, 3), fn(x, ember.tensor(3.0)))
    assert_close(fn(0.25, ember.tensor([2, 3])),
                 ember.stack([fn(ember.tensor(0.25), 2), fn(ember.tensor(0.25), 3)]))


def test_polynomial_of_two_numbers_is_a_type_error():
    with pytest.raises(TypeError):
        special.chebyshev_polynomial_t(0.5, 2)


def test_polynomial_accepts_keyword_x_and_n():
    r = special.legendre_polynomial_p(x=ember.tensor([0.5]), n=2)
    assert r.tolist() == [-0.125]


def test_polynomial_of_integers_is_float32():
    r = special.hermite_polynomial_h(ember.tensor([1, 2]), ember.tensor([2, 3]))
    assert r.dtype == ember.float32 and r.tolist() == [2.0, 40.0]


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.complex64])
def test_polynomial_low_precision_and_complex_raise_not_implemented(dtype):
    with pytest.raises(NotImplementedError, match="laguerre_polynomial_l_cpu"):
        special.laguerre_polynomial_l(ember.ones(2, dtype=dtype), 2)


@pytest.mark.parametrize("name", ["bessel_y0", "airy_ai", "modified_bessel_k1"])
def test_bessel_half_raises_not_implemented(name):
    with pytest.raises(NotImplementedError, match=f"{name}_cpu"):
        getattr(special, name)(ember.ones(2, dtype=ember.float16))


def test_gammainc_is_igamma():
    assert special.gammainc is ember.igamma and special.gammaincc is ember.igammac


def test_igamma_values_match_scipy():
    import scipy.special as sp

    a = np.array([0.5, 1.0, 2.5, 7.0])
    x = np.array([0.1, 1.0, 3.0, 5.0])
    assert_close(ember.igamma(ember.tensor(a), ember.tensor(x)), sp.gammainc(a, x))
    assert_close(ember.igammac(ember.tensor(a), ember.tensor(x)), sp.gammaincc(a, x))


def test_igamma_gradient_in_other_passes_gradcheck():
    from ember.autograd import gradcheck, gradgradcheck

    a = ember.tensor([0.7, 2.0, 3.5], dtype=ember.float64)
    x = ember.tensor([0.3, 1.1, 2.4], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: ember.igamma(a, x), (x,))
    assert gradgradcheck(lambda x: ember.igammac(a, x), (x,))


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_gradient_in_input_raises_at_backward(name):
    a = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.3, 0.7], dtype=ember.float64)
    r = getattr(ember, name)(a, x)
    assert r.requires_grad
    with pytest.raises(NotImplementedError, match=f"'{name}: input'"):
        r.sum().backward()


def test_igamma_integer_inputs_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        ember.igamma(ember.tensor([1, 2]), ember.tensor([1, 2]))


def test_igamma_inplace_writes_self():
    t = ember.tensor([1.0, 2.0])
    r = t.igamma_(ember.tensor([1.0, 1.0]))
    assert r is t
    assert_close(t, np.array([0.63212056, 0.26424112]), rtol=1e-6, atol=1e-6)


@needs_torch
def test_namespace_dictionaries_have_torch_keys():
    import torch

    assert set(torch.special.common_args) <= set(special.common_args) | {"dtype"}
    assert special.Tensor is ember.Tensor


@pytest.mark.parametrize("name", BESSEL + POLYNOMIALS + ["gammainc", "gammaincc"])
def test_docstring_example_runs(name):
    import doctest

    fn = getattr(special, name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(fn, name, globs={"ember": ember})
    assert tests and any(t.examples for t in tests), f"{name} has no example"
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0


class _NoAiryOrSphericalModule:
    """scipy.special without what cupyx.scipy.special lacks (airy, spherical_jn)."""

    def __getattr__(self, name):
        if name in ("airy", "spherical_jn"):
            raise AttributeError(name)
        import scipy.special

        return getattr(scipy.special, name)


class _OtherNamespace:
    """NumPy under another name: the kernels take the path they take for CuPy."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_kernels_off_the_cpu_keep_scipys_values_at_the_edges(monkeypatch):
    from ember._ops import special_bessel, special_ops

    xp = _OtherNamespace()
    monkeypatch.setitem(special_ops._SPECIAL, xp, _NoAiryOrSphericalModule())
    # a library whose functions miss every edge: the kernel must impose SciPy's values
    wrong = type("Wrong", (), {"__getattr__": lambda self, n: lambda a, *r: np.full_like(a, 7)})
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0])
    for k in (special_bessel._spherical_j0_kernel, special_bessel._airy_ai_kernel):
        np.testing.assert_array_equal(k(xp, a), k(np, a))
    monkeypatch.setitem(special_ops._SPECIAL, xp, wrong())
    for name, edges in (("y0", special_bessel._Y_EDGES), ("k1e", special_bessel._K_EDGES)):
        got = special_ops.scipy_kernel(name, edges)(xp, a)
        want = special_ops.scipy_kernel(name)(np, a)
        np.testing.assert_array_equal(got[:4], want[:4])
        np.testing.assert_array_equal(got[6:], want[6:])
