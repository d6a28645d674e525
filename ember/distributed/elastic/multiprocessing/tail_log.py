"""Copying workers' log files to a stream as they grow (``--tee``), each line behind its
rank's prefix (``torch.distributed.elastic.multiprocessing.tail_log``).

Example::

    >>> import io, os, tempfile
    >>> from ember.distributed.elastic.multiprocessing.tail_log import TailLog
    >>> path = os.path.join(tempfile.mkdtemp(), "0.log")
    >>> _ = open(path, "w").write("hello\\n")
    >>> out = io.StringIO()
    >>> TailLog("trainer", {0: path}, out).start().stop()
    >>> out.getvalue()
    '[trainer0]:hello\\n'
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TextIO
from collections.abc import Callable

__all__ = ["TailLog", "tail_logfile"]

logger = logging.getLogger(__name__)


def tail_logfile(header: str, file: str, dst: TextIO, finished: threading.Event,
                 interval_sec: float, log_line_filter: Callable[[str], bool] | None = None):
    """Copy the lines of ``file`` to ``dst`` behind ``header`` until ``finished`` is set
    and the file is read to its end (waiting for the file to appear first).

    Args:
        header (str): the prefix of each line.
        file (str): the file to follow.
        dst (TextIO): where the lines go.
        finished (threading.Event): set when the writer is done.
        interval_sec (float): seconds between reads at the end of the file.
        log_line_filter (callable, optional): copy only lines for which it is true.

    Returns:
        None

    Example::

        >>> import io, threading
        >>> done = threading.Event(); done.set()
        >>> tail_logfile("", "/nonexistent", io.StringIO(), done, 0.01)
    """
    while not os.path.exists(file):
        if finished.is_set():
            return
        time.sleep(interval_sec)
    with open(file, errors="replace") as fp:
        while True:
            line = fp.readline()
            if line:
                if log_line_filter is None or log_line_filter(line):
                    dst.write(f"{header}{line}")
                    dst.flush()
            elif finished.is_set():
                return
            else:
                time.sleep(interval_sec)


class TailLog:
    """Follows several log files at once (one thread each), writing their lines to
    ``dst`` behind ``[<name><local_rank>]:`` or the rank's own prefix.

    Args:
        name (str): the prefix's name part (the workers' role).
        log_files (dict[int, str]): local rank -> file.
        dst (TextIO): where the lines go.
        log_line_prefixes (dict[int, str], optional): local rank -> prefix.
        interval_sec (float): seconds between reads at a file's end.
        log_line_filter (callable): copy only lines for which it is true.

    Example::

        >>> import io
        >>> TailLog("r", {}, io.StringIO()).start().stopped()
        False
    """

    def __init__(self, name: str, log_files: dict[int, str], dst: TextIO,
                 log_line_prefixes: dict[int, str] | None = None, interval_sec: float = 0.1,
                 log_line_filter: Callable[[str], bool] = (lambda line: True)):
        n = len(log_files)
        self._threadpool = None
        if n > 0:
            self._threadpool = ThreadPoolExecutor(
                max_workers=n, thread_name_prefix=f"{self.__class__.__qualname__}_{name}")
        self._name = name
        self._dst = dst
        self._log_files = log_files
        self._log_line_prefixes = log_line_prefixes
        self._log_line_filter = log_line_filter
        self._finished_events = {r: threading.Event() for r in log_files}
        self._futs: list = []
        self._interval_sec = interval_sec
        self._stopped = False

    def start(self) -> TailLog:
        """Start following the files.

        Returns:
            TailLog: itself.
        """
        if not self._threadpool or not self._dst:
            return self
        for rank, file in self._log_files.items():
            header = f"[{self._name}{rank}]:"
            if self._log_line_prefixes and rank in self._log_line_prefixes:
                header = self._log_line_prefixes[rank]
            self._futs.append(self._threadpool.submit(
                tail_logfile, header=header, file=file, dst=self._dst,
                finished=self._finished_events[rank], interval_sec=self._interval_sec,
                log_line_filter=self._log_line_filter))
        return self

    def stop(self) -> None:
        """Copy what is left in the files, then stop.

        Returns:
            None
        """
        for event in self._finished_events.values():
            event.set()
        for rank, fut in zip(self._log_files, self._futs):
            try:
                fut.result()
            except Exception as e:  # noqa: BLE001 - one bad file must not stop the others
                logger.error("error in log tailor for %s%s. %s: %s", self._name, rank,
                             e.__class__.__qualname__, e)
        if self._threadpool:
            self._threadpool.shutdown(wait=True)
        self._stopped = True

    def stopped(self) -> bool:
        """Whether ``stop`` ran.

        Returns:
            bool
        """
        return self._stopped
