"""Pooling layers."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return getattr(F, f"max_pool{self._nd}d")(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        return_indices: also return the indices of the maxima. Default: False.
        ceil_mode: round the output size up instead of down. Default: False.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.MaxPool1d(2)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 4)
    """

    _nd = 1


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        return_indices: also return the indices of the maxima. Default: False.
        ceil_mode: round the output size up instead of down. Default: False.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.MaxPool2d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 4, 4)
    """

    _nd = 2


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        dilation: spacing between kernel elements. Default: 1.
        return_indices: also return the indices of the maxima. Default: False.
        ceil_mode: round the output size up instead of down. Default: False.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.MaxPool3d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 3, 4, 4, 4)
    """

    _nd = 3


class _AvgPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        if self._nd == 1:
            return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                                self.ceil_mode, self.count_include_pad)
        return getattr(F, f"avg_pool{self._nd}d")(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    """1-d average pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        ceil_mode: round the output size up instead of down. Default: False.
        count_include_pad: count the zero padding in the average. Default: True.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AvgPool1d(2)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 4)
    """

    _nd = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        # As in torch, the 1-d pool keeps its sizes as 1-tuples (its repr shows ``(2,)``).
        self.kernel_size = _ntuple(self.kernel_size, 1)
        self.stride = _ntuple(self.stride, 1)
        self.padding = _ntuple(self.padding, 1)


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        ceil_mode: round the output size up instead of down. Default: False.
        count_include_pad: count the zero padding in the average. Default: True.
        divisor_override: divide by this instead of the window size.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AvgPool2d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 4, 4)
    """

    _nd = 2


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).
        ceil_mode: round the output size up instead of down. Default: False.
        count_include_pad: count the zero padding in the average. Default: True.
        divisor_override: divide by this instead of the window size.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AvgPool3d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 3, 4, 4, 4)
    """

    _nd = 3


class _AdaptiveAvgPoolNd(Module):
    _nd = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_avg_pool{self._nd}d")(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-d average pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveAvgPool1d(1)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 1)
    """

    _nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-d average pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveAvgPool2d((1, 1))
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 1, 1)
    """

    _nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-d average pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveAvgPool3d(1)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 3, 1, 1, 1)
    """

    _nd = 3


class _AdaptiveMaxPoolNd(Module):
    _nd = 2

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_max_pool{self._nd}d")(input, self.output_size,
                                                             self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-d max pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.
        return_indices: also return the indices of the maxima. Default: False.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveMaxPool1d(2)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 2)
    """

    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-d max pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.
        return_indices: also return the indices of the maxima. Default: False.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveMaxPool2d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 2, 2)
    """

    _nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-d max pooling to a fixed output size, whatever the input size.

    Args:
        output_size: the target output size.
        return_indices: also return the indices of the maxima. Default: False.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveMaxPool3d(2)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 3, 2, 2, 2)
    """

    _nd = 3


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        # kept as tuples of the pool's dimension, as PyTorch keeps (and prints) them
        nd = self._nd
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, nd)
        self.padding = _ntuple(padding, nd)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return getattr(F, f"max_unpool{self._nd}d")(input, indices, self.kernel_size,
                                                      self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: puts each maximum back at its index, zeros elsewhere.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).

    Shape:
        ``(N, C, L)``; ``forward(input, indices, output_size=None)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> pool = ember.nn.MaxPool1d(2, return_indices=True)
        >>> out, idx = pool(ember.randn(1, 1, 8))
        >>> tuple(ember.nn.MaxUnpool1d(2)(out, idx).shape)
        (1, 1, 8)
    """

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: puts each maximum back at its index, zeros elsewhere.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).

    Shape:
        ``(N, C, H, W)``; ``forward(input, indices, output_size=None)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> pool = ember.nn.MaxPool2d(2, return_indices=True)
        >>> out, idx = pool(ember.randn(1, 1, 8, 8))
        >>> tuple(ember.nn.MaxUnpool2d(2)(out, idx).shape)
        (1, 1, 8, 8)
    """

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d: puts each maximum back at its index, zeros elsewhere.

    Args:
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        padding: padding added to the input (an int, a tuple, or for convolutions
            ``"same"``/``"valid"``).

    Shape:
        ``(N, C, D, H, W)``; ``forward(input, indices, output_size=None)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> pool = ember.nn.MaxPool3d(2, return_indices=True)
        >>> out, idx = pool(ember.randn(1, 1, 8, 8, 8))
        >>> tuple(ember.nn.MaxUnpool3d(2)(out, idx).shape)
        (1, 1, 8, 8, 8)
    """

    _nd = 3


class LPPool1d(Module):
    """1-d power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``.

    Args:
        norm_type: the p of the p-norm.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        ceil_mode: round the output size up instead of down. Default: False.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LPPool1d(2, 2)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 4)
    """

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(LPPool1d):
    """2-d power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``.

    Args:
        norm_type: the p of the p-norm.
        kernel_size: size of the window or kernel.
        stride: stride of the window (defaults to kernel_size for pooling).
        ceil_mode: round the output size up instead of down. Default: False.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LPPool2d(2, 2)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 4, 4)
    """

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool3d(LPPool1d):
    """3-d power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``.

    Args:
        norm_type (float): the power ``p``.
        kernel_size (int or tuple): window size ``(kD, kH, kW)``.
        stride (int or tuple, optional): window stride; defaults to ``kernel_size``.
        ceil_mode (bool): use ceil instead of floor for the output shape. Default: False.

    Shape:
        Input ``(N, C, D, H, W)`` or ``(C, D, H, W)``; output pooled in the last three dims.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LPPool3d(2, 2)
        >>> tuple(m(ember.ones(1, 2, 4, 4, 4)).shape)
        (1, 2, 2, 2, 2)
    """

    def forward(self, input):
        k = self.kernel_size
        kd, kh, kw = (k, k, k) if isinstance(k, int) else k
        out = F.avg_pool3d(input.pow(self.norm_type), self.kernel_size, self.stride, 0,
                           self.ceil_mode)
        # avg_pool can go slightly negative from rounding; relu keeps the root real
        return (out.sign() * out.abs().relu()).mul(kd * kh * kw).pow(1.0 / self.norm_type)


def _window_starts(samples, input_size, output_size, pool_size):
    """Pseudo-random window starts (Graham, 2014), one row per plane: ``samples`` in [0, 1)
    jitter the stride ``alpha = (input - pool) / (output - 1)``, and the last window ends
    at the input's edge. The arithmetic runs in the samples' dtype, as torch's does."""
    import numpy as np

    starts = np.empty(samples.shape + (output_size,), dtype=np.int64)
    if output_size > 1:
        dt = samples.dtype.type
        alpha = dt(input_size - pool_size) / dt(output_size - 1)
        i = np.arange(output_size - 1, dtype=samples.dtype)
        starts[..., :-1] = (((i + samples[..., None]) * alpha).astype(np.int64)
                            - (samples * alpha).astype(np.int64)[..., None])
    starts[..., -1] = input_size - pool_size
    return starts


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                         random_samples, nd):
    """Fractional max pooling over the last ``nd`` dims: each (sample, channel) plane gets
    its own window positions from ``random_samples`` ``(N, C, nd)``; sample 0 drives the
    width for 2-d (then height), and depth, height, width in order for 3-d."""
    import numpy as np

    from ... import from_numpy, rand

    name = f"fractional_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    kernel = _ntuple(kernel_size, nd)
    if output_size is None:
        ratio = _ntuple(output_ratio, nd)
        output_size = tuple(int(s * r) for s, r in zip(spatial, ratio))
    output_size = _ntuple(output_size, nd)
    dim_names = ("height", "width") if nd == 2 else ("time", "height", "width")
    for k, o, s, dim in zip(kernel, output_size, spatial, dim_names):
        if o + k - 1 > s:
            raise RuntimeError(f"{name}(): pool {dim} {k} too large relative to input "
                               f"{dim} {s}")
    if random_samples is None:
        random_samples = rand(n, c, nd, dtype=x.dtype, device=x.device)
    samples = random_samples.detach().cpu().numpy()
    sample_of_dim = (1, 0) if nd == 2 else (0, 1, 2)
    strides = np.cumprod((1,) + spatial[:0:-1])[::-1]  # element strides of the spatial dims
    flat = np.zeros((n, c) + output_size + kernel, dtype=np.int64)
    for d in range(nd):
        starts = _window_starts(samples[..., sample_of_dim[d]], spatial[d], output_size[d],
                                kernel[d])
        pos = starts[..., :, None] + np.arange(kernel[d])  # (n, c, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = output_size[d], kernel[d]
        flat = flat + pos.reshape(shape) * strides[d]
    window = int(np.prod(kernel))
    index = from_numpy(flat.reshape(n, c, -1)).to(x.device)
    values = x.reshape(n, c, -1).gather(2, index).reshape((n, c) + output_size + (window,))
    out, arg = values.max(dim=-1)
    indices = index.reshape((n, c) + output_size + (window,)).gather(
        -1, arg.unsqueeze(-1)).squeeze(-1)
    if not batched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def _ntuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        nd = self._nd
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output "
                             "size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return _fractional_max_pool(input, self.kernel_size, self.output_size,
                                    self.output_ratio, self.return_indices,
                                    self._random_samples, self._nd)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (Graham, 2014): max over ``kernel_size`` windows placed at
    pseudo-random, non-integer strides so the output can be any size below the input's.

    Args:
        kernel_size (int or tuple): the window ``(kH, kW)``.
        output_size (int or tuple, optional): the output ``(oH, oW)``.
        output_ratio (float or tuple, optional): the output size as a fraction (0, 1) of the
            input's; give this or ``output_size``.
        return_indices (bool): also return the flat ``h * W + w`` index of each maximum
            (for ``MaxUnpool2d``). Default: False.
        _random_samples (Tensor, optional): ``(N, C, 2)`` values in [0, 1) fixing the window
            positions (drawn fresh each call when omitted).

    Shape:
        Input ``(N, C, H, W)`` or ``(C, H, W)``; output ``(N, C, oH, oW)`` or ``(C, oH, oW)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.FractionalMaxPool2d(3, output_ratio=0.5)
        >>> tuple(m(ember.randn(1, 2, 10, 8)).shape)
        (1, 2, 5, 4)
    """

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling (Graham, 2014): max over ``kernel_size`` windows placed at
    pseudo-random, non-integer strides so the output can be any size below the input's.

    Args:
        kernel_size (int or tuple): the window ``(kT, kH, kW)``.
        output_size (int or tuple, optional): the output ``(oT, oH, oW)``.
        output_ratio (float or tuple, optional): the output size as a fraction (0, 1) of the
            input's; give this or ``output_size``.
        return_indices (bool): also return the flat index of each maximum. Default: False.
        _random_samples (Tensor, optional): ``(N, C, 3)`` values in [0, 1) fixing the window
            positions (drawn fresh each call when omitted).

    Shape:
        Input ``(N, C, T, H, W)`` or ``(C, T, H, W)``; output pooled to ``output_size``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.FractionalMaxPool3d(2, output_size=(3, 3, 3))
        >>> tuple(m(ember.randn(1, 2, 6, 6, 6)).shape)
        (1, 2, 3, 3, 3)
    """

    _nd = 3
