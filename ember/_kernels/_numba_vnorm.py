"""numba kernels for the sum of squares under a 2-norm, in PyTorch's lane order (imported
only when numba is installed and the ``numba`` backend is chosen; NOTE [ A 2-norm in
PyTorch's lanes ] in ``_vnorm.py``).

Each kernel keeps one accumulator per SIMD lane, written out as scalars so that LLVM keeps
them in one vector register; no fast-math flags, so every lane adds its squares in order and
no product is contracted into a fused multiply-add (PyTorch's kernel rounds ``x * x`` before
adding it).
"""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True, error_model="numpy")
def sumsq_lanes4(x):  # pragma: no cover - compiled
    """The sum of ``x * x`` over the 1-D array ``x`` in four lanes, then the lanes in order,
    then the tail."""
    n = x.size
    m = n - n % 4
    z = x.dtype.type(0)
    a0 = a1 = a2 = a3 = z
    for d in range(0, m, 4):
        v0 = x[d]
        v1 = x[d + 1]
        v2 = x[d + 2]
        v3 = x[d + 3]
        a0 += v0 * v0
        a1 += v1 * v1
        a2 += v2 * v2
        a3 += v3 * v3
    b = ((a0 + a1) + a2) + a3
    for d in range(m, n):
        v = x[d]
        b += v * v
    return b


@njit(nogil=True, cache=True, error_model="numpy")
def sumsq_lanes8(x):  # pragma: no cover - compiled
    """The sum of ``x * x`` over the 1-D array ``x`` in eight lanes, then the lanes in order,
    then the tail."""
    n = x.size
    m = n - n % 8
    z = x.dtype.type(0)
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = z
    for d in range(0, m, 8):
        v0 = x[d]
        v1 = x[d + 1]
        v2 = x[d + 2]
        v3 = x[d + 3]
        v4 = x[d + 4]
        v5 = x[d + 5]
        v6 = x[d + 6]
        v7 = x[d + 7]
        a0 += v0 * v0
        a1 += v1 * v1
        a2 += v2 * v2
        a3 += v3 * v3
        a4 += v4 * v4
        a5 += v5 * v5
        a6 += v6 * v6
        a7 += v7 * v7
    b = ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7
    for d in range(m, n):
        v = x[d]
        b += v * v
    return b
