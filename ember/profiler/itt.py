"""``ember.profiler.itt``: Intel ITT ranges for VTune. ember has no ITT binding, so
``is_available()`` is False and the range functions do nothing, as PyTorch's do when
built without ITT."""

from __future__ import annotations

from contextlib import contextmanager

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]


def is_available() -> bool:
    """False: ember is not linked with Intel's ITT library.

    Returns:
        bool: False.

    Example:
        >>> from ember.profiler import itt
        >>> itt.is_available()
        False
    """
    return False


def range_push(msg: str) -> None:
    """Open a named ITT range (a no-op without ITT).

    Args:
        msg (str): the range's name.

    Returns:
        None.

    Example:
        >>> from ember.profiler import itt
        >>> itt.range_push("forward")
        >>> itt.range_pop()
    """


def range_pop() -> None:
    """Close the innermost ITT range (a no-op without ITT).

    Returns:
        None.

    Example:
        >>> from ember.profiler import itt
        >>> itt.range_push("forward")
        >>> itt.range_pop()
    """


def mark(msg: str) -> None:
    """Mark an instant in the ITT timeline (a no-op without ITT).

    Args:
        msg (str): the mark's name.

    Returns:
        None.

    Example:
        >>> from ember.profiler import itt
        >>> itt.mark("checkpoint saved")
    """


@contextmanager
def range(msg: str, *args, **kwargs):
    """A context manager opening an ITT range named ``msg.format(*args, **kwargs)``.

    Args:
        msg (str): the range's name, a ``str.format`` pattern.
        *args: positional values for the pattern.
        **kwargs: keyword values for the pattern.

    Returns:
        A context manager: the range is open inside its ``with`` block.

    Example::

        >>> from ember.profiler import itt
        >>> with itt.range("step {}", 1):
        ...     pass
    """
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
