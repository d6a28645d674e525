"""``ember.cuda.profiler``: mark the region an external CUDA profiler (Nsight Systems, nvprof)
records, through ``cudaProfilerStart``/``cudaProfilerStop``.

Without CuPy or a GPU, ``start``/``stop``/``profile`` raise AssertionError, as PyTorch's CPU
build does (NOTE [ CUDA without a GPU ] in ember/cuda/_runtime.py).
"""

from __future__ import annotations

import contextlib

from ._runtime import cupy, require_gpu

__all__ = ["init", "profile", "start", "stop"]


def init(output_file=None, flags=None, output_mode="key_value") -> None:
    """Removed in PyTorch for CUDA 12 (legacy profiler configuration); raises as PyTorch does.

    Args:
        output_file: unused.
        flags: unused.
        output_mode: unused.

    Raises:
        AssertionError: without CUDA; RuntimeError with CUDA (CUDA 12 has no such call).

    Example::

        >>> try:
        ...     ember.cuda.profiler.init()
        ... except (AssertionError, RuntimeError):
        ...     pass
    """
    require_gpu()
    raise RuntimeError("cudaProfilerInitialize is not supported by CUDA 12 and newer: start the "
                       "program under the profiler and use ember.cuda.profiler.profile()")


def start() -> None:
    """Start recording for an attached CUDA profiler (``cudaProfilerStart``).

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.profiler.start()
        ...     ember.cuda.profiler.stop()
    """
    require_gpu()
    cupy().cuda.runtime.profilerStart()


def stop() -> None:
    """Stop recording for an attached CUDA profiler (``cudaProfilerStop``).

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.profiler.stop()
    """
    require_gpu()
    cupy().cuda.runtime.profilerStop()


@contextlib.contextmanager
def profile():
    """A block recorded by an attached CUDA profiler (``start`` on entry, ``stop`` on exit).

    Returns:
        A context manager.

    Raises:
        AssertionError: without CuPy, on entry.

    Example::

        >>> if ember.cuda.is_available():
        ...     with ember.cuda.profiler.profile():
        ...         pass
    """
    try:
        start()
        yield
    finally:
        stop()
