"""``ember.cuda.nvtx``: NVTX ranges and marks for Nsight profiles, through CuPy.

Without CuPy the functions raise RuntimeError, as a CPU-only PyTorch's do (creating a
``range`` block succeeds; entering it raises).

Example::

    >>> r = ember.cuda.nvtx.range("step")  # entering it needs CUDA
"""

from __future__ import annotations

import contextlib

from . import _runtime

__all__ = ["mark", "range", "range_pop", "range_push"]


def _nvtx():
    try:
        return _runtime.cupy().cuda.nvtx
    except (ImportError, AttributeError):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build? "
                           "(ember reaches NVTX through CuPy, which is not installed)") from None


def range_push(msg: str) -> int:
    """Open a nested NVTX range named ``msg``.

    Args:
        msg: the range's name.

    Returns:
        int: the nesting depth (0), as CuPy does not report it.

    Raises:
        RuntimeError: without CuPy.

    Example::

        >>> ember.cuda.nvtx.range_push("fwd")  # doctest: +SKIP
    """
    _nvtx().RangePush(msg)
    return 0


def range_pop() -> int:
    """Close the innermost NVTX range.

    Returns:
        int: 0.

    Raises:
        RuntimeError: without CuPy.

    Example::

        >>> ember.cuda.nvtx.range_pop()  # doctest: +SKIP
    """
    _nvtx().RangePop()
    return 0


def mark(msg: str) -> None:
    """Put an instant NVTX marker named ``msg`` in the profile.

    Args:
        msg: the marker's text.

    Returns:
        None

    Raises:
        RuntimeError: without CuPy.

    Example::

        >>> ember.cuda.nvtx.mark("here")  # doctest: +SKIP
    """
    _nvtx().Mark(msg)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs):  # noqa: A001  (PyTorch's name)
    """A block wrapped in an NVTX range named ``msg.format(*args, **kwargs)``.

    Args:
        msg: the range's name (a format string when args are given).
        *args: format arguments.
        **kwargs: format arguments by name.

    Returns:
        A context manager.

    Example::

        >>> with ember.cuda.nvtx.range("step {}", 1):  # doctest: +SKIP
        ...     pass
    """
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
