"""``ember.backends.mps``: Apple's Metal GPUs, which ember does not support.

Example::

    >>> ember.backends.mps.is_available(), ember.backends.mps.is_built()
    (False, False)
"""

from __future__ import annotations

__all__ = ["get_core_count", "get_name", "is_available", "is_built", "is_macos13_or_newer",
           "is_macos_or_newer"]


def is_available() -> bool:
    """Whether an MPS device can be used: False (ember has no Metal backend).

    Returns:
        False.

    Example::

        >>> ember.backends.mps.is_available()
        False
    """
    return False


def is_built() -> bool:
    """Whether ember was built with MPS support: False.

    Returns:
        False.

    Example::

        >>> ember.backends.mps.is_built()
        False
    """
    return False


def _no_mps(what: str):
    raise RuntimeError(f"Cannot execute {what} without MPS backend.")


def is_macos_or_newer(major: int, minor: int) -> bool:
    """Whether macOS is at least ``major.minor``: raises RuntimeError without MPS, as PyTorch.

    Args:
        major: macOS major version.
        minor: macOS minor version.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.backends.mps.is_macos_or_newer(14, 0)
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute isOnMacOSorNewer() without MPS backend.
    """
    _no_mps("isOnMacOSorNewer()")


def is_macos13_or_newer(minor: int = 0) -> bool:
    """Whether macOS is at least 13.``minor``: raises RuntimeError without MPS.

    Args:
        minor: macOS 13 minor version.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.backends.mps.is_macos13_or_newer()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute isOnMacOSorNewer() without MPS backend.
    """
    _no_mps("isOnMacOSorNewer()")


def get_name() -> str:
    """The Metal device's name: raises RuntimeError without MPS.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.backends.mps.get_name()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getName() without MPS backend.
    """
    _no_mps("getName()")


def get_core_count() -> int:
    """The Metal device's GPU core count: raises RuntimeError without MPS.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.backends.mps.get_core_count()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getCoreCount() without MPS backend.
    """
    _no_mps("getCoreCount()")
