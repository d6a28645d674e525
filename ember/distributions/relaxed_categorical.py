"""The relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution."""

from __future__ import annotations

import ember

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` sample: ``log_softmax((logits + g) /
    temperature)`` with Gumbel noise ``g`` (Maddison et al., 2017; Jang et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): category weights, shape ``(*batch, K)``.
        logits (Tensor): category log-weights (give ``probs`` or ``logits``).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = ExpRelaxedCategorical(ember.tensor(1.0), logits=ember.zeros(3))
        >>> d.rsample().exp().sum().round()
        tensor(1.)
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = ember.Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(ember.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        temperature = ember.as_tensor(self.temperature, dtype=value.dtype,
                                      device=value.device)
        # log Gamma(K) + (K - 1) log t + sum(logits - t x) - K logsumexp(logits - t x)
        log_scale = ember.full_like(temperature, float(k)).lgamma() + (k - 1) * temperature.log()
        score = self.logits - value.mul(temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution on the
    simplex: a differentiable stand-in for a one-hot categorical, sharper as
    ``temperature`` goes to 0.

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): category weights, shape ``(*batch, K)``.
        logits (Tensor): category log-weights (give ``probs`` or ``logits``).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = RelaxedOneHotCategorical(ember.tensor(0.5), probs=ember.tensor([0.2, 0.8]))
        >>> d.rsample((3,)).shape
        ember.Size([3, 2])
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
