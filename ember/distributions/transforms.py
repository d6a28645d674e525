"""Transforms: differentiable maps ``y = f(x)`` with ``log |det df/dx|``.

A ``TransformedDistribution`` pushes a base distribution through transforms; its density
is the base density at ``f^{-1}(y)`` minus ``log_abs_det_jacobian``. Each transform names
its ``domain`` and ``codomain`` constraints, whether it is ``bijective``, and (through
``.inv``) its inverse.

NOTE [ Transform caching ]
With ``cache_size=1`` a transform remembers its last ``(x, y)`` pair: calling it on the same
``x`` object returns the stored ``y``, and inverting that same ``y`` object returns the
stored ``x`` exactly. ``TransformedDistribution.rsample`` relies on this so that
``log_prob(rsample())`` uses the exact pre-image even where ``f^{-1}(f(x))`` would lose
precision (a sigmoid saturating, say). Identity is ``is``, not equality.
"""

from __future__ import annotations

import functools
import math
import numbers

import ember
import ember.nn.functional as F

from . import constraints
from ._transform import (
    CatTransform, ComposeTransform, IndependentTransform, ReshapeTransform, StackTransform,
    Transform, _InverseTransform, identity_transform,  # noqa: F401  (re-exported)
)
from .utils import broadcast_all, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
    "Transform", "identity_transform",
]

class ExpTransform(Transform):
    """``y = exp(x)``: the real line onto the positive reals.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> ExpTransform()(ember.tensor(0.0))
        tensor(1.)
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals.

    Args:
        exponent (float or Tensor): the power.
        cache_size (int): 0 or 1.

    Example::

        >>> PowerTransform(2.0)(ember.tensor(3.0))
        tensor(9.)
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @functools.cached_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool(self.exponent.eq(other.exponent).all().item())

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        # d/dx x^p = p x^(p-1) = p y / x
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))


def _clipped_sigmoid(x):
    # keep the result strictly inside (0, 1) so that its logit stays finite
    finfo = ember.finfo(x.dtype)
    return ember.clamp(ember.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``: the real line onto the unit interval.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> SigmoidTransform()(ember.tensor(0.0))
        tensor(0.5000)
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        # log sigmoid'(x) = log sigmoid(x) + log sigmoid(-x)
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``: the real line onto the positive reals.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> SoftplusTransform()(ember.tensor(0.0))
        tensor(0.6931)
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        # x = log(exp(y) - 1) = y + log(1 - exp(-y))
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``: the real line onto ``(-1, 1)``.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> TanhTransform()(ember.tensor(0.0))
        tensor(0.)
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not injective: the inverse returns the non-negative pre-image).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> AbsTransform()(ember.tensor(-2.0))
        tensor(2.)
    """

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``.

    Args:
        loc (Tensor or float): the shift.
        scale (Tensor or float): the scale.
        event_dim (int): how many rightmost dimensions make one event (the log-Jacobian
            is summed over them).
        cache_size (int): 0 or 1.

    Example::

        >>> AffineTransform(1.0, 2.0)(ember.tensor(3.0))
        tensor(7.)
    """

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((ember.as_tensor(a) == ember.as_tensor(b)).all().item()):
                return False
        return True

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            s = float(self.scale)
            return 1 if s > 0 else -1 if s < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        if isinstance(self.scale, numbers.Real):
            result = ember.full_like(x, math.log(abs(self.scale)))
        else:
            result = ember.abs(self.scale).log()
        if self.event_dim:
            result = result.reshape(result.shape[:-self.event_dim] + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                      getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of ``D (D - 1) / 2`` reals onto the Cholesky factor of a
    ``D x D`` correlation matrix.

    Each entry goes through ``tanh`` to a partial correlation ``r`` in (-1, 1); row ``i`` of
    the factor is built by stick-breaking, ``y_ij = r_ij sqrt(prod_{k<j} (1 - r_ik^2))``,
    so every row has unit norm and a positive diagonal.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> CorrCholeskyTransform()(ember.zeros(3)).shape
        ember.Size([3, 3])
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = ember.finfo(x.dtype).eps
        r = vec_to_tril_matrix(ember.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        remaining = (1 - r ** 2).sqrt().cumprod(-1)  # the stick left after each column
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        left = 1 - ember.cumsum(y * y, dim=-1)  # squared stick left after each column
        left_before = F.pad(left[..., :-1], [1, 0], value=1)
        r = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_before, diag=-1).sqrt()
        return (r.log1p() - r.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # stick-breaking part: y_ij depends on r_ij through the stick left before column j
        left = 1 - (y * y).cumsum(dim=-1)
        stick_logdet = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        # tanh part: log(1 - tanh(x)^2) summed
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class SoftmaxTransform(Transform):
    """Unconstrained vectors onto the simplex by ``softmax`` (not bijective: the inverse is
    the log, one of many pre-images).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> SoftmaxTransform()(ember.zeros(2))
        tensor([0.5000, 0.5000])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length ``K - 1`` onto the ``K``-simplex by stick-breaking.

    Entry ``k`` takes the fraction ``z_k = sigmoid(x_k - log(K - k))`` of the stick left;
    the shift makes ``x = 0`` map to the uniform vector. A bijection with a triangular
    Jacobian.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> StickBreakingTransform()(ember.zeros(2))
        tensor([0.3333, 0.3333, 0.3333])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    @staticmethod
    def _offset(n, like):
        return n + 1 - like.new_ones(n).cumsum(-1)  # K - k for k = 1 .. K-1

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x.shape[-1], x).log())
        left = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(left, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        left = ember.clamp(1 - y_crop.cumsum(-1), min=ember.finfo(y.dtype).tiny)
        return y_crop.log() - left.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        # dy_k/dx_k = y_k (1 - z_k), and log(1 - sigmoid(u)) = logsigmoid(u) - u
        u = x - self._offset(x.shape[-1], x).log()
        return (-u + F.logsigmoid(u) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices onto lower-triangular matrices with a positive
    diagonal: keep the strict lower triangle, exponentiate the diagonal.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> LowerCholeskyTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices onto positive-definite ones: ``L L^T`` with ``L`` from
    :class:`LowerCholeskyTransform`.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``x``/``y`` pair, so ``inv(t(x))``
            returns ``x`` itself). Default: 0.

    Example::

        >>> PositiveDefiniteTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """A distribution's CDF as a transform onto the unit interval (its log-Jacobian is the
    log-density); the inverse is the ``icdf``.

    Args:
        distribution (Distribution): a univariate distribution with ``cdf`` and ``icdf``.
        cache_size (int): 0 or 1.

    Example::

        >>> from ember.distributions import Normal
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(ember.tensor(0.0))
        tensor(0.5000)
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)
