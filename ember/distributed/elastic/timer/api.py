"""Countdown timers that let a supervisor kill a stuck worker: the worker acquires a timer
around a block that may hang (``with expires(after=60): ...``), a :class:`TimerServer` in
the supervising process reaps workers whose timers expired.

Example::

    >>> import multiprocessing as mp
    >>> from ember.distributed.elastic.timer import LocalTimerClient, LocalTimerServer, expires
    >>> queue = mp.Queue()
    >>> server = LocalTimerServer(queue, max_interval=0.01); server.start()
    >>> with expires(after=60, client=LocalTimerClient(queue)):
    ...     pass
    >>> server.stop()
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from contextlib import contextmanager
from inspect import getframeinfo, stack
from typing import Any

__all__ = ["RequestQueue", "TimerClient", "TimerRequest", "TimerServer", "configure",
           "expires"]

logger = logging.getLogger(__name__)


class TimerRequest:
    """One timer of one worker: ``worker_id`` (for local timers, its pid), ``scope_id``,
    ``expiration_time`` (``time.time()`` seconds; negative releases the timer).

    Args:
        worker_id: the worker.
        scope_id (str): the timer's name.
        expiration_time (float): when it expires.

    Example::

        >>> TimerRequest(1, "s", 2.0) == TimerRequest(1, "s", 2.0)
        True
    """

    __slots__ = ["worker_id", "scope_id", "expiration_time"]

    def __init__(self, worker_id: Any, scope_id: str, expiration_time: float):
        self.worker_id = worker_id
        self.scope_id = scope_id
        self.expiration_time = expiration_time

    def __eq__(self, other):
        if isinstance(other, TimerRequest):
            return (self.worker_id, self.scope_id, self.expiration_time) == \
                (other.worker_id, other.scope_id, other.expiration_time)
        return False

    __hash__ = None

    def __repr__(self) -> str:
        return (f"TimerRequest(worker_id={self.worker_id!r}, scope_id={self.scope_id!r}, "
                f"expiration_time={self.expiration_time!r})")


class TimerClient(abc.ABC):
    """The worker's side: ``acquire`` a timer for a scope, ``release`` it.

    Example::

        >>> issubclass(LocalTimerClient, TimerClient)  # doctest: +SKIP
        True
    """

    @abc.abstractmethod
    def acquire(self, scope_id: str, expiration_time: float) -> None:
        """Start the timer of ``scope_id``, expiring at ``expiration_time``."""

    @abc.abstractmethod
    def release(self, scope_id: str):
        """Stop the timer of ``scope_id``."""


class RequestQueue(abc.ABC):
    """Where a :class:`TimerServer` reads timer requests from.

    Example::

        >>> RequestQueue.__abstractmethods__ == frozenset({"size", "get"})
        True
    """

    @abc.abstractmethod
    def size(self) -> int:
        """How many requests wait now (a lower bound)."""

    @abc.abstractmethod
    def get(self, size: int, timeout: float) -> list[TimerRequest]:
        """Up to ``size`` requests, waiting at most ``timeout`` seconds."""


class TimerServer(abc.ABC):
    """The supervisor's side: a watchdog thread that, every ``max_interval`` seconds at
    most, registers new requests and reaps each worker with an expired timer.

    Args:
        request_queue (RequestQueue): where requests arrive.
        max_interval (float): the longest wait for a request between checks.
        daemon (bool): run the watchdog as a daemon thread.

    Example::

        >>> TimerServer.__abstractmethods__ >= {"register_timers", "_reap_worker"}
        True
    """

    def __init__(self, request_queue: RequestQueue, max_interval: float, daemon: bool = True):
        self._request_queue = request_queue
        self._max_interval = max_interval
        self._daemon = daemon
        self._watchdog_thread: threading.Thread | None = None
        self._stop_signaled = False

    @abc.abstractmethod
    def register_timers(self, timer_requests: list[TimerRequest]) -> None:
        """Add (or, with a negative expiration time, remove) timers."""

    @abc.abstractmethod
    def clear_timers(self, worker_ids: set[Any]) -> None:
        """Remove every timer of ``worker_ids``."""

    @abc.abstractmethod
    def get_expired_timers(self, deadline: float) -> dict[Any, list[TimerRequest]]:
        """worker id -> its timers expiring at or before ``deadline``."""

    @abc.abstractmethod
    def _reap_worker(self, worker_id: Any) -> bool:
        ...

    def _reap_worker_no_throw(self, worker_id: Any) -> bool:
        try:
            return self._reap_worker(worker_id)
        except Exception:  # noqa: BLE001 - a reaper's error counts as reaped
            logger.exception("Uncaught exception thrown from _reap_worker(), check that the "
                             "implementation correctly catches exceptions")
            return True

    def _watchdog_loop(self):
        while not self._stop_signaled:
            try:
                self._run_watchdog()
            except Exception:  # noqa: BLE001 - the watchdog keeps watching
                logger.exception("Error running watchdog")

    def _run_watchdog(self):
        batch = self._request_queue.get(max(1, self._request_queue.size()),
                                        self._max_interval)
        self.register_timers(batch)
        reaped = set()
        for worker_id, timers in self.get_expired_timers(time.time()).items():
            logger.info("Reaping worker_id=[%s]. Expired timers: %s", worker_id,
                        [t.scope_id for t in timers])
            if self._reap_worker_no_throw(worker_id):
                reaped.add(worker_id)
            else:
                logger.error("Error reaping worker=[%s]. Will retry on next watchdog.",
                             worker_id)
        self.clear_timers(reaped)

    def start(self) -> None:
        """Start the watchdog thread.

        Returns:
            None
        """
        self._stop_signaled = False
        self._watchdog_thread = threading.Thread(target=self._watchdog_loop,
                                                 daemon=self._daemon)
        self._watchdog_thread.start()

    def stop(self) -> None:
        """Stop the watchdog thread (waiting up to ``max_interval``).

        Returns:
            None
        """
        self._stop_signaled = True
        if self._watchdog_thread:
            self._watchdog_thread.join(self._max_interval)
            self._watchdog_thread = None


_timer_client: TimerClient | None = None


def configure(timer_client: TimerClient) -> None:
    """Set the client :func:`expires` uses by default.

    Args:
        timer_client (TimerClient): the client.

    Returns:
        None

    Example::

        >>> import multiprocessing as mp
        >>> from ember.distributed.elastic.timer import LocalTimerClient
        >>> configure(LocalTimerClient(mp.Queue()))
    """
    global _timer_client
    _timer_client = timer_client
    logger.info("Timer client configured to: %s", type(timer_client).__name__)


@contextmanager
def expires(after: float, scope: str | None = None, client: TimerClient | None = None):
    """Hold a timer expiring ``after`` seconds from now while the block runs; past it, the
    timer server may reap this worker.

    Args:
        after (float): seconds.
        scope (str, optional): the timer's name (default: the caller's ``file#line``).
        client (TimerClient, optional): default: the one :func:`configure` set.

    Raises:
        RuntimeError: no client given or configured.

    Example::

        >>> with expires(after=1, client=None):  # doctest: +SKIP
        ...     pass
    """
    if client is None:
        if _timer_client is None:
            raise RuntimeError("Configure timer client before using countdown timers.")
        client = _timer_client
    if scope is None:
        caller = getframeinfo(stack()[2][0])
        scope = f"{caller.filename}#{caller.lineno}"
    client.acquire(scope, time.time() + after)
    try:
        yield
    finally:
        client.release(scope)
