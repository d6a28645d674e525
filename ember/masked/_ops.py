"""Masked reductions and normalizations: ``torch.masked.sum(x, dim, mask=m)`` and friends.

NOTE [ Masked operations ]
A masked operation reads only the elements of ``input`` where ``mask`` is True. ``mask`` is a
boolean tensor that broadcasts to ``input``'s shape (fewer dimensions are added at the
front); without one every element counts. Each operation replaces the masked-out elements by
the *identity* of its reduction -- 0 for sums and norms, 1 for products, -inf for maxima
(and for softmax, whose masked-out entries then come out 0), +inf for minima -- and runs the
ordinary operation. So a slice with no element left gives the identity (0 for ``sum``,
-inf for ``amax``), and ``mean``/``var`` divide by the number of elements left (0/0 = NaN).
The replacement is a ``where``, so gradients reach only the elements that were read.

These functions take plain tensors and return plain tensors. A :class:`MaskedTensor` passed
as ``input`` brings its own mask; its methods (``mt.sum(dim)``) return MaskedTensors whose
mask says which results saw at least one element.
"""

from __future__ import annotations

import builtins
import math
import sys

import ember
from ember import Tensor

__all__ = [
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
    "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std",
    "sum", "var",
]

_SMALL_INTS = (ember.uint8, ember.bool, ember.int8, ember.int16, ember.int32)


def _split(input, mask):
    """(data, mask) of ``input``: a MaskedTensor brings its own mask. (No MaskedTensor can
    exist before its module is loaded, and loading it is what this avoids: see
    ember/masked/__init__.py.)"""
    core = sys.modules.get("ember.masked.maskedtensor.core")
    if core is not None and isinstance(input, core.MaskedTensor):
        return input.get_data(), input.get_mask()
    return input, mask


def _canonical_dim(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` (None, an int, or a sequence) as a sorted tuple of non-negative dims."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    rank = max(ndim, 1)
    seen = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in seen:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if not -rank <= d < rank:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-rank}, {rank - 1}], but got {d})")
        seen.append(d)
    return tuple(sorted(d % rank for d in seen))


def _input_mask(input: Tensor, mask: Tensor | None) -> Tensor:
    """``mask`` broadcast to ``input``'s shape, as bool (all True when None)."""
    if mask is None:
        return ember.ones(input.shape, dtype=ember.bool, device=input.device)
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = ember.broadcast_to(mask, input.shape)
    return mask.to(dtype=ember.bool)


def _identity(op: str, input: Tensor, ord=None) -> Tensor:
    """The value masked-out elements take for ``op`` (NOTE [ Masked operations ])."""
    dt = input.dtype
    if op in ("sum", "norm") and ord != -math.inf:
        value = 0
    elif op == "prod":
        value = 1
    elif op in ("amax", "logsumexp") or (op == "norm" and ord == -math.inf):
        if op == "norm":
            value = math.inf
        elif dt.is_floating_point or dt.is_complex:
            value = -math.inf
        else:
            value = ember.iinfo(dt).min
    elif op == "amin":
        value = math.inf if dt.is_floating_point else ember.iinfo(dt).max
    elif op == "median":
        value = math.nan
    else:
        raise NotImplementedError(f"identity of {op} on {dt} input")
    return ember.tensor(value, dtype=dt, device=input.device)


def _filled(op: str, input, mask, ord=None) -> Tensor:
    """``input`` with its masked-out elements replaced by ``op``'s identity."""
    data, mask = _split(input, mask)
    if mask is None:
        return data
    return ember.where(_input_mask(data, mask), data, _identity(op, data, ord))


def _any(mask: Tensor, dims, keepdim: bool) -> Tensor:
    for d in reversed(dims):
        mask = mask.any(dim=d, keepdim=keepdim)
    return mask


def _count(data: Tensor, mask, dim, keepdim: bool) -> Tensor:
    """How many elements each reduction over ``dim`` reads (int64)."""
    return _input_mask(data, mask).sum(dim=_canonical_dim(dim, data.ndim), keepdim=keepdim)


def _sum_dtype(data: Tensor):
    return ember.int64 if data.dtype in _SMALL_INTS else data.dtype


# -- reductions ------------------------------------------------------------------------------

_REDUCTION_ARGS = """
    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int or tuple of ints, optional): the dimensions to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``; True marks the
            elements to read. All elements if None.
"""


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The sum of the elements where ``mask`` is True (0 where none is).
    {args}
    Returns:
        Tensor: the sums. Integer and bool inputs sum in int64, as :func:`ember.sum` does.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.sum(x, 1, mask=m)
        tensor([4., 0.])
    """
    data, mask = _split(input, mask)
    if dtype is None:
        dtype = _sum_dtype(data)
    dims = _canonical_dim(dim, data.ndim)
    return ember.sum(_filled("sum", data, mask), dims, builtins.bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The product of the elements where ``mask`` is True (1 where none is).
    {args}
    Returns:
        Tensor: the products. Integer and bool inputs multiply in int64.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.prod(x, 1, mask=m)
        tensor([3., 1.])
    """
    data, mask = _split(input, mask)
    if dtype is None:
        dtype = _sum_dtype(data)
    result = _filled("prod", data, mask).to(dtype=dtype)
    for d in reversed(_canonical_dim(dim, data.ndim)):
        result = result.prod(dim=d, keepdim=builtins.bool(keepdim))
    return result


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The largest element where ``mask`` is True (-inf, or the dtype's minimum, where none is).
    {args}
    Returns:
        Tensor: the maxima.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, True, False], [False, False, False]])
        >>> ember.masked.amax(x, 1, mask=m)
        tensor([2., -inf])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    filled = _filled("amax", data, mask)
    dims = _canonical_dim(dim, filled.ndim)
    return ember.amax(filled, dims, builtins.bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The smallest element where ``mask`` is True (inf, or the dtype's maximum, where none is).
    {args}
    Returns:
        Tensor: the minima.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[False, True, True], [True, False, True]])
        >>> ember.masked.amin(x, 1, mask=m)
        tensor([2., 4.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    filled = _filled("amin", data, mask)
    dims = _canonical_dim(dim, filled.ndim)
    return ember.amin(filled, dims, builtins.bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The index of the largest element where ``mask`` is True.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int, optional): the dimension to reduce; the flattened input if None.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype; ``input``'s dtype if None (as
            PyTorch's masked argmax does).
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the indices, in ``dtype``.

    Example::

        >>> x = ember.tensor([[1., 9., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [True, True, False]])
        >>> ember.masked.argmax(x, 1, mask=m)
        tensor([2., 1.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    return ember.argmax(_filled("amax", data, mask), dim, builtins.bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The index of the smallest element where ``mask`` is True.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int, optional): the dimension to reduce; the flattened input if None.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype; ``input``'s dtype if None.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the indices, in ``dtype``.

    Example::

        >>> x = ember.tensor([[1., 9., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[False, True, True], [False, True, True]])
        >>> ember.masked.argmin(x, 1, mask=m)
        tensor([2., 1.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    return ember.argmin(_filled("amin", data, mask), dim, builtins.bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The mean of the elements where ``mask`` is True (NaN where none is).
    {args}
    Returns:
        Tensor: the means.

    Raises:
        ValueError: the dtype (``dtype``, else ``input``'s) is not floating point or complex.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.mean(x, 1, mask=m)
        tensor([2., nan])
    """
    data, mask = _split(input, mask)
    source = "Optional"
    if dtype is None:
        dtype, source = data.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    total = sum(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(data, mask, dim, builtins.bool(keepdim))


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    data, mask = _split(input, mask)
    if unbiased is not None and correction is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    if dtype is None:
        dtype = data.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = ember.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else ember.float32
    count = _count(data, mask, dim, True)
    centred = data - sum(data, dim, keepdim=True, dtype=dtype, mask=mask) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    count = count.reshape(total.shape)
    if correction != 0:
        count = ember.clamp_min(count.to(compute.to_real()) - correction, 0)
    out = (total / count).to(dtype=dtype)
    return ember.sqrt(out) if take_sqrt else out


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None) -> Tensor:
    """The variance of the elements where ``mask`` is True.

    Divides the sum of squared deviations from the masked mean by ``count - correction``
    (clamped at 0, so a slice with too few elements gives inf or NaN).

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int or tuple of ints, optional): the dimensions to reduce; all if None.
        unbiased (bool, optional): ``correction=1`` if True (the default), 0 if False.
        correction (int or float, optional): the difference from the element count.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype; integer inputs give float32.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the variances.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, True, False]])
        >>> ember.masked.var(x, 1, mask=m)
        tensor([2., nan])
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None) -> Tensor:
    """The standard deviation of the elements where ``mask`` is True: ``sqrt`` of :func:`var`.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int or tuple of ints, optional): the dimensions to reduce; all if None.
        unbiased (bool, optional): ``correction=1`` if True (the default), 0 if False.
        correction (int or float, optional): the difference from the element count.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype; integer inputs give float32.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the standard deviations.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [True, True, False]])
        >>> ember.masked.std(x, 1, unbiased=False, mask=m)
        tensor([1.0000, 0.5000])
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The vector ``ord``-norm of the elements where ``mask`` is True.

    Args:
        input (Tensor or MaskedTensor): the input.
        ord (float): the order of the norm (as :func:`ember.linalg.vector_norm`). Default: 2.
        dim (int or tuple of ints, optional): the dimensions to reduce; all if None.
        keepdim (bool): keep the reduced dimensions with size 1. Default: False.
        dtype (ember.dtype, optional): the dtype to compute in.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the norms (0 where no element is read; inf for ``ord=-inf``).

    Example::

        >>> x = ember.tensor([[3., 2., 4.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.norm(x, 2.0, 1, mask=m)
        tensor([5., 0.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    filled = _filled("norm", data, mask, ord)
    dims = _canonical_dim(dim, data.ndim)
    return ember.linalg.vector_norm(filled, ord, dims, builtins.bool(keepdim), dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """``log(sum(exp(x)))`` over the elements where ``mask`` is True (-inf where none is).
    {args}
    Returns:
        Tensor: the results.

    Example::

        >>> x = ember.tensor([[0., 5., 0.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.logsumexp(x, 1, mask=m)
        tensor([0.6931,   -inf])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, data.ndim)
    return ember.logsumexp(_filled("logsumexp", data, mask), dims, keepdim=keepdim).to(dtype=dtype)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """The median of the elements where ``mask`` is True, along one dimension.

    Of an even number of elements, the lower of the two middle ones (as :func:`ember.median`).

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int): the dimension to reduce. Default: -1.
        keepdim (bool): keep the reduced dimension with size 1. Default: False.
        dtype (ember.dtype, optional): the result's dtype for integer inputs.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the medians (NaN where no element is read).

    Raises:
        ValueError: an integer input with a slice where no element is read.

    Example::

        >>> x = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> m = ember.tensor([[True, True, True], [False, False, False]])
        >>> ember.masked.median(x, 1, mask=m)
        tensor([2., nan])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    is_float = data.is_floating_point()
    if not is_float:
        data = data.to(dtype=ember.float32)
    out = ember.nanmedian(_filled("median", data, mask), d, keepdim).values
    if is_float:
        return out
    if ember.isnan(out).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype=dtype)


# -- scans and normalizations ----------------------------------------------------------------


def cumsum(input, dim, *, dtype=None, mask=None) -> Tensor:
    """The running sum along ``dim``, masked-out elements counting as 0.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to scan.
        dtype (ember.dtype, optional): the result's dtype.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the running sums, of ``input``'s shape.

    Example::

        >>> x = ember.tensor([1., 2., 3.])
        >>> ember.masked.cumsum(x, 0, mask=ember.tensor([True, False, True]))
        tensor([1., 1., 4.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    return ember.cumsum(_filled("sum", data, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None) -> Tensor:
    """The running product along ``dim``, masked-out elements counting as 1.

    Args:
        input (Tensor): the input.
        dim (int): the dimension to scan.
        dtype (ember.dtype, optional): the result's dtype.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the running products, of ``input``'s shape.

    Example::

        >>> x = ember.tensor([2., 5., 3.])
        >>> ember.masked.cumprod(x, 0, mask=ember.tensor([True, False, True]))
        tensor([2., 2., 6.])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    return ember.cumprod(_filled("prod", data, mask), d, dtype=dtype).to(dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None) -> Tensor:
    """Softmax along ``dim`` over the elements where ``mask`` is True; the others come out 0.

    A slice with no element left comes out NaN.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int): the dimension to normalize.
        dtype (ember.dtype, optional): the dtype to compute in and return.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the probabilities, of ``input``'s shape.

    Example::

        >>> x = ember.tensor([[1., 2., 3.]])
        >>> ember.masked.softmax(x, 1, mask=ember.tensor([[True, False, True]]))
        tensor([[0.1192, 0.0000, 0.8808]])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    return ember.nn.functional.softmax(_filled("amax", data, mask), d, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None) -> Tensor:
    """Log-softmax along ``dim`` over the elements where ``mask`` is True; the others come
    out -inf.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int): the dimension to normalize.
        dtype (ember.dtype, optional): the dtype to compute in and return.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the log-probabilities, of ``input``'s shape.

    Example::

        >>> x = ember.tensor([[1., 2., 3.]])
        >>> ember.masked.log_softmax(x, 1, mask=ember.tensor([[True, False, True]]))
        tensor([[-2.1269,    -inf, -0.1269]])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    return ember.nn.functional.log_softmax(_filled("amax", data, mask), d, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None) -> Tensor:
    """Softmin (softmax of ``-input``) along ``dim`` over the elements where ``mask`` is True.

    Args:
        input (Tensor or MaskedTensor): the input.
        dim (int): the dimension to normalize.
        dtype (ember.dtype, optional): the dtype to compute in and return.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the probabilities, of ``input``'s shape (0 where masked out).

    Example::

        >>> x = ember.tensor([[1., 2., 3.]])
        >>> ember.masked.softmin(x, 1, mask=ember.tensor([[True, False, True]]))
        tensor([[0.8808, 0.0000, 0.1192]])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    d = _canonical_dim(dim, data.ndim)[0]
    return ember.nn.functional.softmin(_filled("amin", data, mask), d, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None) -> Tensor:
    """Divide by the masked ``ord``-norm along ``dim`` (at least ``eps``); masked-out
    elements come out 0.

    Args:
        input (Tensor or MaskedTensor): the input.
        ord (float): the order of the norm.
        dim (int or tuple of ints): the dimensions the norm runs over.
        eps (float): the smallest divisor. Default: 1e-12.
        dtype (ember.dtype, optional): the dtype to compute the norm in.
        mask (Tensor, optional): a boolean tensor broadcastable to ``input``.

    Returns:
        Tensor: the normalized values, of ``input``'s shape.

    Example::

        >>> x = ember.tensor([[3., 9., 4.]])
        >>> ember.masked.normalize(x, 2.0, 1, mask=ember.tensor([[True, False, True]]))
        tensor([[0.6000, 0.0000, 0.8000]])
    """
    data, mask = _split(input, mask)
    dtype = data.dtype if dtype is None else dtype
    size = norm(data, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return _filled("sum", data, mask) / ember.clamp_min(size, eps)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None) -> Tensor:
    """``log(exp(input) + exp(other))``, each side's masked-out elements counting as -inf.

    Args:
        input (Tensor or MaskedTensor): the first input.
        other (Tensor or MaskedTensor): the second input.
        dtype (ember.dtype, optional): the result's dtype.
        input_mask (Tensor, optional): which elements of ``input`` to read.
        other_mask (Tensor, optional): which elements of ``other`` to read.

    Returns:
        Tensor: the results.

    Example::

        >>> x = ember.tensor([0., 1.])
        >>> ember.masked.logaddexp(x, x, input_mask=ember.tensor([True, False]))
        tensor([0.6931, 1.0000])
    """
    a, input_mask = _split(input, input_mask)
    b, other_mask = _split(other, other_mask)
    dtype = a.dtype if dtype is None else dtype
    return ember.logaddexp(_filled("amax", a, input_mask),
                           _filled("amax", b, other_mask)).to(dtype=dtype)


for _f in (sum, prod, amax, amin, mean, logsumexp):
    _f.__doc__ = _f.__doc__.replace("{args}", _REDUCTION_ARGS)
del _f
