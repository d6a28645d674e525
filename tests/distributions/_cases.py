"""One table of distributions, built the same way in ember and in torch.

Each case builds a distribution from a module of distributions ``D`` and a tensor maker
``T`` (float64), so that the same lambda runs against ``ember.distributions`` and
``torch.distributions``; ``value`` is a point of the support for ``log_prob``/``cdf``.
"""

import numpy as np

# Cholesky factor of the correlation matrix [[1, .3, .2], [.3, 1, .1], [.2, .1, 1]]
_CORR_L = np.linalg.cholesky(np.array([[1.0, 0.3, 0.2], [0.3, 1.0, 0.1], [0.2, 0.1, 1.0]]))
_SPD3 = [[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]


class Case:
    def __init__(self, name, build, value, skip=(), moments=True, dtype="float64"):
        self.name = name
        self.dtype = dtype  # float32 where torch fails in float64
        self.build = build  # (D, T) -> distribution
        self.value = value  # nested list, or callable T -> tensor
        self.skip = set(skip)  # properties whose torch value is known to be wrong
        self.moments = moments  # whether sample moments can be checked against mean/var

    def __repr__(self):
        return self.name


CASES = [
    Case("Normal", lambda D, T: D.Normal(T([0.0, 1.5]), T([1.0, 0.5])), [0.3, 1.0]),
    Case("Normal-floats", lambda D, T: D.Normal(0.0, 2.0), 0.4),
    Case("Categorical-probs",
         lambda D, T: D.Categorical(probs=T([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
         ("long", [2, 0]), moments=False),
    Case("Categorical-logits", lambda D, T: D.Categorical(logits=T([[1.0, -1.0, 0.5]])),
         ("long", [1]), moments=False),
    Case("Bernoulli-probs", lambda D, T: D.Bernoulli(probs=T([0.3, 0.8])), [1.0, 0.0]),
    Case("Bernoulli-logits", lambda D, T: D.Bernoulli(logits=T([-0.5, 2.0])), [1.0, 0.0]),
    Case("Uniform", lambda D, T: D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])), [0.5, 0.0]),
    Case("MultivariateNormal-cov",
         lambda D, T: D.MultivariateNormal(T([0.0, 1.0]), T([[2.0, 0.5], [0.5, 1.0]])),
         [[0.3, 0.2], [1.0, -1.0]]),
    Case("MultivariateNormal-tril",
         lambda D, T: D.MultivariateNormal(T([[0.0, 1.0], [1.0, 0.0]]),
                                           scale_tril=T([[1.0, 0.0], [0.5, 2.0]])),
         [[0.3, 0.2], [1.0, -1.0]]),
    Case("MultivariateNormal-precision",
         lambda D, T: D.MultivariateNormal(T([0.0, 0.0, 1.0]), precision_matrix=T(_SPD3)),
         [0.1, 0.2, 0.3]),
    Case("Independent",
         lambda D, T: D.Independent(D.Normal(T([[0.0, 1.0]]), T([[1.0, 2.0]])), 1),
         [[0.5, 0.5]]),
    Case("TransformedDistribution",
         lambda D, T: D.TransformedDistribution(
             D.Normal(T([0.0, 1.0]), T([1.0, 0.5])),
             [D.ExpTransform(), D.AffineTransform(1.0, 2.0)]),
         [2.0, 3.0], moments=False),
    Case("Beta", lambda D, T: D.Beta(T([2.0, 0.5]), T([3.0, 0.7])), [0.3, 0.6]),
    Case("Gamma", lambda D, T: D.Gamma(T([2.0, 0.5]), T([3.0, 1.0])), [0.3, 1.2]),
    Case("Dirichlet", lambda D, T: D.Dirichlet(T([[1.0, 2.0, 3.0], [0.5, 0.5, 2.0]])),
         [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
    Case("Exponential", lambda D, T: D.Exponential(T([0.5, 2.0])), [0.3, 1.0]),
    Case("Laplace", lambda D, T: D.Laplace(T([0.0, 1.0]), T([1.0, 2.0])), [0.3, -1.0]),
    Case("Poisson", lambda D, T: D.Poisson(T([1.0, 4.0])), [0.0, 3.0]),
    Case("Binomial", lambda D, T: D.Binomial(10, probs=T([0.2, 0.7])), [2.0, 7.0]),
    Case("Binomial-logits", lambda D, T: D.Binomial(T([5.0, 5.0]), logits=T([-1.0, 1.0])),
         [0.0, 5.0]),
    Case("Multinomial", lambda D, T: D.Multinomial(5, probs=T([0.2, 0.3, 0.5])),
         [1.0, 1.0, 3.0]),
    Case("OneHotCategorical", lambda D, T: D.OneHotCategorical(probs=T([[0.2, 0.3, 0.5]])),
         [[0.0, 0.0, 1.0]]),
    Case("OneHotCategoricalStraightThrough",
         lambda D, T: D.OneHotCategoricalStraightThrough(logits=T([0.2, -0.3, 0.5])),
         [0.0, 1.0, 0.0]),
    Case("RelaxedBernoulli",
         lambda D, T: D.RelaxedBernoulli(T(0.5), probs=T([0.3, 0.8])), [0.2, 0.9],
         moments=False),
    Case("RelaxedOneHotCategorical",
         lambda D, T: D.RelaxedOneHotCategorical(T(0.5), probs=T([0.2, 0.3, 0.5])),
         [0.1, 0.2, 0.7], moments=False),
    Case("LogNormal", lambda D, T: D.LogNormal(T([0.0, 1.0]), T([1.0, 0.5])), [0.5, 2.0]),
    Case("StudentT",
         lambda D, T: D.StudentT(T([3.0, 0.8, 1.5]), T([0.0, 1.0, 0.0]), T([1.0, 2.0, 1.0])),
         [0.3, 1.0, 2.0], moments=False),
    Case("Cauchy", lambda D, T: D.Cauchy(T([0.0, 1.0]), T([1.0, 2.0])), [0.3, -2.0],
         moments=False),
    Case("Gumbel", lambda D, T: D.Gumbel(T([0.0, 1.0]), T([1.0, 2.0])), [0.3, -1.0]),
    Case("HalfNormal", lambda D, T: D.HalfNormal(T([1.0, 2.0])), [0.3, 2.0]),
    Case("HalfCauchy", lambda D, T: D.HalfCauchy(T([1.0, 2.0])), [0.3, 2.0], moments=False),
    Case("Chi2", lambda D, T: D.Chi2(T([3.0, 1.5])), [1.0, 2.0]),
    Case("FisherSnedecor", lambda D, T: D.FisherSnedecor(T([3.0, 5.0]), T([9.0, 12.0])),
         [0.5, 1.5]),
    Case("Geometric-probs", lambda D, T: D.Geometric(probs=T([0.3, 0.9])), [2.0, 0.0]),
    Case("Geometric-logits", lambda D, T: D.Geometric(logits=T([-1.0, 1.0])), [2.0, 0.0]),
    Case("NegativeBinomial",
         lambda D, T: D.NegativeBinomial(T([3.0, 5.0]), probs=T([0.4, 0.2])), [2.0, 0.0]),
    Case("ContinuousBernoulli",
         lambda D, T: D.ContinuousBernoulli(probs=T([0.2, 0.5, 0.7])), [0.3, 0.4, 0.9]),
    Case("LogisticNormal", lambda D, T: D.LogisticNormal(T([0.0, 1.0]), T([1.0, 0.5])),
         [0.2, 0.3, 0.5], moments=False),
    Case("LowRankMultivariateNormal",
         lambda D, T: D.LowRankMultivariateNormal(
             T([0.0, 1.0, 2.0]), T([[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]]), T([1.0, 0.5, 2.0])),
         [0.1, 0.2, 0.3]),
    Case("MixtureSameFamily",
         lambda D, T: D.MixtureSameFamily(D.Categorical(T([0.3, 0.7])),
                                          D.Normal(T([-1.0, 1.0]), T([1.0, 0.5]))),
         0.2),
    Case("MixtureSameFamily-multivariate",
         lambda D, T: D.MixtureSameFamily(
             D.Categorical(T([0.3, 0.7])),
             D.Independent(D.Normal(T([[0.0, 1.0], [1.0, 0.0]]), T([[1.0, 1.0], [0.5, 0.5]])),
                           1)),
         [0.2, 0.1]),
    Case("VonMises", lambda D, T: D.VonMises(T([0.0, 1.0]), T([0.5, 4.0])), [0.3, 2.0],
         moments=False),
    # torch's Weibull.mode is wrong for concentration < 1 (it returns scale, not 0)
    Case("Weibull", lambda D, T: D.Weibull(T([1.0, 2.0]), T([0.5, 2.0])), [0.3, 2.0],
         skip={"mode"}),
    # torch's Kumaraswamy.mode is NaN even where the mode exists
    Case("Kumaraswamy", lambda D, T: D.Kumaraswamy(T([2.0, 0.5]), T([3.0, 0.7])), [0.3, 0.6],
         skip={"mode"}),
    Case("Pareto", lambda D, T: D.Pareto(T([1.0, 2.0]), T([3.0, 4.5])), [1.5, 3.0]),
    Case("LKJCholesky", lambda D, T: D.LKJCholesky(3, T([0.5, 2.0])), _CORR_L.tolist(),
         moments=False),
    Case("Wishart",
         lambda D, T: D.Wishart(T([4.0]), covariance_matrix=T([[[2.0, 0.3], [0.3, 1.0]]])),
         [[1.0, 0.2], [0.2, 0.5]]),
    Case("Wishart-precision",
         lambda D, T: D.Wishart(T(5.0), precision_matrix=T(_SPD3)),
         [[1.0, 0.2, 0.1], [0.2, 0.5, 0.0], [0.1, 0.0, 2.0]]),
    Case("InverseGamma", lambda D, T: D.InverseGamma(T([3.0, 4.5]), T([2.0, 1.0])),
         [0.5, 2.0]),
    Case("GeneralizedPareto",
         lambda D, T: D.GeneralizedPareto(T([0.0, 0.0, 1.0]), T([1.0, 2.0, 1.0]),
                                          T([0.0, -0.5, 0.2])),
         [0.5, 0.5, 1.5], dtype="float32"),  # torch's log_prob fails in float64
]


def maker(lib, dtype="float64"):
    """A tensor maker for ``lib`` (ember or torch)."""
    def T(v):
        return lib.tensor(v, dtype=getattr(lib, dtype))
    return T


def value_for(case, lib):
    v = case.value
    if isinstance(v, tuple) and v[0] == "long":
        return lib.tensor(v[1], dtype=lib.long)
    return maker(lib, case.dtype)(v)
