"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import warnings
from numbers import Number

import ember

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]


def _mvdigamma(x, p):
    """The multivariate digamma: ``sum_{i<p} digamma(x - i / 2)``."""
    offs = ember.arange(p, dtype=x.dtype, device=x.device) / 2
    return ember.digamma(x.unsqueeze(-1) - offs).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution: the law of ``sum_k x_k x_k^T`` for ``df`` independent
    ``x_k ~ N(0, covariance_matrix)`` (``df`` may be any real above ``p - 1``). Give
    exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``.

    Samples come from the Bartlett decomposition, differentiable in the scale matrix and
    (through the chi-squared draws) in ``df``.

    Args:
        df (float or Tensor): degrees of freedom, greater than ``p - 1``.
        covariance_matrix (Tensor): positive-definite scale matrix ``(*batch, p, p)``.
        precision_matrix (Tensor): its inverse.
        scale_tril (Tensor): its lower Cholesky factor.
        validate_args (bool, optional): check the arguments.

    Example::

        >>> Wishart(ember.tensor(3.0), covariance_matrix=ember.eye(2)).mean
        tensor([[3., 0.],
                [0., 3.]])
    """

    arg_constraints = {
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
        "df": constraints.greater_than(0),
    }
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        param = next(m for m in (scale_tril, covariance_matrix, precision_matrix)
                     if m is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = param.shape[:-2]
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ember.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        # df's lower bound depends on the matrix size: an instance-level table
        self.arg_constraints = dict(type(self).arg_constraints,
                                    df=constraints.greater_than(event_shape[-1] - 1))
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._make_chi2()

    def _make_chi2(self):
        # Bartlett: the squared diagonal of the factor is chi2(df - i), i = 0 .. p-1
        p = self._event_shape[-1]
        offs = ember.arange(p, dtype=self.df.dtype, device=self.df.device)
        return Chi2(df=self.df.unsqueeze(-1) - offs.expand(self._batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(batch_shape)
        cov_shape = batch_shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new.arg_constraints = self.arg_constraints
        ExponentialFamily.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._make_chi2()
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = ember.linalg.solve_triangular(L, eye.expand(L.shape), upper=False)
        return (L_inv.mT @ L_inv).expand(self._matrix_shape())

    def _df_matrix(self):
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor > 0, factor, ember.full_like(factor, float("nan")))
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=ember.Size()):
        p = self._event_shape[-1]
        eps = ember.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        noise = ember.diag_embed(diag)
        rows, cols = ember.tril_indices(p, p, offset=-1)
        lower = ember.randn(noise.shape[:-2] + (rows.shape[0],), dtype=noise.dtype,
                            device=noise.device)
        noise = noise + _scatter_lower(lower, p, rows, cols)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=ember.Size(), max_try_correction=None):
        """Draws by the Bartlett decomposition, then the redraws PyTorch 2.13 makes.

        NOTE [ Wishart redraws as PyTorch's ]
        PyTorch flags for a redraw the first draws that *pass* its positive-definite check
        (its test is the wrong way round), says "Singular sample detected.", redraws those
        once, and goes on redrawing only those of the new draws that fail the check, up to
        ``max_try_correction`` rounds (10). ember follows the same rounds, so the same seed
        gives the same matrices and the same warning (and, unlike PyTorch's, a gradient).

        Args:
            sample_shape (ember.Size): leading sample dimensions.
            max_try_correction (int, optional): the most rounds of redraws (10).

        Returns:
            Tensor: matrices of shape ``sample_shape + batch_shape + event_shape``.
        """
        sample_shape = ember.Size(sample_shape)
        tries = 10 if max_try_correction is None else max_try_correction
        batch_dims = [-(d + 1) for d in range(len(self._batch_shape))]

        def flags(x):
            ok = self.support.check(x)
            return ok.amax(batch_dims) if batch_dims else ok

        sample = self._bartlett_sampling(sample_shape)
        redraw = flags(sample)  # (the passing ones: NOTE [ Wishart redraws as PyTorch's ])
        if bool(redraw.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                fresh = self._bartlett_sampling(redraw[redraw].shape)
                # (a mask of its own for the write: PyTorch's, changed in place below,
                # breaks the gradient of its ``rsample``)
                sample[redraw.clone()] = fresh
                redraw[redraw.clone()] = ~flags(fresh)
                if not bool(redraw.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det_scale = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = ember.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1)
        return (-nu * (p * math.log(2) / 2 + half_log_det_scale)
                - ember.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
                - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det_scale = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * math.log(2) / 2 + half_log_det_scale)
                + ember.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + math.log(2) * p)
                + ember.mvlgamma(y + (p + 1) / 2, p))


def _scatter_lower(values, p, rows, cols):
    """A ``(*, p, p)`` matrix holding ``values`` at the strict-lower positions
    ``(rows, cols)`` and zeros elsewhere (differentiable in ``values``)."""
    out = values.new_zeros(values.shape[:-1] + (p * p,))
    flat_index = (rows * p + cols).expand(values.shape)
    return out.scatter(-1, flat_index, values).reshape(values.shape[:-1] + (p, p))
