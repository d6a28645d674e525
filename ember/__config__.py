"""``ember.__config__``: how this ember was put together (``torch.__config__``).

``show()`` names the libraries doing the arithmetic (NumPy and its BLAS, SciPy, numba,
CuPy when present); ``parallel_info()`` the thread settings. Bug reports paste them.
"""

from __future__ import annotations

__all__ = ["show", "parallel_info", "cxx_flags"]


def _blas_lines():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    lines = []
    for info in threadpool_info():
        lines.append(f"  - {info.get('internal_api', '?')} {info.get('version') or ''} "
                     f"({info.get('user_api', '?')}, {info.get('architecture') or '?'}, "
                     f"{info.get('num_threads')} threads)")
    return lines


def show() -> str:
    """A description of the libraries this ember runs on, one per line.

    Returns:
        str.

    Example::

        >>> ember.__config__.show().startswith("ember built with")
        True
    """
    import platform

    import numpy as np

    import ember

    lines = ["ember built with:", f"  - Python {platform.python_version()}",
             f"  - ember {ember.__version__}", f"  - NumPy {np.__version__}"]
    try:
        import scipy

        lines.append(f"  - SciPy {scipy.__version__}")
    except ImportError:  # pragma: no cover - a hard dependency
        pass
    try:
        import numba

        lines.append(f"  - numba {numba.__version__} (compiled kernels)")
    except ImportError:
        lines.append("  - numba not installed (NumPy kernels only)")
    lines.extend(_blas_lines())
    try:
        import cupy

        lines.append(f"  - CuPy {cupy.__version__} (CUDA)")
    except Exception:
        pass
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """The thread settings ember's kernels and its BLAS run with.

    Returns:
        str.

    Example::

        >>> "get_num_threads" in ember.__config__.parallel_info()
        True
    """
    import os

    import ember

    lines = ["ember parallel settings:",
             f"\tember.get_num_threads() : {ember.get_num_threads()}",
             f"\tember.get_num_interop_threads() : {ember.get_num_interop_threads()}",
             f"\tos.cpu_count() : {os.cpu_count()}"]
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_CORETYPE"):
        lines.append(f"\t{var} : {os.environ.get(var, '[not set]')}")
    lines.extend(line.replace("  - ", "\t") for line in _blas_lines())
    return "\n".join(lines) + "\n"


def cxx_flags() -> str:
    """The C++ compiler flags of the build: empty, ember is Python.

    Returns:
        str: ``""``.

    Example::

        >>> ember.__config__.cxx_flags()
        ''
    """
    return ""
