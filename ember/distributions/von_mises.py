"""The von Mises (circular normal) distribution."""

from __future__ import annotations

import math

import ember

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

    @lazy_property
    def _proposal_r(self):
        # Best and Fisher's envelope parameter r = (1 + rho^2) / (2 rho), in float64; near
        # kappa = 0 its expansion 1 / kappa + kappa (the closed form cancels there)
        k = self.concentration.detach().to(ember.float64)
        tau = 1 + (1 + 4 * k ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        return ember.where(k < 1e-5, 1 / k + k, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=ember.Size()):
        """Draws in ``[-pi, pi)`` by Best and Fisher's rejection sampler (1979), in float64:
        three uniforms per element a round (``rand`` of shape ``(3, *shape)``) until every
        element is accepted -- the draws PyTorch's sampler makes from the same seed.

        Args:
            sample_shape (ember.Size): leading sample dimensions.

        Returns:
            Tensor: angles of shape ``sample_shape + batch_shape``, ``loc``'s dtype.
        """
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            loc = self.loc.detach().to(ember.float64)
            k = self.concentration.detach().to(ember.float64)
            r = self._proposal_r
            x = ember.zeros(shape, dtype=ember.float64, device=loc.device)
            done = ember.zeros(shape, dtype=ember.bool, device=loc.device)
            while not bool(done.all()):
                u1, u2, u3 = ember.rand((3,) + tuple(shape), dtype=ember.float64,
                                        device=loc.device).unbind()
                z = ember.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                take = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                if bool(take.any()):
                    x = ember.where(take, (u3 - 0.5).sign() * f.acos(), x)
                    done = done | take
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

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
