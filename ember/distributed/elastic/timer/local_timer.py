"""Timers of worker processes on this host, sent through a ``multiprocessing`` queue to a
:class:`LocalTimerServer` in their parent, which SIGKILLs a worker whose timer expired.

Example::

    >>> import multiprocessing as mp
    >>> from ember.distributed.elastic.timer.local_timer import LocalTimerClient
    >>> q = mp.Queue(); LocalTimerClient(q).acquire("step", 0.0)
    >>> q.get(timeout=5).scope_id
    'step'
"""

from __future__ import annotations

import logging
import os
import signal
import time
from queue import Empty
from typing import Any

from .api import RequestQueue, TimerClient, TimerRequest, TimerServer

__all__ = ["LocalTimerClient", "LocalTimerServer", "MultiprocessingRequestQueue"]

logger = logging.getLogger(__name__)


class LocalTimerClient(TimerClient):
    """A worker's client of :class:`LocalTimerServer` (the worker is its pid).

    Args:
        mp_queue (multiprocessing.Queue): the server's queue.

    Example::

        >>> import multiprocessing as mp
        >>> LocalTimerClient(mp.Queue()).release("step")
    """

    def __init__(self, mp_queue):
        self._mp_queue = mp_queue

    def acquire(self, scope_id, expiration_time):
        """Start the timer of ``scope_id``.

        Args:
            scope_id (str): the timer.
            expiration_time (float): when it expires (``time.time()`` seconds).
        """
        self._mp_queue.put(TimerRequest(os.getpid(), scope_id, expiration_time))

    def release(self, scope_id):
        """Stop the timer of ``scope_id``.

        Args:
            scope_id (str): the timer.
        """
        self._mp_queue.put(TimerRequest(os.getpid(), scope_id, -1))


class MultiprocessingRequestQueue(RequestQueue):
    """A :class:`RequestQueue` over a ``multiprocessing.Queue``.

    Args:
        mp_queue (multiprocessing.Queue): the queue.

    Example::

        >>> import multiprocessing as mp
        >>> MultiprocessingRequestQueue(mp.Queue()).get(1, 0.01)
        []
    """

    def __init__(self, mp_queue):
        self._mp_queue = mp_queue

    def size(self) -> int:
        """The queue's approximate length.

        Returns:
            int
        """
        return self._mp_queue.qsize()

    def get(self, size, timeout: float) -> list[TimerRequest]:
        """Up to ``size`` requests within ``timeout`` seconds.

        Args:
            size (int): the most requests.
            timeout (float): seconds.

        Returns:
            list[TimerRequest]
        """
        requests = []
        deadline = time.monotonic() + timeout
        for _ in range(size):
            wait = deadline - time.monotonic()
            if wait <= 0:
                break
            try:
                requests.append(self._mp_queue.get(block=True, timeout=wait))
            except Empty:
                break
        return requests


class LocalTimerServer(TimerServer):
    """Reaps (SIGKILL) this host's workers whose timers expired.

    Args:
        mp_queue (multiprocessing.Queue): where the workers' clients send requests.
        max_interval (float): seconds between checks at most.
        daemon (bool): run the watchdog as a daemon thread.

    Example::

        >>> import multiprocessing as mp
        >>> s = LocalTimerServer(mp.Queue(), max_interval=0.01)
        >>> s.register_timers([TimerRequest(1, "a", 5.0)])
        >>> list(s.get_expired_timers(10.0))
        [1]
    """

    def __init__(self, mp_queue, max_interval: float = 60, daemon: bool = True):
        super().__init__(MultiprocessingRequestQueue(mp_queue), max_interval, daemon)
        self._timers: dict[tuple[Any, str], TimerRequest] = {}

    def register_timers(self, timer_requests: list[TimerRequest]) -> None:
        """Add timers; a negative expiration time removes one.

        Args:
            timer_requests (list[TimerRequest]): the requests.
        """
        for r in timer_requests:
            if r.expiration_time < 0:
                self._timers.pop((r.worker_id, r.scope_id), None)
            else:
                self._timers[(r.worker_id, r.scope_id)] = r

    def clear_timers(self, worker_ids: set[int]) -> None:
        """Remove every timer of ``worker_ids``.

        Args:
            worker_ids (set[int]): the pids.
        """
        for key in [k for k in self._timers if k[0] in worker_ids]:
            del self._timers[key]

    def get_expired_timers(self, deadline: float) -> dict[Any, list[TimerRequest]]:
        """pid -> its timers expiring at or before ``deadline``.

        Args:
            deadline (float): ``time.time()`` seconds.

        Returns:
            dict
        """
        expired: dict[Any, list[TimerRequest]] = {}
        for r in self._timers.values():
            if r.expiration_time <= deadline:
                expired.setdefault(r.worker_id, []).append(r)
        return expired

    def _reap_worker(self, worker_id: int) -> bool:
        try:
            os.kill(worker_id, signal.SIGKILL)
            return True
        except ProcessLookupError:
            logger.info("Process with pid=%s does not exist. Skipping", worker_id)
            return True
        except Exception:  # noqa: BLE001 - retried at the next check
            logger.exception("Error terminating pid=%s", worker_id)
        return False
