"""Timers of worker processes on this host sent through a named pipe (FIFO) to a
:class:`FileTimerServer`, which signals a worker whose timer expired. Unlike the
``multiprocessing`` queue of :mod:`.local_timer`, a worker only needs the pipe's path
(``TORCHELASTIC_TIMER_FILE``), so it need not be the server's child.

Example::

    >>> import os, tempfile
    >>> from ember.distributed.elastic.timer import FileTimerClient, FileTimerServer
    >>> path = os.path.join(tempfile.mkdtemp(), "timer.fifo")
    >>> server = FileTimerServer(path, run_id="job", max_interval=0.01); server.start()
    >>> client = FileTimerClient(path)
    >>> client.acquire("step", 10**10); client.release("step")
    >>> server.stop()
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable

from .api import TimerClient, TimerRequest
from .debug_info_logging import log_debug_info_for_expired_timers

__all__ = ["FileTimerClient", "FileTimerRequest", "FileTimerServer"]

logger = logging.getLogger(__name__)


class FileTimerRequest(TimerRequest):
    """A timer request of worker ``worker_pid``, with the ``signal`` that reaps it (0 or
    less: the worker is not signalled); a negative expiration time releases the timer.

    Args:
        worker_pid (int): the worker's pid.
        scope_id (str): the timer's name.
        expiration_time (float): when it expires.
        signal (int): the signal to send then.

    Example::

        >>> FileTimerRequest(7, "s", 1.0, 9).to_json()
        '{"version": 1, "pid": 7, "scope_id": "s", "expiration_time": 1.0, "signal": 9}'
    """

    __slots__ = ["version", "signal"]

    def __init__(self, worker_pid: int, scope_id: str, expiration_time: float,
                 signal: int = 0) -> None:
        super().__init__(worker_id=worker_pid, scope_id=scope_id,
                         expiration_time=expiration_time)
        self.version = 1
        self.signal = signal

    @property
    def worker_pid(self) -> int:
        """The worker's pid."""
        return self.worker_id

    def __eq__(self, other) -> bool:
        return isinstance(other, FileTimerRequest) and super().__eq__(other) and \
            (self.version, self.signal) == (other.version, other.signal)

    __hash__ = None

    def to_json(self) -> str:
        """The request as one line of JSON (what goes through the pipe).

        Returns:
            str
        """
        return json.dumps({"version": self.version, "pid": self.worker_pid,
                           "scope_id": self.scope_id, "expiration_time": self.expiration_time,
                           "signal": self.signal})


class FileTimerClient(TimerClient):
    """A worker's client of :class:`FileTimerServer`, writing to its pipe.

    Args:
        file_path (str): the pipe the server created.
        signal: what reaps this worker when a timer expires (default SIGKILL).

    Raises:
        BrokenPipeError: (from acquire/release) no server reads the pipe.

    Example::

        >>> FileTimerClient("/nonexistent.fifo").acquire("s", 1.0)
        Traceback (most recent call last):
        ...
        BrokenPipeError: Could not send the FileTimerRequest because FileTimerServer ...
    """

    def __init__(self, file_path: str,
                 signal=(signal.SIGKILL if sys.platform != "win32"
                         else signal.CTRL_C_EVENT)) -> None:  # type: ignore[attr-defined]
        self._file_path = file_path
        self.signal = signal

    def _open_non_blocking(self):
        last = None
        for _ in range(10):
            try:
                return os.fdopen(os.open(self._file_path, os.O_WRONLY | os.O_NONBLOCK), "wt")
            except OSError as e:
                last = e
                time.sleep(0.1)
        raise last

    def _send_request(self, request: FileTimerRequest) -> None:
        try:
            f = self._open_non_blocking()
        except Exception as e:
            raise BrokenPipeError("Could not send the FileTimerRequest because "
                                  "FileTimerServer is not available.") from e
        with f:
            line = request.to_json()
            if len(line) > select.PIPE_BUF:
                raise RuntimeError(f"FileTimerRequest larger than {select.PIPE_BUF} bytes is "
                                   f"not supported: {line}")
            f.write(line + "\n")

    def acquire(self, scope_id: str, expiration_time: float) -> None:
        """Start the timer of ``scope_id``.

        Args:
            scope_id (str): the timer.
            expiration_time (float): when it expires (``time.time()`` seconds).
        """
        self._send_request(FileTimerRequest(os.getpid(), scope_id, expiration_time,
                                            int(self.signal)))

    def release(self, scope_id: str) -> None:
        """Stop the timer of ``scope_id``.

        Args:
            scope_id (str): the timer.
        """
        self._send_request(FileTimerRequest(os.getpid(), scope_id, -1, 0))


class FileTimerServer:
    """Creates the pipe ``file_path`` and, from a watchdog thread, reads timer requests
    and signals each worker whose timer expired (the signal its client named).

    Args:
        file_path (str): the pipe to create (an existing file there is replaced).
        run_id (str): the job (for the expired-timer log).
        max_interval (float): seconds between checks at most.
        daemon (bool): run the watchdog as a daemon thread.
        log_event (callable, optional): ``(event name, request or None)`` for each event.

    Example::

        >>> import os, tempfile
        >>> s = FileTimerServer(os.path.join(tempfile.mkdtemp(), "t"), "job")
        >>> s.register_timers([FileTimerRequest(1, "a", 5.0, 9)])
        >>> list(s.get_expired_timers(10.0))
        [1]
    """

    def __init__(self, file_path: str, run_id: str, max_interval: float = 10,
                 daemon: bool = True,
                 log_event: Callable[[str, FileTimerRequest | None], None] | None = None
                 ) -> None:
        self._file_path = file_path
        self._run_id = run_id
        self._max_interval = max_interval
        self._daemon = daemon
        self._timers: dict[tuple[int, str], FileTimerRequest] = {}
        self._stop_signaled = False
        self._watchdog_thread: threading.Thread | None = None
        if os.path.exists(file_path):
            os.remove(file_path)
        os.mkfifo(file_path)
        self._request_count = 0
        self._log_event = log_event or (lambda name, request: None)
        self._last_progress_time = int(time.time())
        self._pending = b""

    def start(self) -> None:
        """Start the watchdog thread.

        Returns:
            None
        """
        self._stop_signaled = False
        self._watchdog_thread = threading.Thread(target=self._watchdog_loop,
                                                 daemon=self._daemon)
        self._watchdog_thread.start()
        self._log_event("watchdog started", None)

    def stop(self) -> None:
        """Stop the watchdog thread and remove the pipe.

        Returns:
            None
        """
        self._stop_signaled = True
        if self._watchdog_thread:
            self._watchdog_thread.join(self._max_interval + 1)
            self._watchdog_thread = None
        if os.path.exists(self._file_path):
            os.remove(self._file_path)
        self._log_event("watchdog stopped", None)

    @staticmethod
    def is_process_running(pid: int) -> bool:
        """Whether process ``pid`` exists.

        Args:
            pid (int): the process.

        Returns:
            bool
        """
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False

    def get_last_progress_time(self) -> int:
        """When the watchdog last finished a check (``time.time()`` seconds).

        Returns:
            int
        """
        return self._last_progress_time

    def _watchdog_loop(self) -> None:
        # read and write: opening does not wait for a client, and the pipe never reports
        # end-of-file between clients
        fd = os.open(self._file_path, os.O_RDWR | os.O_NONBLOCK)
        try:
            while not self._stop_signaled:
                try:
                    self._run_watchdog(fd)
                    self._last_progress_time = int(time.time())
                except Exception:  # noqa: BLE001 - the watchdog keeps watching
                    logger.exception("Error running watchdog")
        finally:
            os.close(fd)

    def _get_requests(self, fd: int, max_interval: float) -> list[FileTimerRequest]:
        ready, _, _ = select.select([fd], [], [], max_interval)
        if ready:
            try:
                self._pending += os.read(fd, 1 << 16)
            except BlockingIOError:
                pass
        *lines, self._pending = self._pending.split(b"\n")
        out = []
        for line in lines:
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("version") != 1:
                raise ValueError(f"Unknown version of FileTimerRequest: {d.get('version')}")
            out.append(FileTimerRequest(d["pid"], d["scope_id"], d["expiration_time"],
                                        d["signal"]))
            self._request_count += 1
        return out

    def _run_watchdog(self, fd: int) -> None:
        self.register_timers(self._get_requests(fd, self._max_interval))
        expired = self.get_expired_timers(time.time())
        log_debug_info_for_expired_timers(
            self._run_id, {pid: [t.to_json() for t in ts] for pid, ts in expired.items()})
        reaped = set()
        for pid, timers in expired.items():
            reaped.add(pid)
            timers.sort(key=lambda t: t.expiration_time)
            chosen = next((t for t in timers if t.signal > 0), None)
            for t in timers:
                self._log_event("timer expired", t)
            if chosen is None:
                logger.info("No signal specified with worker=[%s]. Do not reap it.", pid)
                continue
            if self._reap_worker(pid, chosen.signal):
                logger.info("Successfully reaped worker=[%s] with signal=%s", pid,
                            chosen.signal)
                self._log_event("kill worker process", chosen)
            else:
                logger.error("Error reaping worker=[%s]. Will retry on next watchdog.", pid)
                reaped.discard(pid)
        self.clear_timers(reaped)

    def register_timers(self, timer_requests: list[FileTimerRequest]) -> None:
        """Add timers; a negative expiration time removes one (a pid of -1, all of that
        scope).

        Args:
            timer_requests (list[FileTimerRequest]): the requests.
        """
        for r in timer_requests:
            if r.expiration_time < 0:
                if r.worker_pid == -1:
                    for key in [k for k in self._timers if k[1] == r.scope_id]:
                        del self._timers[key]
                else:
                    self._timers.pop((r.worker_pid, r.scope_id), None)
            else:
                self._timers[(r.worker_pid, r.scope_id)] = r

    def clear_timers(self, worker_pids: set[int]) -> None:
        """Remove every timer of ``worker_pids``.

        Args:
            worker_pids (set[int]): the pids.
        """
        for key in [k for k in self._timers if k[0] in worker_pids]:
            del self._timers[key]

    def get_expired_timers(self, deadline: float) -> dict[int, list[FileTimerRequest]]:
        """pid -> its timers expiring at or before ``deadline``.

        Args:
            deadline (float): ``time.time()`` seconds.

        Returns:
            dict
        """
        expired: dict[int, list[FileTimerRequest]] = {}
        for r in self._timers.values():
            if r.expiration_time <= deadline:
                expired.setdefault(r.worker_pid, []).append(r)
        return expired

    def _reap_worker(self, worker_pid: int, signal: int) -> bool:
        try:
            os.kill(worker_pid, signal)
            return True
        except ProcessLookupError:
            logger.info("Process with pid=%s does not exist. Skipping", worker_pid)
            return True
        except Exception:  # noqa: BLE001 - retried at the next check
            logger.exception("Error terminating pid=%s", worker_pid)
        return False
