"""KL divergences: ``kl_divergence(p, q)`` and the ``register_kl`` table behind it.

NOTE [ KL dispatch ]
Implementations are registered per pair of distribution classes. For a call on types
``(P, Q)`` every registered pair ``(A, B)`` with ``P <= A`` and ``Q <= B`` (subclass order)
matches; the most specific match wins, comparing the first argument first. If ordering by
the second argument first would pick a different implementation the choice is ambiguous:
we warn and keep the first, and registering the exact pair silences the warning. Results of
the lookup are memoised per type pair; registering clears the memo.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ember
import ember.nn.functional as F

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution  # noqa: F401 - in torch.distributions.kl too
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> fn
_KL_MEMOIZE: dict = {}  # (type_p, type_q) -> fn, after dispatch


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence for a pair of distribution
    classes (NOTE [ KL dispatch ]).

    Any pair of classes is accepted, as in PyTorch: libraries register rules for their own
    distribution bases that do not derive from :class:`Distribution` (pyro's
    ``pyro.distributions.Distribution``). Anything but a class raises TypeError.

    Args:
        type_p (type): the class of ``p``, usually a subclass of :class:`Distribution`.
        type_q (type): the class of ``q``, usually a subclass of :class:`Distribution`.

    Returns:
        a decorator that registers and returns the function.

    Example::

        >>> from ember.distributions import Normal
        >>> class MyNormal(Normal):
        ...     pass
        >>> @register_kl(MyNormal, MyNormal)
        ... def _kl_my(p, q):
        ...     return ember.zeros(())
        >>> kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0))
        tensor(0.)
    """
    for cls in (type_p, type_q):
        if not isinstance(cls, type):
            raise TypeError("issubclass() arg 1 must be a class")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered type pair, ordered so that a more specific pair is smaller."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning, stacklevel=3)
    return left_fun


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def kl_divergence(p, q):
    """The Kullback-Leibler divergence ``KL(p || q) = E_p[log p(x) - log q(x)]``.

    Args:
        p (Distribution): the first distribution.
        q (Distribution): the second, with the same event shape.

    Returns:
        Tensor: one value per batch entry (broadcast batch shape).

    Example::

        >>> from ember.distributions import Normal
        >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
        tensor(0.5000)
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
            f"{q.__class__.__name__}")
    return fun(p, q)


# ------------------------------------------------------------------------------------------
# same-family pairs


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # p log(p/q) + (1-p) log((1-p)/(1-q)), with log p = -softplus(-logit)
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ember.where(q.probs == 0, _infinite_like(t1), t1)
    t1 = ember.where(p.probs == 0, ember.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ember.where(q.probs == 1, _infinite_like(t2), t2)
    t2 = ember.where(p.probs == 1, ember.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * ember.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ember.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * ember.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return ember.where(p.total_count > q.total_count, _infinite_like(kl), kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ember.where((q.probs == 0).expand_as(t), _infinite_like(t), t)
    t = ember.where((p.probs == 0).expand_as(t), ember.zeros_like(t), t)
    return t.sum(-1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ember.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ember.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman divergence of the log-normaliser A between the natural parameters
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    log_norm = p._log_normalizer(*p_params)
    grads = ember.autograd.grad(log_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_norm
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = ember.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ember.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


def _dense_mvn(d):
    """A LowRankMultivariateNormal as the equivalent MultivariateNormal."""
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix,
                              validate_args=False)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    # 1/2 [log|S_q|/|S_p| + tr(S_q^-1 S_p) + (m_q - m_p)^T S_q^-1 (m_q - m_p) - n]
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    batch = ember.broadcast_shapes(Lq.shape[:-2], Lp.shape[:-2])
    n = p.event_shape[0]
    # tr(S_q^-1 S_p) = |Lq^-1 Lp|_F^2
    M = ember.linalg.solve_triangular(Lq.expand(batch + (n, n)), Lp.expand(batch + (n, n)),
                                      upper=False)
    term2 = M.pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    return _kl_multivariatenormal_multivariatenormal(_dense_mvn(p), _dense_mvn(q))


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    # p puts mass below q's support
    return ember.where(p.scale < q.scale, _infinite_like(result), result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return ember.where(outside, _infinite_like(result), result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # Chyzak & Nielsen (2019)
    return ember.log(((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2))
                     / (4 * p.scale * q.scale))


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# ------------------------------------------------------------------------------------------
# cross-family pairs with closed forms


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ember.log(ratio)
    return (t1 + ratio + q.concentration.lgamma() + q.concentration * euler_constant
            - (1 + euler_constant))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * ember.log(rate_sqr * var_normal * 2 * math.pi)
    t2 = rate_sqr.reciprocal()
    t3 = q.loc / p.rate
    t4 = q.loc.pow(2) * 0.5
    return t1 - 1 + (t2 - t3 + t4) / var_normal


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).pow(2)
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = ember.exp(-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio)
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return ember.where(p.low < 0, _infinite_like(result), result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    # E_U[log x] = (h log h - l log l) / (h - l) - 1
    width = p.high - p.low
    t1 = width.log()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * ((ember.xlogy(p.high, p.high) - ember.xlogy(p.low, p.low))
                                  / width - 1)
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    return ember.where(p.low < 0, _infinite_like(result), result)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = (q.low > p.support.lower_bound) | (q.high < p.support.upper_bound)
    return ember.where(outside, _infinite_like(result), result)


# KL(p || q) = -H(p) - E_p[log q]: pairs where E_p[log q] has a closed form from p's moments


def _normal_cross(p, q, p_mean, p_var):
    """``-H(p) - E_p[log N(x; loc, scale)]`` from p's mean and variance."""
    return (-p.entropy() + 0.5 * ember.log(2 * math.pi * q.scale.pow(2))
            + (p_var + (p_mean - q.loc).pow(2)) / (2 * q.scale.pow(2)))


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return _normal_cross(p, q, p.mean, p.variance)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return _normal_cross(p, q, p.mean, p.variance)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _normal_cross(p, q, p.mean, p.variance)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return _normal_cross(p, q, p.mean, p.variance)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = p.concentration1, p.concentration0
    e_log_x = ember.digamma(a) - ember.digamma(a + b)
    e_log_q = (q.concentration * q.rate.log() - q.concentration.lgamma()
               + (q.concentration - 1) * e_log_x - q.rate * p.mean)
    return -p.entropy() - e_log_q


def _gumbel_cross(p, q, p_mean, e_exp_neg_x_over_s):
    """``-H(p) - E_p[log Gumbel(x)]`` from ``E_p[x]`` and ``E_p[exp(-x / scale)]``."""
    e_z = (p_mean - q.loc) / q.scale
    e_exp_neg_z = ember.exp(q.loc / q.scale) * e_exp_neg_x_over_s
    return -p.entropy() + q.scale.log() + e_z + e_exp_neg_z


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    return _gumbel_cross(p, q, p.mean, p.rate / (p.rate + q.scale.reciprocal()))


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    mgf = (p.rate / (p.rate + q.scale.reciprocal())).pow(p.concentration)
    return _gumbel_cross(p, q, p.mean, mgf)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    s = q.scale
    mgf = s * (ember.exp(-p.low / s) - ember.exp(-p.high / s)) / (p.high - p.low)
    return _gumbel_cross(p, q, p.mean, mgf)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _uniform_mean_log(lo, hi):
    """``E[log x]`` for x uniform on ``[lo, hi]`` (0 <= lo < hi)."""
    return (ember.xlogy(hi, hi) - ember.xlogy(lo, lo)) / (hi - lo) - 1


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = q.concentration1, q.concentration0
    e_log_q = ((a - 1) * _uniform_mean_log(p.low, p.high)
               + (b - 1) * _uniform_mean_log(1 - p.high, 1 - p.low)
               - (a.lgamma() + b.lgamma() - (a + b).lgamma()))
    result = -p.entropy() - e_log_q
    outside = (p.low < 0) | (p.high > 1)
    return ember.where(outside, _infinite_like(result), result)


def _kl_infinite(p, q):
    """p puts mass where q has none."""
    return ember.full(p.batch_shape, math.inf, dtype=ember.get_default_dtype())


# p's support reaches outside q's support
for _p_type, _q_types in (
        (Normal, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
        (Laplace, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
        (Gumbel, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
        (Exponential, (Beta, ContinuousBernoulli, Pareto, Uniform)),
        (Gamma, (Beta, ContinuousBernoulli, Pareto, Uniform)),
        (Pareto, (Beta, ContinuousBernoulli, Uniform)),
        (Poisson, (Bernoulli, Binomial))):
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_kl_infinite)
