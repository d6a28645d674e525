"""The multivariate normal distribution with a low-rank-plus-diagonal covariance."""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of the capacitance matrix ``I + W^T D^{-1} W`` (m x m)."""
    m = W.shape[-1]
    K = ember.matmul(W.mT / D.unsqueeze(-2), W)
    return ember.linalg.cholesky(K + ember.eye(m, dtype=W.dtype, device=W.device))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D)`` by the matrix determinant lemma:
    ``log det(capacitance) + log det(D)``."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + D.log().sum(-1))


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^{-1} x`` by the Woodbury identity:
    ``x^T D^{-1} x - |C^{-1} W^T D^{-1} x|^2`` with ``C`` the capacitance factor."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """A multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``:
    ``n``-dimensional with a rank-``m`` factor costs O(n m^2) instead of O(n^3).

    Args:
        loc (Tensor): the mean, shape ``(*batch, n)``.
        cov_factor (Tensor): the low-rank factor, shape ``(*batch, n, m)``.
        cov_diag (Tensor): the positive diagonal, shape ``(*batch, n)``.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = LowRankMultivariateNormal(ember.zeros(2), ember.zeros(2, 1), ember.ones(2))
        >>> d.log_prob(ember.zeros(2))
        tensor(-1.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_, cov_diag_ = loc.unsqueeze(-1), cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(loc_, cov_factor,
                                                                      cov_diag_)
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        # factored before the parameters are validated, as torch's constructor does: a
        # capacitance that is not positive-definite raises the Cholesky error first
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(LowRankMultivariateNormal, batch_shape, _instance,
                                     ("loc", "cov_diag", "cov_factor"))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: factor the bracket
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        n = self._event_shape[0]
        d_sqrt = D.sqrt().unsqueeze(-1)
        W_scaled = W / d_sqrt
        K = ember.matmul(W_scaled, W_scaled.mT) + ember.eye(n, dtype=W.dtype, device=W.device)
        return (d_sqrt * ember.linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (ember.matmul(W, W.mT) + ember.diag_embed(D)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 = D^-1 - A^T A with A = L_C^-1 W^T D^-1
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = ember.linalg.solve_triangular(self._capacitance_tril, W.mT / D.unsqueeze(-2),
                                          upper=False)
        return (ember.diag_embed(D.reciprocal()) - ember.matmul(A.mT, A)).expand(
            self._matrix_shape())

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        M = _batch_lowrank_mahalanobis(W, D, value - self.loc, self._capacitance_tril)
        log_det = _batch_lowrank_logdet(W, D, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        log_det = _batch_lowrank_logdet(W, D, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
