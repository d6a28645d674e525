"""What NumPy's BLAS is (MKL? OpenMP-threaded?), read once from NumPy's build configuration."""

from __future__ import annotations

import functools


@functools.cache
def blas_description() -> str:
    """NumPy's BLAS name and build configuration, lower-cased ("" when NumPy cannot say).

    Returns:
        A string such as ``"scipy-openblas openblas 0.3.27 dynamic_arch haswell"``.

    Example::

        >>> isinstance(blas_description(), str)
        True
    """
    import numpy as np

    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
    except Exception:  # older NumPy without mode="dicts", or an unusual build
        return ""
    return " ".join(str(v) for v in blas.values()).lower()
