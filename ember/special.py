"""``ember.special``: the special-function namespace of ``torch.special``.

Most names are the top-level ops under their SciPy-style names (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``psi`` is ``digamma``, ...); the rest are declared in
``ember/_ops/special_ops.py``. Reductions (``logsumexp``, ``softmax``, ``log_softmax``) call
the reduction family at call time.
"""

from __future__ import annotations

from ._overrides import consult_in as _consult_in

from ._ops.pointwise import exp2, expm1, log1p, logit, sigmoid, sinc, xlogy
from ._ops.pointwise import round_ as _round
from ._core.tensor import Tensor
from ._ops.special_bessel import (
    airy_ai,
    bessel_y0,
    bessel_y1,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from ._ops.special_poly import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from ._ops.special_ops import (
    digamma,
    erf,
    erfc,
    erfinv,
    igamma,
    igammac,
    lgamma,
    mvlgamma,
    polygamma,
    special_bessel_j0,
    special_bessel_j1,
    special_entr,
    special_erfcx,
    special_i0,
    special_i0e,
    special_i1,
    special_i1e,
    special_log_ndtr,
    special_ndtr,
    special_ndtri,
    special_xlog1py,
    special_zeta,
)

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
    "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

# the argument descriptions this namespace's docstrings share (torch.special has the same
# two dictionaries, for its own docs)
common_args = {
    "input": "input (Tensor): the input tensor.",
    "generator": "generator (:class:`ember.Generator`, optional): the source of randomness",
    "out": "out (Tensor, optional): the output tensor.",
    "memory_format": "memory_format (:class:`ember.memory_format`, optional): the memory "
                     "layout of the returned tensor.",
    "dtype": "dtype (:class:`ember.dtype`, optional): the dtype of the returned tensor.",
}
multi_dim_common = dict(common_args, dim="dim (int or tuple of ints): the dimension(s) to "
                        "reduce.", keepdim="keepdim (bool): whether the output keeps the "
                        "reduced dimensions with size 1.")

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma
i0 = special_i0
i0e = special_i0e
i1 = special_i1
i1e = special_i1e
erfcx = special_erfcx
ndtr = special_ndtr
ndtri = special_ndtri
log_ndtr = special_log_ndtr
entr = special_entr
xlog1py = special_xlog1py
zeta = special_zeta
bessel_j0 = special_bessel_j0
bessel_j1 = special_bessel_j1
gammainc = igamma
gammaincc = igammac

# names kept for linters: these are part of the namespace on purpose
_reexports = (digamma, erf, erfc, erfinv, exp2, expm1, log1p, logit, polygamma, sinc, xlogy,
              Tensor)


def round(input, *, decimals=0, out=None):  # noqa: A001  (torch.special.round)
    """``ember.round`` for floating tensors; unlike it, integer tensors are an error here,
    as in PyTorch. Halves round to even.

    Args:
        input (Tensor): a floating or complex tensor.
        decimals (int): the number of decimal places to round to. Default: 0. Keyword-only.
        out (Tensor, optional): the tensor to write the result into.

    Returns:
        Tensor: the rounded values.

    Example:
        >>> ember.special.round(ember.tensor([0.5, 1.5, 2.567]))
        tensor([0., 2., 3.])
        >>> ember.special.round(ember.tensor([2.567]), decimals=1)
        tensor([2.6000])
    """
    dt = getattr(input, "dtype", None)
    if dt is not None and not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f"special.round: \"round_cpu\" not implemented for "
                           f"'{dt.scalar_name}' (round integer tensors with ember.round)")
    return _round(input, decimals=decimals, out=out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed stably (``ember.logsumexp``).

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints): the dimension(s) to reduce.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        out (Tensor, optional): the tensor to write the result into.

    Returns:
        Tensor: the reduced tensor.

    Example:
        >>> ember.special.logsumexp(ember.tensor([[0.0, 0.0], [100.0, 100.0]]), dim=1)
        tensor([  0.6931, 100.6931])
    """
    from . import logsumexp as _logsumexp

    if out is None:
        return _logsumexp(input, dim, keepdim=keepdim)
    return _logsumexp(input, dim, keepdim=keepdim, out=out)


def _softmax_input(name, input, dtype):
    if dtype is not None:
        input = input.to(dtype)
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"{name}: \"{name}\" not implemented for '{input.dtype.scalar_name}' "
                           "(pass a floating dtype, e.g. dtype=ember.float32)")
    return input


def softmax(input, dim, *, dtype=None):
    """``exp(x) / sum(exp(x), dim)``; with ``dtype`` the input is cast first.

    Args:
        input (Tensor): a floating tensor (or any, with ``dtype``).
        dim (int): the dimension the probabilities sum to one along.
        dtype (ember.dtype, optional): cast the input to it first. Keyword-only.

    Returns:
        Tensor: the probabilities.

    Example:
        >>> ember.special.softmax(ember.tensor([[1.0, 2.0, 3.0]]), dim=1)
        tensor([[0.0900, 0.2447, 0.6652]])
    """
    x = _softmax_input("softmax", input, dtype)
    return (x - x.logsumexp(dim, keepdim=True)).exp()


def log_softmax(input, dim, *, dtype=None):
    """``x - logsumexp(x, dim)``; with ``dtype`` the input is cast first.

    Args:
        input (Tensor): a floating tensor (or any, with ``dtype``).
        dim (int): the dimension along which the log-probabilities are normalised.
        dtype (ember.dtype, optional): cast the input to it first. Keyword-only.

    Returns:
        Tensor: the log-probabilities.

    Example:
        >>> ember.special.log_softmax(ember.tensor([1, 2, 3]), dim=0, dtype=ember.float32)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    x = _softmax_input("log_softmax", input, dtype)
    return x - x.logsumexp(dim, keepdim=True)


# every public function here consults __torch_function__ first (NOTE [ __torch_function__ ])
_consult_in(globals())
