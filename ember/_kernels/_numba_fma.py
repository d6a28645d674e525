"""The compiled fused multiply-add behind ``ember._ops._fma`` (imported only when numba is
installed and the ``numba`` backend is chosen; see NOTE [ Fused multiply-add as PyTorch's
kernels ] in ``ember/_ops/_fma.py``).

``fma`` is a NumPy ufunc (broadcasting, strides, ``out=``) for float32 and float64 whose
element is LLVM's ``llvm.fma`` intrinsic: ``a * b + c`` with one rounding, a single
instruction on CPUs with FMA and the C library's correctly rounded ``fma`` elsewhere.
"""

from __future__ import annotations

from numba import vectorize

from ._numba import _fused


@vectorize(["float32(float32, float32, float32)", "float64(float64, float64, float64)"],
           nopython=True, cache=True)
def _fma(a, b, c):  # pragma: no cover - compiled
    return _fused(a, b, c)


# the plain NumPy ufunc under numba's dynamic wrapper: its calls cost what ``np.add``'s do
fma = _fma.ufunc
