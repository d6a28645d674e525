"""``spawn(fn, args, nprocs)``: start processes running ``fn(i, *args)`` and join them."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
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
    """A spawned process raised an exception; the message holds its traceback.

    Args:
        msg (str): the message (the child's traceback).
        error_index (int): the index of the failed process.
        pid (int): its process id.

    Example:
        >>> e = ember.multiprocessing.ProcessRaisedException("boom", 1, 4242)
        >>> e.error_index, e.pid, str(e)
        (1, 4242, 'boom')
    """


class ProcessExitedException(ProcessException):
    """A spawned process exited with a nonzero code or was killed by a signal.

    Args:
        msg (str): the message.
        error_index (int): the index of the failed process.
        error_pid (int): its process id.
        exit_code (int): its exit code (negative: killed by a signal).
        signal_name (str, optional): the signal's name, when killed by one.

    Example:
        >>> e = ember.multiprocessing.ProcessExitedException("exited", 0, 4242, -9, "SIGKILL")
        >>> e.exit_code, e.signal_name
        (-9, 'SIGKILL')
    """

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
    """The processes ``spawn(..., join=False)`` started: ``join()`` waits for them (re-raising
    the first failure as ``ProcessRaisedException``/``ProcessExitedException``), ``pids()``
    lists their ids.

    Args:
        processes (list of multiprocessing.Process): the processes.
        error_queues (list of queues): where each process reports its traceback.

    Example:
        >>> ctx = ember.multiprocessing.ProcessContext([], [])
        >>> ctx.pids()
        []
    """
    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all finished, raise on the first failure."""
        # NOTE [ The first process to fail ]
        # The failure reported is the first one seen: a process failing often makes the
        # others fail after it (a collective's peer is gone), and those later failures are
        # not the cause. So the wait is on the processes' sentinels, which wakes as soon as
        # any one ends (as PyTorch's join), not a poll of one process at a time, in whose
        # interval a second, consequent, failure could end up reported as the lower index.
        # Processes found ended together are taken by index, as PyTorch takes them.
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
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=left)


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
    """Run ``fn(i, *args)`` for i in range(nprocs) in new processes (PyTorch's helper).

    Args:
        fn (callable): a module-level function (picklable); it receives the process index
            first.
        args (tuple): the other arguments of ``fn``. Default: ``()``.
        nprocs (int): the number of processes. Default: 1.
        join (bool): wait for them (and re-raise the first failure). Default: True.
        daemon (bool): start them as daemons. Default: False.
        start_method (str): ``"spawn"``, ``"fork"`` or ``"forkserver"``. Default: ``"spawn"``.

    Returns:
        None when ``join``; else the ``ProcessContext`` to join later.

    Example:
        >>> import os
        >>> ctx = ember.multiprocessing.spawn(os._exit, nprocs=1, join=False,
        ...                                   start_method="fork")  # process 0: os._exit(0)
        >>> ctx.join()
        True
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
