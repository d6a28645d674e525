"""``ember.distributed.elastic.rendezvous``: how the agents of an elastic job agree on a
group (``torch.distributed.elastic.rendezvous``).

A :class:`RendezvousHandler` is built from :class:`RendezvousParameters` by backend name
(``static``: fixed ranks at node 0's store; ``c10d``: a group of ``min_nodes`` to
``max_nodes`` nodes meeting in a ``TCPStore``); ``next_rendezvous`` returns a
:class:`RendezvousInfo` (the group's store, this node's rank, the node count).

Example::

    >>> import ember.distributed.elastic.rendezvous.registry as registry
    >>> from ember.distributed.elastic.rendezvous import RendezvousParameters
    >>> p = RendezvousParameters("c10d", "127.0.0.1:0", "job", 1, 1, is_host=True,
    ...                          last_call_timeout=0)
    >>> info = registry.get_rendezvous_handler(p).next_rendezvous()
    >>> (info.rank, info.world_size)
    (0, 1)
"""

from .api import (  # noqa: F401
    RendezvousClosedError,
    RendezvousConnectionError,
    RendezvousError,
    RendezvousGracefulExitError,
    RendezvousHandler,
    RendezvousHandlerCreator,
    RendezvousHandlerRegistry,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStateError,
    RendezvousStoreInfo,
    RendezvousTimeoutError,
    rendezvous_handler_registry,
)
from .registry import _register_default_handlers

_register_default_handlers()

__all__ = ["RendezvousClosedError", "RendezvousConnectionError", "RendezvousError",
           "RendezvousGracefulExitError", "RendezvousHandler", "RendezvousHandlerCreator",
           "RendezvousHandlerRegistry", "RendezvousInfo", "RendezvousParameters",
           "RendezvousStateError", "RendezvousStoreInfo", "RendezvousTimeoutError",
           "rendezvous_handler_registry"]
