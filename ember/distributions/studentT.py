"""Student's t-distribution."""

from __future__ import annotations

import math

import ember

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, shifted by ``loc`` and
    scaled by ``scale``.

    Args:
        df (float or Tensor): the degrees of freedom (positive).
        loc (float or Tensor): the location (default 0).
        scale (float or Tensor): the scale (positive, default 1).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> StudentT(ember.tensor(3.0)).mode
        tensor(0.)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, batch_shape = self._expand_params(StudentT, batch_shape, _instance,
                                               ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return ember.where(self.df > 1, self.loc, ember.full_like(self.loc, float("nan")))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        m = ember.where(df > 2, finite, ember.full_like(df, float("inf")))
        return ember.where(df <= 1, ember.full_like(df, float("nan")), m)

    def rsample(self, sample_shape=ember.Size()):
        # t = X / sqrt(Z / df) with X standard normal and Z chi-squared
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * ember.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + ember.lgamma(0.5 * self.df) - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        df = self.df
        lbeta = (ember.lgamma(0.5 * df) + math.lgamma(0.5)
                 - ember.lgamma(0.5 * (df + 1)))
        return (self.scale.log()
                + 0.5 * (df + 1) * (ember.digamma(0.5 * (df + 1)) - ember.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
