"""The relaxed Bernoulli (binary Concrete) distribution."""

from __future__ import annotations

from numbers import Number

import ember

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a :class:`RelaxedBernoulli` sample: ``(logit(u) + logits) / temperature``
    for uniform ``u`` (Maddison et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the probability of 1 in the zero-temperature limit.
        logits (float or Tensor): its log-odds (give ``probs`` or ``logits``).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = LogitRelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor(0.3))
        >>> d.rsample((4,)).shape
        ember.Size([4])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = ember.Size() if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance,
                                     ("probs", "logits"))
        new.temperature = self.temperature
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new_tensor(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    has_rsample = True

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return ember.log(ember.as_tensor(self.temperature, dtype=diff.dtype)) + diff \
            - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The relaxed Bernoulli (binary Concrete) distribution on ``(0, 1)``: a differentiable
    stand-in for a Bernoulli, sharper as ``temperature`` goes to 0.

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the Bernoulli probability.
        logits (float or Tensor): its log-odds (give ``probs`` or ``logits``).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = RelaxedBernoulli(ember.tensor(0.1), probs=ember.tensor(0.5))
        >>> bool(((d.rsample() > 0) & (d.rsample() < 1)).item())
        True
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
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
