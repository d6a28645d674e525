"""``ember.fake_quantize_per_tensor_affine`` and ``ember.fake_quantize_per_channel_affine``.

Fake quantization rounds a float tensor onto the integer grid of a quantized dtype and maps it
straight back, so training sees quantization's error while everything stays float.
"""

import numpy as np

from .._core import dtype as _dt
from .._ops.from_data import from_numpy
from ..autograd.function import Function

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]

# NOTE [ Fake quantization ]
# out = (clamp(q, qmin, qmax) - zero_point) * scale, with q = rint(x * (1 / scale)) + zero_point
# for an integer zero point and q = rint(x * (1 / scale) + zero_point) for a float one; all in
# the input's floating dtype, 1 / scale computed once in float32 and rint rounding half to even,
# exactly PyTorch's kernels (except where they dequantize: the per-tensor kernel in float32,
# the float-zero-point one in double). The gradient is the straight-through estimator: the
# incoming gradient passes where q fell inside [qmin, qmax] and is zero where it was clamped.


def _fq_numpy(x, scale, zero_point, quant_min, quant_max, float_zp, per_tensor=False):
    inv = (np.float32(1.0) / scale.astype(np.float32)).astype(x.dtype)
    if float_zp:
        q = np.rint(x * inv + zero_point.astype(x.dtype))
    else:
        q = np.rint(x * inv) + zero_point.astype(x.dtype)
    mask = (q >= quant_min) & (q <= quant_max)
    q = np.clip(q, quant_min, quant_max)
    if float_zp:  # this kernel subtracts and scales in double
        out = (q.astype(np.float64) - zero_point) * scale
    elif per_tensor:  # and this one in float32, whatever the input's dtype
        out = (q.astype(np.float32) - np.float32(zero_point)) * scale.astype(np.float32)
    else:
        out = (q - zero_point.astype(x.dtype)) * scale.astype(x.dtype)
    return out.astype(x.dtype), mask


class FakeQuantizePerTensorAffineCachemask(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max):
        out, mask = _fq_numpy(x.detach().numpy(), np.asarray(scale, np.float32),
                              np.asarray(zero_point, np.int64), quant_min, quant_max, False,
                              True)
        ctx.save_for_backward(from_numpy(mask))
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None


class FakeQuantizePerChannelAffineCachemask(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, axis, quant_min, quant_max):
        shape = [1] * x.dim()
        shape[axis] = -1
        zp = zero_point.detach().numpy()
        out, mask = _fq_numpy(x.detach().numpy(),
                              scale.detach().numpy().astype(np.float32).reshape(shape),
                              zp.reshape(shape), quant_min, quant_max,
                              zp.dtype.kind == "f")
        ctx.save_for_backward(from_numpy(mask))
        return from_numpy(out)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None, None


def _check_range(zero_points, quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    if any(z < quant_min or z > quant_max for z in zero_points):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _check_float_input(op, x):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: expected a floating point input, but got "
                                  f"{x.dtype}")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min: int, quant_max: int):
    """Quantize ``input`` onto an integer grid and back (see NOTE [ Fake quantization ]).

    Args:
        input (Tensor): a floating point tensor.
        scale (float or Tensor): the grid step (a one-element float tensor allowed).
        zero_point (int or Tensor): the integer that represents 0.0.
        quant_min (int): the smallest integer of the grid.
        quant_max (int): the largest integer of the grid.

    Returns:
        Tensor: ``(clamp(round(input / scale) + zero_point, quant_min, quant_max) -
        zero_point) * scale``, of input's dtype; its gradient passes only where no clamping
        happened.

    Example:
        >>> ember.fake_quantize_per_tensor_affine(ember.tensor([0.14, 3.0]), 0.1, 0, 0, 25)
        tensor([0.1000, 2.5000])
    """
    _check_float_input("fake_quantize_per_tensor_affine", input)
    s = float(scale)
    z = int(zero_point)
    _check_range([z], quant_min, quant_max)
    return FakeQuantizePerTensorAffineCachemask.apply(input, s, z, quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis: int, quant_min: int,
                                     quant_max: int):
    """Fake-quantize each slice of ``input`` along ``axis`` with its own scale and zero point
    (see NOTE [ Fake quantization ]).

    Args:
        input (Tensor): a floating point tensor.
        scale (Tensor): 1-d float tensor, one scale per channel.
        zero_point (Tensor): 1-d int32 (or float) tensor, one zero point per channel.
        axis (int): the channel dimension.
        quant_min (int): the smallest integer of the grid.
        quant_max (int): the largest integer of the grid.

    Returns:
        Tensor: the fake-quantized tensor, of input's dtype and shape.

    Example:
        >>> w = ember.tensor([[0.26, -0.5], [0.26, -0.5]])
        >>> ember.fake_quantize_per_channel_affine(w, ember.tensor([0.1, 0.25]),
        ...     ember.tensor([0, 0], dtype=ember.int32), 0, -128, 127)
        tensor([[ 0.3000, -0.5000],
                [ 0.2500, -0.5000]])
    """
    _check_float_input("fake_quantize_per_channel_affine", input)
    if zero_point.dtype not in (_dt.int32, _dt.float32, _dt.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found "
                           f"{zero_point.dtype.scalar_name}")
    axis = axis + input.dim() if axis < 0 else axis
    if not 0 <= axis < input.dim():
        raise RuntimeError(f"`axis` must be between 0 and number of dimensions of input, got "
                           f"{axis}")
    if scale.dim() != 1 or zero_point.dim() != 1 or scale.numel() != input.shape[axis] \
            or zero_point.numel() != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    if not zero_point.dtype.is_floating_point:
        _check_range(zero_point.tolist(), quant_min, quant_max)
    elif quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    return FakeQuantizePerChannelAffineCachemask.apply(input, scale, zero_point, axis,
                                                       quant_min, quant_max)
