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
import socket
import time
import traceback
from dataclasses import dataclass, field

import logging

__all__ = ["ChildFailedError", "ErrorHandler", "ProcessFailure", "get_error_handler",
           "record"]

JSON = dict
# NOTE [ A module of the standard library only ]
# This module imports nothing of ember (its submodules ``error_handler`` and ``handlers``
# name what it defines): a worker script may load it by path, without the cost of
# importing ember, and @record still writes the launcher's error file.
logger = logging.getLogger(__name__)


def get_logger(name: str | None = None) -> logging.Logger:
    """The logger of the elastic modules (``elastic.utils.logging.get_logger``).

    Args:
        name (str, optional): its name (default: this module's).

    Returns:
        logging.Logger

    Example::

        >>> get_logger("x").name
        'x'
    """
    return logging.getLogger(name or __name__)


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
        else:
            logger.error("no error file defined for parent, to copy child error file (%s)",
                         rootcause_error_file)


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

_NOT_AVAILABLE = "<N/A>"


#: what a failure without an error file says (no ``@record`` on the worker's main function)
_NO_TRACEBACK = ("To enable traceback see: "
                 "https://pytorch.org/docs/stable/elastic/errors.html")


@dataclass
class ProcessFailure:
    """One worker's failure: its local rank, pid, exit code and error file.

    As in PyTorch, ``message`` is the ``"message"`` entry of the error file the worker's
    ``@record`` wrote (a dict holding the exception and its traceback), else a string: the
    signal that ended the worker, or a pointer to ``@record``. ``timestamp`` is the
    error's time (the file's), else the time this failure was observed.

    Args:
        local_rank (int): the worker's local rank.
        pid (int): its process id.
        exitcode (int): its exit code (negative: the signal that ended it).
        error_file (str): the file it recorded its error in.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import ProcessFailure
        >>> ProcessFailure(0, 123, -15, "/nonexistent").message
        'Signal 15 (SIGTERM) received by PID 123'
    """

    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    error_file_data: dict = field(init=False)
    message: object = field(init=False)
    timestamp: int = field(init=False)

    def __post_init__(self):
        self.error_file_data = {"message": ""}
        self.message, self.timestamp = "", int(time.time())
        if self.error_file and os.path.isfile(self.error_file):
            with open(self.error_file) as f:
                self.error_file_data = json.load(f)
            msg = self.error_file_data.get("message", "")
            self.message = msg
            if isinstance(msg, dict):
                self.timestamp = int(msg.get("extraInfo", {}).get("timestamp", self.timestamp))
            else:
                self.timestamp = int(self.error_file_data.get("timestamp", self.timestamp))
        else:
            self.error_file = _NOT_AVAILABLE
        if not self.message:
            if self.exitcode < 0:
                self.message = (f"Signal {-self.exitcode} ({self.signal_name()}) received "
                                f"by PID {self.pid}")
            else:
                self.message = _NO_TRACEBACK

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

    def timestamp_isoformat(self) -> str:
        """The failure's time as ``YYYY-MM-DD_HH:MM:SS`` (local time).

        Returns:
            str
        """
        return time.strftime("%Y-%m-%d_%H:%M:%S", time.localtime(self.timestamp))

    def summary(self) -> str:
        """The failure in one line: the recorded exception (``"ValueError: boom"``), else
        the plain message.

        Returns:
            str
        """
        if isinstance(self.message, dict):
            return str(self.message.get("message", _NOT_AVAILABLE))
        return str(self.message)


class ChildFailedError(Exception):
    """Raised by a launcher when workers failed; ``failures`` maps global rank to
    ``ProcessFailure``. Its text is the report ``torchrun`` prints: a box naming the job,
    the other failures, then the root cause (the earliest failure) with its host, ranks,
    exit code, error file and recorded traceback.

    Args:
        name (str): the failed job's name (e.g. the script).
        failures (dict): global rank -> ProcessFailure.

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import *
        >>> e = ChildFailedError("train.py", {1: ProcessFailure(1, 7, 2, "")})
        >>> e.get_first_failure()[0]
        1
        >>> print(str(e).splitlines()[2])
        train.py FAILED
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

    def format_msg(self, boarder_delim: str = "=", section_delim: str = "-") -> str:
        """The report: the job's name, the other failures and the root cause, boxed.

        Args:
            boarder_delim (str): the character of the box's top and bottom lines.
            section_delim (str): the character of the lines between sections.

        Returns:
            str: starts with a newline (the report follows the exception's name).
        """
        # NOTE [ The launcher's failure report ]
        # PyTorch's launcher ends a failed job by raising this error out of its main
        # function, so Python prints the launcher's traceback and then this text: what
        # users paste into bug reports and what CI logs are searched for ("FAILED",
        # "Root Cause (first observed failure):", "error_file:"). ember's launcher raises
        # it the same way, so the layout is PyTorch's: failures numbered from 0 in the
        # order of ``failures`` (a launcher puts the first one it saw first), the root
        # cause moved to its own section, the lines of a recorded traceback indented under
        # "traceback :", rules as wide as the widest line but at most 60 characters.
        title = f"{self.name} FAILED"
        root_rank, _ = self.get_first_failure()
        width = len(title)
        root, others = "", []
        for idx, (rank, failure) in enumerate(self.failures.items()):
            block = self._format_failure(idx, rank, failure)
            width = max(width, *(len(line) for line in block.split("\n")))
            if rank == root_rank:
                root = block
            else:
                others.append(block)
        width = min(width, 60)
        border, section = boarder_delim * width, section_delim * width
        return "\n".join(["", border, title, section, "Failures:",
                          "\n".join(others) if others else "  <NO_OTHER_FAILURES>",
                          section, "Root Cause (first observed failure):", root, border])

    @staticmethod
    def _format_failure(idx: int, rank: int, failure: ProcessFailure) -> str:
        msg = failure.message
        if isinstance(msg, dict):
            msg = msg.get("extraInfo", {}).get("py_callstack", msg.get("message", _NOT_AVAILABLE))
            msg = msg.replace("\n", "\n  ")
        sig = failure.signal_name()
        sig = f" ({sig})" if sig != _NOT_AVAILABLE else ""
        return "\n".join([
            f"[{idx}]:",
            f"  time      : {failure.timestamp_isoformat()}",
            f"  host      : {socket.getfqdn()}",
            f"  rank      : {rank} (local_rank: {failure.local_rank})",
            f"  exitcode  : {failure.exitcode} (pid: {failure.pid}) {sig}",
            f"  error_file: {failure.error_file}",
            f"  traceback : {msg}"])


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
