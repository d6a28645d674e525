"""The generalized Pareto distribution."""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (the limit law of threshold exceedances): with
    ``z = (x - loc) / scale`` and shape ``xi = concentration``, density
    ``(1 + xi z)^(-1/xi - 1) / scale`` (``exp(-z) / scale`` at ``xi = 0``), on ``x >= loc``,
    bounded above by ``loc - scale / xi`` when ``xi < 0``.

    Args:
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale (positive).
        concentration (float or Tensor): the shape ``xi``.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> GeneralizedPareto(0.0, 1.0, 0.0).mean  # xi = 0 is Exponential(1)
        tensor(1.)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                     ("loc", "scale", "concentration"))
        return new

    def _xi_safe(self):
        """``xi`` with zeros replaced by 1 (where the xi = 0 formula is used instead)."""
        xi = self.concentration
        return ember.where(xi == 0, ember.ones_like(xi), xi)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        xi, xi_safe = self.concentration, self._xi_safe()
        log_scale = ember.log(self.scale)
        general = -log_scale - (1 / xi_safe + 1) * ember.log1p(xi_safe * z)
        result = ember.where(xi == 0, -log_scale - z, general)
        outside = (z < 0) | ((xi < 0) & (z > -1 / xi_safe))
        return ember.where(outside, ember.full_like(result, float("-inf")), result)

    def log_survival_function(self, value):
        """``log P(X > value)``."""
        z = (value - self.loc) / self.scale
        xi, xi_safe = self.concentration, self._xi_safe()
        general = -1 / xi_safe * ember.log1p(xi_safe * z)
        result = ember.where(xi == 0, -z, general)
        return ember.where(z < 0, ember.zeros_like(result), result)

    def log_cdf(self, value):
        """``log P(X <= value)``."""
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.expm1(self.log_survival_function(value))

    def icdf(self, value):
        # loc + scale ((1 - u)^-xi - 1) / xi, or loc - scale log(1 - u) at xi = 0
        xi, xi_safe = self.concentration, self._xi_safe()
        log1m = ember.log1p(-value)
        general = self.loc + self.scale * ember.expm1(-xi_safe * log1m) / xi_safe
        return ember.where(xi == 0, self.loc - self.scale * log1m, general)

    @property
    def mean(self):
        xi = self.concentration
        mean = self.loc + self.scale / (1 - xi)
        return ember.where(xi < 1, mean, ember.full_like(mean, float("nan")))

    @property
    def variance(self):
        xi = self.concentration
        var = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return ember.where(xi < 0.5, var, ember.full_like(var, float("nan")))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return ember.log(self.scale) + self.concentration + 1

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = ember.where(self.concentration < 0, self.loc - self.scale / self._xi_safe(),
                            ember.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)
