"""Starting a group of local worker processes and watching them
(``torch.distributed.elastic.multiprocessing.api``).

:func:`start_processes` starts one process per local rank, either a program (a string
entrypoint, :class:`SubprocessContext`) or a Python function (:class:`MultiprocessContext`),
each with its own environment, and returns a :class:`PContext` whose ``wait()`` gives a
:class:`RunProcsResult`: the functions' return values, or the failures. Where each worker's
output goes is a :class:`LogsSpecs`' decision (:class:`DefaultLogsSpecs`: the console, or
``stdout.log``/``stderr.log`` files under a per-attempt folder, optionally copied to the
console with a ``[role<local_rank>]:`` prefix).

NOTE [ Worker logs ]
``DefaultLogsSpecs.reify`` lays the files out as PyTorch's launcher does, since users look
for them there and tools parse the paths:
``<log_dir>/<run_id>_<random>/attempt_<restart count>/<local_rank>/{stdout,stderr}.log``
and ``error.json`` beside them (the file ``@record`` writes, named to the worker through
``TORCHELASTIC_ERROR_FILE``). A stream is *redirected* to its file when ``redirects`` or
``tee`` names it; ``tee`` also copies the file's new lines to the launcher's own stream
(:class:`~.tail_log.TailLog`). A local rank outside ``local_ranks_filter`` is not shown on
the console at all: its tee is dropped and its console streams go to ``/dev/null``.

Example::

    >>> import sys
    >>> from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, start_processes
    >>> pc = start_processes("demo", sys.executable, {0: ("-c", "pass")}, {0: {}},
    ...                      DefaultLogsSpecs(log_dir="/dev/null"))
    >>> pc.wait().is_failed()
    False
"""

from __future__ import annotations

import abc
import enum
import logging
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from .errors import ProcessFailure, record
from .redirects import redirect_stderr, redirect_stdout
from .subprocess_handler import SubprocessHandler, get_subprocess_handler
from .tail_log import TailLog

__all__ = ["DefaultLogsSpecs", "SignalException", "Std", "to_map", "RunProcsResult",
           "PContext", "get_std_cm", "MultiprocessContext", "SubprocessContext", "LogsDest",
           "LogsSpecs", "IS_WINDOWS", "IS_MACOS", "start_processes"]

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"

logger = logging.getLogger(__name__)


class SignalException(Exception):
    """Raised in the launching process when it receives a termination signal while its
    workers run, so that it can stop them before exiting.

    Args:
        msg (str): the message.
        sigval (signal.Signals): the signal received.

    Example::

        >>> import signal
        >>> SignalException("stop", signal.SIGTERM).sigval.name
        'SIGTERM'
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


def _terminate_process_handler(signum: int, frame) -> None:
    raise SignalException(f"Process {os.getpid()} got signal: {signum}",
                          sigval=signal.Signals(signum))


class Std(enum.IntFlag):
    """Which standard streams of a worker a setting applies to: ``NONE``, ``OUT``, ``ERR``
    or ``ALL`` (``OUT | ERR``).

    Example::

        >>> Std.from_str("3") is Std.ALL
        True
        >>> Std.from_str("0:1,1:2") == {0: Std.OUT, 1: Std.ERR}
        True
    """

    NONE = 0
    OUT = 1
    ERR = 2
    ALL = OUT | ERR

    @classmethod
    def from_str(cls, vm: str) -> Std | dict[int, Std]:
        """Parse ``"N"`` (one setting for every rank) or ``"rank:N,rank:N"`` (per rank),
        with N in 0..3, the form of ``--redirects`` and ``--tee``.

        Args:
            vm (str): the text.

        Returns:
            Std or dict[int, Std]

        Raises:
            ValueError: the text has neither form.
        """
        def to_std(v: str) -> Std:
            s = Std(int(v))
            if s in Std:
                return s
            raise ValueError(f"{v} is not a valid Std")  # unreachable for 0..3

        if re.match(r"^[0123]$", vm):
            return to_std(vm)
        if re.match(r"^(\d:[0123],)*(\d:[0123])$", vm):
            out = {}
            for pair in vm.split(","):
                rank, value = pair.split(":")
                out[int(rank)] = to_std(value)
            return out
        raise ValueError(f"{vm} does not match: <^[0123]$> or <^(\\d:[0123],)*(\\d:[0123])$>")


def to_map(val_or_map: Std | dict[int, Std], local_world_size: int) -> dict[int, Std]:
    """One ``Std`` per local rank: a single value for all, or a partial map with the rest
    ``Std.NONE``.

    Args:
        val_or_map (Std or dict[int, Std]): the setting.
        local_world_size (int): the number of local ranks.

    Returns:
        dict[int, Std]

    Example::

        >>> to_map({0: Std.OUT}, 2) == {0: Std.OUT, 1: Std.NONE}
        True
    """
    if isinstance(val_or_map, Std):
        return dict.fromkeys(range(local_world_size), val_or_map)
    return {r: val_or_map.get(r, Std.NONE) for r in range(local_world_size)}


@dataclass
class LogsDest:
    """Where each local rank's streams and error file go (``""``: the console).

    Example::

        >>> LogsDest().stdouts
        {}
    """

    stdouts: dict[int, str] = field(default_factory=dict)
    stderrs: dict[int, str] = field(default_factory=dict)
    tee_stdouts: dict[int, str] = field(default_factory=dict)
    tee_stderrs: dict[int, str] = field(default_factory=dict)
    error_files: dict[int, str] = field(default_factory=dict)
    filtered_stdout: str = field(default_factory=str)
    filtered_stderr: str = field(default_factory=str)


class LogsSpecs(abc.ABC):
    """The policy deciding where workers' output goes; ``reify`` turns it into paths for
    one attempt.

    Args:
        log_dir (str, optional): the root folder of the logs.
        redirects (Std or dict): the streams written to files instead of the console.
        tee (Std or dict): the streams written to files and copied to the console.
        local_ranks_filter (set[int], optional): the only ranks shown on the console.

    Example::

        >>> issubclass(DefaultLogsSpecs, LogsSpecs)
        True
    """

    def __init__(self, log_dir: str | None = None, redirects: Std | dict[int, Std] = Std.NONE,
                 tee: Std | dict[int, Std] = Std.NONE,
                 local_ranks_filter: set[int] | None = None) -> None:
        self._root_log_dir = log_dir
        self._redirects = redirects
        self._tee = tee
        self._local_ranks_filter = local_ranks_filter

    @abc.abstractmethod
    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """The destinations for the workers whose environments are ``envs`` (it may set
        ``TORCHELASTIC_ERROR_FILE`` in them).

        Args:
            envs (dict[int, dict[str, str]]): local rank -> environment.

        Returns:
            LogsDest
        """

    @property
    @abc.abstractmethod
    def root_log_dir(self) -> str:
        """The root folder of the logs."""


class DefaultLogsSpecs(LogsSpecs):
    """The layout of NOTE [ Worker logs ]: a fresh folder per run under ``log_dir`` (a new
    temporary folder when None; ``os.devnull`` writes nothing), one per attempt, one per
    local rank.

    Args:
        log_dir (str, optional): the root folder; created when missing.
        redirects (Std or dict): the streams written to files.
        tee (Std or dict): the streams written to files and copied to the console.
        local_ranks_filter (set[int], optional): the only ranks shown on the console.

    Raises:
        NotADirectoryError: ``log_dir`` is a file.

    Example::

        >>> specs = DefaultLogsSpecs(log_dir="/dev/null", tee=Std.ALL)
        >>> specs.reify({0: {}}).error_files
        {0: '/dev/null'}
    """

    def __init__(self, log_dir: str | None = None, redirects: Std | dict[int, Std] = Std.NONE,
                 tee: Std | dict[int, Std] = Std.NONE,
                 local_ranks_filter: set[int] | None = None) -> None:
        if log_dir != os.devnull:
            if not log_dir:
                log_dir = tempfile.mkdtemp(prefix="torchelastic_")
            elif not os.path.exists(log_dir):
                os.makedirs(log_dir, exist_ok=True)
            elif os.path.isfile(log_dir):
                raise NotADirectoryError(f"log_dir: {log_dir} is a file")
        super().__init__(log_dir, redirects, tee, local_ranks_filter)
        self._run_log_dir = None

    @property
    def root_log_dir(self) -> str:
        """The root folder of the logs."""
        return str(self._root_log_dir)

    def _make_log_dir(self, log_dir: str | None, rdzv_run_id: str) -> str:
        base = log_dir or tempfile.mkdtemp(prefix="torchelastic_")
        os.makedirs(base, exist_ok=True)
        path = tempfile.mkdtemp(prefix=f"{rdzv_run_id}_", dir=base)
        logger.info("log directory set to: %s", path)
        return path

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        """Create this attempt's folders (NOTE [ Worker logs ]), point each worker's
        ``TORCHELASTIC_ERROR_FILE`` at its ``error.json``, and say where its streams go.

        Args:
            envs (dict[int, dict[str, str]]): local rank -> environment (its
                ``TORCHELASTIC_RUN_ID`` and ``TORCHELASTIC_RESTART_COUNT`` name the folders).

        Returns:
            LogsDest
        """
        nprocs = len(envs)
        first = envs[0] if nprocs else {}
        run_id = first.get("TORCHELASTIC_RUN_ID", "test_run_id")
        attempt = first.get("TORCHELASTIC_RESTART_COUNT", "0")
        devnull = self._root_log_dir == os.devnull
        attempt_dir = os.devnull
        if not devnull:
            if not self._run_log_dir:
                self._run_log_dir = self._make_log_dir(self._root_log_dir, run_id)
            attempt_dir = os.path.join(self._run_log_dir, f"attempt_{attempt}")
            shutil.rmtree(attempt_dir, ignore_errors=True)
            os.makedirs(attempt_dir)
        redirects, tees = to_map(self._redirects, nprocs), to_map(self._tee, nprocs)
        console = ""
        dest = LogsDest(stdouts=dict.fromkeys(range(nprocs), console),
                        stderrs=dict.fromkeys(range(nprocs), console),
                        filtered_stdout=os.path.join(attempt_dir, "filtered_stdout.log"),
                        filtered_stderr=os.path.join(attempt_dir, "filtered_stderr.log"))
        for rank in range(nprocs):
            if devnull:
                dest.tee_stdouts[rank] = dest.tee_stderrs[rank] = os.devnull
                dest.error_files[rank] = os.devnull
                envs[rank]["TORCHELASTIC_ERROR_FILE"] = ""
                continue
            rank_dir = os.path.join(attempt_dir, str(rank))
            os.mkdir(rank_dir)
            to_file = redirects[rank] | tees[rank]
            if to_file & Std.OUT:
                dest.stdouts[rank] = os.path.join(rank_dir, "stdout.log")
            if to_file & Std.ERR:
                dest.stderrs[rank] = os.path.join(rank_dir, "stderr.log")
            shown = self._local_ranks_filter is None or not self._local_ranks_filter \
                or rank in self._local_ranks_filter
            if shown and tees[rank] & Std.OUT:
                dest.tee_stdouts[rank] = dest.stdouts[rank]
            if shown and tees[rank] & Std.ERR:
                dest.tee_stderrs[rank] = dest.stderrs[rank]
            if not shown:
                for streams in (dest.stdouts, dest.stderrs):
                    if streams[rank] == console:
                        streams[rank] = os.devnull
            dest.error_files[rank] = os.path.join(rank_dir, "error.json")
            envs[rank]["TORCHELASTIC_ERROR_FILE"] = dest.error_files[rank]
        return dest

    def __repr__(self) -> str:
        return (f"DefaultLogsSpecs(root_log_dir={self._root_log_dir}, "
                f"redirects={self._redirects}, tee={self._tee}, "
                f"local_ranks_filter={self._local_ranks_filter})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DefaultLogsSpecs):
            return False
        return (self._root_log_dir, self._redirects, self._tee, self._local_ranks_filter) == \
            (other._root_log_dir, other._redirects, other._tee, other._local_ranks_filter)

    __hash__ = None


@dataclass
class RunProcsResult:
    """The outcome of a worker group: return values by local rank (None for programs) when
    all succeeded, else the failures observed; the log file of each redirected stream.

    Example::

        >>> RunProcsResult(return_values={0: 1}).is_failed()
        False
    """

    return_values: dict[int, Any] = field(default_factory=dict)
    failures: dict[int, ProcessFailure] = field(default_factory=dict)
    stdouts: dict[int, str] = field(default_factory=dict)
    stderrs: dict[int, str] = field(default_factory=dict)

    def is_failed(self) -> bool:
        """Whether any worker failed.

        Returns:
            bool
        """
        return len(self.failures) > 0


def _validate_full_rank(d: dict, nprocs: int, what: str) -> None:
    if set(d) != set(range(nprocs)):
        raise RuntimeError(f"{what}, local rank mapping mismatch, expected: {set(range(nprocs))},"
                           f" actual: {set(d)}")


class PContext(abc.ABC):
    """A running group of local workers: ``start()``, then ``wait()`` for the outcome,
    ``pids()``, ``close()`` to stop them.

    Args:
        name (str): the group's name (its role, in the launcher), the tee prefix.
        entrypoint (callable or str): what each worker runs.
        args (dict[int, tuple]): local rank -> arguments.
        envs (dict[int, dict[str, str]]): local rank -> extra environment variables.
        logs_specs (LogsSpecs): where the output goes.
        log_line_prefixes (dict[int, str], optional): the console prefix of each rank's
            copied lines (default ``[<name><local_rank>]:``).

    Example::

        >>> issubclass(SubprocessContext, PContext)
        True
    """

    def __init__(self, name: str, entrypoint: Callable | str, args: dict[int, tuple],
                 envs: dict[int, dict[str, str]], logs_specs: LogsSpecs,
                 log_line_prefixes: dict[int, str] | None = None,
                 duplicate_stdout_filters: list[str] | None = None,
                 duplicate_stderr_filters: list[str] | None = None) -> None:
        self.name = name
        nprocs = len(args)
        _validate_full_rank(args, nprocs, "args")
        _validate_full_rank(envs, nprocs, "envs")
        self.entrypoint = entrypoint
        self.args = args
        self.envs = envs
        dest = logs_specs.reify(envs)
        self.stdouts, self.stderrs = dest.stdouts, dest.stderrs
        self.error_files = dest.error_files
        self.nprocs = nprocs
        self._stdout_tail = TailLog(name, dest.tee_stdouts, sys.stdout, log_line_prefixes)
        self._stderr_tail = TailLog(name, dest.tee_stderrs, sys.stderr, log_line_prefixes)

    def start(self) -> None:
        """Start the workers (and the copying of tee'd logs); a SIGTERM or SIGINT to this
        process from now on raises :class:`SignalException` in its main thread.

        Returns:
            None
        """
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _terminate_process_handler)
            signal.signal(signal.SIGINT, _terminate_process_handler)
            if not IS_WINDOWS:
                signal.signal(signal.SIGHUP, _terminate_process_handler)
                signal.signal(signal.SIGQUIT, _terminate_process_handler)
        self._start()
        self._stdout_tail.start()
        self._stderr_tail.start()

    @abc.abstractmethod
    def _start(self) -> None:
        ...

    @abc.abstractmethod
    def _poll(self) -> RunProcsResult | None:
        ...

    def wait(self, timeout: float = -1, period: float = 1) -> RunProcsResult | None:
        """Wait for the workers: the result once all succeeded or one failed (the others
        are then stopped), None if ``timeout`` seconds passed first.

        Args:
            timeout (float): seconds to wait; 0 checks once; negative waits without limit.
            period (float): seconds between checks.

        Returns:
            RunProcsResult or None
        """
        if timeout == 0:
            return self._poll()
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while deadline is None or time.monotonic() < deadline:
            result = self._poll()
            if result is not None:
                return result
            time.sleep(period)
        return None

    @abc.abstractmethod
    def pids(self) -> dict[int, int]:
        """local rank -> process id."""

    @abc.abstractmethod
    def _close(self, death_sig: signal.Signals, timeout: int = 30) -> None:
        ...

    def close(self, death_sig: signal.Signals | None = None, timeout: int = 30) -> None:
        """Stop the workers still running: ``death_sig`` (default SIGTERM), then SIGKILL
        after ``timeout`` seconds; stop copying logs.

        Args:
            death_sig (signal.Signals, optional): the first signal.
            timeout (int): seconds before SIGKILL.

        Returns:
            None
        """
        self._close(death_sig=death_sig or signal.SIGTERM, timeout=timeout)
        self._stdout_tail.stop()
        self._stderr_tail.stop()


def get_std_cm(std_rd: str, redirect_fn) -> Any:
    """A context manager redirecting a stream to the file ``std_rd`` (none when empty).

    Args:
        std_rd (str): the file; ``""`` keeps the stream.
        redirect_fn (callable): :func:`~.redirects.redirect_stdout` or ``redirect_stderr``.

    Returns:
        a context manager.

    Example::

        >>> with get_std_cm("", redirect_stdout):
        ...     pass
    """
    if IS_WINDOWS or IS_MACOS or not std_rd:
        return nullcontext()
    return redirect_fn(std_rd)


def _wrap(local_rank: int, fn: Callable, args: dict, envs: dict, stdout_redirects: dict,
          stderr_redirects: dict, ret_vals: dict, queue_finished_reading_event) -> None:
    # runs in the worker: its environment, its streams, then the function under @record
    # (an exception is written to the error file, then ends the process with status 1)
    os.environ.update(envs[local_rank])
    with get_std_cm(stdout_redirects[local_rank], redirect_stdout), \
            get_std_cm(stderr_redirects[local_rank], redirect_stderr):
        ret = record(fn)(*args[local_rank])
    ret_vals[local_rank].put(ret)
    queue_finished_reading_event.wait()


class MultiprocessContext(PContext):
    """Workers that run a Python function (``multiprocessing`` with ``start_method``);
    ``wait()`` returns each rank's return value.

    Args:
        name, entrypoint, args, envs, logs_specs, log_line_prefixes: as :class:`PContext`.
        start_method (str): ``"spawn"``, ``"fork"`` or ``"forkserver"``.

    Example::

        >>> MultiprocessContext.__mro__[1].__name__
        'PContext'
    """

    def __init__(self, name: str, entrypoint: Callable, args: dict[int, tuple],
                 envs: dict[int, dict[str, str]], start_method: str, logs_specs: LogsSpecs,
                 log_line_prefixes: dict[int, str] | None = None, numa_options=None,
                 duplicate_stdout_filters: list[str] | None = None,
                 duplicate_stderr_filters: list[str] | None = None) -> None:
        super().__init__(name, entrypoint, args, envs, logs_specs, log_line_prefixes)
        self.start_method = start_method
        self._ctx = multiprocessing.get_context(start_method)
        self._ret_vals = {r: self._ctx.SimpleQueue() for r in range(self.nprocs)}
        self._return_values: dict[int, Any] = {}
        self._worker_finished_event = self._ctx.Event()
        self._procs: list = []

    def _start(self) -> None:
        if self._procs:
            raise ValueError("The process group has already been initialized.")
        for r in range(self.nprocs):
            p = self._ctx.Process(target=_wrap, args=(
                r, self.entrypoint, self.args, self.envs, self.stdouts, self.stderrs,
                self._ret_vals, self._worker_finished_event), daemon=False)
            p.start()
            self._procs.append(p)

    def _collect(self) -> None:
        for r, q in self._ret_vals.items():
            if r not in self._return_values and not q.empty():
                self._return_values[r] = q.get()

    def _poll(self) -> RunProcsResult | None:
        self._collect()
        if len(self._return_values) == self.nprocs:
            self._worker_finished_event.set()
            for p in self._procs:
                p.join()
            return RunProcsResult(return_values=dict(sorted(self._return_values.items())),
                                  stdouts=self.stdouts, stderrs=self.stderrs)
        failed = {r: p for r, p in enumerate(self._procs)
                  if p.exitcode not in (None, 0) and r not in self._return_values}
        if not failed:
            return None
        failures = {r: ProcessFailure(r, p.pid, p.exitcode, self.error_files.get(r, ""))
                    for r, p in failed.items()}
        # as PyTorch: the failures are the workers that failed on their own; those the
        # close below stops were still fine, and a rank whose return value was still on its
        # way must not be named
        self.close()
        first = min(failures.values(), key=lambda f: f.timestamp)
        logger.error("failed (exitcode: %s) local_rank: %s (pid: %s) of fn: %s (start_method: "
                     "%s)", first.exitcode, first.local_rank, first.pid,
                     getattr(self.entrypoint, "__qualname__", self.entrypoint),
                     self.start_method)
        return RunProcsResult(failures=failures, stdouts=self.stdouts, stderrs=self.stderrs)

    def pids(self) -> dict[int, int]:
        """local rank -> process id.

        Returns:
            dict[int, int]
        """
        return {r: p.pid for r, p in enumerate(self._procs)}

    def _close(self, death_sig: signal.Signals, timeout: int = 30) -> None:
        self._worker_finished_event.set()
        live = [p for p in self._procs if p.is_alive()]
        for p in live:
            logger.warning("Closing process %s via signal %s", p.pid, death_sig.name)
            try:
                os.kill(p.pid, death_sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        for p in live:
            p.join(max(deadline - time.monotonic(), 0))
        for p in live:
            if p.is_alive():
                logger.warning("Unable to shutdown process %s via %s, forcefully exiting via "
                               "SIGKILL", p.pid, death_sig.name)
                p.kill()
                p.join()


class SubprocessContext(PContext):
    """Workers that run a program (``entrypoint`` with each rank's arguments), e.g.
    ``sys.executable`` and a script.

    Args:
        name, entrypoint, args, envs, logs_specs, log_line_prefixes: as :class:`PContext`.

    Example::

        >>> import sys
        >>> pc = SubprocessContext("p", sys.executable, {0: ("-c", "pass")}, {0: {}},
        ...                        DefaultLogsSpecs(log_dir="/dev/null"))
        >>> pc.start(); pc.wait(period=0.05).return_values
        {0: None}
    """

    def __init__(self, name: str, entrypoint: str, args: dict[int, tuple],
                 envs: dict[int, dict[str, str]], logs_specs: LogsSpecs,
                 log_line_prefixes: dict[int, str] | None = None, numa_options=None,
                 duplicate_stdout_filters: list[str] | None = None,
                 duplicate_stderr_filters: list[str] | None = None) -> None:
        super().__init__(name, entrypoint, args, envs, logs_specs, log_line_prefixes)
        self._running_local_ranks: set[int] = set(range(self.nprocs))
        self._failures: dict[int, ProcessFailure] = {}
        self.subprocess_handlers: dict[int, SubprocessHandler] = {}

    def _start(self) -> None:
        if self.subprocess_handlers:
            raise ValueError("The subprocess handlers already initialized. Most likely the "
                             "start method got called twice.")
        self.subprocess_handlers = {
            r: get_subprocess_handler(entrypoint=self.entrypoint, args=self.args[r],
                                      env=self.envs[r], stdout=self.stdouts[r],
                                      stderr=self.stderrs[r], local_rank_id=r)
            for r in range(self.nprocs)}

    def _capture_failures(self) -> None:
        done = set()
        for r in self._running_local_ranks:
            handler = self.subprocess_handlers[r]
            code = handler.proc.poll()
            if code is not None:
                done.add(r)
                if code != 0:
                    self._failures[r] = ProcessFailure(r, handler.proc.pid, code,
                                                       self.error_files.get(r, ""))
        self._running_local_ranks -= done

    def _poll(self) -> RunProcsResult | None:
        self._capture_failures()
        if not self._running_local_ranks or self._failures:
            self.close()
            # the workers just stopped are failures too (the report lists them after the
            # first): dict order keeps the ones seen first in front
            self._capture_failures()
            result = RunProcsResult(failures=dict(self._failures), stdouts=self.stdouts,
                                    stderrs=self.stderrs)
            if result.is_failed():
                first = min(result.failures.values(), key=lambda f: f.timestamp)
                logger.error("failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s",
                             first.exitcode, first.local_rank, first.pid, self.entrypoint)
            else:
                result.return_values = dict.fromkeys(range(self.nprocs))
            return result
        return None

    def pids(self) -> dict[int, int]:
        """local rank -> process id.

        Returns:
            dict[int, int]
        """
        return {r: h.proc.pid for r, h in self.subprocess_handlers.items()}

    def _close(self, death_sig: signal.Signals, timeout: int = 30) -> None:
        live = [h for h in self.subprocess_handlers.values() if h.proc.poll() is None]
        for h in live:
            logger.warning("Sending process %s closing signal %s", h.proc.pid, death_sig.name)
            h.close(death_sig)
        deadline = time.monotonic() + timeout
        for h in live:
            try:
                h.proc.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                logger.warning("Unable to shutdown process %s via %s, forcefully exiting via "
                               "SIGKILL", h.proc.pid, death_sig.name)
                h.close(signal.SIGKILL)
                h.proc.wait()
        for h in self.subprocess_handlers.values():
            h.close_files()


def start_processes(name: str, entrypoint: Callable | str, args: dict[int, tuple],
                    envs: dict[int, dict[str, str]], logs_specs: LogsSpecs,
                    log_line_prefixes: dict[int, str] | None = None,
                    start_method: str = "spawn", numa_options=None,
                    duplicate_stdout_filters: list[str] | None = None,
                    duplicate_stderr_filters: list[str] | None = None) -> PContext:
    """Start ``len(args)`` local workers running ``entrypoint`` and return their context.

    A string entrypoint is a program (each worker runs ``entrypoint *args[rank]``); a
    callable runs in a new Python process (``start_method``) as ``entrypoint(*args[rank])``
    under ``@record``, its return value kept for ``wait()``. Each worker's environment is
    this process's, updated with ``envs[rank]``.

    Args:
        name (str): the group's name (the console prefix of tee'd lines).
        entrypoint (callable or str): the function or program.
        args (dict[int, tuple]): local rank -> arguments.
        envs (dict[int, dict[str, str]]): local rank -> environment variables to set.
        logs_specs (LogsSpecs): where the output goes (NOTE [ Worker logs ]).
        log_line_prefixes (dict[int, str], optional): console prefixes by local rank.
        start_method (str): for callables: ``"spawn"``, ``"fork"`` or ``"forkserver"``.

    Returns:
        PContext: started.

    Example::

        >>> import sys
        >>> pc = start_processes("demo", sys.executable, {0: ("-c", "exit(3)")}, {0: {}},
        ...                      DefaultLogsSpecs(log_dir="/dev/null"))
        >>> pc.wait(period=0.05).failures[0].exitcode
        3
    """
    nprocs = len(args)
    _validate_full_rank(args, nprocs, "args")
    _validate_full_rank(envs, nprocs, "envs")
    if isinstance(entrypoint, str):
        context: PContext = SubprocessContext(name, entrypoint, args, envs, logs_specs,
                                              log_line_prefixes)
    else:
        context = MultiprocessContext(name, entrypoint, args, envs, start_method,
                                      logs_specs, log_line_prefixes)
    try:
        context.start()
        return context
    except Exception:
        context.close()
        raise
