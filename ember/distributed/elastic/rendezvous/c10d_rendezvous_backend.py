"""The ``c10d`` rendezvous backend: the state in a ``TCPStore`` at the endpoint (default
port 29400), served by the node whose host it names.

Example::

    >>> from ember.distributed import HashStore
    >>> from ember.distributed.elastic.rendezvous.c10d_rendezvous_backend import (
    ...     C10dRendezvousBackend)
    >>> b = C10dRendezvousBackend(HashStore(), "job")
    >>> b.get_state() is None, b.set_state(b"s")[2]
    (True, True)
"""

from __future__ import annotations

import binascii
import datetime
import logging
from base64 import b64decode, b64encode

from ..._store import FileStore, Store, TCPStore
from ..events import NodeState, construct_and_record_rdzv_event
from .api import (
    RendezvousConnectionError,
    RendezvousError,
    RendezvousParameters,
    RendezvousStateError,
)
from .dynamic_rendezvous import RendezvousBackend
from .utils import parse_rendezvous_endpoint

__all__ = ["C10dRendezvousBackend", "DEFAULT_PORT", "FileStore", "NodeState",
           "RendezvousBackend", "RendezvousConnectionError", "RendezvousError",
           "RendezvousParameters", "RendezvousStateError", "Store", "TCPStore",
           "construct_and_record_rdzv_event", "create_backend", "parse_rendezvous_endpoint"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 29400


class C10dRendezvousBackend(RendezvousBackend):
    """Rendezvous state under the key ``torch.rendezvous.<run_id>`` of a store (base64
    text, set by compare-and-set).

    Args:
        store (Store): the store.
        run_id (str): the job's id.

    Raises:
        ValueError: an empty ``run_id``.

    Example::

        >>> from ember.distributed import HashStore
        >>> C10dRendezvousBackend(HashStore(), "job").name
        'c10d'
    """

    def __init__(self, store: Store, run_id: str) -> None:
        if not run_id:
            raise ValueError("The run id must be a non-empty string.")
        self._store = store
        self._key = "torch.rendezvous." + run_id

    @property
    def name(self) -> str:
        """``"c10d"``."""
        return "c10d"

    def get_state(self) -> tuple[bytes, object] | None:
        """``(state, token)``, or None when no state was set.

        Returns:
            tuple or None
        """
        if not self._store.check([self._key]):
            return None
        return self._decode(self._store.get(self._key))

    def set_state(self, state: bytes, token: object | None = None
                  ) -> tuple[bytes, object, bool] | None:
        """Set ``state`` if the stored token is ``token`` (None: no state yet).

        Args:
            state (bytes): the new state.
            token: the token ``get_state`` returned.

        Returns:
            tuple: (state now, its token, whether this call set it).
        """
        new = b64encode(state)
        expected = token if isinstance(token, bytes) else b""
        current = self._store.compare_set(self._key, expected, new)
        decoded = self._decode(current)
        if decoded is None:
            return None
        return decoded[0], decoded[1], current == new

    def _decode(self, value: bytes) -> tuple[bytes, object] | None:
        if not value:
            return None
        try:
            return b64decode(value), value
        except binascii.Error as e:
            raise RendezvousStateError("The state object is corrupt. See inner exception for "
                                       "details.") from e


def _matches_machine_hostname(host: str) -> bool:
    from .._rendezvous import _is_local

    return _is_local(host)


def create_backend(params: RendezvousParameters) -> tuple[C10dRendezvousBackend, Store]:
    """The backend and store of ``params``: a ``TCPStore`` at the endpoint, served here
    when ``is_host`` is set or the endpoint names this machine (else, or if another
    process serves it already, reached as a client). ``store_type="file"`` uses a
    ``FileStore`` at the endpoint's path instead; ``read_timeout`` (seconds, 60) bounds
    store reads.

    Args:
        params (RendezvousParameters): the parameters.

    Returns:
        tuple: (C10dRendezvousBackend, Store).

    Raises:
        RendezvousConnectionError: the store cannot be reached.
        ValueError: an unknown ``store_type``.

    Example::

        >>> p = RendezvousParameters("c10d", "127.0.0.1:0", "job", 1, 1, is_host=True)
        >>> type(create_backend(p)[1]).__name__
        'TCPStore'
    """
    store_type = str(params.get("store_type", "tcp")).strip().lower()
    read_timeout = datetime.timedelta(seconds=params.get_as_int("read_timeout", 60))
    try:
        if store_type == "file":
            store = FileStore(params.endpoint)
        elif store_type == "tcp":
            host, port = parse_rendezvous_endpoint(params.endpoint, DEFAULT_PORT)
            is_host = params.get_as_bool("is_host")
            if is_host is None:
                is_host = _matches_machine_hostname(host)
            store = None
            if is_host:
                try:
                    store = TCPStore(host, port, is_master=True, timeout=read_timeout,
                                     wait_for_workers=False, multi_tenant=True)
                except OSError:  # served already by another process of this machine
                    store = None
            if store is None:
                store = TCPStore(host, port, is_master=False, timeout=read_timeout)
        else:
            raise ValueError("Invalid store type given. Currently only supports file and tcp.")
    except (OSError, RuntimeError) as e:
        raise RendezvousConnectionError("The connection to the C10d store has failed. See "
                                        "inner exception for details.") from e
    construct_and_record_rdzv_event(run_id=params.run_id, message="created the c10d store",
                                    node_state=NodeState.INIT)
    return C10dRendezvousBackend(store, params.run_id), store
