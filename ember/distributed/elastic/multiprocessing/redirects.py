"""Redirecting this process's standard streams to a file at the file-descriptor level
(``torch.distributed.elastic.multiprocessing.redirects``), so output written by C
libraries and child processes goes there too, not only Python's ``sys.stdout``.

Example::

    >>> from ember.distributed.elastic.multiprocessing.redirects import redirect_stdout
    >>> with redirect_stdout("/tmp/worker_out.log"):  # doctest: +SKIP
    ...     print("to the file")
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from contextlib import contextmanager

__all__ = ["IS_MACOS", "IS_WINDOWS", "get_libc", "redirect", "redirect_stderr",
           "redirect_stdout"]

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"

logger = logging.getLogger(__name__)


def get_libc():
    """The C library (to flush C-level stream buffers), or None where it cannot be loaded.

    Returns:
        ctypes.CDLL or None

    Example::

        >>> get_libc() is None or hasattr(get_libc(), "fflush")
        True
    """
    if IS_WINDOWS or IS_MACOS:
        logger.warning("NOTE: Redirects are currently not supported in Windows or MacOs.")
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


libc = get_libc()


@contextmanager
def redirect(std: str, to_file: str):
    """Send ``"stdout"`` or ``"stderr"`` of this process to ``to_file`` (created or
    truncated) while the block runs; the stream is restored after.

    Args:
        std (str): ``"stdout"`` or ``"stderr"``.
        to_file (str): the file.

    Raises:
        ValueError: ``std`` names another stream.

    Example::

        >>> with redirect("stdin", "/tmp/x.log"):
        ...     pass
        Traceback (most recent call last):
        ...
        ValueError: unknown standard stream <stdin>, must be one of stdout, stderr
    """
    if std not in ("stdout", "stderr"):
        raise ValueError(f"unknown standard stream <{std}>, must be one of stdout, stderr")
    stream = getattr(sys, std)
    fd = stream.fileno()
    stream.flush()
    if libc is not None:
        libc.fflush(None)
    saved = os.dup(fd)
    try:
        with open(to_file, mode="w+b") as dst:
            os.dup2(dst.fileno(), fd)
            try:
                yield
            finally:
                stream.flush()
                if libc is not None:
                    libc.fflush(None)
                os.dup2(saved, fd)
    finally:
        os.close(saved)


def redirect_stdout(to_file: str):
    """:func:`redirect` of ``stdout``.

    Args:
        to_file (str): the file.

    Returns:
        a context manager.

    Example::

        >>> callable(redirect_stdout)
        True
    """
    return redirect("stdout", to_file)


def redirect_stderr(to_file: str):
    """:func:`redirect` of ``stderr``.

    Args:
        to_file (str): the file.

    Returns:
        a context manager.

    Example::

        >>> callable(redirect_stderr)
        True
    """
    return redirect("stderr", to_file)
