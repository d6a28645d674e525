"""Each framework in a worker process of its own, driven by the ``python -m bench`` process.

NOTE [ Frameworks in separate processes ]
Users run one framework per process; the benchmark used to import both into one and found
that unfair both ways. ember's import tunes glibc's allocator for the whole process (NOTE
[ Allocator tuning ] in ember/__init__.py), which made PyTorch's ResNet-18 step ~10% faster
than PyTorch alone, and PyTorch's OpenMP/MKL runtime and its threads lived beside ember's
BLAS threads. So by default each framework now lives in a *worker*: a child process,
``python -m bench._workers FRAMEWORK``, that imports only that framework (and NumPy and the
workload's own module). The coordinator (``python -m bench``) keeps the protocol of NOTE
[ Timing method ]: it tells each worker to set up the workload, gets the first call's result
back as NumPy arrays for the check, has each worker warm up and calibrate in turn, and then
asks for samples alternately, sleeping ``settle_s`` before each. The timed loop and the
thread CPU time are measured inside the worker, so a sample's figures hold no pipe traffic.

Choices:
- ``subprocess`` with pipes rather than ``multiprocessing``: a "spawn" child re-runs the
  parent's ``__main__`` (``bench/__main__.py`` runs the whole benchmark), and a fork would
  inherit whatever the parent imported. The environment is inherited as it is.
- Messages are length-prefixed pickles. The worker moves its own stdout aside for them and
  points file descriptor 1 at stderr, so a library's print cannot corrupt the stream.
- A workload's setup function travels by pickle, that is by module and name: the worker
  imports that one module, not every group (bench/optim_cuda.py imports ember, which would
  put ember's allocator tuning into PyTorch's worker). A setup that cannot be pickled (a
  lambda, a nested function, one defined in ``__main__``) runs the old way, both frameworks
  in the coordinator's process, with a note on its row (``sendable``).
- Workers start once per run and serve every workload; one that dies (a crash, the
  out-of-memory killer) costs that framework its row, with a note, and a fresh worker
  serves the next workload.
- Workers run in a session of their own, so a Ctrl-C at the terminal reaches only the
  coordinator, which then ends them (and their children, e.g. DataLoader workers, through
  the process group). A coordinator that dies without cleaning up closes the pipes: a
  worker that reads end-of-file exits.
"""

from __future__ import annotations

import gc
import importlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

_LENGTH = struct.Struct("<Q")
ROOT = Path(__file__).resolve().parent.parent
CLOSE_TIMEOUT_S = 5.0


class WorkerDied(RuntimeError):
    """A worker process ended while the coordinator waited for its answer."""

    def __init__(self, worker, returncode):
        self.worker = worker
        self.returncode = returncode
        super().__init__(f"{worker.framework} worker exited (code {returncode})")


class WorkloadFailed(Exception):
    """A workload's setup or a call raised in a worker (or the worker's import failed); the
    message describes it, ``worker`` is the Worker that answered."""

    def __init__(self, message, worker=None):
        super().__init__(message)
        self.worker = worker


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive_bytes(stream):
    """One message's bytes, or None at end of file."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


def sendable(w) -> str:
    """Why workload ``w`` cannot run in workers ('' when it can): each framework's setup
    must be a function a worker can import by module and name."""
    for name, setup in w.setups.items():
        if getattr(setup, "__module__", None) == "__main__":
            return f"{name}'s setup is defined in __main__"
        try:
            pickle.dumps(setup, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 -- pickle raises several types
            return f"{name}'s setup cannot be sent to a worker ({type(exc).__name__})"
    return ""


class Worker:
    """One framework in a child process that imports only that framework.

    The methods mirror the steps of NOTE [ Timing method ]: ``setup`` (set up a workload and
    make its first call), ``prepare`` (warm up and calibrate), ``sample`` (one timed loop),
    ``release`` (drop the workload). See NOTE [ Frameworks in separate processes ].

    Args:
        framework: the module the worker imports, ``"ember"`` or ``"torch"``.

    Raises:
        WorkloadFailed: when the framework cannot be imported in the worker.

    Example::

        worker = Worker("ember")
        try:
            worker.setup(bench.ops.add, want_output=False)
            n = worker.prepare(warmup_s=0.05, min_sample_s=0.02)
            wall_ns, cpu_ns = worker.sample(n)
        finally:
            worker.close()
    """

    def __init__(self, framework: str):
        self.framework = framework
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench._workers", framework], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self._info = None
        self._busy = True  # until it answers: first the import, then each request

    @property
    def pid(self) -> int:
        """The worker's process id (also its process group's)."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.process.poll() is None

    def info(self) -> dict:
        """What the worker's framework reports: ``version``, ``threads`` and ``loaded`` (the
        frameworks imported in the worker). Waits for the import to finish the first time.

        Raises:
            WorkloadFailed: when the import failed.
        """
        if self._info is None:
            self._info = self._reply()
        return self._info

    def _reply(self):
        data = _receive_bytes(self.process.stdout)
        self._busy = False
        if data is None:
            raise WorkerDied(self, self.process.wait())
        status, value = pickle.loads(data)
        if status == "error":
            raise WorkloadFailed(value, self)
        return value

    def _call(self, *message):
        self.info()  # the import's answer comes first
        self._busy = True
        try:
            _send(self.process.stdin, message)
        except (BrokenPipeError, OSError):
            raise WorkerDied(self, self.process.wait()) from None
        return self._reply()

    def setup(self, setup, want_output: bool):
        """Run ``setup(framework)`` and its callable once in the worker.

        Returns:
            The first call's result as NumPy data (see ``bench.common.result_values``) when
            ``want_output``, else None.

        Raises:
            WorkloadFailed: the setup or first call raised; the message says what.
        """
        return self._call("setup", setup, want_output)

    def prepare(self, warmup_s: float, min_sample_s: float) -> int:
        """Warm the workload up for ``warmup_s`` seconds; return the calibrated loop count."""
        return self._call("prepare", warmup_s, min_sample_s)

    def sample(self, n: int):
        """(wall ns, thread CPU ns) of ``n`` calls, measured in the worker."""
        return self._call("sample", n)

    def release(self):
        """Drop the current workload, so its memory is free for the next one."""
        return self._call("release")

    def loaded(self) -> list:
        """The frameworks (``ember``, ``torch``) imported in the worker by now."""
        return self._call("info")["loaded"]

    def close(self, timeout: float = CLOSE_TIMEOUT_S):
        """End the worker and its process group: politely if it is idle, else (interrupted
        in the middle of a request) at once by signal."""
        proc = self.process
        if proc.poll() is None and not self._busy:
            try:
                _send(proc.stdin, ("exit",))
                proc.wait(timeout)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        # the worker leads its own process group: that also ends children it left behind
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        proc.wait()


class WorkerPool:
    """A worker per framework for one benchmark run; a context manager that ends them all.

    Args:
        frameworks: the frameworks to start workers for (all start at once).

    Example::

        with WorkerPool(["ember", "torch"]) as pool:
            row = run_workload(w, pool.workers(), samples=7, min_sample_s=0.02,
                               warmup_s=0.05)
    """

    def __init__(self, frameworks):
        self.frameworks = list(frameworks)
        self._workers = {}
        self.failed = {}  # framework -> why its worker could not start
        try:
            for name in self.frameworks:
                self._workers[name] = Worker(name)
            for name in self.frameworks:
                self._check_started(name)
        except BaseException:
            self.close()
            raise

    def _check_started(self, name):
        try:
            self._workers[name].info()
        except (WorkloadFailed, WorkerDied) as exc:
            self._workers.pop(name).close()
            self.failed[name] = str(exc)

    def workers(self) -> dict:
        """framework -> live Worker; a worker that died is replaced by a fresh one."""
        for name in self.frameworks:
            if name in self.failed:
                continue
            if not self._workers[name].alive:
                self._workers.pop(name).close()
                self._workers[name] = Worker(name)
                self._check_started(name)
        return dict(self._workers)

    def info(self) -> dict:
        """framework -> its worker's ``info()`` (version, threads, loaded frameworks)."""
        return {name: w.info() for name, w in self._workers.items()}

    def pids(self) -> list:
        """The process ids of the current workers."""
        return [w.pid for w in self._workers.values()]

    def close(self):
        """End every worker (idempotent)."""
        while self._workers:
            _, worker = self._workers.popitem()
            worker.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------------------------------------
# the worker's side


def serve(framework: str, requests, replies):
    """The worker's loop: import ``framework``, then answer requests until "exit" or end of
    file. Every answer is ``("ok", value)`` or ``("error", description)``."""
    from bench.common import _describe, _run_loop, calibrate, framework_info, result_values

    try:
        fw = importlib.import_module(framework)
    except Exception as exc:  # noqa: BLE001 -- report why, the coordinator goes on without
        _send(replies, ("error", f"import {framework} failed: {_describe(exc)}"))
        return
    info = framework_info(fw)
    info["loaded"] = sorted(m for m in ("ember", "torch") if m in sys.modules)
    _send(replies, ("ok", info))
    fn = None
    while True:
        data = _receive_bytes(requests)
        if data is None:
            return
        try:
            op, *args = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 -- e.g. the setup's module fails to import
            _send(replies, ("error", _describe(exc)))
            continue
        if op == "exit":
            return
        try:
            if op == "setup":
                setup, want_output = args
                fn = None
                gc.collect()
                candidate = setup(fw)
                out = candidate()
                value = result_values(out) if want_output else None
                fn = candidate
            elif op == "prepare":
                warmup_s, min_sample_s = args
                deadline = time.perf_counter() + warmup_s
                fn()
                while time.perf_counter() < deadline:
                    fn()
                value = calibrate(fn, min_sample_s)
            elif op == "sample":
                value = _run_loop(fn, args[0])
            elif op == "release":
                fn = None
                gc.collect()
                value = None
            elif op == "info":
                value = {**info, "loaded": sorted(m for m in ("ember", "torch")
                                                  if m in sys.modules)}
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as exc:  # noqa: BLE001 -- a workload's failure is an answer
            _send(replies, ("error", _describe(exc)))
        else:
            _send(replies, ("ok", value))


def main(argv):
    """``python -m bench._workers FRAMEWORK``: serve requests on stdin, answer on stdout."""
    (framework,) = argv
    replies = os.fdopen(os.dup(1), "wb")
    requests = os.fdopen(os.dup(0), "rb")
    os.dup2(2, 1)  # prints (ours, a library's) go to stderr, not into the answers
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    serve(framework, requests, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
