"""numba kernel behind ``ember._kernels._reduce`` (imported only when numba is installed and
the ``numba`` backend is chosen; see NOTE [ Blocked float sums ] in ``_reduce.py``).

``block_sums`` sums each fixed-size block of a flat float32 or float64 array. It is compiled
with reassociation allowed (and nothing else), so LLVM keeps several SIMD accumulators per
block: the sum of one block is a handful of interleaved running sums of a few dozen
elements each, added together at the end of the block. No other fast-math flag: NaN and inf
propagate as in NumPy's sum.
"""

from __future__ import annotations

from numba import njit


@njit(fastmath={"reassoc"}, nogil=True, cache=True)
def block_sums(x, out, block):  # pragma: no cover - compiled
    """``out[i] = sum(x[i * block:(i + 1) * block])`` for every ``i < out.size``, in ``x``'s
    dtype (``out`` has it too)."""
    zero = out.dtype.type(0)
    for i in range(out.size):
        xb = x[i * block:(i + 1) * block]
        s = zero
        for j in range(xb.size):
            s += xb[j]
        out[i] = s
