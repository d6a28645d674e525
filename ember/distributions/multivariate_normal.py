"""The multivariate normal distribution, parametrised by a covariance, a precision or a
lower Cholesky factor of the covariance."""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products broadcast over batch dimensions."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^{-1} x`` = ``|L^{-1} x|^2`` for lower-triangular ``L``, broadcast over
    batch dimensions of ``bL`` and ``bx``."""
    n = bx.shape[-1]
    batch = ember.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    sol = ember.linalg.solve_triangular(bL.expand(batch + (n, n)),
                                        bx.expand(batch + (n,)).unsqueeze(-1), upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of ``P^{-1}`` without inverting ``P``.

    With ``J`` the reversal permutation, ``J P J = Lf Lf^T`` gives ``P = U U^T`` for the
    upper-triangular ``U = J Lf J``, so ``P^{-1} = (U^{-T}) (U^{-T})^T`` and ``U^{-T}`` is the
    lower factor wanted.
    """
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    Ut = ember.flip(Lf, (-2, -1)).mT  # U^T: lower triangular
    eye = ember.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return ember.linalg.solve_triangular(Ut, eye.expand(Ut.shape), upper=False)


class MultivariateNormal(Distribution):
    """A multivariate normal (Gaussian) distribution with mean ``loc``, given exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (the lower Cholesky factor
    of the covariance, the cheapest).

    Args:
        loc (Tensor): the mean, shape ``(*batch, n)``.
        covariance_matrix (Tensor): positive-definite, ``(*batch, n, n)``.
        precision_matrix (Tensor): positive-definite inverse covariance.
        scale_tril (Tensor): lower-triangular with positive diagonal.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> d = MultivariateNormal(ember.zeros(2), ember.eye(2))
        >>> d.log_prob(ember.zeros(2))
        tensor(-1.8379)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is None:
                continue
            if m.dim() < 2:
                raise ValueError(f"{name} matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            batch_shape = ember.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
            setattr(self, name, m.expand(batch_shape + (-1, -1)))
            matrix_name, matrix = name, m
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if matrix_name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif matrix_name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        new, _ = self._expand_params(
            MultivariateNormal, batch_shape, _instance,
            ("loc", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = ember.linalg.solve_triangular(L, eye.expand(L.shape), upper=False)
        return ember.matmul(L_inv.mT, L_inv).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return L.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        H = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
