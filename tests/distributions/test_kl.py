"""KL divergences against torch, and the dispatch rules of ``register_kl``."""

import warnings

import numpy as np
import pytest

import ember
import ember.distributions as ED

from ._cases import maker

try:
    import torch
    import torch.distributions as TD

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")

_SPD = [[2.0, 0.5], [0.5, 1.0]]
_SPD_B = [[1.0, -0.2], [-0.2, 0.7]]

# (id, build p, build q): each lambda takes (D, T)
PAIRS = [
    ("Normal", lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Bernoulli", lambda D, T: D.Bernoulli(T([0.3, 0.0, 1.0])),
     lambda D, T: D.Bernoulli(T([0.6, 0.5, 0.5]))),
    ("Beta", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])),
     lambda D, T: D.Beta(T([1.0, 2.0]), T([1.5, 0.3]))),
    ("Binomial", lambda D, T: D.Binomial(T([10.0, 10.0]), T([0.3, 0.6])),
     lambda D, T: D.Binomial(T([10.0, 8.0]), T([0.5, 0.2]))),
    ("Categorical", lambda D, T: D.Categorical(T([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]])),
     lambda D, T: D.Categorical(T([[0.4, 0.4, 0.2], [0.5, 0.5, 0.0]]))),
    ("OneHotCategorical", lambda D, T: D.OneHotCategorical(T([0.2, 0.3, 0.5])),
     lambda D, T: D.OneHotCategorical(T([0.4, 0.4, 0.2]))),
    ("Dirichlet", lambda D, T: D.Dirichlet(T([1.0, 2.0, 3.0])),
     lambda D, T: D.Dirichlet(T([0.5, 0.5, 2.0]))),
    ("Exponential", lambda D, T: D.Exponential(T([0.5, 2.0])),
     lambda D, T: D.Exponential(T([1.0, 3.0]))),
    ("Gamma", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])),
     lambda D, T: D.Gamma(T([1.0, 1.5]), T([2.0, 0.5]))),
    ("Gumbel", lambda D, T: D.Gumbel(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Gumbel(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Geometric", lambda D, T: D.Geometric(T([0.3, 0.8])),
     lambda D, T: D.Geometric(T([0.5, 0.2]))),
    ("HalfNormal", lambda D, T: D.HalfNormal(T([1.0, 2.0])),
     lambda D, T: D.HalfNormal(T([0.5, 3.0]))),
    ("Laplace", lambda D, T: D.Laplace(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Laplace(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Poisson", lambda D, T: D.Poisson(T([1.0, 4.0])), lambda D, T: D.Poisson(T([2.0, 3.0]))),
    ("Uniform", lambda D, T: D.Uniform(T([0.0, 0.0]), T([1.0, 2.0])),
     lambda D, T: D.Uniform(T([-1.0, 0.5]), T([2.0, 3.0]))),
    ("Pareto", lambda D, T: D.Pareto(T([1.0, 2.0]), T([3.0, 2.0])),
     lambda D, T: D.Pareto(T([0.5, 3.0]), T([2.0, 1.0]))),
    ("Cauchy", lambda D, T: D.Cauchy(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Cauchy(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("ContinuousBernoulli", lambda D, T: D.ContinuousBernoulli(T([0.2, 0.5, 0.7])),
     lambda D, T: D.ContinuousBernoulli(T([0.6, 0.3, 0.5]))),
    ("MultivariateNormal", lambda D, T: D.MultivariateNormal(T([0.0, 1.0]), T(_SPD)),
     lambda D, T: D.MultivariateNormal(T([[1.0, 0.0], [0.0, 0.0]]), T(_SPD_B))),
    ("LowRank-LowRank",
     lambda D, T: D.LowRankMultivariateNormal(T([0.0, 1.0]), T([[1.0], [0.5]]), T([1.0, 0.5])),
     lambda D, T: D.LowRankMultivariateNormal(T([1.0, 0.0]), T([[0.2], [1.0]]), T([0.5, 2.0]))),
    ("LowRank-MVN",
     lambda D, T: D.LowRankMultivariateNormal(T([0.0, 1.0]), T([[1.0], [0.5]]), T([1.0, 0.5])),
     lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T(_SPD_B))),
    ("MVN-LowRank", lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T(_SPD_B)),
     lambda D, T: D.LowRankMultivariateNormal(T([0.0, 1.0]), T([[1.0], [0.5]]), T([1.0, 0.5]))),
    ("Independent", lambda D, T: D.Independent(D.Normal(T([[0.0, 1.0]]), T([[1.0, 2.0]])), 1),
     lambda D, T: D.Independent(D.Normal(T([[1.0, 0.0]]), T([[2.0, 1.0]])), 1)),
    ("LogNormal", lambda D, T: D.LogNormal(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.LogNormal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("ExpFamily-Wishart", lambda D, T: D.Wishart(T(4.0), T(_SPD)),
     lambda D, T: D.Wishart(T(3.0), T(_SPD_B))),
    ("Exponential-Gamma", lambda D, T: D.Exponential(T([0.5, 2.0])),
     lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0]))),
    ("Exponential-Normal", lambda D, T: D.Exponential(T([0.5, 2.0])),
     lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, 2.0]))),
    ("Normal-Gumbel", lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Gumbel(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Uniform-Normal", lambda D, T: D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Uniform-Exponential", lambda D, T: D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])),
     lambda D, T: D.Exponential(T([0.5, 2.0]))),
    ("Uniform-Gamma", lambda D, T: D.Uniform(T([0.5, -1.0]), T([1.0, 2.0])),
     lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0]))),
    ("Uniform-Beta", lambda D, T: D.Uniform(T([0.2, 0.5]), T([0.7, 1.5])),
     lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7]))),
    ("Uniform-Gumbel", lambda D, T: D.Uniform(T([0.2, 0.5]), T([0.7, 1.5])),
     lambda D, T: D.Gumbel(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Beta-Uniform", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])),
     lambda D, T: D.Uniform(T([0.0, 0.5]), T([1.0, 1.0]))),
    ("Beta-Normal", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Beta-Exponential", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])),
     lambda D, T: D.Exponential(T([0.5, 2.0]))),
    ("Beta-Gamma", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])),
     lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0]))),
    ("Gamma-Normal", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Gamma-Exponential", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])),
     lambda D, T: D.Exponential(T([0.5, 2.0]))),
    ("Gamma-Gumbel", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])),
     lambda D, T: D.Gumbel(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Exponential-Gumbel", lambda D, T: D.Exponential(T([0.5, 2.0])),
     lambda D, T: D.Gumbel(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Laplace-Normal", lambda D, T: D.Laplace(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Gumbel-Normal", lambda D, T: D.Gumbel(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Normal(T([0.5, -1.0]), T([1.5, 0.5]))),
    ("Bernoulli-Poisson", lambda D, T: D.Bernoulli(T([0.3, 0.8])),
     lambda D, T: D.Poisson(T([1.0, 4.0]))),
    ("Normal-Uniform (infinite)", lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
     lambda D, T: D.Uniform(T([0.0, 0.0]), T([1.0, 2.0]))),
    ("Gamma-Beta (infinite)", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])),
     lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7]))),
    ("Poisson-Binomial (infinite)", lambda D, T: D.Poisson(T([1.0, 4.0])),
     lambda D, T: D.Binomial(T([10.0, 8.0]), T([0.5, 0.2]))),
]


@needs_torch
@pytest.mark.parametrize("name, build_p, build_q", PAIRS, ids=[p[0] for p in PAIRS])
def test_kl_matches_torch(name, build_p, build_q):
    Te, Tt = maker(ember), maker(torch)
    ours = ED.kl_divergence(build_p(ED, Te), build_q(ED, Te))
    theirs = TD.kl_divergence(build_p(TD, Tt), build_q(TD, Tt))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-9)


def test_kl_of_a_distribution_with_itself_is_zero():
    d = ED.MultivariateNormal(ember.zeros(3), ember.eye(3) * 2)
    np.testing.assert_allclose(ED.kl_divergence(d, d).item(), 0.0, atol=1e-6)


def test_kl_missing_pair_raises():
    with pytest.raises(NotImplementedError, match="No KL"):
        ED.kl_divergence(ED.VonMises(0.0, 1.0), ED.Normal(0.0, 1.0))


def test_kl_cross_exponential_families_raise():
    with pytest.raises(NotImplementedError, match="exponential families"):
        ED.kl_divergence(ED.Poisson(ember.tensor(1.0)), ED.Dirichlet(ember.ones(2)))


def test_register_kl_most_specific_wins():
    class MyNormal(ED.Normal):
        pass

    class MyOtherNormal(MyNormal):
        pass

    @ED.register_kl(MyNormal, ED.Normal)
    def _kl_mine(p, q):
        return ember.tensor(-1.0)

    try:
        assert ED.kl_divergence(MyOtherNormal(0.0, 1.0), ED.Normal(0.0, 1.0)).item() == -1.0
        # the base pair still serves plain Normals
        assert ED.kl_divergence(ED.Normal(0.0, 1.0), MyNormal(0.0, 1.0)).item() == 0.0
    finally:
        del ED.kl._KL_REGISTRY[MyNormal, ED.Normal]
        ED.kl._KL_MEMOIZE.clear()


def test_register_kl_ambiguous_warns():
    class A(ED.Normal):
        pass

    class B(ED.Normal):
        pass

    @ED.register_kl(A, ED.Normal)
    def _kl_a(p, q):
        return ember.tensor(1.0)

    @ED.register_kl(ED.Normal, B)
    def _kl_b(p, q):
        return ember.tensor(2.0)

    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert ED.kl_divergence(A(0.0, 1.0), B(0.0, 1.0)).item() == 1.0
        assert any("Ambiguous" in str(x.message) for x in w)
    finally:
        del ED.kl._KL_REGISTRY[A, ED.Normal]
        del ED.kl._KL_REGISTRY[ED.Normal, B]
        ED.kl._KL_MEMOIZE.clear()


def test_register_kl_rejects_non_classes():
    # any class is accepted, as in PyTorch (pyro registers rules for its own bases)
    with pytest.raises(TypeError, match="must be a class"):
        ED.register_kl(3, ED.Normal)
    assert callable(ED.register_kl(int, ED.Normal))
