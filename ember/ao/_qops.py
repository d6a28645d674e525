"""Ops on quantized tensors that change values but keep the quantization parameters: pooling,
``mean``, resampling, ``hardtanh``, and ``cat``/``stack`` (which requantize to the first
input's parameters).

NOTE [ Quantized ops on centred integers ]
PyTorch's quantized pooling, mean and resampling kernels give an output with the input's
scale and zero point, computed on the integers: each output is the float op applied to
``q - zero_point``, plus ``zero_point``, rounded half-to-even and clamped to the storage range
(padding counts as the zero point, i.e. as 0.0). So each op here runs ember's own float op on
the centred integers in float64 (exact: they are small integers, and averages of them carry
no rounding that could reach a .5 tie differently) and rounds once; max pooling and nearest
resampling only select, so they come out exact either way. The public entry points route a
quantized input here with one line (``if input.is_quantized``); per-channel inputs raise as
PyTorch does. See NOTE [ Quantized tensors ] for how quantized tensors are held.
"""

import numpy as np

from .._core.tensor import Tensor, wrap
from ._qtensor import _STORAGE, QArray

__all__ = ["on_centered_ints", "hardtanh", "cat", "stack", "bilinear"]


def _per_tensor(t) -> QArray:
    a = t._data
    if a.axis is not None:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.")
    return a


def _requantize_ints(a: QArray, reals: np.ndarray) -> Tensor:
    _, lo, hi = _STORAGE[a.qdtype]
    ints = np.asarray(np.clip(np.rint(reals + a.zero_point), lo, hi)).astype(a.ints.dtype)
    return wrap(a.like(ints))


def on_centered_ints(fn, input, *args, **kwargs):
    """Run the float op ``fn`` on a per-tensor quantized ``input`` as PyTorch's quantized
    kernel does (see NOTE [ Quantized ops on centred integers ]).

    Args:
        fn: the float op, called as ``fn(x, *args, **kwargs)``.
        input (Tensor): a per-tensor quantized tensor.
        *args, **kwargs: passed on to ``fn``.

    Returns:
        Tensor: quantized with ``input``'s parameters.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([[[0.1, 0.2, 0.4, 0.4]]]), 0.1, 2,
        ...                               ember.quint8)
        >>> on_centered_ints(ember.nn.functional.avg_pool1d, q, 2).int_repr()
        tensor([[[4, 6]]], dtype=ember.uint8)
    """
    a = _per_tensor(input)
    centered = wrap((a.ints.astype(np.int64) - a.zero_point).astype(np.float64))
    out = fn(centered, *args, **kwargs)
    return _requantize_ints(a, out.numpy().astype(np.float64))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """``hardtanh`` of a quantized tensor: its integers clamped between the quantized
    ``min_val`` and ``max_val``.

    Args:
        input (Tensor): a per-tensor quantized tensor.
        min_val (float), max_val (float): the bounds.

    Returns:
        Tensor: quantized with ``input``'s parameters.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([-2.0, 0.5, 2.0]), 0.1, 20, ember.quint8)
        >>> hardtanh(q).dequantize()
        tensor([-1.0000,  0.5000,  1.0000])
    """
    from ._qtensor import quantize_per_tensor

    a = _per_tensor(input)
    bounds = quantize_per_tensor(wrap(np.array([min_val, max_val], np.float32)), a.scale,
                                 a.zero_point, a.qdtype)._data.ints
    return wrap(a.like(np.clip(a.ints, bounds[0], bounds[1])))


def _same_params_ints(tensors, op):
    qs = [t._data for t in tensors]
    if any(type(q) is not QArray for q in qs):
        raise NotImplementedError(f"{op}: expected all inputs quantized, got a mix of "
                                  "quantized and float tensors")
    if any(q.axis is not None for q in qs):
        raise RuntimeError(f"Only per-tensor quantization is supported in '{op}'!")
    first = qs[0]
    if any(q.qdtype is not first.qdtype for q in qs):
        raise RuntimeError(f"{op}: expected all inputs to have dtype {first.qdtype}")
    out = []
    for q in qs:
        if (q.scale, q.zero_point) == (first.scale, first.zero_point):
            out.append(q.ints)
        else:  # requantized to the first input's parameters, as PyTorch does
            from ._qtensor import quantize_per_tensor

            out.append(quantize_per_tensor(wrap(q.floats()), first.scale, first.zero_point,
                                           first.qdtype)._data.ints)
    return first, out


def cat(tensors, dim=0):
    """``cat`` of quantized tensors: the result has the first input's scale and zero point,
    the others requantized to them.

    Args:
        tensors (sequence of Tensor): per-tensor quantized tensors of one dtype.
        dim (int): the dimension to join along.

    Returns:
        Tensor: the quantized concatenation.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([0.5, 1.0]), 0.5, 0, ember.quint8)
        >>> cat([q, q]).int_repr()
        tensor([1, 2, 1, 2], dtype=ember.uint8)
    """
    first, ints = _same_params_ints(tensors, "cat")
    from .._ops.join import cat as _cat

    joined = _cat([wrap(i) for i in ints], dim)._data
    return wrap(first.like(np.ascontiguousarray(joined)))


def stack(tensors, dim=0):
    """``stack`` of quantized tensors, parameters as in :func:`cat`.

    Args:
        tensors (sequence of Tensor): per-tensor quantized tensors of one shape and dtype.
        dim (int): the new dimension.

    Returns:
        Tensor: the quantized stack.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([0.5, 1.0]), 0.5, 0, ember.quint8)
        >>> stack([q, q]).shape
        ember.Size([2, 2])
    """
    first, ints = _same_params_ints(tensors, "stack")
    from .._ops.join import stack as _stack

    joined = _stack([wrap(i) for i in ints], dim)._data
    return wrap(first.like(np.ascontiguousarray(joined)))


def _source_index(in_size, out_size, scale_factor, align_corners):
    # each output position's source coordinate, its lower neighbour and the step to the upper
    # one, and the two weights, in float32 as PyTorch's quantized kernel computes them
    dst = np.arange(out_size, dtype=np.float32)
    if align_corners:
        step = np.float32((in_size - 1) / (out_size - 1)) if out_size > 1 else np.float32(0)
        src = step * dst
    else:
        step = np.float32(1.0 / scale_factor) if scale_factor else \
            np.float32(in_size / out_size)
        src = np.maximum(step * (dst + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    lo = src.astype(np.int64)
    up = np.where(lo < in_size - 1, 1, 0)
    lam1 = (src - lo.astype(np.float32)).astype(np.float32)
    return lo, up, np.float32(1) - lam1, lam1


def bilinear(input, out_size, scale_factors, align_corners):
    """Bilinear resampling of a quantized (N, C, H, W) tensor: each output is
    ``h0 * (w0 * a + w1 * b) + h1 * (w0 * c + w1 * d)`` over the centred integers in float32,
    plus the zero point, rounded (see NOTE [ Quantized ops on centred integers ]).

    Args:
        input (Tensor): a per-tensor quantized 4-d tensor.
        out_size (tuple): the output (H, W).
        scale_factors (tuple): the (H, W) scale factors given by the caller, or Nones.
        align_corners (bool): as ``interpolate``'s.

    Returns:
        Tensor: quantized with ``input``'s parameters.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([[[[0.0, 1.0]]]]), 0.1, 0, ember.quint8)
        >>> bilinear(q, (1, 3), (None, None), True).int_repr()
        tensor([[[[ 0,  5, 10]]]], dtype=ember.uint8)
    """
    a = _per_tensor(input)
    x = (a.ints.astype(np.int64) - a.zero_point).astype(np.float32)
    h_lo, h_up, h0, h1 = _source_index(x.shape[2], out_size[0], scale_factors[0], align_corners)
    w_lo, w_up, w0, w1 = _source_index(x.shape[3], out_size[1], scale_factors[1], align_corners)
    rows_a, rows_b = x[:, :, h_lo, :], x[:, :, h_lo + h_up, :]
    w0, w1 = w0[None, :], w1[None, :]
    top = w0 * rows_a[..., w_lo] + w1 * rows_a[..., w_lo + w_up]
    bottom = w0 * rows_b[..., w_lo] + w1 * rows_b[..., w_lo + w_up]
    out = h0[:, None] * top + h1[:, None] * bottom
    return _requantize_ints(a, out.astype(np.float64))
