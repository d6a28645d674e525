"""The Weibull distribution."""

from __future__ import annotations

import ember

from . import constraints
from .exponential import Exponential
from .utils import euler_constant
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all  # noqa: I001

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: ``scale * E^(1 / concentration)`` for a
    standard exponential ``E``; density ``(k / s) (x / s)^(k-1) exp(-(x / s)^k)``.

    Args:
        scale (float or Tensor): the scale ``s`` (positive).
        concentration (float or Tensor): the shape ``k`` (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> Weibull(ember.tensor(1.0), ember.tensor(1.0)).mean
        tensor(1.)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ember.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * ember.exp(ember.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        # s ((k - 1) / k)^(1/k) for k > 1; the density peaks at 0 otherwise
        k = self.concentration
        peak = self.scale * ((k - 1) / k).clamp(min=0) ** self.concentration_reciprocal
        return ember.where(k > 1, peak, ember.zeros_like(peak))

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (ember.exp(ember.lgamma(1 + 2 * r))
                                    - ember.exp(2 * ember.lgamma(1 + r)))

    def entropy(self):
        return (euler_constant * (1 - self.concentration_reciprocal)
                + ember.log(self.scale * self.concentration_reciprocal) + 1)
