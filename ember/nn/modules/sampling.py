"""Resampling layers: Upsample, PixelShuffle/Unshuffle, ChannelShuffle, Fold, Unfold."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Upsample(Module):
    """Upsample by ``scale_factor`` or to ``size`` (nearest, linear, bilinear, bicubic,
    trilinear).

    Args:
        size: the output size, or the number of neighbouring channels.
        scale_factor: multiplier of the spatial size.
        mode: ``"sum"``, ``"mean"`` or ``"max"`` (bags), or the interpolation mode.
        align_corners: align the corner pixels of input and output (linear modes only).
        recompute_scale_factor: recompute the scale from the output size.

    Shape:
        ``(N, C, *spatial)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Upsample(scale_factor=2, mode='nearest')
        >>> tuple(m(ember.randn(1, 1, 2, 2)).shape)
        (1, 1, 4, 4)
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else
                f"size={self.size!r}")
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-d nearest-neighbour upsampling.

    Args:
        size: the output size, or the number of neighbouring channels.
        scale_factor: multiplier of the spatial size.

    Shape:
        ``(N, C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.UpsamplingNearest2d(scale_factor=2)
        >>> tuple(m(ember.randn(1, 1, 2, 2)).shape)
        (1, 1, 4, 4)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-d bilinear upsampling with ``align_corners=True``.

    Args:
        size: the output size, or the number of neighbouring channels.
        scale_factor: multiplier of the spatial size.

    Shape:
        ``(N, C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.UpsamplingBilinear2d(scale_factor=2)
        >>> tuple(m(ember.randn(1, 1, 2, 2)).shape)
        (1, 1, 4, 4)
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """Rearrange ``(N, C r^2, H, W)`` into ``(N, C, H r, W r)`` (sub-pixel convolution).

    Args:
        upscale_factor: the spatial enlargement factor.

    Shape:
        as described.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.PixelShuffle(2)
        >>> tuple(m(ember.randn(1, 8, 3, 3)).shape)
        (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Inverse of PixelShuffle: ``(N, C, H r, W r)`` -> ``(N, C r^2, H, W)``.

    Args:
        downscale_factor: the spatial reduction factor.

    Shape:
        as described.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.PixelUnshuffle(2)
        >>> tuple(m(ember.randn(1, 2, 6, 6)).shape)
        (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (ShuffleNet, Zhang et al., 2018).

    Args:
        groups: number of blocked connections from input to output channels. Default: 1.

    Shape:
        ``(N, C, *)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ChannelShuffle(2)
        >>> m(ember.arange(4.0).reshape(1, 4, 1, 1)).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class Fold(Module):
    """Combine sliding local blocks ``(N, C prod(k), L)`` into a ``(N, C, *output_size)``
    tensor, summing overlaps (the inverse arrangement of Unfold).

    Args:
        output_size: the target output size.
        kernel_size: size of the window or kernel.
        dilation: spacing between kernel elements. Default: 1.
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        stride: stride of the window (defaults to kernel_size for pooling).

    Shape:
        as described.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Fold(output_size=(4, 5), kernel_size=(2, 2))
        >>> tuple(m(ember.randn(1, 12, 12)).shape)
        (1, 3, 4, 5)
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding local blocks (im2col): ``(N, C, *spatial)`` -> ``(N, C prod(k), L)``.

    Args:
        kernel_size: size of the window or kernel.
        dilation: spacing between kernel elements. Default: 1.
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        stride: stride of the window (defaults to kernel_size for pooling).

    Shape:
        as described.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Unfold(kernel_size=(2, 3))
        >>> tuple(m(ember.randn(2, 5, 3, 4)).shape)
        (2, 30, 4)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
