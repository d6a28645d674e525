"""``ember.backends.openmp``: whether ember's CPU maths is threaded with OpenMP.

ember's CPU kernels are NumPy's; OpenMP is "available" when NumPy's BLAS was built with it.

Example::

    >>> isinstance(ember.backends.openmp.is_available(), bool)
    True
"""

from __future__ import annotations

from ._blas import blas_description

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether NumPy's BLAS (and so ember's CPU matrix maths) is threaded with OpenMP.

    Returns:
        True if NumPy's BLAS build configuration names OpenMP.

    Example::

        >>> isinstance(ember.backends.openmp.is_available(), bool)
        True
    """
    return "openmp" in blas_description()
