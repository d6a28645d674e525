"""Recording a worker's failure, as ``torch.distributed.elastic.multiprocessing.errors``.

A launcher tells each worker where to write its error through ``TORCHELASTIC_ERROR_FILE``;
``@record`` on the worker's main function writes the exception there, as JSON in
PyTorch's layout (``{"message": {"message": ..., "extraInfo": {"py_callstack": ...,
"timestamp": ...}}}``), and re-raises it. Without the variable nothing is written.
"""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from dataclasses import dataclass, field

__all__ = ["ChildFailedError", "ErrorHandler", "ProcessFailure", "get_error_handler",
           "record"]

_NOT_AVAILABLE = "<N/A>"


class ErrorHandler:
    """Writes a worker's exception to the file ``TORCHELASTIC_ERROR_FILE`` names.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import ErrorHandler
        >>> ErrorHandler().initialize()
    """

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self) -> None:
        """Prepare for recording (nothing to set up in ember).

        Returns:
            None
        """

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` and the current traceback to the error file, when one is named.

        Args:
            e (BaseException): the exception being handled.

        Returns:
            None
        """
        path = self._get_error_file_path()
        if not path:
            return
        data = {"message": {"message": f"{type(e).__name__}: {e}",
                            "extraInfo": {"py_callstack": traceback.format_exc(),
                                          "timestamp": str(int(time.time()))}}}
        with open(path, "w") as f:
            json.dump(data, f)

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0) -> None:
        """Copy a child's error file to this process's error file (a failure that started
        in a child process this one launched).

        Args:
            rootcause_error_file (str): the child's error file.
            error_code (int): the child's exit code, recorded when the file lacks one.

        Returns:
            None
        """
        path = self._get_error_file_path()
        with open(rootcause_error_file) as f:
            data = json.load(f)
        if error_code and isinstance(data.get("message"), dict):
            data["message"].setdefault("errorCode", error_code)
        if path:
            with open(path, "w") as f:
                json.dump(data, f)


def get_error_handler() -> ErrorHandler:
    """The error handler ``record`` uses by default.

    Returns:
        ErrorHandler

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import get_error_handler
        >>> type(get_error_handler()).__name__
        'ErrorHandler'
    """
    return ErrorHandler()


@dataclass
class ProcessFailure:
    """One worker's failure: its local rank, pid, exit code and error file.

    Args:
        local_rank (int): the worker's local rank.
        pid (int): its process id.
        exitcode (int): its exit code.
        error_file (str): the file it recorded its error in.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import ProcessFailure
        >>> ProcessFailure(0, 123, 1, "/nonexistent").message
        'Process failed with exitcode 1'
    """

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    message: str = field(init=False)
    timestamp: int = field(init=False)

    def __post_init__(self):
        self.message, self.timestamp = f"Process failed with exitcode {self.exitcode}", 0
        if self.error_file and os.path.isfile(self.error_file):
            with open(self.error_file) as f:
                msg = json.load(f).get("message", {})
            if isinstance(msg, dict):
                self.message = msg.get("message", self.message)
                self.timestamp = int(msg.get("extraInfo", {}).get("timestamp", 0))
            else:
                self.message = str(msg)
        elif not self.error_file:
            self.error_file = _NOT_AVAILABLE

    def signal_name(self) -> str:
        """The signal that ended the worker (a negative exit code), or "<N/A>".

        Returns:
            str
        """
        import signal

        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE


class ChildFailedError(Exception):
    """Raised by a launcher when workers failed; ``failures`` maps global rank to
    ``ProcessFailure``.

    Args:
        name (str): the failed job's name (e.g. the script).
        failures (dict): global rank -> ProcessFailure.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import *
        >>> e = ChildFailedError("train.py", {1: ProcessFailure(1, 7, 2, "")})
        >>> e.get_first_failure()[0]
        1
    """

    def __init__(self, name: str, failures: dict):
        self.name = name
        self.failures = failures
        if not failures:
            raise AssertionError("ChildFailedError needs at least one failure")
        super().__init__(self.format_msg())

    def get_first_failure(self) -> tuple:
        """``(rank, ProcessFailure)`` of the earliest failure.

        Returns:
            tuple
        """
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self) -> str:
        """The failures, one line each.

        Returns:
            str
        """
        lines = [f"{self.name} FAILED"]
        for rank, f in sorted(self.failures.items()):
            lines.append(f"  rank {rank} (local_rank {f.local_rank}, pid {f.pid}): "
                         f"exitcode {f.exitcode}: {f.message}")
        return "\n".join(lines)


def record(fn=None, error_handler: ErrorHandler | None = None):
    """Decorate a worker's main function: an exception it raises is written to the error
    file the launcher named (``TORCHELASTIC_ERROR_FILE``), then re-raised;
    ``SystemExit(0)`` returns None.

    Args:
        fn (callable): the function.
        error_handler (ErrorHandler, optional): default: ``get_error_handler()``.

    Returns:
        the wrapped function.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import record
        >>> @record
        ... def main():
        ...     return "ok"
        >>> main()
        'ok'
    """
    handler = error_handler or get_error_handler()

    def wrap(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            handler.initialize()
            try:
                return f(*args, **kwargs)
            except SystemExit as e:
                if e.code == 0:
                    return None
                raise
            except ChildFailedError as e:
                _, failure = e.get_first_failure()
                if failure.error_file != _NOT_AVAILABLE:
                    handler.dump_error_file(failure.error_file, failure.exitcode)
                raise
            except Exception as e:
                handler.record_exception(e)
                raise

        return wrapper

    return wrap if fn is None else wrap(fn)
