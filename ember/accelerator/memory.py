"""``ember.accelerator.memory``: the memory counters of the current accelerator.

Without an accelerator every function raises RuntimeError, as in a CPU-only PyTorch; with
CUDA each is the ``ember.cuda`` function of the same name (see ember/cuda/memory.py).

Example::

    >>> if ember.accelerator.is_available():
    ...     _ = ember.accelerator.memory_allocated()
"""

from __future__ import annotations

__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats"]


def _cuda():
    from . import _cuda as get

    return get()


def empty_cache() -> None:
    """Return the accelerator's unused cached memory to the driver.

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.empty_cache()
    """
    _cuda().empty_cache()


def empty_host_cache() -> None:
    """Free cached pinned host memory (ember keeps none beyond CuPy's pinned pool).

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.empty_host_cache()
    """
    _cuda()
    from ..cuda import _runtime

    _runtime.cupy().get_default_pinned_memory_pool().free_all_blocks()


def memory_stats(device_index=None, /) -> dict:
    """The accelerator's memory counters (see ``ember.cuda.memory_stats``).

    Args:
        device_index: the device (default: the current one).

    Returns:
        OrderedDict

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     stats = ember.accelerator.memory_stats()
    """
    return _cuda().memory_stats(device_index)


def memory_allocated(device_index=None, /) -> int:
    """Bytes held by live tensors on the accelerator.

    Args:
        device_index: the device (default: the current one).

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     _ = ember.accelerator.memory_allocated()
    """
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None, /) -> int:
    """The peak of ``memory_allocated`` since the last reset.

    Args:
        device_index: the device (default: the current one).

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     _ = ember.accelerator.max_memory_allocated()
    """
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None, /) -> int:
    """Bytes the accelerator's memory pool holds from the driver.

    Args:
        device_index: the device (default: the current one).

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     _ = ember.accelerator.memory_reserved()
    """
    return _cuda().memory_reserved(device_index)


def max_memory_reserved(device_index=None, /) -> int:
    """The peak of ``memory_reserved`` since the last reset.

    Args:
        device_index: the device (default: the current one).

    Returns:
        int

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     _ = ember.accelerator.max_memory_reserved()
    """
    return _cuda().max_memory_reserved(device_index)


def reset_peak_memory_stats(device_index=None, /) -> None:
    """Start the memory peaks afresh.

    Args:
        device_index: the device (default: the current one).

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.reset_peak_memory_stats()
    """
    _cuda().reset_peak_memory_stats(device_index)


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    """Reset the accumulated memory counters.

    Args:
        device_index: the device (default: the current one).

    Returns:
        None

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     ember.accelerator.reset_accumulated_memory_stats()
    """
    _cuda().reset_accumulated_memory_stats(device_index)


def get_memory_info(device_index=None, /) -> tuple:
    """``(free, total)`` bytes of the accelerator's memory.

    Args:
        device_index: the device (default: the current one).

    Returns:
        tuple of two ints

    Raises:
        RuntimeError: without an accelerator.

    Example::

        >>> if ember.accelerator.is_available():
        ...     free, total = ember.accelerator.get_memory_info()
    """
    return _cuda().mem_get_info(device_index)
