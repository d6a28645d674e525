"""Lazy modules: parameters whose input-dependent shapes are fixed by the first forward."""

from __future__ import annotations

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)


class LazyModuleMixin:
    """Mixin for modules whose parameter shapes come from the first input: it runs
    ``initialize_parameters(*inputs)`` before the first forward, then turns the module into
    its ordinary class (``cls_to_become``).

    Args:
        (none): the mixing class defines its own.

    Returns:
        A mixin class.

    Example:
        >>> import ember
        >>> m = ember.nn.LazyLinear(3)
        >>> isinstance(m, ember.nn.LazyModuleMixin), m.has_uninitialized_params()
        (True, True)
        >>> _ = m(ember.ones(2, 5))
        >>> type(m).__name__
        'Linear'
    """

    cls_to_become = None

    def _lazy_init_hook(self, module, args):
        self.initialize_parameters(*args)
        if not self.has_uninitialized_params():
            self._lazy_handle.remove()
            if self.cls_to_become is not None:
                self.__class__ = self.cls_to_become
        return None

    def _setup_lazy(self):
        self._lazy_handle = self.register_forward_pre_hook(self._lazy_init_hook)

    def has_uninitialized_params(self):
        return any(is_lazy(p) for p in list(self._parameters.values()) +
                   list(self._buffers.values()) if p is not None)


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is read from the first input; after that forward
    it becomes a ``Linear``.

    Args:
        out_features: size of each output sample.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        as for Linear.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LazyLinear(4)
        >>> _ = m(ember.randn(2, 7))
        >>> type(m).__name__, m.in_features
        ('Linear', 7)
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._setup_lazy()

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args):
        if self.has_uninitialized_params():
            from ...autograd.grad_mode import no_grad

            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


def _lazy_conv(base):
    class LazyConv(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                     groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
            # built with in_channels=0, as PyTorch does: reset_parameters (below) then draws
            # nothing until the first input fixes the shape, so the random stream is the same
            super().__init__(0, out_channels, kernel_size, stride, padding, dilation,
                             groups, bias, padding_mode)
            self.in_channels = 0
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
            self._setup_lazy()

        def reset_parameters(self):
            if not self.has_uninitialized_params() and self.in_channels != 0:
                super().reset_parameters()

        def initialize_parameters(self, input, *args):
            if self.has_uninitialized_params():
                from ...autograd.grad_mode import no_grad

                with no_grad():
                    nd = len(self.kernel_size)
                    self.in_channels = input.shape[0 if input.dim() == nd + 1 else 1]
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups)
                                            + tuple(self.kernel_size))
                    if self.bias is not None:
                        self.bias.materialize((self.out_channels,))
                    self.reset_parameters()

    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + base.__name__
    nd = base._nd
    LazyConv.__doc__ = f"""A ``{base.__name__}`` whose ``in_channels`` is read from the first
    input's channel dimension; after that forward it becomes a ``{base.__name__}``.

    Args:
        out_channels, kernel_size, stride, padding, dilation: as for ``{base.__name__}``.
        groups, bias, padding_mode, device, dtype: as for ``{base.__name__}``.

    Returns:
        A module; ``weight`` (and ``bias``) are uninitialised until the first call.

    Example:
        >>> import ember
        >>> m = ember.nn.{LazyConv.__name__}(4, 3)
        >>> y = m(ember.randn(1, 2{", 5" * nd}))
        >>> type(m).__name__, m.in_channels
        ('{base.__name__}', 2)
    """
    return LazyConv


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)


def _lazy_conv_transpose(base):
    nd = base._nd

    class LazyConvTranspose(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            # built with in_channels=0 (see LazyConv above): nothing drawn until the first input
            super().__init__(0, out_channels, kernel_size, stride, padding,
                             output_padding, groups, bias, dilation, padding_mode)
            self.in_channels = 0
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
            self._setup_lazy()

        def reset_parameters(self):
            if not self.has_uninitialized_params() and self.in_channels != 0:
                super().reset_parameters()

        def initialize_parameters(self, input, *args):
            if self.has_uninitialized_params():
                from ...autograd.grad_mode import no_grad

                with no_grad():
                    self.in_channels = input.shape[0 if input.dim() == nd + 1 else 1]
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups)
                                            + tuple(self.kernel_size))
                    if self.bias is not None:
                        self.bias.materialize((self.out_channels,))
                    self.reset_parameters()

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = "Lazy" + base.__name__
    LazyConvTranspose.__doc__ = f"""A ``{base.__name__}`` whose ``in_channels`` is read from the
    first input's channel dimension; after that forward it becomes a ``{base.__name__}``.

    Args:
        out_channels, kernel_size, stride, padding, output_padding: as for
            ``{base.__name__}``.
        groups, bias, dilation, padding_mode, device, dtype: as for ``{base.__name__}``.

    Returns:
        A module; ``weight`` (and ``bias``) are uninitialised until the first call.

    Example:
        >>> import ember
        >>> m = ember.nn.{LazyConvTranspose.__name__}(4, 3)
        >>> y = m(ember.randn(1, 2{", 5" * nd}))
        >>> type(m).__name__, m.in_channels
        ('{base.__name__}', 2)
    """
    return LazyConvTranspose


LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)


def _lazy_bn(base):
    class LazyBatchNorm(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                     device=None, dtype=None, *, bias=True):
            super().__init__(0, eps, momentum, False, False)
            self.affine = affine
            self.track_running_stats = track_running_stats
            if affine:
                self.weight = UninitializedParameter(device=device, dtype=dtype)
                if bias:
                    self.bias = UninitializedParameter(device=device, dtype=dtype)
            if track_running_stats:
                self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
                self.running_var = UninitializedBuffer(device=device, dtype=dtype)
                from ... import int64, tensor

                self.num_batches_tracked = tensor(0, dtype=int64)
            self._setup_lazy()

        def reset_parameters(self):
            if not self.has_uninitialized_params() and self.num_features != 0:
                super().reset_parameters()

        def initialize_parameters(self, input, *args):
            if self.has_uninitialized_params():
                from ...autograd.grad_mode import no_grad

                with no_grad():
                    self.num_features = input.shape[1]
                    for name in ("weight", "bias"):
                        p = getattr(self, name)
                        if p is not None:
                            p.materialize((self.num_features,))
                    for name in ("running_mean", "running_var"):
                        b = self._buffers.get(name)
                        if b is not None:
                            b.materialize((self.num_features,))
                    self.reset_parameters()

    LazyBatchNorm.__name__ = LazyBatchNorm.__qualname__ = "Lazy" + base.__name__
    nd = int(base.__name__[-2])
    LazyBatchNorm.__doc__ = f"""A ``{base.__name__}`` whose ``num_features`` is read from
    dimension 1 of the first input; after that forward it becomes a ``{base.__name__}``.

    Args:
        eps, momentum, affine, track_running_stats, device, dtype, bias: as for
        ``{base.__name__}`` (``affine`` and ``track_running_stats`` default to True).

    Returns:
        A module; its parameters and running statistics wait for the first call.

    Example:
        >>> import ember
        >>> m = ember.nn.{LazyBatchNorm.__name__}()
        >>> y = m(ember.randn(2, 3{", 4" * nd}))
        >>> type(m).__name__, m.num_features
        ('{base.__name__}', 3)
    """
    return LazyBatchNorm


LazyBatchNorm1d = _lazy_bn(BatchNorm1d)
LazyBatchNorm2d = _lazy_bn(BatchNorm2d)
LazyBatchNorm3d = _lazy_bn(BatchNorm3d)
LazyInstanceNorm1d = _lazy_bn(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_bn(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_bn(InstanceNorm3d)
