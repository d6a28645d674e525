"""``ember.mps``: Apple's Metal GPUs, which ember does not support.

``is_available()`` is False and ``device_count()`` 0; ``manual_seed`` does nothing, as in a
PyTorch built without MPS; the functions that need the device raise RuntimeError
"Cannot execute ... without MPS backend.".

Example::

    >>> ember.mps.is_available()
    False
"""

from __future__ import annotations

__all__ = ["Event", "current_allocated_memory", "device_count", "driver_allocated_memory",
           "empty_cache", "get_rng_state", "is_available", "manual_seed",
           "recommended_max_memory", "seed", "set_per_process_memory_fraction",
           "set_rng_state", "synchronize"]


def _no_mps(what: str):
    raise RuntimeError(f"Cannot execute {what}() without MPS backend.")


def is_available() -> bool:
    """Whether an MPS device can be used: False.

    Returns:
        False

    Example::

        >>> ember.mps.is_available()
        False
    """
    return False


def device_count() -> int:
    """The number of MPS devices: 0.

    Returns:
        0

    Example::

        >>> ember.mps.device_count()
        0
    """
    return 0


def manual_seed(seed: int) -> None:
    """Seed the MPS generator: does nothing, as in a PyTorch built without MPS.

    Args:
        seed: an int.

    Returns:
        None

    Example::

        >>> ember.mps.manual_seed(0)
    """
    int(seed)


def seed() -> None:
    """Seed the MPS generator randomly: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.seed()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getDefaultGenerator() without MPS backend.
    """
    _no_mps("getDefaultGenerator")


def get_rng_state(device="mps"):
    """The MPS generator's state: raises RuntimeError (no MPS backend).

    Args:
        device: the MPS device.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.get_rng_state()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getDefaultGenerator() without MPS backend.
    """
    _no_mps("getDefaultGenerator")


def set_rng_state(new_state, device="mps") -> None:
    """Restore the MPS generator's state: raises RuntimeError (no MPS backend).

    Args:
        new_state: a state from ``get_rng_state``.
        device: the MPS device.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.set_rng_state(ember.zeros(1, dtype=ember.uint8))
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getDefaultGenerator() without MPS backend.
    """
    _no_mps("getDefaultGenerator")


def synchronize() -> None:
    """Wait for the MPS device: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.synchronize()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute deviceSynchronize() without MPS backend.
    """
    _no_mps("deviceSynchronize")


def empty_cache() -> None:
    """Free the MPS allocator's cache: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.empty_cache()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute emptyCache() without MPS backend.
    """
    _no_mps("emptyCache")


def current_allocated_memory() -> int:
    """Bytes held by MPS tensors: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.current_allocated_memory()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getCurrentAllocatedMemory() without MPS backend.
    """
    _no_mps("getCurrentAllocatedMemory")


def driver_allocated_memory() -> int:
    """Bytes the Metal driver holds for this process: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.driver_allocated_memory()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getDriverAllocatedMemory() without MPS backend.
    """
    _no_mps("getDriverAllocatedMemory")


def recommended_max_memory() -> int:
    """The recommended working-set size: raises RuntimeError (no MPS backend).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.recommended_max_memory()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getRecommendedMaxMemory() without MPS backend.
    """
    _no_mps("getRecommendedMaxMemory")


def set_per_process_memory_fraction(fraction) -> None:
    """Cap MPS memory: raises RuntimeError (no MPS backend).

    Args:
        fraction: the share of the recommended maximum.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mps.set_per_process_memory_fraction(0.5)
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute setMemoryFraction() without MPS backend.
    """
    _no_mps("setMemoryFraction")


class Event:
    """An MPS event: constructing one raises RuntimeError (no MPS backend).

    Args:
        enable_timing: whether the event can time.

    Example::

        >>> ember.mps.Event()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute acquireEvent() without MPS backend.
    """

    def __init__(self, enable_timing: bool = False):
        _no_mps("acquireEvent")
