"""The sum of squares under a 2-norm in PyTorch's order, compiled (``_numba_vnorm.py``).

NOTE [ A 2-norm in PyTorch's lanes ]
PyTorch's CPU kernel for the 2-norm of a whole dense float32/float64 tensor reads it in
memory order as one row, keeps one float (double) accumulator per lane of a 32-byte AVX2
vector (8 floats, 4 doubles), adds each element's square -- rounded, not a fused
multiply-add -- to its lane in order, then adds the lanes in order, then the tail that did
not fill a vector, and takes the square root in the element type. NumPy's pairwise sum of
``x * x`` differed from it in the last bit or two on most of a model's gradients (13 of
char_gpt's 41), and took three passes and two temporaries where the compiled lanes take one
(628K float32: ~1.3 ms against ~0.4 ms; PyTorch ~0.4 ms).

So with numba, ``vector_norm`` of order 2 over all dims of a C- or F-contiguous float
array sums in those lanes, giving PyTorch's bits. Without numba the NumPy kernel keeps its
pairwise sum: a NumPy reduction over the lanes (``reshape(-1, 8).sum(0)``) gives the same
bits but ran ten times slower than the pairwise sum. On a machine with AVX-512 PyTorch's
lanes are 64 bytes wide; there the NumPy sum is kept too.
"""

from __future__ import annotations

import numpy as np

from .. import _kernels

try:
    _AVX512 = bool(np._core._multiarray_umath.__cpu_features__.get("AVX512F"))
except AttributeError:  # pragma: no cover - a NumPy without the table
    _AVX512 = False

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_lanes = None    # the ``_numba_vnorm`` module once loaded


def sumsq(a):
    """The sum of ``a * a`` over all of ``a`` in PyTorch's lanes (NOTE [ A 2-norm in
    PyTorch's lanes ]), as a scalar of ``a``'s dtype; None where not covered (no numba, a
    dtype other than float32/float64, an empty array, AVX-512).

    Args:
        a: a NumPy array.

    Returns:
        numpy.float32 or numpy.float64 or None.
    """
    global _lanes
    dt = a.dtype
    if (dt != _F32 and dt != _F64) or type(a) is not np.ndarray or not a.size or _AVX512:
        return None
    if a.flags.c_contiguous:
        x = a.reshape(-1)
    elif a.flags.f_contiguous:
        x = a.T.reshape(-1)
    else:  # (strided: the same lanes over a contiguous copy, so a view's norm is its copy's)
        x = np.ascontiguousarray(a).reshape(-1)
    impl = _kernels._impl if _kernels._impl is not None else _kernels._load()
    if not impl:
        return None
    if _lanes is None:
        from . import _numba_vnorm

        _lanes = _numba_vnorm
    f = _lanes.sumsq_lanes8 if dt == _F32 else _lanes.sumsq_lanes4
    return dt.type(f(x))
