"""Rendezvous handlers: how an ``init_method`` URL becomes a store, a rank and a world
size (``torch.distributed.rendezvous``). ``register_rendezvous_handler`` adds a scheme.

Example::

    >>> from ember.distributed.rendezvous import rendezvous
    >>> store, rank, size = next(rendezvous("tcp://127.0.0.1:0", rank=0,
    ...                                     world_size=1))  # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import urllib.parse

__all__ = ["register_rendezvous_handler", "rendezvous"]

_HANDLERS: dict = {}


def register_rendezvous_handler(scheme, handler) -> None:
    """Make ``init_method="<scheme>://..."`` call ``handler(url, **kwargs)``, which yields
    ``(store, rank, world_size)``.

    Args:
        scheme (str): the URL scheme (``"tcp"``, ``"env"``, ``"file"``, or one of yours).
        handler (callable): ``handler(url, **kwargs)`` yielding ``(store, rank, world_size)``.

    Raises:
        RuntimeError: the scheme already has a handler.

    Example::

        >>> register_rendezvous_handler("mine", lambda url, **kw: iter(()))  # doctest: +SKIP
    """
    if scheme in _HANDLERS or scheme in ("env", "tcp", "file"):
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _HANDLERS[scheme] = handler


def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs):
    """Yield ``(store, rank, world_size)`` for the init-method ``url`` (``env://``,
    ``tcp://host:port``, ``file://path`` or a registered scheme).

    Args:
        url (str): the init method.
        rank (int): this process's rank; -1 reads it from the URL or the environment.
        world_size (int): how many processes; -1 reads it likewise.
        **kwargs: passed to the scheme's handler (``timeout``, a ``datetime.timedelta``,
            for the built-in ones).

    Returns:
        A generator of ``(store, rank, world_size)`` tuples.

    Raises:
        RuntimeError: no handler for the scheme.

    Example::

        >>> next(rendezvous("file:///tmp/x", rank=0, world_size=1))  # doctest: +SKIP
    """
    from ._group import _rendezvous

    if not isinstance(url, str):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    scheme = urllib.parse.urlparse(url).scheme
    if scheme in _HANDLERS:
        yield from _HANDLERS[scheme](url, rank=rank, world_size=world_size, **kwargs)
        return
    timeout = kwargs.get("timeout", datetime.timedelta(minutes=30))
    yield _rendezvous(url, rank, world_size, timeout)
