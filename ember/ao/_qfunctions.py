"""The quantized-tensor functions of the ``torch`` namespace itself: ``torch.q_scale(x)`` and
the other function forms of quantized-tensor methods, dynamic quantization of one tensor,
``empty_quantized``, and the quantized pooling and batch-norm entry points. Everything here
works on the ``QArray`` data of NOTE [ Quantized tensors ] (``ember/ao/_qtensor.py``).
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._qtensor import (  # noqa: F401  (re-exported as torch's function forms)
    QArray, _qtensor, _STORAGE, int_repr, q_per_channel_axis,
    q_per_channel_scales, q_per_channel_zero_points, q_scale, q_zero_point, quantize_per_tensor,
)

__all__ = ["choose_qparams_optimized", "empty_quantized", "fused_moving_avg_obs_fake_quant",
           "int_repr", "q_per_channel_axis", "q_per_channel_scales",
           "q_per_channel_zero_points", "q_scale", "q_zero_point", "quantize_per_tensor_dynamic",
           "quantized_batch_norm", "quantized_max_pool1d", "quantized_max_pool2d",
           "quantized_max_pool3d"]


def _not_on_dense(op: str) -> NotImplementedError:
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the 'CPU' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build). 'aten::"
        f"{op}' takes a quantized tensor: quantize the input first (ember.quantize_per_tensor).")


def _choose_qparams(lo: float, hi: float, qmin: int, qmax: int) -> tuple[float, int]:
    # The range always holds 0.0 (so zero is exact); the zero point comes from whichever end
    # loses less to rounding, then is clamped and rounded to an integer.
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    zp_from_min = qmin - lo / scale
    zp_from_max = qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return scale, zero_point


def quantize_per_tensor_dynamic(input: Tensor, dtype: _dt.dtype, reduce_range: bool) -> Tensor:
    """Quantize a float tensor with a scale and zero point chosen from its own range, as
    dynamic quantization does for activations.

    The range is ``[min(input.min(), 0), max(input.max(), 0)]``; the scale spreads it over
    the dtype's integers (half of them with ``reduce_range``) and the zero point is the
    integer that stands for 0.0.

    Args:
        input (Tensor): float32 values.
        dtype (ember.dtype): ``ember.quint8`` or ``ember.qint8``.
        reduce_range (bool): use 7 bits instead of 8 (for kernels that would overflow).

    Returns:
        Tensor: a per-tensor affine quantized tensor.

    Example::

        >>> x = ember.tensor([-1.0, 0.0, 1.0])
        >>> q = ember.quantize_per_tensor_dynamic(x, ember.quint8, False)
        >>> round(q.q_scale(), 6), q.q_zero_point()
        (0.007843, 128)
    """
    if dtype not in (_dt.quint8, _dt.qint8):
        name = dtype.scalar_name if isinstance(dtype, _dt.dtype) else dtype
        raise RuntimeError(f"dtype {name}not supported")
    if not isinstance(input, Tensor) or input.dtype is not _dt.float32:
        got = input.dtype.scalar_name if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"Quantize only works on Float Tensor, got {got}")
    _, qmin, qmax = _STORAGE[dtype]
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    x = input.detach().numpy()
    lo = float(x.min()) if x.size else 0.0
    hi = float(x.max()) if x.size else 0.0
    scale, zero_point = _choose_qparams(lo, hi, qmin, qmax)
    return quantize_per_tensor(input, scale, zero_point, dtype)


def empty_quantized(size, qtensor: Tensor, *, dtype=None, layout=None, device=None,
                    pin_memory=None, memory_format=None) -> Tensor:
    """An uninitialised quantized tensor of ``size`` with the quantization parameters
    (dtype, scheme, scale(s), zero point(s), axis) of ``qtensor``.

    Args:
        size (list of int): the new shape.
        qtensor (Tensor): a quantized tensor whose parameters the result takes.
        dtype (ember.dtype, optional): another quantized dtype for the result.
        layout, device, pin_memory, memory_format: accepted as torch does (strided CPU).

    Returns:
        Tensor: a quantized tensor (its integers are zeros in ember).

    Example::

        >>> q = ember.quantize_per_tensor(ember.zeros(1), 0.5, 2, ember.quint8)
        >>> e = ember.empty_quantized([2, 3], q)
        >>> e.shape, e.q_scale(), e.q_zero_point()
        (ember.Size([2, 3]), 0.5, 2)
    """
    if not isinstance(qtensor, Tensor) or not isinstance(qtensor._data, QArray):
        raise _not_on_dense("empty_quantized")
    a = qtensor._data
    qdtype = a.qdtype if dtype is None else dtype
    if qdtype not in _STORAGE:
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                           "ember.quint8")
    shape = tuple(int(s) for s in (size if not isinstance(size, int) else (size,)))
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
    np_type = _STORAGE[qdtype][0]
    return _qtensor(QArray(np.zeros(shape, np_type), qdtype, a.qscheme, a.scale,
                           a.zero_point, a.axis))


def _quantized_pool(op: str, nd: int, input, kernel_size, stride, padding, dilation,
                    ceil_mode):
    from ..nn import functional as F

    if not isinstance(input, Tensor) or not isinstance(input._data, QArray):
        raise _not_on_dense(op)
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    stride = None if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else stride
    return pool(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode)


def quantized_max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                         ceil_mode: bool = False) -> Tensor:
    """1-D max pooling of a quantized tensor; the result keeps the input's scale and zero
    point (the maximum of integers is the integer of the maximum).

    Args:
        input (Tensor): quantized, ``(C, L)`` or ``(N, C, L)``.
        kernel_size (int or list of int): the window.
        stride (int or list of int): the step; empty means ``kernel_size``.
        padding (int or list of int): implicit padding on both sides.
        dilation (int or list of int): spacing between window taps.
        ceil_mode (bool): round the output length up instead of down.

    Returns:
        Tensor: the pooled quantized tensor.

    Example::

        >>> x = ember.tensor([[0.1, 0.4, 0.3, 0.2]])
        >>> q = ember.quantize_per_tensor(x, 0.1, 0, ember.quint8)
        >>> ember.quantized_max_pool1d(q, [2]).int_repr()
        tensor([[4, 3]], dtype=ember.uint8)
    """
    return _quantized_pool("quantized_max_pool1d", 1, input, kernel_size, stride, padding,
                           dilation, ceil_mode)


def quantized_max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                         ceil_mode: bool = False) -> Tensor:
    """2-D max pooling of a quantized tensor, keeping its scale and zero point.

    Args:
        input (Tensor): quantized, ``(C, H, W)`` or ``(N, C, H, W)``.
        kernel_size (int or list of int): the window.
        stride (int or list of int): the step; empty means ``kernel_size``.
        padding (int or list of int): implicit padding on both sides.
        dilation (int or list of int): spacing between window taps.
        ceil_mode (bool): round output sizes up instead of down.

    Returns:
        Tensor: the pooled quantized tensor.

    Example::

        >>> q = ember.quantize_per_tensor(ember.arange(16.).view(1, 1, 4, 4), 1.0, 0, ember.quint8)
        >>> ember.quantized_max_pool2d(q, [2, 2]).int_repr()
        tensor([[[[ 5,  7],
                  [13, 15]]]], dtype=ember.uint8)
    """
    return _quantized_pool("quantized_max_pool2d", 2, input, kernel_size, stride, padding,
                           dilation, ceil_mode)


def quantized_max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                         ceil_mode: bool = False) -> Tensor:
    """3-D max pooling of a quantized tensor, keeping its scale and zero point.

    Args:
        input (Tensor): quantized, ``(C, D, H, W)`` or ``(N, C, D, H, W)``.
        kernel_size (int or list of int): the window.
        stride (int or list of int): the step; empty means ``kernel_size``.
        padding (int or list of int): implicit padding on both sides.
        dilation (int or list of int): spacing between window taps.
        ceil_mode (bool): round output sizes up instead of down.

    Returns:
        Tensor: the pooled quantized tensor.

    Example::

        >>> q = ember.quantize_per_tensor(ember.arange(8.).view(1, 2, 2, 2), 1.0, 0, ember.quint8)
        >>> ember.quantized_max_pool3d(q, [2, 2, 2]).int_repr()
        tensor([[[[7]]]], dtype=ember.uint8)
    """
    return _quantized_pool("quantized_max_pool3d", 3, input, kernel_size, stride, padding,
                           dilation, ceil_mode)


def quantized_batch_norm(input: Tensor, weight, bias, mean: Tensor, var: Tensor, eps: float,
                         output_scale: float, output_zero_point: int) -> Tensor:
    """Batch normalisation of a quantized tensor with fixed statistics (inference), the
    result quantized with ``output_scale`` and ``output_zero_point``.

    Each channel (dim 1) becomes ``(x - mean) / sqrt(var + eps) * weight + bias``.

    Args:
        input (Tensor): quantized, ``(N, C, ...)`` with 2 to 5 dims.
        weight (Tensor): per-channel scale (torch's signature allows None, its kernel
            does not: None raises RuntimeError).
        bias (Tensor): per-channel shift (None raises RuntimeError likewise).
        mean (Tensor): per-channel running mean.
        var (Tensor): per-channel running variance.
        eps (float): added to the variance.
        output_scale (float): the result's scale.
        output_zero_point (int): the result's zero point.

    Returns:
        Tensor: a quantized tensor of ``input``'s dtype.

    Example::

        >>> q = ember.quantize_per_tensor(ember.tensor([[1.0, 2.0]]), 0.1, 0, ember.quint8)
        >>> one = ember.ones(2)
        >>> out = ember.quantized_batch_norm(q, one, one - 1, ember.tensor([1.0, 1.0]),
        ...                                  ember.tensor([1.0, 1.0]), 0.0, 0.1, 10)
        >>> out.int_repr()
        tensor([[10, 20]], dtype=ember.uint8)
    """
    if not isinstance(input, Tensor) or not isinstance(input._data, QArray):
        raise _not_on_dense("quantized_batch_norm")
    a = input._data
    if a.axis is not None:
        raise RuntimeError("quantized_batch_norm: expected a per-tensor quantized input")
    if not 2 <= a.ndim <= 5:
        raise RuntimeError("quantized::batch_norm only support 2d, 3d, 4d or 5d inputs.")
    if weight is None:
        raise RuntimeError("Weight must be provided")
    if bias is None:
        raise RuntimeError("Bias must be provided")
    c = a.shape[1]

    def channel(t):
        v = np.asarray(t.detach().numpy(), np.float32).reshape(-1)
        if v.size != c:
            raise RuntimeError(f"quantized_batch_norm: expected {c} per-channel values, got "
                               f"{v.size}")
        return v

    w, b, m, v = channel(weight), channel(bias), channel(mean), channel(var)
    alpha = w / np.sqrt(v + np.float32(eps))
    beta = b - m * alpha
    shape = (1, c) + (1,) * (a.ndim - 2)
    x = (a.ints.astype(np.float32) - np.float32(a.zero_point)) * np.float32(a.scale)
    y = x * alpha.reshape(shape) + beta.reshape(shape)
    from .._ops.from_data import from_numpy

    return quantize_per_tensor(from_numpy(y.astype(np.float32)), output_scale,
                               output_zero_point, a.qdtype)


def fused_moving_avg_obs_fake_quant(input: Tensor, observer_on: Tensor, fake_quant_on: Tensor,
                                    running_min: Tensor, running_max: Tensor, scale: Tensor,
                                    zero_point: Tensor, averaging_const: float, quant_min: int,
                                    quant_max: int, ch_axis: int,
                                    per_row_fake_quant: bool = False,
                                    symmetric_quant: bool = False) -> Tensor:
    """One step of quantization-aware training's fused observer: update the moving
    min/max in place (when ``observer_on``), then (when ``fake_quant_on``) choose the
    quantization parameters from the moving range, store them in place, and fake-quantize
    ``input`` with them.

    The moving range is ``old + averaging_const * (new - old)`` (the batch's own range on
    the first step, when the running values are infinite or empty); the parameters are
    chosen as the moving-average observer chooses them
    (NOTE [ Fused observer and fake quantize ] in ember/ao/quantization/fake_quantize.py).

    Args:
        input (Tensor): float32 values.
        observer_on (Tensor): one element; nonzero updates the statistics.
        fake_quant_on (Tensor): one element; nonzero fake-quantizes the result.
        running_min, running_max (Tensor): the moving range (updated in place); per row
            with ``per_row_fake_quant``.
        scale (Tensor): float32 scale(s), updated in place.
        zero_point (Tensor): int32 zero point(s), updated in place.
        averaging_const (float): the moving-average weight of the new batch.
        quant_min, quant_max (int): the integer range.
        ch_axis (int): the channel dim for per-row quantization (0 only, as torch's
            kernel; another raises RuntimeError).
        per_row_fake_quant (bool): one scale and zero point per slice along ``ch_axis``.
        symmetric_quant (bool): a range symmetric around zero.

    Returns:
        Tensor: ``input`` fake-quantized, or ``input`` itself (a copy) when fake
        quantization is off.

    Example::

        >>> rmin, rmax = ember.tensor(float("inf")), ember.tensor(float("-inf"))
        >>> scale, zp = ember.tensor([1.0]), ember.tensor([0], dtype=ember.int32)
        >>> on = ember.tensor([1])
        >>> out = ember.fused_moving_avg_obs_fake_quant(
        ...     ember.tensor([0.0, 0.5, 1.0]), on, on, rmin, rmax, scale, zp, 0.01, 0, 255, 0)
        >>> out, round(scale.item(), 6), zp.item()
        (tensor([0.0000, 0.4980, 1.0000]), 0.003922, 0)
    """
    import ember

    from .quantization.fake_quantize import _choose_qparams

    c = float(averaging_const)
    if per_row_fake_quant and ch_axis != 0:
        raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only "
                           "supported on axis == 0")
    with ember.no_grad():
        x = input.detach().to(ember.float32)
        if per_row_fake_quant:
            axis = 0
            channels = x.shape[axis] if x.dim() else 1
            if running_min.numel() == 0:  # the first step: an empty range per channel
                running_min.resize_(channels).fill_(float("inf"))
                running_max.resize_(channels).fill_(float("-inf"))
            if int(observer_on.reshape(-1)[0]) != 0:
                dims = [d for d in range(x.dim()) if d != axis]
                lo, hi = ember.amin(x, dim=dims), ember.amax(x, dim=dims)
                lo = ember.where(ember.isinf(running_min), lo,
                                 running_min + c * (lo - running_min))
                hi = ember.where(ember.isinf(running_max), hi,
                                 running_max + c * (hi - running_max))
                running_min.copy_(lo)
                running_max.copy_(hi)
        elif int(observer_on.reshape(-1)[0]) != 0:
            lo, hi = ember.aminmax(x)
            if not np.isinf(float(running_min.reshape(-1)[0])):
                lo = running_min.reshape(()) + c * (lo - running_min.reshape(()))
            if not np.isinf(float(running_max.reshape(-1)[0])):
                hi = running_max.reshape(()) + c * (hi - running_max.reshape(()))
            running_min.copy_(lo.reshape(running_min.shape))
            running_max.copy_(hi.reshape(running_max.shape))
        if int(fake_quant_on.reshape(-1)[0]) == 0:
            return input.clone()
        # the parameters follow the running range whenever fake quantization runs
        pairs = [_choose_qparams(a, b, quant_min, quant_max, symmetric_quant)
                 for a, b in zip(running_min.reshape(-1).tolist(),
                                 running_max.reshape(-1).tolist())]
        if per_row_fake_quant and scale.numel() != len(pairs):
            scale.resize_(len(pairs))
            zero_point.resize_(len(pairs))
        scale.copy_(ember.tensor([float(p[0]) for p in pairs],
                                 dtype=scale.dtype).reshape(scale.shape))
        zero_point.copy_(ember.tensor([p[1] for p in pairs],
                                      dtype=zero_point.dtype).reshape(zero_point.shape))
    if per_row_fake_quant:
        return ember.fake_quantize_per_channel_affine(input, scale, zero_point, ch_axis,
                                                      quant_min, quant_max)
    return ember.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min,
                                                 quant_max)


def _quant_loss(x: np.ndarray, lo, hi, bit_width: int) -> np.float32:
    # The L2 error of quantizing x to ``bit_width`` bits over [lo, hi], with the minimum and
    # the scale stored as float16 (the 4/2-bit embedding format this search serves).
    qmax = np.float32((1 << bit_width) - 1)
    lo = np.float32(np.float16(lo))
    span = np.float32(np.float32(hi) - lo)
    scale = np.float32(1.0) if span == 0 else np.float32(np.float16(span / qmax))
    inv = np.float32(1.0) if scale == 0 else np.float32(np.float32(1.0) / scale)
    q = np.clip(np.rint((x - lo) * inv), 0, qmax).astype(np.float32)
    d = x - (q * scale + lo)
    return np.float32(np.sqrt(np.float32(np.dot(d, d))))


def choose_qparams_optimized(input: Tensor, numel: int, n_bins: int, ratio: float,
                             bit_width: int) -> tuple[Tensor, Tensor]:
    """A quantization range for the first ``numel`` values of ``input`` that loses less than
    their plain min/max: a greedy search shrinks the range one ``(max - min) / n_bins`` step
    at a time from whichever end lowers the L2 quantization error more, keeping at least
    ``(1 - ratio) * n_bins`` steps, and returns the best local optimum it met (or the full
    range).

    Args:
        input (Tensor): float32 values (read flat).
        numel (int): how many leading values to consider.
        n_bins (int): the number of steps the full range is cut into.
        ratio (float): the largest fraction of the range the search may cut off.
        bit_width (int): the bits of the quantized values (8, 4 or 2).

    Returns:
        tuple of Tensor: ``(max, min)``, each a float32 tensor of one element.

    Example::

        >>> hi, lo = ember.choose_qparams_optimized(ember.tensor([0.0, 1.0, 2.0, 100.0]), 4,
        ...                                         200, 0.16, 8)
        >>> hi.shape, lo.item()
        (ember.Size([1]), 0.0)
    """
    if not isinstance(input, Tensor) or input.dtype is not _dt.float32:
        got = input.dtype.scalar_name if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"expected scalar type Float but found {got}")
    flat = np.ascontiguousarray(input.detach().numpy()).reshape(-1)
    numel = int(numel)
    if numel > flat.size:
        raise RuntimeError("numel is out of the bound of input tensor")
    x = flat[:max(numel, 1)]
    xmin, xmax = np.float32(x.min()), np.float32(x.max())
    step = np.float32((xmax - xmin) / np.float32(n_bins))
    min_bins = int(n_bins * (1.0 - np.float32(ratio)))
    best = cur_loss = _quant_loss(x, xmin, xmax, bit_width)
    cur_min, cur_max = xmin, xmax
    thr = np.float32(min_bins * step)
    while cur_min + thr < cur_max:
        loss_left = _quant_loss(x, np.float32(cur_min + step), cur_max, bit_width)
        loss_right = _quant_loss(x, cur_min, np.float32(cur_max - step), bit_width)
        if cur_loss < loss_left and cur_loss < loss_right and cur_loss < best:
            best, xmin, xmax = cur_loss, cur_min, cur_max  # a local optimum
        if loss_left < loss_right:
            cur_min, cur_loss = np.float32(cur_min + step), loss_left
        else:
            cur_max, cur_loss = np.float32(cur_max - step), loss_right
    from .._ops.from_data import from_numpy

    return (from_numpy(np.array([xmax], np.float32)), from_numpy(np.array([xmin], np.float32)))
