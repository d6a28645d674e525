"""Sums of float arrays with SIMD accumulators: whole arrays in fixed blocks, and rows along
the last axis, on several threads when large (NOTE [ Blocked float sums ]). Used by ``sum``
and ``mean`` in ``ember/_ops/reduction.py``.

NOTE [ Blocked float sums ]
NumPy's ``add.reduce`` is pairwise but keeps its eight partial sums in scalar registers:
0.25 ns an element here for float32 (0.1 ns for PyTorch's vectorised kernel), and one
thread. A large C-contiguous float32 or float64 array is instead cut into blocks of a fixed
length, each block is summed with SIMD accumulators (the compiled ``block_sums``, or
``einsum`` over rows without numba), and the block sums are added pairwise by NumPy.

Accuracy: each block's sum is a few dozen interleaved running sums of at most a few dozen
elements each (2048 elements over 8-32 lanes), and above the blocks the association is
NumPy's pairwise one, so the error stays at pairwise level: on 4M uniform, normal and
offset float32 values the relative error to the exact sum measured 0.7-1.6e-7 for NumPy,
0.2-2.5e-7 for PyTorch (one or two threads) and 0.07-0.8e-7 for the blocks.

Determinism: the blocks are fixed by the array's length alone, never by the thread
count. The threads (``_parallel.split_on_threads``, which declines on one thread, under
contention, or while another split holds its workers) only share out whole blocks, each
block's sum lands in its own slot, and the calling thread adds the slots in one order. So a
sum gives the same bits run to run and for any thread count (PyTorch's two-thread sum of
4M float32 differs from its one-thread sum in the last bit). The two backends (numba and
NumPy) associate inside a block differently and agree to rounding, not bit for bit.

From ``SUM_MIN`` elements the compiled blocks beat NumPy's loop on one thread (16K float32:
about half its time; float64 gains less, so from 64K); the blocks split over threads from
``SUM_SPLIT`` elements (1M, as the threaded element-wise ops: NOTE [ Threaded element-wise
ops ] in ``_parallel.py``; a sum reads one array where an add reads two and writes one, so
it splits no earlier). The NumPy fallback keeps ``einsum``'s rows of ``_ROW`` elements from
64K elements on.

Sums along the last axis of a C-contiguous array (``x.sum(-1)``, ``x.mean(-1)``) are the
same kernel with the row as the block, for rows of at most ``BLOCK`` elements (longer rows
keep NumPy's pairwise sum): a row's sum never depends on the thread count either. On one
thread here (thread CPU) they took a third of NumPy's time, (1024, 1024) float32 120 us
against NumPy's 348 (PyTorch at one thread 149), (8192, 128) 140 against 514 (202), and half
of it in the kernel alone at 4K elements, (64, 64) 3.0 against 6.1 (8.0), but there the
call's own costs ate the gain, so rows start at ``ROWS_MIN`` (16K) elements, numba only.
Their error to NumPy's sums stayed within 2.4e-7 relative.
"""

from __future__ import annotations

import numpy as np

from .. import _kernels, _parallel

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_add_reduce = np.add.reduce

#: the length of a compiled block (fixed: the association must not depend on anything else)
BLOCK = 2048
#: einsum's row length on the NumPy path
_ROW = 4096
#: the fewest elements summed in compiled blocks, per dtype
SUM_MIN = {_F32: 1 << 14, _F64: 1 << 16}
#: the fewest elements on the NumPy path's einsum rows
_ROWS_MIN = 1 << 16
#: the fewest elements whose blocks split over threads
SUM_SPLIT = 1 << 20
#: the fewest elements whose blocks split on numba's pool (NOTE [ A hand-over without the
#: GIL ] in ``ember/_parallel.py``: ~2 us a hand-over, against the relay's ~27)
POOL_SUM_SPLIT = 1 << 18
#: the fewest elements whose rows ``row_sums`` takes
ROWS_MIN = 1 << 14


_kernel = []  # the compiled block_sums, once imported


def _block_sums():
    if not _kernel:
        from ._numba_reduce import block_sums

        _kernel.append(block_sums)
    return _kernel[0]


def float_sum(a):
    """The sum of all elements of a large C-contiguous float32 or float64 NumPy array, in
    blocks on several threads (NOTE [ Blocked float sums ]); None where not covered (another
    dtype or array type, not C-contiguous, too few elements to gain).

    Args:
        a: the array.

    Returns:
        numpy.floating | None: the sum, a NumPy scalar of ``a``'s dtype.

    Example::

        >>> s = float_sum(np.ones(1 << 16, np.float32))
        >>> s is None or float(s) == 65536.0
        True
    """
    dt = a.dtype
    size = a.size
    if size < SUM_MIN[_F32] or type(a) is not np.ndarray or (dt != _F32 and dt != _F64) or \
            not a.flags.c_contiguous:
        return None
    flat = a.reshape(-1)
    impl = _kernels._impl
    if impl is None:
        impl = _kernels._load()
    if impl:
        if size < SUM_MIN[dt]:
            return None
        kernel, block = _block_sums(), BLOCK
    else:
        if size < _ROWS_MIN:
            return None
        kernel, block = None, _ROW
    blocks = size // block
    sums = np.empty(blocks, dt)
    whole = flat[:blocks * block]

    def run(lo, hi):  # each block's sum into its own slot: NOTE [ Blocked float sums ]
        if kernel is None:
            np.einsum("ij->i", whole[lo * block:hi * block].reshape(-1, block),
                      out=sums[lo:hi])
        else:
            kernel(whole[lo * block:hi * block], sums[lo:hi], block)

    def on_pool(par, n):
        par.block_sums_on(whole, sums, block, n)

    if not (kernel is not None and _kernels._on_pool(on_pool, size, POOL_SUM_SPLIT, blocks)) \
            and (size < SUM_SPLIT or
                 not _parallel.split_on_threads(run, blocks, min_size=2, even=False)):
        run(0, blocks)
    s = _add_reduce(sums)
    return s + _add_reduce(flat[blocks * block:]) if blocks * block < size else s


def row_sums(a):
    """Sums along the last axis of a C-contiguous float32 or float64 NumPy array whose rows
    have at most ``BLOCK`` elements, each row with SIMD accumulators, rows shared out over
    threads when large (NOTE [ Blocked float sums ]); None where not covered (no numba,
    another dtype or array type, not C-contiguous, longer rows, fewer than ``ROWS_MIN``
    elements).

    Args:
        a: the array (at least one dimension).

    Returns:
        ndarray | None: the sums, of shape ``a.shape[:-1]`` and ``a``'s dtype.

    Example::

        >>> r = row_sums(np.ones((64, 64), np.float32))
        >>> r is None or (r.shape, float(r[0])) == ((64,), 64.0)
        True
    """
    dt = a.dtype
    if type(a) is not np.ndarray or (dt != _F32 and dt != _F64) or a.size < ROWS_MIN or \
            a.ndim == 0 or a.shape[-1] > BLOCK or not a.flags.c_contiguous:
        return None
    impl = _kernels._impl
    if impl is None:
        impl = _kernels._load()
    if not impl:
        return None
    kernel = _block_sums()
    n = a.shape[-1]
    flat = a.reshape(-1)
    out = np.empty(a.shape[:-1], dt)
    sums = out.reshape(-1)

    def run(lo, hi):  # whole rows per thread: each row's sum is the one-call sum
        kernel(flat[lo * n:hi * n], sums[lo:hi], n)

    def on_pool(par, threads):
        par.block_sums_on(flat, sums, n, threads)

    if not _kernels._on_pool(on_pool, a.size, POOL_SUM_SPLIT, sums.size) and \
            (a.size < SUM_SPLIT or
             not _parallel.split_on_threads(run, sums.size, min_size=2, even=False)):
        run(0, sums.size)
    return out
