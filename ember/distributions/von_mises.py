"""The von Mises (circular normal) distribution."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember._core.generator import numpy_generator

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    # log I0(x) = log(I0(x) e^-x) + x, stable for large x
    return ember.log(ember.special.i0e(x)) + x


class VonMises(Distribution):
    """The von Mises distribution on the circle: density
    ``exp(concentration cos(x - loc)) / (2 pi I0(concentration))`` on ``[-pi, pi)``.

    Args:
        loc (float or Tensor): the mean angle, in radians.
        concentration (float or Tensor): the concentration (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> VonMises(ember.tensor(0.0), ember.tensor(1.0)).mode
        tensor(0.)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(VonMises, batch_shape, _instance,
                                     ("loc", "concentration"))
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    def sample(self, sample_shape=ember.Size()):
        """Draws in ``[-pi, pi)`` (NumPy's Best-Fisher rejection sampler, in float64)."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            k = self.concentration.detach().expand(shape).cpu().numpy().astype(np.float64)
            x = numpy_generator(None).vonmises(0.0, k)
            x = ember.from_numpy(np.array(x, dtype=np.float64)).to(self.loc.dtype)
            x = x.to(self.loc.device)
            return (x + math.pi + self.loc) % (2 * math.pi) - math.pi

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        # the circular variance 1 - I1(k) / I0(k)
        k = self.concentration
        return 1 - ember.special.i1e(k) / ember.special.i0e(k)
