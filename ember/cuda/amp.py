"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of ``ember.amp`` (each warns
``FutureWarning``). Without a GPU, autocast and the scaler warn and disable themselves,
as in PyTorch."""

from __future__ import annotations

import warnings

from .._core import dtype as _dt
from ..amp import autocast_mode, grad_scaler  # noqa: F401  (torch.cuda.amp's submodules)
from ..amp import autocast_mode as _am
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler", "amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    """True when no CUDA device can be used, so CUDA mixed precision cannot run.

    Returns:
        bool.

    Example::

        >>> isinstance(ember.cuda.amp.amp_definitely_not_available(), bool)
        True
    """
    return not _am._cuda_available()


class autocast(_am.autocast):
    """Deprecated: ``ember.amp.autocast("cuda", ...)``.

    Args:
        enabled (bool): whether autocast is on in the region.
        dtype (ember.dtype): the lower precision, float16 by default.
        cache_enabled (bool): cache the low-precision copies of parameters.

    Returns:
        The context manager (also a decorator).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.cuda.amp.autocast(enabled=False):
        ...         ember.is_autocast_enabled("cuda")
        False
    """

    def __init__(self, enabled: bool = True, dtype=_dt.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: ``ember.amp.GradScaler("cuda", ...)``; without a GPU it warns and
    disables itself.

    Args:
        init_scale, growth_factor, backoff_factor, growth_interval, enabled: as
            ``ember.amp.GradScaler``.

    Returns:
        The scaler.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     s = ember.cuda.amp.GradScaler()
        >>> s.is_enabled() == ember.cuda.is_available()
        True
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ``ember.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)``.

    Args:
        fwd: the forward staticmethod (omit to get a decorator).
        cast_inputs (ember.dtype, optional): the dtype to run the forward in.

    Returns:
        The wrapped forward.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     f = ember.cuda.amp.custom_fwd(lambda ctx, x: x)
        >>> callable(f)
        True
    """
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return _am.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """Deprecated: ``ember.amp.custom_bwd(bwd, device_type="cuda")``.

    Args:
        bwd: the backward staticmethod.

    Returns:
        The wrapped backward.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     b = ember.cuda.amp.custom_bwd(lambda ctx, g: g)
        >>> callable(b)
        True
    """
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                  FutureWarning, stacklevel=2)
    return _am.custom_bwd(bwd, device_type="cuda")
