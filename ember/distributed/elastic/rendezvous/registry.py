"""The built-in rendezvous backends, ``static`` and ``c10d``, and the function agents build
their handler with.

Example::

    >>> from ember.distributed.elastic.rendezvous import RendezvousParameters
    >>> from ember.distributed.elastic.rendezvous.registry import get_rendezvous_handler
    >>> p = RendezvousParameters("static", "127.0.0.1:0", "job", 1, 1, rank=0)
    >>> get_rendezvous_handler(p).get_backend()
    'static'
"""

from __future__ import annotations

import logging

from .api import RendezvousHandler, RendezvousParameters
from .api import rendezvous_handler_registry as handler_registry
from .dynamic_rendezvous import create_handler

__all__ = ["RendezvousHandler", "RendezvousParameters", "create_handler",
           "get_rendezvous_handler", "handler_registry"]

log = logging.getLogger(__name__)


def _create_static_handler(params: RendezvousParameters) -> RendezvousHandler:
    from . import static_tcp_rendezvous

    return static_tcp_rendezvous.create_rdzv_handler(params)


def _create_c10d_handler(params: RendezvousParameters) -> RendezvousHandler:
    from .c10d_rendezvous_backend import create_backend

    backend, store = create_backend(params)
    return create_handler(store, backend, params)


def _register_default_handlers() -> None:
    handler_registry.register("c10d", _create_c10d_handler)
    handler_registry.register("static", _create_static_handler)


def get_rendezvous_handler(params: RendezvousParameters) -> RendezvousHandler:
    """The handler of ``params.backend`` (``static``, ``c10d``, or one registered with
    ``rendezvous_handler_registry.register``).

    Args:
        params (RendezvousParameters): the parameters.

    Returns:
        RendezvousHandler

    Raises:
        ValueError: the backend is not registered.

    Example::

        >>> p = RendezvousParameters("etcd", "h:1", "job", 1, 1)
        >>> get_rendezvous_handler(p)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: The rendezvous backend 'etcd' is not registered. ...
    """
    return handler_registry.create_handler(params)
