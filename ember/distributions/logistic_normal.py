"""The logistic-normal distribution on the simplex."""

from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """A normal vector of length ``K - 1`` pushed onto the ``K``-simplex by
    :class:`StickBreakingTransform`.

    Args:
        loc (float or Tensor): the mean of the underlying normal.
        scale (float or Tensor): its standard deviation (positive).
        validate_args (bool, optional): check the arguments.

    Example::

        >>> LogisticNormal(ember.zeros(2), ember.ones(2)).sample().shape
        ember.Size([3])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
