"""Small helpers: a required environment variable, a listening socket on a free port, and
the ``${local_rank}`` macro of launcher arguments.

Example::

    >>> from ember.distributed.elastic.utils.api import get_env_variable_or_raise
    >>> get_env_variable_or_raise("PATH") != ""
    True
"""

from __future__ import annotations

import os
import socket
from string import Template
from typing import Any

__all__ = ["get_env_variable_or_raise", "get_socket_with_port", "macros"]


def get_env_variable_or_raise(env_name: str) -> str:
    """The value of environment variable ``env_name``.

    Args:
        env_name (str): the variable.

    Returns:
        str

    Raises:
        ValueError: it is not set.

    Example::

        >>> get_env_variable_or_raise("EMBER_SURELY_UNSET_VARIABLE")
        Traceback (most recent call last):
        ...
        ValueError: Environment variable EMBER_SURELY_UNSET_VARIABLE expected, but not set
    """
    value = os.environ.get(env_name)
    if value is None:
        raise ValueError(f"Environment variable {env_name} expected, but not set")
    return value


def get_socket_with_port() -> socket.socket:
    """A socket bound to a free port of ``localhost`` and listening (close it to free the
    port for its real user).

    Returns:
        socket.socket

    Raises:
        RuntimeError: no address family could bind.

    Example::

        >>> s = get_socket_with_port(); s.getsockname()[1] > 0
        True
        >>> s.close()
    """
    for family, kind, proto, _, _ in socket.getaddrinfo(
            host="localhost", port=None, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM):
        s = socket.socket(family, kind, proto)
        try:
            s.bind(("localhost", 0))
            s.listen(0)
            return s
        except OSError:
            s.close()
    raise RuntimeError("Failed to create a socket")


class macros:  # noqa: N801 -- PyTorch's name
    """Placeholders a launcher replaces in worker arguments: ``macros.local_rank`` is
    ``"${local_rank}"``.

    Example::

        >>> macros.substitute(["--local-rank", macros.local_rank, 7], "1")
        ['--local-rank', '1', 7]
    """

    local_rank = "${local_rank}"

    @staticmethod
    def substitute(args: list[Any], local_rank: str) -> list[str]:
        """Replace ``${local_rank}`` in the string arguments.

        Args:
            args (list): the arguments (non-strings are kept as they are).
            local_rank (str): the value.

        Returns:
            list
        """
        return [Template(a).safe_substitute(local_rank=local_rank) if isinstance(a, str)
                else a for a in args]
