"""``ember.cpu.amp``: PyTorch's deprecated CPU spellings of ``ember.amp`` (each warns
``FutureWarning`` and stands for the ``ember.amp`` form with ``device_type="cpu"``)."""

from __future__ import annotations

import warnings

from .._core import dtype as _dt
from ..amp import autocast_mode, grad_scaler  # noqa: F401  (torch.cpu.amp's submodules)
from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """Deprecated: ``ember.amp.autocast("cpu", ...)``.

    Args:
        enabled (bool): whether autocast is on in the region.
        dtype (ember.dtype): the lower precision, bfloat16 by default.
        cache_enabled (bool): cache the low-precision copies of parameters.

    Returns:
        The context manager (also a decorator).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.cpu.amp.autocast():
        ...         ember.is_autocast_enabled("cpu")
        True
    """

    def __init__(self, enabled: bool = True, dtype=_dt.bfloat16, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: ``ember.amp.GradScaler("cpu", ...)``.

    Args:
        init_scale, growth_factor, backoff_factor, growth_interval, enabled: as
            ``ember.amp.GradScaler``.

    Returns:
        The scaler.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.cpu.amp.GradScaler().is_enabled()
        True
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
