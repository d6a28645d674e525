"""``ember.backends.mkl``: whether ember's CPU maths runs on Intel MKL.

ember's CPU kernels are NumPy's, so MKL is "available" exactly when NumPy's BLAS is MKL.

Example::

    >>> isinstance(ember.backends.mkl.is_available(), bool)
    True
"""

from __future__ import annotations

from ._blas import blas_description

__all__ = ["VERBOSE_OFF", "VERBOSE_ON", "is_available", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """Whether NumPy (and so ember's CPU maths) is linked against Intel MKL.

    Returns:
        True if NumPy's BLAS is MKL.

    Example::

        >>> isinstance(ember.backends.mkl.is_available(), bool)
        True
    """
    return "mkl" in blas_description()


class verbose:
    """A block in which MKL prints what it runs (``MKL_VERBOSE``), when MKL is in use.

    Without MKL, or without the ``mkl`` (mkl-service) package that switches it at run time,
    the block changes nothing, as PyTorch's does without MKL.

    Args:
        enable: ``VERBOSE_ON`` (1) or ``VERBOSE_OFF`` (0).

    Example::

        >>> with ember.backends.mkl.verbose(ember.backends.mkl.VERBOSE_ON):
        ...     _ = ember.ones(2, 2) @ ember.ones(2, 2)
    """

    def __init__(self, enable):
        self.enable = enable
        self._service = None

    def __enter__(self):
        if self.enable == VERBOSE_OFF or not is_available():
            return self
        try:
            import mkl  # mkl-service
        except ImportError:
            return self
        self._service = mkl
        mkl.verbose(int(self.enable))
        return self

    def __exit__(self, *exc):
        if self._service is not None:
            self._service.verbose(VERBOSE_OFF)
        return False
