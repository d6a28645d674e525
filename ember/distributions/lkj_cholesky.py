"""The LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

import ember

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution (Lewandowski, Kurowicka & Joe, 2009) over lower Cholesky
    factors ``L`` of ``dim x dim`` correlation matrices: the correlation ``L L^T`` has
    density proportional to ``det(L L^T)^(concentration - 1)``; ``concentration = 1`` is
    uniform over correlation matrices.

    Sampling uses the onion method: the off-diagonal part of row ``i`` is a uniform random
    direction whose squared length is Beta(i / 2, concentration + (dim - 1 - i) / 2)
    distributed, and the diagonal entry completes the row to unit norm.

    Args:
        dim (int): the matrix size (at least 2).
        concentration (float or Tensor): the shape parameter (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> L = LKJCholesky(3, 0.5).sample()
        >>> L.shape
        ember.Size([3, 3])
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        event_shape = ember.Size((dim, dim))
        # the Beta laws of the squared off-diagonal norms of rows 1 .. dim-1 (row 0 has none)
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new, batch_shape = self._expand_params(LKJCholesky, batch_shape, _instance,
                                               ("concentration",))
        new.dim = self.dim
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        return new

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = ember.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norms = u.norm(dim=-1, keepdim=True)
            direction = u / ember.where(norms == 0, ember.ones_like(norms), norms)
            w = ember.sqrt(y) * direction  # row 0 is all zero: its direction is 0/1
            tiny = ember.finfo(w.dtype).tiny
            diag = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # unnormalised: sum_i (dim - i + 2 (eta - 1)) log L_ii over rows i = 2 .. dim
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = ember.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = ember.sum(order * diag.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        normaliser = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalised - normaliser
