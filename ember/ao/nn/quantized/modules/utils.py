"""Helpers shared by the quantized modules: weight quantization and the integer kernels'
requantization.

NOTE [ Quantized kernel arithmetic ]
PyTorch's x86/fbgemm kernels, which these modules reproduce to the bit:
- a quantized linear or convolution sums ``(x_q - x_zp) * (w_q - w_zp)`` exactly in int32;
- it turns the sum back into reals in float32: ``acc * (x_scale * w_scale[c]) + bias[c]``
  (the scale product rounded to float32 first, then one fused multiply-add);
- a static module requantizes that to its output: ``round(real / out_scale) + out_zp``,
  round half to even, clamped to [0, 255] (to [out_zp, 255] with a fused ReLU);
- a dynamic module first quantizes its float input per tensor to quint8 with 7 bits
  (``reduce_range``), its range widened to hold 0 and its parameters chosen as the fused
  observer's kernel does (NOTE [ Fused observer and fake quantize ]), and returns the float32
  reals without requantizing.
The sums are computed in float64 (exact for integer inputs below 2**53).
"""

import numpy as np

import ember

from ...._qscheme import per_channel_affine, per_channel_symmetric, per_tensor_affine
from ...._qscheme import per_tensor_symmetric
from ...._qtensor import QArray, _qtensor, quantize_per_channel, quantize_per_tensor


def _quantize_weight(float_wt, observer):
    scale, zp = observer.calculate_qparams()
    if observer.qscheme in (per_tensor_symmetric, per_tensor_affine):
        return quantize_per_tensor(float_wt.detach(), float(scale), int(zp), ember.qint8)
    if observer.qscheme in (per_channel_symmetric, per_channel_affine):
        return quantize_per_channel(float_wt.detach(), scale.to(ember.float64),
                                    zp.to(ember.int64), observer.ch_axis, ember.qint8)
    raise ValueError(f"Unsupported qscheme: {observer.qscheme}")


def _centered(q):
    """A quantized tensor's integers minus its zero point(s), float64, and its scale(s)."""
    a = q._data
    ints = a.ints.astype(np.float64)
    if a.axis is None:
        return ints - a.zero_point, np.array([a.scale])
    shape = [1] * ints.ndim
    shape[a.axis] = -1
    return ints - a.zero_point.reshape(shape), a.scale


def _reals(acc, x_scale, w_scales, bias, channel_dim):
    # NOTE [ Quantized kernel arithmetic ]: float32 dequantization of the int32 sums
    shape = [1] * acc.ndim
    shape[channel_dim] = -1
    mult = (np.float32(x_scale) * w_scales.astype(np.float32)).astype(np.float32)
    # a fused multiply-add: the product exact (in double), rounded once with the bias added
    out = acc.astype(np.float32).astype(np.float64) * mult.reshape(shape).astype(np.float64)
    if bias is not None:
        out = out + bias.detach().numpy().astype(np.float32).reshape(shape)
    return out.astype(np.float32)


def _requantize(reals, scale, zero_point, relu):
    q = np.rint(reals / np.float32(scale)) + zero_point
    q = np.clip(q, zero_point if relu else 0, 255).astype(np.uint8)
    return _qtensor(QArray(q, ember.quint8, per_tensor_affine, float(scale), int(zero_point)))


def _check_quantized_input(module, x):
    if not getattr(x, "is_quantized", False):
        raise NotImplementedError(
            f"Could not run 'quantized::{module}' with arguments from the 'CPU' backend: "
            "expected a quantized input (put a QuantStub before this module)")
