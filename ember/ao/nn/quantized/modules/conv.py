"""``ember.ao.nn.quantized.Conv2d``: a 2-d convolution on quantized tensors."""

import numpy as np

import ember
from ember import nn

from ...._qtensor import quantize_per_tensor
from .utils import (
    _centered, _check_quantized_input, _quantize_weight, _reals, _requantize,
)

__all__ = ["Conv2d"]


class Conv2d(nn.Module):
    """A 2-d convolution on quantized tensors: quint8 input, qint8 weight (per tensor or per
    output channel), float bias, quint8 output with its own ``scale`` and ``zero_point``
    (see NOTE [ Quantized kernel arithmetic ]). Made by ``convert``.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv2d`` (only ``padding_mode="zeros"``).

    Example:
        >>> m = Conv2d(1, 1, 1)
        >>> m.set_weight_bias(ember.quantize_per_tensor(ember.ones(1, 1, 1, 1), 0.01, 0,
        ...                                             ember.qint8), None)
        >>> m.scale, m.zero_point = 0.1, 0
        >>> x = ember.quantize_per_tensor(ember.ones(1, 1, 2, 2), 0.1, 0, ember.quint8)
        >>> m(x).dequantize()
        tensor([[[[1., 1.],
                  [1., 1.]]]])
    """

    _RELU = False
    _NAME = "QuantizedConv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode {padding_mode!r} is not supported by "
                                      "quantized convolution; use 'zeros'")
        pair = nn.modules.utils._pair
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride)
        self.padding = pair(padding)
        self.dilation = pair(dilation)
        self.transposed = False
        self.output_padding = pair(0)
        self.groups = groups
        self.padding_mode = padding_mode
        qweight = quantize_per_tensor(
            ember.zeros(out_channels, in_channels // groups, *self.kernel_size), 1.0, 0,
            ember.qint8)
        self.set_weight_bias(qweight, ember.zeros(out_channels) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return self._NAME

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s

    def set_weight_bias(self, w, b):
        """Set the quantized weight ``w`` and float bias ``b``."""
        # kept out of the parameter registry, as PyTorch's packed parameters are
        bias = b if b is None or isinstance(b, nn.Parameter) else nn.Parameter(b.detach())
        object.__setattr__(self, "_weight", w)
        object.__setattr__(self, "_bias", bias)

    def weight(self):
        """The quantized weight."""
        return self._weight

    def bias(self):
        """The float bias (or None)."""
        return self._bias

    def forward(self, x):
        _check_quantized_input("conv2d", x)
        if x.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        xc, xs = _centered(x)
        wc, ws = _centered(self._weight)
        # exact integer sums (NOTE [ Quantized kernel arithmetic ])
        acc = ember.nn.functional.conv2d(ember.from_numpy(xc), ember.from_numpy(wc), None,
                                         self.stride, self.padding, self.dilation,
                                         self.groups).numpy()
        reals = _reals(np.rint(acc), xs[0], ws, self._bias, 1)
        return _requantize(reals, self.scale, self.zero_point, self._RELU)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self._weight
        destination[prefix + "bias"] = self._bias
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs, *args, **kwargs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized form of an observed float conv, fused ConvReLU2d, or QAT conv (a
        QAT conv-bn has its batch norm folded in first)."""
        from ...intrinsic import qat as nniqat

        if hasattr(mod, "weight_fake_quant"):
            if isinstance(mod, nniqat.ConvBn2d):
                weight, bias = nn.utils.fusion.fuse_conv_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var,
                    mod.bn.eps, mod.bn.weight, mod.bn.bias)
                mod.weight, mod.bias = weight, bias
            weight_post_process = mod.weight_fake_quant
            act = mod.activation_post_process
        else:
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            act = getattr(mod, "activation_post_process", None)
            if isinstance(mod, nn.Sequential):  # a fused ConvReLU2d
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype != ember.qint8:
            raise AssertionError("Weight observer must have a dtype of qint8")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        q = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                mod.dilation, mod.groups, mod.bias is not None, mod.padding_mode)
        q.set_weight_bias(qweight, mod.bias)
        if act is not None and act.dtype != ember.float32:
            act_scale, act_zp = act.calculate_qparams()
            q.scale = float(act_scale)
            q.zero_point = int(act_zp)
        return q
