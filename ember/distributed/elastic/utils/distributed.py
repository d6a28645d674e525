"""Free ports and the ``TCPStore`` an agent serves (``torch.distributed.elastic.utils.
distributed``).

Example::

    >>> from ember.distributed.elastic.utils.distributed import create_c10d_store
    >>> store = create_c10d_store(is_server=True, server_addr="127.0.0.1")
    >>> store.set("k", "v"); store.get("k")
    b'v'
"""

from __future__ import annotations

import datetime
import logging

from .api import get_socket_with_port
from .logging import get_logger
from .store import barrier

__all__ = ["barrier", "create_c10d_store", "get_free_port", "get_logger",
           "get_socket_with_port"]

logger = logging.getLogger(__name__)


def create_c10d_store(is_server: bool, server_addr: str, server_port: int = -1,
                      world_size: int = 1, timeout: float = 600,
                      wait_for_workers: bool = True, retries: int = 3,
                      use_libuv: bool | None = None):
    """A ``TCPStore`` at ``server_addr:server_port``, served by this process when
    ``is_server``; port -1 picks a free one (retried ``retries`` times if another
    process takes it first).

    Args:
        is_server (bool): serve the store here.
        server_addr (str): its host.
        server_port (int): its port, -1 for a free one (only with ``world_size`` 1).
        world_size (int): how many processes use it.
        timeout (float): seconds for its operations.
        wait_for_workers (bool): the server waits for ``world_size`` clients.
        retries (int): attempts with a free port.
        use_libuv: accepted for PyTorch's signature.

    Returns:
        TCPStore

    Raises:
        ValueError: port -1 with ``world_size`` > 1.

    Example::

        >>> create_c10d_store(True, "127.0.0.1").port > 0
        True
    """
    from ..._store import TCPStore

    if server_port == -1 and world_size > 1:
        raise ValueError(f"server_port must be specified when world_size > 1, got "
                         f"server_port={server_port}, world_size={world_size}")
    attempt = retries if server_port == -1 else 1
    while True:
        port = server_port if server_port != -1 else get_free_port()
        try:
            store = TCPStore(host_name=server_addr, port=port, world_size=world_size,
                             is_master=is_server, timeout=datetime.timedelta(seconds=timeout),
                             wait_for_workers=wait_for_workers)
            return store
        except (OSError, RuntimeError) as e:
            attempt -= 1
            if attempt <= 0 or server_port != -1:
                raise
            logger.warning("port: %s already in use, attempting to bind to another random "
                           "port (attempt %s of %s): %s", port, retries - attempt, retries, e)


def get_free_port() -> int:
    """A port free on ``localhost`` now (another process may take it before you bind).

    Returns:
        int

    Example::

        >>> 0 < get_free_port() < 65536
        True
    """
    sock = get_socket_with_port()
    with sock:
        return sock.getsockname()[1]

