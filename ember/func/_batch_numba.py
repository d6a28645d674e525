"""numba kernels of the batching rules (imported only when numba is installed and the fused
kernels' backend is ``numba``: NOTE [ Fused kernels ] in ember/_kernels/__init__.py).

Compiled with ``cache=True`` and ``nogil=True`` as the other kernels, and without fast-math
flags: each output element is one IEEE product, bit for bit NumPy's.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def outer_rows(a, b, out):  # pragma: no cover - compiled
    """``out[i, j, l] = a[i, j] * b[i, l]`` for C-contiguous a (B, N), b (B, M) and out
    (B, N, M): a batch of outer products (NOTE [ Batched outer products ] in
    _batch_kernels.py)."""
    for i in range(a.shape[0]):
        brow = b[i]
        for j in range(a.shape[1]):
            s = a[i, j]
            orow = out[i, j]
            for m in range(brow.shape[0]):
                orow[m] = s * brow[m]
