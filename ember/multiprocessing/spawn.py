"""``spawn(fn, args, nprocs)``: start processes running ``fn(i, *args)`` and join them."""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
import traceback


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 -- forwarded to the parent
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all finished, raise on the first failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            alive = [p for p in self.processes if p.is_alive()]
            for i, p in enumerate(self.processes):
                if p.exitcode not in (None, 0):
                    for q in self.processes:
                        if q.is_alive():
                            q.terminate()
                    for q in self.processes:
                        q.join()
                    if not self.error_queues[i].empty():
                        tb = self.error_queues[i].get()
                        raise ProcessRaisedException(
                            f"\n\n-- Process {i} terminated with the following error:\n{tb}",
                            i, p.pid)
                    if p.exitcode < 0:
                        name = signal.Signals(-p.exitcode).name
                        raise ProcessExitedException(
                            f"process {i} terminated with signal {name}", i, p.pid,
                            p.exitcode, name)
                    raise ProcessExitedException(
                        f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                        p.exitcode)
            if not alive:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            alive[0].join(timeout=0.1)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs) in new processes started by
    ``start_method`` (``spawn``, ``forkserver`` or ``fork``).

    Args:
        fn: a picklable function taking the process index first.
        args: the rest of ``fn``'s arguments.
        nprocs: how many processes.
        join: wait for them (re-raising the first failure) instead of returning.
        daemon: start them as daemons.
        start_method: the multiprocessing start method.

    Returns:
        None when joined, else a :class:`ProcessContext`.

    Example:
        >>> import ember.multiprocessing as mp
        >>> def work(i):
        ...     pass
        >>> mp.start_processes(work, nprocs=2, start_method="fork")
    """
    ctx = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        error_queues.append(q)
        processes.append(p)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs) in new processes (PyTorch's helper)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
