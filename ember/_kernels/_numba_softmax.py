"""numba kernels of softmax's and log-softmax's backward over rows (imported only when the
fused kernels' backend is numba; see NOTE [ Fused kernels ] in ``__init__.py``).

Each row is read once for its sum and once more, from the cache, for the gradient: one
pass over memory where the op-by-op formula made four, with three temporaries. Sums run in
float32 over the row with the reassociation flag, so LLVM keeps several SIMD accumulators,
as the forward row kernels do (rows of at most ``_ROW_MAX`` elements).
"""

from __future__ import annotations

from numba import njit

from ._numba import _FM, _ZERO, _expf


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def softmax_backward_rows(g, y, out):  # pragma: no cover (compiled)
    """``out[i] = y[i] * (g[i] - sum(g[i] * y[i]))`` for the softmax ``y`` of each row."""
    for i in range(g.shape[0]):
        gi = g[i]
        yi = y[i]
        oi = out[i]
        s = _ZERO
        for j in range(gi.size):
            s += gi[j] * yi[j]
        for j in range(gi.size):
            oi[j] = yi[j] * (gi[j] - s)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def log_softmax_backward_rows(g, y, out):  # pragma: no cover (compiled)
    """``out[i] = g[i] - exp(y[i]) * sum(g[i])`` for the log-softmax ``y`` of each row."""
    for i in range(g.shape[0]):
        gi = g[i]
        yi = y[i]
        oi = out[i]
        s = _ZERO
        for j in range(gi.size):
            s += gi[j]
        for j in range(gi.size):
            oi[j] = gi[j] - _expf(yi[j]) * s
