"""Normalisation layers: BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RMSNorm, LRN."""

from __future__ import annotations

from ..._core.dtype import int64
from ..._ops.creation import empty, ones, zeros
from ..._ops.from_data import tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device,
                                                       dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        pass

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict:
            state_dict[key] = tensor(0, dtype=int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    _dims = ()

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            raise ValueError(
                f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got "
                f"{input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation (Ioffe & Szegedy, 2015) over the ``C`` channels of a
    ``(N, C)`` or ``(N, C, L)`` batch; running statistics are used in eval mode.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        as described; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.BatchNorm1d(3)
        >>> tuple(m(ember.randn(4, 3, 8)).shape)
        (4, 3, 8)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation (Ioffe & Szegedy, 2015) over the ``C`` channels of a
    ``(N, C, H, W)`` batch; running statistics are used in eval mode.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        as described; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.BatchNorm2d(3)
        >>> tuple(m(ember.randn(4, 3, 8, 8)).shape)
        (4, 3, 8, 8)
    """

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation (Ioffe & Szegedy, 2015) over the ``C`` channels of a
    ``(N, C, D, H, W)`` batch; running statistics are used in eval mode.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        as described; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.BatchNorm3d(3)
        >>> tuple(m(ember.randn(4, 3, 8, 8, 8)).shape)
        (4, 3, 8, 8, 8)
    """

    _dims = (5,)


def _privateuse1_name() -> str:
    from ...utils.backend_registration import _get_privateuse1_backend_name

    return _get_privateuse1_backend_name()


#: device types whose batches SyncBatchNorm synchronises (PyTorch's accelerators, and the
#: renamed PrivateUse1 backend); the tests add the NumPy-backed test device
SYNC_DEVICE_TYPES = {"cuda", "hpu", "xpu"}


def _sync_device_types():
    return SYNC_DEVICE_TYPES | {_privateuse1_name()}


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation synchronised across processes: in training under a process group
    of several processes, each process's part of the batch is normalised with the whole
    batch's statistics (NOTE [ Synchronized batch norm ]); otherwise BatchNorm over
    ``(N, C, *)``.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        process_group: the process group to synchronise over (None: the default group).
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        ``(N, C, *)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.SyncBatchNorm(3)
        >>> tuple(m(ember.randn(4, 3, 5)).shape)
        (4, 3, 5)
    """

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        self._check_input_dim(input)
        if input.dim() >= 2 and input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        need_sync = self.training
        if need_sync:
            from ... import distributed as dist

            need_sync = dist.is_available() and dist.is_initialized()
        if need_sync:
            # as PyTorch: the synchronised statistics exist for accelerators only, and a
            # CPU batch under a process group is refused rather than silently local
            if input.device.type not in _sync_device_types():
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or "
                                 f"{_privateuse1_name()}")
            group = self.process_group if self.process_group else dist.group.WORLD
            world_size = dist.get_world_size(group)
            need_sync = world_size > 1
        if not need_sync:
            return super().forward(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        # NOTE [ Synchronized batch norm ] in ember/_sync_batch_norm.py
        from ..._sync_batch_norm import sync_batch_norm

        return sync_batch_norm(
            input, self.weight, self.bias,
            self.running_mean if self.track_running_stats else None,
            self.running_var if self.track_running_stats else None,
            self.eps, momentum, group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                module.affine, module.track_running_stats, process_group,
                                bias=module.bias is not None)
            out.load_state_dict(module.state_dict())
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    _nd = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.dim()}D "
                             "input)")
        batched = input.dim() == nd + 2
        x = input if batched else input.unsqueeze(0)
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, self.momentum or 0.0,
                            self.eps)
        return y if batched else y.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation (Ulyanov et al., 2016): each channel of each sample is
    normalised over its 1-d extent.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        ``(N, C, L)`` or ``(C, L)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.InstanceNorm1d(3)
        >>> tuple(m(ember.randn(4, 3, 8)).shape)
        (4, 3, 8)
    """

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation (Ulyanov et al., 2016): each channel of each sample is
    normalised over its 2-d extent.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.InstanceNorm2d(3)
        >>> tuple(m(ember.randn(4, 3, 8, 8)).shape)
        (4, 3, 8, 8)
    """

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation (Ulyanov et al., 2016): each channel of each sample is
    normalised over its 3-d extent.

    Args:
        num_features: number of channels ``C``.
        eps: added for numerical stability.
        momentum: weight of the new batch in the running statistics (None: cumulative average).
            Default: 0.1.
        affine: learn a per-channel scale (and bias).
        track_running_stats: keep running mean and variance for eval mode.
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.InstanceNorm3d(3)
        >>> tuple(m(ember.randn(4, 3, 8, 8, 8)).shape)
        (4, 3, 8, 8, 8)
    """

    _nd = 3


class LayerNorm(Module):
    """Layer normalisation (Ba et al., 2016) over the trailing ``normalized_shape`` dims.

    Args:
        normalized_shape: trailing shape normalised over.
        eps: added for numerical stability.
        elementwise_affine: learn a per-element scale (and bias). Default: True.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(*, normalized_shape)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LayerNorm(10)
        >>> tuple(m(ember.randn(4, 5, 10)).shape)
        (4, 5, 10)
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._bias_arg = bias
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(*self.normalized_shape, device=device,
                                            dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Group normalisation (Wu & He, 2018): channels split into groups, each normalised
    per sample.

    Args:
        num_groups: number of groups the channels are split into.
        num_channels: number of channels.
        eps: added for numerical stability.
        affine: learn a per-channel scale (and bias).
        device: where to create the parameters.
        dtype: the dtype of the parameters.
        bias: learn an additive bias. Default: True.

    Shape:
        ``(N, C, *)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.GroupNorm(2, 6)
        >>> tuple(m(ember.randn(4, 6, 8)).shape)
        (4, 6, 8)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        if affine:
            self.weight = Parameter(ones(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation (Zhang & Sennrich, 2019) over the trailing
    ``normalized_shape`` dims: ``x / sqrt(mean(x^2) + eps) * weight``.

    Args:
        normalized_shape: trailing shape normalised over.
        eps: added for numerical stability.
        elementwise_affine: learn a per-element scale (and bias). Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(*, normalized_shape)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.RMSNorm(10)
        >>> tuple(m(ember.randn(4, 10)).shape)
        (4, 10)
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalisation across nearby channels (Krizhevsky et al., 2012).

    Args:
        size: the output size, or the number of neighbouring channels.
        alpha: multiplicative factor.
        beta: exponent or smoothing parameter (see the formula).
        k: additive factor. Default: 1.

    Shape:
        ``(N, C, *)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LocalResponseNorm(2)
        >>> tuple(m(ember.randn(2, 6, 4, 4)).shape)
        (2, 6, 4, 4)
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_window(channels, size):
    """(C, C) 0/1 matrix: row c marks the channels summed for channel c by the legacy
    CrossMapLRN2d. Its running window reaches ``pre_pad - 1`` channels each way but never
    drops channel 0 (the sliding update removes channel ``c - pre_pad`` only for
    ``c > pre_pad``); torch keeps that quirk, so ember does too."""
    import numpy as np

    pre_pad = int((size - 1) / 2 + 1)
    window = np.zeros((channels, channels))
    for c in range(channels):
        low = 0 if c <= pre_pad else c - pre_pad + 1
        window[c, low:min(c + pre_pad, channels)] = 1
        window[c, 0] = 1
    return window


class CrossMapLRN2d(Module):
    """Legacy (Lua Torch) local response normalisation across channels:
    ``y = x * (k + alpha / size * sum of x ** 2 over nearby channels) ** -beta``.

    Prefer :class:`LocalResponseNorm`; this one keeps the legacy window, which always
    includes channel 0.

    Args:
        size (int): number of neighbouring channels in the window.
        alpha (float): multiplicative factor. Default: 1e-4.
        beta (float): exponent. Default: 0.75.
        k (float): additive factor. Default: 1.

    Shape:
        Input ``(N, C, H, W)``; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.CrossMapLRN2d(3)
        >>> tuple(m(ember.ones(1, 4, 2, 2)).shape)
        (1, 4, 2, 2)
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        from ..._ops.from_data import tensor as make_tensor

        if input.dim() != 4:
            raise ValueError(
                f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        window = make_tensor(_cross_map_window(input.shape[1], self.size).T,
                             dtype=input.dtype, device=input.device)
        # sum the squares over each channel's window: a (C, C) matmul on the channel dim
        summed = (input * input).movedim(1, -1).matmul(window).movedim(-1, 1)
        scale = summed * (self.alpha / self.size) + self.k
        return scale.pow(-self.beta) * input

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
