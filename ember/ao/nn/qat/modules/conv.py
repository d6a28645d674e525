"""``ember.ao.nn.qat.Conv1d/2d/3d``: convolutions with a fake-quantized weight."""

from ember import nn

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


class _QATConvMixin:
    # shared by the three: the fake-quantized forward and the swaps from and to float

    def _init_qat(self, qconfig, factory_kwargs):
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT twin of a float convolution that has a ``qconfig`` (or of a fused
        ``ConvReLU``'s convolution); it shares ``mod``'s parameters."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        if isinstance(mod, nn.Sequential):  # a fused ConvReLU: its conv carries the weights
            qconfig, mod = mod.qconfig, mod[0]
        else:
            qconfig = mod.qconfig
        qat = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                  padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                  bias=mod.bias is not None, padding_mode=mod.padding_mode, qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self):
        """A plain float convolution with this layer's parameters."""
        base = self._FLOAT_CONV_MODULE
        conv = base(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                    self.padding, self.dilation, self.groups, self.bias is not None,
                    self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        return conv


class Conv1d(_QATConvMixin, nn.Conv1d):
    """``nn.Conv1d`` whose weight is fake-quantized by ``qconfig.weight()`` on each forward.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv1d``.
        qconfig (QConfig): the quantization config (required).
        device, dtype: where and how to make the parameters.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> Conv1d(1, 2, 3, qconfig=default_qat_qconfig)(ember.ones(1, 1, 5)).shape
        ember.Size([1, 2, 3])
    """

    _FLOAT_MODULE = nn.Conv1d
    _FLOAT_CONV_MODULE = nn.Conv1d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        nn.Conv1d.__init__(self, in_channels, out_channels, kernel_size, stride=stride,
                           padding=padding, dilation=dilation, groups=groups, bias=bias,
                           padding_mode=padding_mode, device=device, dtype=dtype)
        self._init_qat(qconfig, {"device": device, "dtype": dtype})


class Conv2d(_QATConvMixin, nn.Conv2d):
    """``nn.Conv2d`` whose weight is fake-quantized by ``qconfig.weight()`` on each forward.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv2d``.
        qconfig (QConfig): the quantization config (required).
        device, dtype: where and how to make the parameters.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> Conv2d(1, 2, 3, qconfig=default_qat_qconfig)(ember.ones(1, 1, 5, 5)).shape
        ember.Size([1, 2, 3, 3])
    """

    _FLOAT_MODULE = nn.Conv2d
    _FLOAT_CONV_MODULE = nn.Conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, stride=stride,
                           padding=padding, dilation=dilation, groups=groups, bias=bias,
                           padding_mode=padding_mode, device=device, dtype=dtype)
        self._init_qat(qconfig, {"device": device, "dtype": dtype})


class Conv3d(_QATConvMixin, nn.Conv3d):
    """``nn.Conv3d`` whose weight is fake-quantized by ``qconfig.weight()`` on each forward.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv3d``.
        qconfig (QConfig): the quantization config (required).
        device, dtype: where and how to make the parameters.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> Conv3d(1, 2, 1, qconfig=default_qat_qconfig)(ember.ones(1, 1, 2, 2, 2)).shape
        ember.Size([1, 2, 2, 2, 2])
    """

    _FLOAT_MODULE = nn.Conv3d
    _FLOAT_CONV_MODULE = nn.Conv3d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        nn.Conv3d.__init__(self, in_channels, out_channels, kernel_size, stride=stride,
                           padding=padding, dilation=dilation, groups=groups, bias=bias,
                           padding_mode=padding_mode, device=device, dtype=dtype)
        self._init_qat(qconfig, {"device": device, "dtype": dtype})
