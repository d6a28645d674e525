"""The ``c10d`` rendezvous handler: nodes meet in numbered rounds through a store, a group
forms with between ``min_nodes`` and ``max_nodes`` members, and a node that arrives while a
group runs asks for room (the running agents then restart into a bigger group).

The rounds are ember's (NOTE [ Elastic rendezvous ] in ``elastic/_rendezvous.py``; the
launcher uses the same ones): this module wraps them in PyTorch's handler interface, with
PyTorch's settings (``join_timeout``, ``last_call_timeout``, ``close_timeout``).

Example::

    >>> from ember.distributed import HashStore
    >>> from ember.distributed.elastic.rendezvous.dynamic_rendezvous import (
    ...     DynamicRendezvousHandler, RendezvousTimeout)
    >>> from ember.distributed.elastic.rendezvous.c10d_rendezvous_backend import (
    ...     C10dRendezvousBackend)
    >>> store = HashStore()
    >>> h = DynamicRendezvousHandler.from_backend("job", store, C10dRendezvousBackend(store, "job"),
    ...                                           1, 1, timeout=RendezvousTimeout(last_call=0))
    >>> info = h.next_rendezvous(); (info.rank, info.world_size)
    (0, 1)
"""

from __future__ import annotations

import abc
import inspect
import logging
import socket
from dataclasses import dataclass
from datetime import timedelta

from ..._store import PrefixStore, Store
from ..events import NodeState, construct_and_record_rdzv_event
from .api import (
    RendezvousClosedError,
    RendezvousError,
    RendezvousGracefulExitError,
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStateError,
    RendezvousStoreInfo,
    RendezvousTimeoutError,
)

__all__ = ["DynamicRendezvousHandler", "NodeState", "RendezvousBackend",
           "RendezvousClosedError", "RendezvousError", "RendezvousGracefulExitError",
           "RendezvousHandler", "RendezvousInfo", "RendezvousParameters", "RendezvousSettings",
           "RendezvousStateError", "RendezvousStoreInfo", "RendezvousTimeout",
           "RendezvousTimeoutError", "Store", "construct_and_record_rdzv_event",
           "create_handler", "get_method_name"]

logger = logging.getLogger(__name__)


def get_method_name(depth: int = 2) -> str:
    """The name of the function ``depth`` frames up the stack (for event names).

    Args:
        depth (int): frames up.

    Returns:
        str

    Example::

        >>> def f():
        ...     return get_method_name(1)
        >>> f()
        'f'
    """
    stack = inspect.stack()
    return stack[depth].function if len(stack) > depth else "no_method_name"


class RendezvousBackend(abc.ABC):
    """Where the rendezvous state lives: ``get_state``/``set_state`` (set only if the
    token still matches: compare-and-set).

    Example::

        >>> RendezvousBackend.__abstractmethods__ >= {"get_state", "set_state"}
        True
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The backend's name."""

    @abc.abstractmethod
    def get_state(self) -> tuple[bytes, object] | None:
        """``(state, token)``, or None when no state was set."""

    @abc.abstractmethod
    def set_state(self, state: bytes, token: object | None = None
                  ) -> tuple[bytes, object, bool] | None:
        """Set ``state`` if ``token`` matches; ``(state now, its token, whether set)``."""


class RendezvousTimeout:
    """The rendezvous' timeouts (seconds or None for the defaults): ``join`` (a group must
    form within it, 600), ``last_call`` (wait for more nodes once ``min_nodes`` joined, 30),
    ``close`` (30), ``heartbeat`` (5).

    Example::

        >>> RendezvousTimeout(join=timedelta(seconds=5)).join.total_seconds()
        5.0
    """

    _ZERO = timedelta(0)
    _DEFAULT = {"join": timedelta(seconds=600), "last_call": timedelta(seconds=30),
                "close": timedelta(seconds=30), "heartbeat": timedelta(seconds=5)}

    def __init__(self, join: timedelta | None = None, last_call: timedelta | None = None,
                 close: timedelta | None = None, heartbeat: timedelta | None = None) -> None:
        values = {"join": join, "last_call": last_call, "close": close,
                  "heartbeat": heartbeat}
        for name, value in values.items():
            if value is None:
                value = self._DEFAULT[name]
            elif not isinstance(value, timedelta):
                value = timedelta(seconds=value)
            if value < self._ZERO:
                raise ValueError(f"The {name} timeout ({value}) must be positive.")
            setattr(self, "_" + name, value)

    @property
    def join(self) -> timedelta:
        """How long a group may take to form."""
        return self._join

    @property
    def last_call(self) -> timedelta:
        """How long to wait for more nodes once enough joined."""
        return self._last_call

    @property
    def close(self) -> timedelta:
        """How long closing may take."""
        return self._close

    @property
    def heartbeat(self) -> timedelta:
        """The keep-alive period."""
        return self._heartbeat


@dataclass(repr=False, eq=False, frozen=True)
class RendezvousSettings:
    """A rendezvous' settings.

    Example::

        >>> RendezvousSettings("job", 1, 2, RendezvousTimeout(), timedelta(seconds=5), 3).max_nodes
        2
    """

    run_id: str
    min_nodes: int
    max_nodes: int
    timeout: RendezvousTimeout
    keep_alive_interval: timedelta
    keep_alive_max_attempt: int


class DynamicRendezvousHandler(RendezvousHandler):
    """The ``c10d`` handler (see the module): build it with :meth:`from_backend` or
    :func:`create_handler`. Calling ``next_rendezvous`` again after a group formed opens
    the next round; the other nodes see it in ``num_nodes_waiting``'s store and follow.

    Args:
        run_id (str): the job's id.
        store (Store): the store the nodes meet in.
        backend_name (str): the backend's name.
        settings (RendezvousSettings): timeouts and node counts.
        local_addr (str, optional): this node's address.

    Example::

        >>> from ember.distributed import HashStore
        >>> s = RendezvousSettings("job", 1, 1, RendezvousTimeout(), timedelta(seconds=5), 3)
        >>> DynamicRendezvousHandler("job", HashStore(), "c10d", s).get_backend()
        'c10d'
    """

    def __init__(self, run_id: str, store: Store, backend_name: str,
                 settings: RendezvousSettings, local_addr: str | None = None):
        from .._rendezvous import StoreRendezvous

        self._settings = settings
        self._backend_name = backend_name
        self._store = store
        self._local_addr = local_addr or socket.getfqdn()
        conf = {"last_call_timeout": settings.timeout.last_call.total_seconds(),
                "join_timeout": settings.timeout.join.total_seconds()}
        self._rounds = StoreRendezvous("", run_id, settings.min_nodes, settings.max_nodes,
                                       conf, self._local_addr, store=store)
        self._closed_key = f"torch.rendezvous.{run_id}.closed"

    @classmethod
    def from_backend(cls, run_id: str, store: Store, backend: RendezvousBackend,
                     min_nodes: int, max_nodes: int, local_addr: str | None = None,
                     timeout: RendezvousTimeout | None = None,
                     keep_alive_interval: int = 5, keep_alive_max_attempt: int = 3):
        """A handler meeting in ``store`` (the backend names it).

        Args:
            run_id (str): the job's id.
            store (Store): the store.
            backend (RendezvousBackend): the backend (its name).
            min_nodes (int): fewest nodes.
            max_nodes (int): most nodes.
            local_addr (str, optional): this node's address.
            timeout (RendezvousTimeout, optional): the timeouts.
            keep_alive_interval (int): seconds between keep-alives.
            keep_alive_max_attempt (int): missed keep-alives before a node is dead.

        Returns:
            DynamicRendezvousHandler
        """
        settings = RendezvousSettings(run_id, min_nodes, max_nodes,
                                      timeout or RendezvousTimeout(),
                                      timedelta(seconds=keep_alive_interval),
                                      keep_alive_max_attempt)
        return cls(run_id, store, backend.name, settings, local_addr)

    @property
    def settings(self) -> RendezvousSettings:
        """The settings."""
        return self._settings

    def get_backend(self) -> str:
        """The backend's name (``"c10d"``)."""
        return self._backend_name

    @property
    def use_agent_store(self) -> bool:
        """True: the workers use the store node 0's agent serves."""
        return True

    def next_rendezvous(self) -> RendezvousInfo:
        """Join the next group (after a group formed: open the next round first).

        Returns:
            RendezvousInfo: the group's store (a prefix of this round), this node's rank,
            the node count, node 0's address and a port for the workers' store.

        Raises:
            RendezvousClosedError: the rendezvous was closed.
            RendezvousTimeoutError: no group formed within the join timeout.
        """
        from .._rendezvous import RendezvousError as RoundError

        if self.is_closed():
            raise RendezvousClosedError()
        if self._rounds.round >= 0:
            self._rounds.restart()
        try:
            rank, world, addr, port = self._rounds.next_rendezvous()
        except RoundError as e:
            if self.is_closed() or "shut down" in str(e):
                raise RendezvousClosedError() from e
            raise RendezvousTimeoutError(str(e)) from e
        construct_and_record_rdzv_event(run_id=self._settings.run_id,
                                        message=f"joined round {self._rounds.round}",
                                        node_state=NodeState.SUCCEEDED, rank=rank)
        store = PrefixStore(f"torch.rendezvous.{self._settings.run_id}.{self._rounds.round}",
                            self._store)
        return RendezvousInfo(store, rank, world, RendezvousStoreInfo(addr, port))

    def is_closed(self) -> bool:
        """Whether a node closed the rendezvous.

        Returns:
            bool
        """
        return self._store.check([self._closed_key])

    def set_closed(self) -> None:
        """Close the rendezvous: every node's next ``next_rendezvous`` fails.

        Returns:
            None
        """
        self._store.set(self._closed_key, "1")

    def num_nodes_waiting(self) -> int:
        """How many nodes ask to join while this group runs.

        Returns:
            int
        """
        if self._rounds.round < 0:
            return 0
        return self._rounds._count("waiting")

    def get_run_id(self) -> str:
        """The job's id.

        Returns:
            str
        """
        return self._settings.run_id

    def shutdown(self) -> bool:
        """Close the rendezvous for every node.

        Returns:
            bool: True.
        """
        self.set_closed()
        return True


def _timeout(params: RendezvousParameters, key: str) -> timedelta | None:
    value = params.get_as_int(key)
    return None if value is None else timedelta(seconds=value)


def create_handler(store: Store, backend: RendezvousBackend,
                   params: RendezvousParameters) -> DynamicRendezvousHandler:
    """A :class:`DynamicRendezvousHandler` from parameters (settings ``join_timeout``,
    ``last_call_timeout``, ``close_timeout``, in seconds).

    Args:
        store (Store): the store the nodes meet in.
        backend (RendezvousBackend): the backend.
        params (RendezvousParameters): the parameters.

    Returns:
        DynamicRendezvousHandler

    Example::

        >>> from ember.distributed import HashStore
        >>> from ember.distributed.elastic.rendezvous.c10d_rendezvous_backend import (
        ...     C10dRendezvousBackend)
        >>> s = HashStore()
        >>> p = RendezvousParameters("c10d", "", "job", 1, 2, join_timeout=5)
        >>> create_handler(s, C10dRendezvousBackend(s, "job"), p).settings.timeout.join
        datetime.timedelta(seconds=5)
    """
    timeout = RendezvousTimeout(_timeout(params, "join_timeout"),
                                _timeout(params, "last_call_timeout"),
                                _timeout(params, "close_timeout"))
    return DynamicRendezvousHandler.from_backend(
        params.run_id, store, backend, params.min_nodes, params.max_nodes, params.local_addr,
        timeout)
