"""Fused quantized modules (``torch.ao.nn.intrinsic.quantized``): a quantized conv or linear
with the ReLU applied while requantizing."""

from ...quantized.modules.conv import Conv2d as _QConv2d
from ...quantized.modules.linear import Linear as _QLinear
from .. import modules as _nni

__all__ = ["LinearReLU", "ConvReLU2d"]


class LinearReLU(_QLinear):
    """Quantized ``Linear`` followed by ReLU, fused: the output is clamped at its zero point
    when requantized.

    Args:
        in_features, out_features, bias, dtype: as ``ember.ao.nn.quantized.Linear``.

    Example:
        >>> LinearReLU(2, 2)._get_name()
        'QuantizedLinearReLU'
    """

    _FLOAT_MODULE = (_nni.LinearReLU,)
    _RELU = True

    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__(in_features, out_features, bias, **({"dtype": dtype} if dtype else {}))

    def _get_name(self):
        return "QuantizedLinearReLU"


class ConvReLU2d(_QConv2d):
    """Quantized ``Conv2d`` followed by ReLU, fused.

    Args:
        as ``ember.ao.nn.quantized.Conv2d``.

    Example:
        >>> ConvReLU2d(1, 2, 3)
        QuantizedConvReLU2d(1, 2, kernel_size=(3, 3), stride=(1, 1), scale=1.0, zero_point=0)
    """

    _RELU = True
    _NAME = "QuantizedConvReLU2d"

