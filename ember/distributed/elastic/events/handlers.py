"""Where recorded events go, by destination name: ``"null"`` (nowhere, the default),
``"console"`` (standard error), ``"dynamic_rendezvous"`` (rendezvous events; nowhere unless
a handler is put in ``_log_handlers``).

Example::

    >>> import logging
    >>> from ember.distributed.elastic.events.handlers import get_logging_handler
    >>> isinstance(get_logging_handler("null"), logging.NullHandler)
    True
"""

from __future__ import annotations

import logging

__all__ = ["get_logging_handler"]

_log_handlers: dict[str, logging.Handler] = {
    "console": logging.StreamHandler(),
    "dynamic_rendezvous": logging.NullHandler(),
    "null": logging.NullHandler(),
}


def get_logging_handler(destination: str = "null") -> logging.Handler:
    """The handler of ``destination``.

    Args:
        destination (str): ``"null"``, ``"console"`` or ``"dynamic_rendezvous"``.

    Returns:
        logging.Handler

    Raises:
        KeyError: an unknown destination.

    Example::

        >>> type(get_logging_handler("console")).__name__
        'StreamHandler'
    """
    return _log_handlers[destination]
