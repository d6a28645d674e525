"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

from __future__ import annotations

import math

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    _nd = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", output_padding=0,
                 device=None, dtype=None):
        super().__init__()
        n = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            pads = []
            for d, k in zip(self.dilation, self.kernel_size):
                total = d * (k - 1) if self.padding == "same" else 0
                pads = [total // 2, total - total // 2] + pads
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding)
                                                     for _ in range(2)]
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input, weight, bias):
        fn = getattr(F, f"conv{self._nd}d")
        if self.padding_mode != "zeros":
            mode = self.padding_mode
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=mode), weight,
                      bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-d convolution (cross-correlation) over ``(N, C_in, L)`` inputs.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        output_padding: extra size added to one side of the output. Default: 0.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, L)`` or unbatched ``(C_in, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Conv1d(3, 4, kernel_size=3, padding=1)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 4, 8)
    """

    _nd = 1


class Conv2d(_ConvNd):
    """2-d convolution (cross-correlation) over ``(N, C_in, H, W)`` inputs.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        output_padding: extra size added to one side of the output. Default: 0.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Conv2d(3, 4, kernel_size=3, padding=1)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 4, 8, 8)
    """

    _nd = 2


class Conv3d(_ConvNd):
    """3-d convolution (cross-correlation) over ``(N, C_in, D, H, W)`` inputs.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        output_padding: extra size added to one side of the output. Default: 0.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Conv3d(3, 4, kernel_size=3, padding=1)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 4, 8, 8, 8)
    """

    _nd = 3


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._nd
        output_size = tuple(output_size)[-n:]
        pads = []
        for i in range(n):
            base = ((input.shape[input.dim() - n + i] - 1) * self.stride[i] -
                    2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = output_size[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(
                    f"requested an output size of {list(output_size)}, but valid sizes range "
                    f"from {base} to {base + self.stride[i] - 1} (for an input of "
                    f"{list(input.shape[2:])})")
            pads.append(extra)
        return tuple(pads)

    def forward(self, input, output_size=None):
        fn = getattr(F, f"conv_transpose{self._nd}d")
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution (the gradient of Conv1d with respect to its input),
    used to upsample.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        output_padding: extra size added to one side of the output. Default: 0.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        dilation: spacing between kernel elements. Default: 1.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, L)``; ``forward(input, output_size=None)`` picks the output padding.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ConvTranspose1d(3, 4, kernel_size=2, stride=2)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 4, 16)
    """

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution (the gradient of Conv2d with respect to its input),
    used to upsample.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        output_padding: extra size added to one side of the output. Default: 0.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        dilation: spacing between kernel elements. Default: 1.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, H, W)``; ``forward(input, output_size=None)`` picks the output padding.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ConvTranspose2d(3, 4, kernel_size=2, stride=2)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 4, 16, 16)
    """

    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution (the gradient of Conv3d with respect to its input),
    used to upsample.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        output_padding: extra size added to one side of the output. Default: 0.
        groups: number of blocked connections from input to output channels. Default: 1.
        bias: learn an additive bias. Default: True.
        dilation: spacing between kernel elements. Default: 1.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``. Default: zeros.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, C_in, D, H, W)``; ``forward(input, output_size=None)`` picks the output padding.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ConvTranspose3d(3, 4, kernel_size=2, stride=2)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 4, 16, 16, 16)
    """

    _nd = 3


# names PyTorch keeps in this module that ember defines in a module importing this one
_ELSEWHERE = {"Lazy" + n: ".lazy" for n in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                            "ConvTranspose2d", "ConvTranspose3d")}


def __getattr__(name):
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
