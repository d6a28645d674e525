"""``Quantize`` and ``DeQuantize``: what ``convert`` puts in place of QuantStub/DeQuantStub."""

import ember
from ember import nn

from ...._qtensor import quantize_per_tensor

__all__ = ["Quantize", "DeQuantize"]


class Quantize(nn.Module):
    """Quantize float input per tensor with a fixed scale and zero point.

    Args:
        scale (float): the scale.
        zero_point (int): the zero point.
        dtype: the quantized dtype (``ember.quint8``).
        factory_kwargs (dict, optional): unused on the CPU.

    Example:
        >>> Quantize(0.1, 0, ember.quint8)(ember.tensor([0.26])).int_repr()
        tensor([3], dtype=ember.uint8)
    """

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.register_buffer("scale", ember.tensor([scale]))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.int64))
        self.dtype = dtype

    def forward(self, X):
        return quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        """A ``Quantize`` with the parameters ``mod``'s observer chose."""
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(float(scale.float()), int(zero_point.long()),
                        mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Turn a quantized tensor back into float32.

    Args:
        *args: accepted as torch's module takes them.
        **kwargs: accepted as torch's module takes them.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([0.26]), 0.1, 0, ember.quint8)
        >>> DeQuantize()(q)
        tensor([0.3000])
    """

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        """A ``DeQuantize`` for a ``DeQuantStub``."""
        return DeQuantize()
