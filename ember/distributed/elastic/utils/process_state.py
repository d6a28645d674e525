"""A process's scheduler state from ``/proc`` (Linux), to tell a worker stuck in an
uninterruptible wait (state ``D``) from one that ignores signals.

Example::

    >>> import os
    >>> from ember.distributed.elastic.utils.process_state import read_proc_state
    >>> read_proc_state(os.getpid()) in (None, "R", "S")
    True
"""

from __future__ import annotations

__all__ = ["is_uninterruptible_state", "read_proc_state"]


def read_proc_state(pid: int) -> str | None:
    """The one-letter state of process ``pid`` (``R``, ``S``, ``D``, ``Z``...), or None
    where it cannot be read.

    Args:
        pid (int): the process.

    Returns:
        str or None

    Example::

        >>> read_proc_state(-1) is None
        True
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # the command name, in parentheses, may hold spaces: the state follows its last ")"
    _, sep, rest = text.rpartition(")")
    fields = rest.split()
    if not sep or not fields:
        return None
    return fields[0]


def is_uninterruptible_state(state: str | None) -> bool:
    """Whether ``state`` is the uninterruptible sleep ``D``.

    Args:
        state (str or None): as :func:`read_proc_state` returns.

    Returns:
        bool

    Example::

        >>> is_uninterruptible_state("D"), is_uninterruptible_state("S")
        (True, False)
    """
    return state is not None and state.startswith("D")
