"""The agent's health-check hook: a server reporting whether the agent's watchdog still
makes progress (ember's does not listen on a port; a site may subclass it to serve one).

Example::

    >>> import time
    >>> from ember.distributed.elastic.agent.server.health_check_server import (
    ...     create_healthcheck_server)
    >>> s = create_healthcheck_server(lambda: int(time.time()), 0, 60)
    >>> s.start(); s.stop()
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...utils.logging import get_logger

__all__ = ["HealthCheckServer", "create_healthcheck_server", "get_logger"]

log = get_logger(__name__)


class HealthCheckServer:
    """Reports the agent's health: its watchdog's last progress time
    (``alive_callback``), which is healthy while within ``timeout`` seconds.

    Args:
        alive_callback (callable): returns the last progress time (seconds).
        port (int): the port a serving subclass would use.
        timeout (int): seconds without progress before the agent is unhealthy.

    Example::

        >>> s = HealthCheckServer(lambda: 0, 0, 60); s.start(); s.stop()
    """

    def __init__(self, alive_callback: Callable[[], int], port: int, timeout: int) -> None:
        self._alive_callback = alive_callback
        self._port = port
        self._timeout = timeout

    def start(self) -> None:
        """Start reporting (ember's server serves nothing: it logs that).

        Returns:
            None
        """
        log.log(logging.INFO, "No health check server started")

    def stop(self) -> None:
        """Stop reporting.

        Returns:
            None
        """
        log.info("Stopping noop health check server.")


def create_healthcheck_server(alive_callback: Callable[[], int], port: int,
                              timeout: int) -> HealthCheckServer:
    """A :class:`HealthCheckServer`.

    Args:
        alive_callback (callable): returns the last progress time.
        port (int): its port.
        timeout (int): seconds without progress before unhealthy.

    Returns:
        HealthCheckServer

    Example::

        >>> type(create_healthcheck_server(lambda: 0, 0, 1)).__name__
        'HealthCheckServer'
    """
    return HealthCheckServer(alive_callback, port, timeout)
