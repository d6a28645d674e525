"""The inverse gamma distribution."""

from __future__ import annotations

import ember

from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """The distribution of ``1 / X`` for ``X ~ Gamma(concentration, rate)``: density
    ``rate^a x^(-a-1) exp(-rate / x) / Gamma(a)``.

    Args:
        concentration (float or Tensor): the shape ``a`` (positive).
        rate (float or Tensor): the scale of ``1 / X`` (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> InverseGamma(ember.tensor(3.0), ember.tensor(2.0)).mean
        tensor(1.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -ember.ones_like(base.rate)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        return ember.where(a > 1, self.rate / (a - 1), ember.full_like(a, float("inf")))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        var = self.rate.pow(2) / ((a - 1).pow(2) * (a - 2))
        return ember.where(a > 2, var, ember.full_like(a, float("inf")))

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()
