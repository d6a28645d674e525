"""The negative binomial distribution."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The number of successes before ``total_count`` failures in Bernoulli trials of
    success probability ``probs``.

    Args:
        total_count (float or Tensor): the number of failures (non-negative; need not be
            an integer).
        probs (Tensor): the success probability, in [0, 1).
        logits (Tensor): its log-odds (give ``probs`` or ``logits``).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> NegativeBinomial(ember.tensor(2.0), probs=ember.tensor(0.5)).mean
        tensor(2.)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(NegativeBinomial, batch_shape, _instance,
                                     ("total_count", "probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new_tensor(*args, **kwargs)

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def _gamma(self):
        # a Poisson whose rate is Gamma(total_count, odds^-1) is negative binomial
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        r = self.total_count
        log_unnormalized = r * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -ember.lgamma(r + value) + ember.lgamma(1.0 + value) + ember.lgamma(r)
        # r = 0 is a point mass at 0: the binomial coefficient is 1 there
        log_normalization = log_normalization.masked_fill(r + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
