"""The Kumaraswamy distribution on the unit interval."""

from __future__ import annotations

import ember

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """``E[X^n] = b B(1 + n / a, b)`` for Kumaraswamy(a, b)."""
    arg1 = 1 + n / a
    log_value = ember.lgamma(arg1) + ember.lgamma(b) - ember.lgamma(arg1 + b)
    return b * ember.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution: density ``a b x^(a-1) (1 - x^a)^(b-1)`` on (0, 1) with
    ``a = concentration1``, ``b = concentration0``; like a Beta, but with a closed-form CDF
    and inverse, so sampling is a transformed uniform.

    Args:
        concentration1 (float or Tensor): ``a`` (positive).
        concentration0 (float or Tensor): ``b`` (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> Kumaraswamy(ember.tensor(1.0), ember.tensor(1.0)).mean
        tensor(0.5000)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ember.full_like(self.concentration0, 0),
                       ember.full_like(self.concentration0, 1), validate_args=validate_args)
        # x = (1 - u^(1/b))^(1/a) for uniform u
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1/a) for a >= 1, b >= 1 (not both 1); undefined otherwise
        a, b = self.concentration1, self.concentration0
        log_mode = (ember.log(a - 1) - ember.log(a * b - 1)) / a
        defined = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        return ember.where(defined, log_mode.exp(), ember.full_like(a, float("nan")))

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _moments(a, b, 2) - ember.pow(self.mean, 2)

    def entropy(self):
        # (1 - 1/b) + (1 - 1/a) H_b - log(a b), with H_b the b-th harmonic number
        a, b = self.concentration1, self.concentration0
        harmonic_b = ember.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - ember.log(a * b)
