"""The gamma distribution."""

from __future__ import annotations

import ember

from . import constraints
from ._sampling import gammainc, standard_gamma
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``:
    density ``rate^a x^(a-1) exp(-rate x) / Gamma(a)`` on ``x >= 0``.

    ``rsample`` is differentiable in both parameters (NOTE [ Implicit reparameterisation
    of the gamma ] in ``_sampling.py``).

    Args:
        concentration (float or Tensor): the shape ``a`` (positive).
        rate (float or Tensor): the rate (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> Gamma(ember.tensor(2.0), ember.tensor(1.0)).mean
        tensor(2.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # clamped in place behind autograd's back, as PyTorch does: a draw that underflows
        # keeps its (tiny) gradient instead of clamp's zero
        value.detach().clamp_(min=ember.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        a, r = self.concentration, self.rate
        return ember.xlogy(a, r) + ember.xlogy(a - 1, value) - r * value - ember.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - ember.log(self.rate) + ember.lgamma(a) + (1.0 - a) * ember.digamma(a)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)
