"""``ember.distributions``: probability distributions with PyTorch's API.

Each distribution draws samples (``sample``, and ``rsample`` with gradients for
reparameterisable ones), scores values (``log_prob``, ``cdf``, ``icdf``) and reports moments
and ``entropy``; shapes follow NOTE [ Distribution shapes ] in ``distribution.py``.
Parameters and values are validated by default (NOTE [ Argument validation ]).

Alongside the distributions: ``constraints`` (parameter and support sets),
``transforms`` (bijections with log-Jacobians), ``biject_to``/``transform_to`` (constraint
-> transform), ``kl_divergence``/``register_kl``, and ``utils``.

Score-function (REINFORCE) gradients::

    >>> import ember
    >>> from ember.distributions import Categorical
    >>> logits = ember.zeros(4, requires_grad=True)
    >>> dist = Categorical(logits=logits)
    >>> action = dist.sample()
    >>> loss = -dist.log_prob(action) * 1.0
    >>> loss.backward()
    >>> logits.grad.shape
    ember.Size([4])

Reparameterised (pathwise) gradients::

    >>> from ember.distributions import Normal
    >>> loc = ember.zeros(3, requires_grad=True)
    >>> Normal(loc, 1.0).rsample().sum().backward()
    >>> loc.grad
    tensor([1., 1., 1.])
"""

from . import constraints, constraint_registry, kl, transforms, utils
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403
from .transforms import __all__ as _transforms_all
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
    "Dirichlet", "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor",
    "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal",
    "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform", "VonMises",
    "Weibull", "Wishart", "biject_to", "kl_divergence", "register_kl", "transform_to",
]
__all__.extend(_transforms_all)
