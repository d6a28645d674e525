"""``ember.accelerator``: the current accelerator, whatever its kind, behind one interface.

ember's only accelerator is CUDA (through CuPy). Without one, ``is_available()`` is False,
``current_accelerator()`` None and ``device_count()`` 0, and the functions that need a device
raise RuntimeError "Cannot access accelerator device when none is available.", as in a
CPU-only PyTorch. With CUDA every function here is the ``ember.cuda`` one.

Example::

    >>> device = ember.accelerator.current_accelerator() or ember.device("cpu")
    >>> device.type in ("cpu", "cuda")
    True
"""

from __future__ import annotations

import warnings

from . import memory  # noqa: F401
from .memory import (  # noqa: F401
    empty_cache, empty_host_cache, get_memory_info, max_memory_allocated, max_memory_reserved,
    memory_allocated, memory_reserved, memory_stats, reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

__all__ = [
    "current_accelerator", "current_device_idx", "current_device_index", "current_stream",
    "device_count", "device_index", "empty_cache", "empty_host_cache", "get_device_capability",
    "get_memory_info", "is_available", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream",
    "synchronize",
]

NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _cuda():
    """ember.cuda when a GPU is usable; RuntimeError otherwise."""
    from .. import cuda

    if not cuda.is_available():
        raise RuntimeError(NO_ACCELERATOR)
    return cuda


def is_available() -> bool:
    """Whether an accelerator (for ember, a CUDA GPU through CuPy) can be used.

    Returns:
        bool

    Example::

        >>> isinstance(ember.accelerator.is_available(), bool)
        True
    """
    from .. import cuda

    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ``ember.device`` ('cuda'), or None without one.

    Args:
        check_available: accepted for PyTorch's signature; without an accelerator the
            answer is None either way.

    Returns:
        ember.device or None

    Example::

        >>> ember.accelerator.current_accelerator() in (None, ember.device("cuda"))
        True
    """
    from .._core.device import device

    return device("cuda") if is_available() else None


def device_count() -> int:
    """The number of accelerator devices (0 without one).

    Returns:
        int

    Example::

        >>> ember.accelerator.device_count() >= 0
        True
    """
    from .. import cuda

    return cuda.device_count()


def current_device_index() -> int:
    """The index of the current accelerator device.

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     _ = ember.accelerator.current_device_index()
    """
    return _cuda().current_device()


def current_device_idx() -> int:
    """Deprecated name of ``current_device_index`` (warns FutureWarning).

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():  # doctest: +SKIP
        ...     _ = ember.accelerator.current_device_idx()
    """
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make ``device`` the current accelerator device.

    Args:
        device: an int, a device string or an ``ember.device``.

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.set_device_index(0)
    """
    _cuda().set_device(device)


def set_device_idx(device, /) -> None:
    """Deprecated name of ``set_device_index`` (warns FutureWarning).

    Args:
        device: an int, a device string or an ``ember.device``.

    Returns:
        None

    Example::

        >>> if ember.accelerator.is_available():  # doctest: +SKIP
        ...     ember.accelerator.set_device_idx(0)
    """
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on an accelerator device.

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.synchronize()
    """
    _cuda().synchronize(device)


def current_stream(device=None, /):
    """The current stream of an accelerator device.

    Args:
        device: the device (default: the current one).

    Returns:
        The device's stream.

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     s = ember.accelerator.current_stream()
    """
    return _cuda().current_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its device.

    Args:
        stream: a stream from ``current_stream`` or ``ember.cuda.Stream``.

    Returns:
        None

    Raises:
        TypeError: for something that is not a stream. RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.set_stream(ember.accelerator.current_stream())
    """
    from ..cuda.streams import Stream

    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream(): expected a Stream, but got {type(stream).__name__}")
    _cuda().set_stream(stream)


def get_device_capability(device=None, /) -> dict:
    """What an accelerator device supports, as a dict (``supported_dtypes``).

    Args:
        device: the device (default: the current one).

    Returns:
        dict

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     caps = ember.accelerator.get_device_capability()
    """
    cuda = _cuda()
    from .. import _core

    dtypes = {d for d in vars(_core.dtype).values() if isinstance(d, _core.dtype.dtype)}
    if not cuda.is_bf16_supported():
        dtypes.discard(_core.dtype.bfloat16)
    return {"supported_dtypes": dtypes}


class device_index:
    """A block in which ``device`` is the current accelerator device; None does nothing.

    Args:
        device: an index, or None.

    Raises:
        RuntimeError: on entering with an index but no accelerator.

    Example::

        >>> with ember.accelerator.device_index(None):
        ...     pass
    """

    def __init__(self, device, /):
        self.idx = device
        self._ctx = None

    def __enter__(self):
        if self.idx is None:
            return None
        self._ctx = _cuda().device(self.idx)
        self._ctx.__enter__()
        return None

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
        return False
