"""Helpers shared by the distributions: broadcasting parameters, probs <-> logits, and
``lazy_property`` for parameters derived on first use."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import ember

__all__ = [
    "broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
    "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix",
]

#: the Euler-Mascheroni constant (used by the Gumbel and Weibull moments)
euler_constant = 0.57721566490153286060


def is_tensor_like(x) -> bool:
    """True for an ember Tensor or an object that implements ``__torch_function__``.

    Args:
        x: any object.

    Returns:
        bool.

    Example:
        >>> import ember
        >>> from ember.distributions.utils import is_tensor_like
        >>> is_tensor_like(ember.ones(1)), is_tensor_like(1.0)
        (True, False)
    """
    return isinstance(x, ember.Tensor) or hasattr(x, "__torch_function__")


def broadcast_all(*values):
    """Broadcast numbers and tensors to one shape, turning numbers into tensors.

    Numbers take the dtype and device of the first tensor among ``values`` (or the default
    dtype when there is none), so ``broadcast_all(0.0, x)`` keeps ``x``'s precision.

    Args:
        *values: ``numbers.Number`` or Tensor arguments.

    Returns:
        tuple of Tensor: the values, broadcast to their common shape.

    Example::

        >>> loc, scale = broadcast_all(0.0, ember.ones(3))
        >>> loc.shape
        ember.Size([3])
    """
    if not all(is_tensor_like(v) or isinstance(v, Number) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, torch.Tensor or "
            "objects implementing __torch_function__.")
    if not all(is_tensor_like(v) for v in values):
        options = {"dtype": ember.get_default_dtype()}
        for v in values:
            if isinstance(v, ember.Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = [v if is_tensor_like(v) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions of ``value`` (0 leaves it unchanged)."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def _bernoulli_log_prob(logits, value):
    """``value log p + (1 - value) log(1 - p)`` with ``p = sigmoid(logits)``, written as
    ``value * logits - softplus(logits)``: stable for large ``|logits|`` and with the exact
    derivative ``value - sigmoid(logits)`` everywhere, ``logits = 0`` included."""
    return value * logits - ember.nn.functional.softplus(logits)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: a sigmoid when ``is_binary``, else a softmax over the last
    dimension.

    Args:
        logits (Tensor): unnormalised log-probabilities (log-odds when ``is_binary``).
        is_binary (bool): whether each entry is the log-odds of a binary event.

    Returns:
        Tensor: probabilities of the same shape.

    Example::

        >>> logits_to_probs(ember.zeros(2))
        tensor([0.5000, 0.5000])
    """
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into ``[eps, 1 - eps]`` (``eps`` of their dtype), so that their
    logarithms and log-odds stay finite.

    Args:
        probs (Tensor): probabilities.

    Returns:
        Tensor: the clamped probabilities.

    Example::

        >>> clamp_probs(ember.tensor([0.0, 1.0])) > 0
        tensor([True, True])
    """
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities: the log-odds when ``is_binary``, else the logarithm (the
    inverse of :func:`logits_to_probs` up to an additive constant).

    Args:
        probs (Tensor): probabilities.
        is_binary (bool): whether each entry is the probability of a binary event.

    Returns:
        Tensor: logits of the same shape.

    Example::

        >>> probs_to_logits(ember.tensor([0.5]), is_binary=True)
        tensor([0.])
    """
    p = clamp_probs(probs)
    if is_binary:
        return ember.log(p) - ember.log1p(-p)
    return ember.log(p)


class lazy_property:
    """A property computed on first access and then stored on the instance.

    Distributions accept either of two parametrisations (``probs`` or ``logits``); the other
    one is derived only if asked for. The value is computed with grad mode on, so that it
    stays connected to the parameter it came from.

    Args:
        wrapped (callable): the method that computes the value from ``self``.

    Returns:
        lazy_property: a descriptor.

    Example::

        >>> class Box:
        ...     @lazy_property
        ...     def area(self):
        ...         return 6
        >>> Box().area
        6
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``Class.attr`` returns for a lazy property: it also reads as a ``property``."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The entries of the lower triangle of ``mat`` (below diagonal ``diag``), row by row.

    Args:
        mat (Tensor): a batch of square matrices ``(*, n, n)``.
        diag (int): the highest diagonal kept (0 is the main diagonal, -1 excludes it).

    Returns:
        Tensor: shape ``(*, m)`` with ``m`` the number of kept entries.

    Example::

        >>> tril_matrix_to_vec(ember.tensor([[1., 0.], [2., 3.]]))
        tensor([1., 2., 3.])
    """
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = ember.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of :func:`tril_matrix_to_vec`: fill a lower triangle from a vector.

    Args:
        vec (Tensor): shape ``(*, m)``.
        diag (int): the highest diagonal filled.

    Returns:
        Tensor: shape ``(*, n, n)``, zero above diagonal ``diag``.

    Example::

        >>> vec_to_tril_matrix(ember.tensor([1., 2., 3.]))
        tensor([[1., 0.],
                [2., 3.]])
    """
    m = vec.shape[-1]
    # m = n (n + 1) / 2 + diag * n - diag (diag + 1) / 2 (the entries kept), solved for n
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(ember.float32).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    rows, cols = ember.tril_indices(n, n, offset=diag)
    mat[..., rows, cols] = vec
    return mat


