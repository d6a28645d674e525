"""numba's decorators for ember's kernel modules, their disk caches shared by content.

Every module that compiles kernels takes ``njit`` (and ``prange``) from here rather than
from numba, so that ``share_numba_caches`` has put ember's cache locator in place before
numba picks each kernel's cache (at decoration; NOTE [ Kernel caches shared by content ] in
ember/_lazy_import.py). Imported only where numba is installed.
"""

from __future__ import annotations

from .._lazy_import import share_numba_caches

share_numba_caches()

from numba import njit, prange  # noqa: E402

__all__ = ["njit", "prange"]
