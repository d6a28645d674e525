"""The rendezvous interface of the elastic agents: how the agents of a job agree on a
group (their ranks and a shared store), by a pluggable handler chosen by backend name
(``torch.distributed.elastic.rendezvous.api``).

Example::

    >>> from ember.distributed.elastic.rendezvous.api import RendezvousParameters
    >>> p = RendezvousParameters("static", "localhost:29500", "job", 1, 1, rank=0)
    >>> p.get_as_int("rank")
    0
"""

from __future__ import annotations

import abc
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..._store import Store
from ..utils.distributed import get_free_port

__all__ = ["RendezvousClosedError", "RendezvousConnectionError", "RendezvousError",
           "RendezvousGracefulExitError", "RendezvousHandler", "RendezvousHandlerCreator",
           "RendezvousHandlerRegistry", "RendezvousInfo", "RendezvousParameters",
           "RendezvousStateError", "RendezvousStoreInfo", "RendezvousTimeoutError", "Store",
           "get_free_port", "rendezvous_handler_registry"]


class RendezvousError(Exception):
    """A rendezvous failed.

    Example::

        >>> issubclass(RendezvousTimeoutError, RendezvousError)
        True
    """


class RendezvousClosedError(RendezvousError):
    """The rendezvous is closed (the job is over)."""


class RendezvousTimeoutError(RendezvousError):
    """The rendezvous did not complete in time."""


class RendezvousConnectionError(RendezvousError):
    """The rendezvous backend could not be reached."""


class RendezvousStateError(RendezvousError):
    """The rendezvous state is corrupt."""


class RendezvousGracefulExitError(RendezvousError):
    """This node is not part of the group formed and should exit without failing."""


@dataclass
class RendezvousStoreInfo:
    """Where the workers' store is: ``master_addr:master_port``.

    Example::

        >>> RendezvousStoreInfo("node0", 29500).master_port
        29500
    """

    MASTER_ADDR_KEY: ClassVar[str] = "MASTER_ADDR"
    MASTER_PORT_KEY: ClassVar[str] = "MASTER_PORT"
    master_addr: str
    master_port: int

    @staticmethod
    def build(rank: int, store: Store, local_addr: str | None,
              server_port: int | None = None) -> RendezvousStoreInfo:
        """Rank 0 publishes its address and a port (``server_port``, else a free one) in
        ``store``; every rank reads them.

        Args:
            rank (int): this node's rank.
            store (Store): the rendezvous store.
            local_addr (str, optional): this node's address (default: its host name).
            server_port (int, optional): the port of a store already served.

        Returns:
            RendezvousStoreInfo

        Example::

            >>> from ember.distributed import HashStore
            >>> RendezvousStoreInfo.build(0, HashStore(), "10.0.0.1", 1234)
            RendezvousStoreInfo(master_addr='10.0.0.1', master_port=1234)
        """
        if rank == 0:
            store.set(RendezvousStoreInfo.MASTER_ADDR_KEY,
                      (local_addr or socket.getfqdn()).encode())
            store.set(RendezvousStoreInfo.MASTER_PORT_KEY,
                      str(server_port or get_free_port()).encode())
        addr = store.get(RendezvousStoreInfo.MASTER_ADDR_KEY).decode()
        port = int(store.get(RendezvousStoreInfo.MASTER_PORT_KEY).decode())
        return RendezvousStoreInfo(master_addr=addr, master_port=port)


class RendezvousInfo:
    """The outcome of a rendezvous: a store shared by the group, this node's rank, the
    number of nodes, and where the workers' store is.

    Args:
        store (Store): the group's store.
        rank (int): this node's rank.
        world_size (int): the number of nodes.
        bootstrap_store_info (RendezvousStoreInfo): the workers' store.

    Example::

        >>> from ember.distributed import HashStore
        >>> RendezvousInfo(HashStore(), 0, 1, RendezvousStoreInfo("h", 1)).world_size
        1
    """

    def __init__(self, store: Store, rank: int, world_size: int,
                 bootstrap_store_info: RendezvousStoreInfo):
        self._store = store
        self._rank = rank
        self._world_size = world_size
        self._bootstrap_store_info = bootstrap_store_info

    @property
    def store(self) -> Store:
        """The group's store."""
        return self._store

    @property
    def rank(self) -> int:
        """This node's rank."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of nodes."""
        return self._world_size

    @property
    def bootstrap_store_info(self) -> RendezvousStoreInfo | None:
        """Where the workers' store is."""
        return self._bootstrap_store_info


class RendezvousHandler(abc.ABC):
    """A rendezvous backend, as an agent uses it: ``next_rendezvous`` joins the next
    group; ``num_nodes_waiting`` says whether nodes wait to join (the agent then restarts
    its group); ``set_closed``/``is_closed`` end the job for everyone.

    Example::

        >>> RendezvousHandler.__abstractmethods__ >= {"next_rendezvous", "get_backend"}
        True
    """

    @abc.abstractmethod
    def get_backend(self) -> str:
        """The backend's name."""

    @property
    def use_agent_store(self) -> bool:
        """Whether the workers use the agent's store (``TORCHELASTIC_USE_AGENT_STORE``)."""
        return False

    @abc.abstractmethod
    def next_rendezvous(self) -> RendezvousInfo:
        """Join the next group (blocks until it forms).

        Raises:
            RendezvousClosedError: the rendezvous is closed.
            RendezvousTimeoutError: it did not form in time.
        """

    @abc.abstractmethod
    def is_closed(self) -> bool:
        """Whether the rendezvous is closed."""

    @abc.abstractmethod
    def set_closed(self):
        """Close the rendezvous."""

    @abc.abstractmethod
    def num_nodes_waiting(self) -> int:
        """How many nodes wait to join the next group."""

    @abc.abstractmethod
    def get_run_id(self) -> str:
        """The job's id."""

    @abc.abstractmethod
    def shutdown(self) -> bool:
        """Release the handler's resources; True when done."""


class RendezvousParameters:
    """What a rendezvous handler is built from: backend, endpoint, job id, node counts, and
    backend-specific settings (``**kwargs``, read with ``get``/``get_as_bool``/``get_as_int``).

    Args:
        backend (str): the backend's name.
        endpoint (str): its endpoint (``host[:port]``).
        run_id (str): the job's id.
        min_nodes (int): fewest nodes.
        max_nodes (int): most nodes.
        local_addr (str, optional): this node's address.
        **kwargs: settings.

    Raises:
        ValueError: empty backend, or bad node counts.

    Example::

        >>> RendezvousParameters("c10d", "h:1", "job", 2, 1)
        Traceback (most recent call last):
        ...
        ValueError: The maximum number of rendezvous nodes (1) must be greater than or equal \
to the minimum number of rendezvous nodes (2).
    """

    def __init__(self, backend: str, endpoint: str, run_id: str, min_nodes: int,
                 max_nodes: int, local_addr: str | None = None, **kwargs):
        if not backend:
            raise ValueError("The rendezvous backend name must be a non-empty string.")
        if min_nodes < 1:
            raise ValueError(f"The minimum number of rendezvous nodes ({min_nodes}) must be "
                             "greater than zero.")
        if max_nodes < min_nodes:
            raise ValueError(f"The maximum number of rendezvous nodes ({max_nodes}) must be "
                             "greater than or equal to the minimum number of rendezvous nodes "
                             f"({min_nodes}).")
        self.backend = backend
        self.endpoint = endpoint
        self.run_id = run_id
        self.min_nodes = min_nodes
        self.max_nodes = max_nodes
        self.config = kwargs
        self.local_addr = local_addr

    def get(self, key: str, default: Any = None) -> Any:
        """The setting ``key``, else ``default``.

        Args:
            key (str): the setting.
            default: its default.
        """
        return self.config.get(key, default)

    def get_as_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The setting ``key`` as a bool (``1/true/t/yes/y``, ``0/false/f/no/n``).

        Args:
            key (str): the setting.
            default (bool, optional): its default.

        Raises:
            ValueError: not a boolean.
        """
        value = self.get(key, default)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            if value.lower() in ("1", "true", "t", "yes", "y"):
                return True
            if value.lower() in ("0", "false", "f", "no", "n"):
                return False
        raise ValueError(f"The rendezvous configuration option '{key}' does not represent a "
                         "valid boolean value.")

    def get_as_int(self, key: str, default: int | None = None) -> int | None:
        """The setting ``key`` as an int.

        Args:
            key (str): the setting.
            default (int, optional): its default.

        Raises:
            ValueError: not an integer.
        """
        value = self.get(key, default)
        if value is None:
            return value
        try:
            return int(value)
        except ValueError as e:
            raise ValueError(f"The rendezvous configuration option '{key}' does not represent "
                             "a valid integer value.") from e


RendezvousHandlerCreator = Callable[[RendezvousParameters], RendezvousHandler]


class RendezvousHandlerRegistry:
    """Backend name -> the function creating its handler.

    Example::

        >>> reg = RendezvousHandlerRegistry()
        >>> reg.create_handler(RendezvousParameters("nope", "", "job", 1, 1))
        Traceback (most recent call last):
        ...
        ValueError: The rendezvous backend 'nope' is not registered. Did you forget to call \
`register`?
    """

    def __init__(self) -> None:
        self._registry: dict[str, RendezvousHandlerCreator] = {}

    def register(self, backend: str, creator: RendezvousHandlerCreator) -> None:
        """Register ``creator`` for ``backend`` (again with the same creator is fine).

        Args:
            backend (str): the name.
            creator (callable): parameters -> handler.

        Raises:
            ValueError: empty name, or another creator already registered.
        """
        if not backend:
            raise ValueError("The rendezvous backend name must be a non-empty string.")
        current = self._registry.get(backend)
        if current is not None and current != creator:
            raise ValueError(f"The rendezvous backend '{backend}' cannot be registered with "
                             f"'{creator}' as it is already registered with '{current}'.")
        self._registry[backend] = creator

    def create_handler(self, params: RendezvousParameters) -> RendezvousHandler:
        """A handler of ``params.backend``.

        Args:
            params (RendezvousParameters): the parameters.

        Returns:
            RendezvousHandler

        Raises:
            ValueError: the backend is not registered.
            RuntimeError: the handler is of another backend.
        """
        try:
            creator = self._registry[params.backend]
        except KeyError as e:
            raise ValueError(f"The rendezvous backend '{params.backend}' is not registered. "
                             f"Did you forget to call `{self.register.__name__}`?") from e
        handler = creator(params)
        if handler.get_backend() != params.backend:
            raise RuntimeError(f"The rendezvous backend '{handler.get_backend()}' does not "
                               f"match the requested backend '{params.backend}'.")
        return handler


rendezvous_handler_registry = RendezvousHandlerRegistry()
