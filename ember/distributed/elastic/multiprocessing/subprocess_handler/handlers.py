"""The factory of :class:`SubprocessHandler` (a seam for other process launchers).

Example::

    >>> from ember.distributed.elastic.multiprocessing.subprocess_handler.handlers import (
    ...     get_subprocess_handler)
    >>> get_subprocess_handler("true", (), {}, "", "", 0).proc.wait()
    0
"""

from __future__ import annotations

from .subprocess_handler import SubprocessHandler

__all__ = ["get_subprocess_handler"]


def get_subprocess_handler(entrypoint: str, args: tuple, env: dict[str, str], stdout: str,
                           stderr: str, local_rank_id: int, numa_options=None):
    """Start ``entrypoint *args`` as local rank ``local_rank_id``.

    Args:
        entrypoint (str): the program.
        args (tuple): its arguments.
        env (dict[str, str]): variables added to this process's environment.
        stdout (str): its standard output file (``""``: this process's).
        stderr (str): its standard error file (``""``: this process's).
        local_rank_id (int): its local rank.

    Returns:
        SubprocessHandler: started.

    Example::

        >>> get_subprocess_handler("false", (), {}, "", "", 0).proc.wait()
        1
    """
    return SubprocessHandler(entrypoint=entrypoint, args=args, env=env, stdout=stdout,
                             stderr=stderr, local_rank_id=local_rank_id,
                             numa_options=numa_options)
