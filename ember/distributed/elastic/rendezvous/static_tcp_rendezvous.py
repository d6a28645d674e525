"""The ``static`` rendezvous: a fixed group (``--nnodes N --node-rank R``) meeting at node
0's ``TCPStore`` (``master_addr:master_port``).

Example::

    >>> from ember.distributed.elastic.rendezvous.static_tcp_rendezvous import (
    ...     StaticTCPRendezvous)
    >>> h = StaticTCPRendezvous("127.0.0.1", 0, rank=0, world_size=1, run_id="job", timeout=5)
    >>> info = h.next_rendezvous(); (info.rank, info.world_size)
    (0, 1)
"""

from __future__ import annotations

import datetime
import logging

from ..._store import PrefixStore, Store, TCPStore
from .api import RendezvousHandler, RendezvousInfo, RendezvousParameters, RendezvousStoreInfo
from .utils import parse_rendezvous_endpoint

__all__ = ["PrefixStore", "RendezvousHandler", "RendezvousInfo", "RendezvousParameters",
           "RendezvousStoreInfo", "StaticTCPRendezvous", "Store", "TCPStore",
           "create_rdzv_handler", "parse_rendezvous_endpoint"]

logger = logging.getLogger(__name__)

_default_timeout_seconds = 600


class StaticTCPRendezvous(RendezvousHandler):
    """A group of ``world_size`` nodes whose ranks are given; node 0 serves the store.

    Args:
        master_addr (str): node 0's address.
        master_port (int): its port (0 on node 0: a free one).
        rank (int): this node's rank.
        world_size (int): the number of nodes.
        run_id (str): the job's id (the store's key prefix).
        timeout (int): seconds to wait for the store.

    Example::

        >>> StaticTCPRendezvous("h", 1, 0, 1, "job", 5).get_backend()
        'static'
    """

    def __init__(self, master_addr: str, master_port: int, rank: int, world_size: int,
                 run_id: str, timeout: int):
        self.master_addr = master_addr
        self.master_port = master_port
        self.rank = rank
        self.world_size = world_size
        self.run_id = run_id
        self.timeout = datetime.timedelta(seconds=timeout)
        self._store: Store | None = None

    def get_backend(self) -> str:
        """``"static"``."""
        return "static"

    @property
    def use_agent_store(self) -> bool:
        """True: the workers share node 0's store."""
        return True

    def next_rendezvous(self) -> RendezvousInfo:
        """The (only) group: this node's rank, and the store under the job's prefix.

        Returns:
            RendezvousInfo
        """
        if self._store is None:
            self._store = TCPStore(self.master_addr, self.master_port, self.world_size,
                                   self.rank == 0, self.timeout, multi_tenant=True)
            self.master_port = self._store.port
        return RendezvousInfo(PrefixStore(self.run_id, self._store), self.rank,
                              self.world_size,
                              RendezvousStoreInfo(self.master_addr, self.master_port))

    def is_closed(self) -> bool:
        """False: a static group is never closed."""
        return False

    def set_closed(self):
        """Nothing to close."""

    def num_nodes_waiting(self) -> int:
        """0: no node can join a static group."""
        return 0

    def get_run_id(self) -> str:
        """The job's id."""
        return self.run_id

    def shutdown(self) -> bool:
        """True (the store closes with its last user)."""
        return True


def create_rdzv_handler(params: RendezvousParameters) -> RendezvousHandler:
    """The static handler of ``params`` (``rank`` and ``timeout`` from its settings; the
    node count is ``max_nodes``).

    Args:
        params (RendezvousParameters): the parameters.

    Returns:
        StaticTCPRendezvous

    Raises:
        ValueError: no ``rank``, no endpoint, or no port in it.

    Example::

        >>> p = RendezvousParameters("static", "127.0.0.1:1234", "job", 1, 1, rank=0)
        >>> create_rdzv_handler(p).master_port
        1234
    """
    if "rank" not in params.config:
        raise ValueError("rank is absent in RendezvousParameters.Try add --node-rank to the "
                         "cmd request")
    endpoint = params.endpoint.strip()
    if not endpoint:
        raise ValueError("endpoint is absent in RendezvousParametersTry add --master-port and "
                         "--master-addr to the cmd request")
    master_addr, master_port = parse_rendezvous_endpoint(endpoint, -1)
    if master_port == -1:
        raise ValueError(f"Port is absent in endpoint: {endpoint}. Try launching with "
                         "--master-port")
    timeout = int(params.config.get("timeout", _default_timeout_seconds))
    return StaticTCPRendezvous(master_addr, master_port, int(params.config["rank"]),
                               params.max_nodes, params.run_id, timeout)
