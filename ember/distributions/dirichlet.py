"""The Dirichlet distribution over the probability simplex."""

from __future__ import annotations

import ember

from . import constraints
from ._sampling import dirichlet
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution with ``concentration`` along the last dimension: density
    ``prod x_i^(a_i - 1) / B(a)`` on the simplex.

    ``rsample`` normalises gamma draws, differentiable through their implicit
    reparameterisation (NOTE [ Implicit reparameterisation of the gamma ]).

    Args:
        concentration (Tensor): positive, shape ``(*batch, K)``.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> Dirichlet(ember.tensor([1.0, 3.0])).mean
        tensor([0.2500, 0.7500])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))
        return new

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        return dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (ember.xlogy(a - 1.0, value).sum(-1) + ember.lgamma(a.sum(-1))
                - ember.lgamma(a).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        am1 = (self.concentration - 1).clamp(min=0.0)
        mode = am1 / am1.sum(-1, True)
        # with every a_i < 1 the density peaks at the vertices: pick the largest
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        k = self.concentration.shape[-1]
        vertex = ember.nn.functional.one_hot(mode.argmax(dim=-1), k).to(mode.dtype)
        return ember.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, True)
        return a * (a0 - a) / (a0.pow(2) * (a0 + 1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (ember.lgamma(a).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((a - 1.0) * ember.digamma(a)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
