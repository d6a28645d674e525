"""Matrix products with the BLAS thread count chosen by shape.

NOTE [ GEMM threads by shape ]
OpenBLAS splits one GEMM over its threads and synchronises them several times per call
(shared packed panels, one flag per block), with the waiting thread spinning. On two cores
that other processes also use, each of those waits can last a scheduler time slice: the
MNIST CNN's fully connected products, (64, 128) @ (128, 9216) and (128, 64) @ (64, 9216),
took 28-40 ms each on two threads against 1.6 ms on one (load 5 on the 2-core development
machine, same process, alternating; the spinning also burnt 14-16 ms of CPU time per call),
and a whole MNIST CNN training step went from 984 ms to 261 ms with the BLAS at one thread
(PyTorch at two threads: 404 ms; the MLP step 236 -> 32 ms against PyTorch's 414). Cutting
the product into two halves on ember's own pool (one join instead of many) measured in
between (4.9-12 ms), so that is not done either.

So a product whose arithmetic is small, ``m * n * k`` below ``ONE_THREAD_WORK`` (about
2 ms on one core here), runs with the BLAS held at one thread (``ember/_parallel.py``'s
hold, shared with batch pieces, so concurrent callers never fight over the count); larger
products keep every thread, where the split's fixed cost is small against the work.
OpenBLAS runs products below 2**19 multiply-adds on one thread by itself (its
GEMM_MULTITHREAD_THRESHOLD rule), so those skip the hold, which costs 5-7 µs (a lock and
three calls through threadpoolctl) against the 4 µs such a product takes. Results are the
same: the threads split the rows and columns of the result, never the reduction, so each
element is summed in the same order either way (the tests compare the two).

On an idle machine the same products run 1.5-1.9x faster on two threads than on one
(measured later on the quiet 2-core machine: (128, 784) @ (784, 512) 0.77 -> 0.47 ms,
(32, 256) @ (256, 1024) 0.17 -> 0.11 ms), and holding them at one thread made the MLP step
1.38x -> 1.59x PyTorch's and the LSTM step 1.63x -> 2.04x. So the choice follows the
machine: the hold applies only while the CPUs are oversubscribed -- the 1-minute load
average above the usable CPUs plus one (this process's own threads count once each), read
at most once a second (``_parallel.contended``). A dedicated machine keeps every BLAS thread; a
shared, busy one stops paying the spin-waits.

Nothing changes when one thread is configured (``ember.set_num_threads(1)``), for
non-floating operands (NumPy's own loops, no BLAS), or without ``threadpoolctl``.
"""

from __future__ import annotations

import numpy as np

from .. import _parallel
from . import _mlas

#: products with fewer multiply-adds than this run with the BLAS at one thread
ONE_THREAD_WORK = 1 << 27

# below this OpenBLAS uses one thread anyway (it takes one thread per 2**18 multiply-adds)
_BLAS_OWN_LIMIT = 1 << 19


def _small(work):
    # on one thread under load (above), and while batch pieces are wanted (NOTE [ Pieces and
    # the BLAS workers ] in ember/_parallel.py)
    return (_BLAS_OWN_LIMIT <= work < ONE_THREAD_WORK and _parallel._threads() > 1
            and (_parallel.contended() or _parallel.pieces_wanted()))


class one_thread_for:
    """A context that holds the BLAS at one thread while products of ``work`` multiply-adds
    each run inside it, when that is the choice for such products (NOTE [ GEMM threads by
    shape ]); otherwise it changes nothing. For loops of many similar small GEMMs (the
    convolutions' batch chunks): one hold for the whole loop.

    Args:
        work: the multiply-adds of one product in the block (``m * n * k``).
        always: hold for any such product OpenBLAS would split (at or above its own
            one-thread limit, several threads configured), busy machine or not: for stacks
            of small products, where a split pays little and a late worker costs much
            (NOTE [ Attention pieces do not claim the BLAS ] in ember/_ops/nn_attention.py).

    Example::

        >>> a = np.ones((256, 64), np.float32)
        >>> with one_thread_for(256 * 256 * 64):
        ...     c = a @ a.T
        >>> float(c[0, 0])
        64.0
    """

    __slots__ = ("_on",)

    def __init__(self, work, always=False):
        small = (_BLAS_OWN_LIMIT <= work < ONE_THREAD_WORK and _parallel._threads() > 1) \
            if always else _small(work)
        self._on = small and bool(_parallel._blas_controllers())

    def __enter__(self):
        if self._on:
            _parallel._hold_blas()
        return self

    def __exit__(self, *exc):
        if self._on:
            _parallel._release_blas()
        return False


def one_thread(m, n, k) -> bool:
    """Whether an (m, k) @ (k, n) product should run with the BLAS at one thread (NOTE
    [ GEMM threads by shape ]).

    Args:
        m, n, k: the product's dimensions (for a stack, one member's).

    Returns:
        bool: True for products between OpenBLAS's own single-thread limit and
        ``ONE_THREAD_WORK``, when more than one thread is configured and the machine is
        oversubscribed.

    Example::

        >>> one_thread(64, 9216, 128) in (True, False)
        True
        >>> one_thread(4096, 4096, 4096)
        False
    """
    return _small(m * n * k)


# NOTE [ Side products on one thread ]
# After a product split over its threads, each OpenBLAS worker keeps polling for the next
# one (sched_yield in a loop) for 2**28 cycles -- about 0.12 s on this 2.3 GHz machine:
# process CPU time measured 117 ms during a 0.2 s sleep after one two-thread 1024^2 GEMM,
# and neither ``openblas_set_num_threads(1)`` nor anything else in its API stops it. While
# it polls, it holds one of the two cores, so ember's own batch pieces (NOTE [ Batch pieces
# on threads ] in ember/_parallel.py) find no free core and run one after the other. A
# convolution's side products -- the Winograd weight transforms U = G w G^T and the
# gradient's G^T dU G, (36, 9) @ (9, O*C) and the like, tens of microseconds each -- were
# the only two-thread BLAS calls left in a ResNet-18 step whose convolutions run in pieces,
# and they woke the workers in every layer. ``side_matmul`` keeps such a product on the
# calling thread: the same values (threads split rows and columns, never the reduction).
# (Nor can ember split a product over its own threads instead: two single-thread products
# called from two threads at once ran one after the other in NumPy's OpenBLAS 0.3.31 --
# a (64, 784) @ (784, 512) on each thread, 0.45 ms alone, the second started as the first
# ended -- while a compiled kernel on one thread beside a product on the other overlapped.
# Batch pieces gain by running one piece's transforms beside the other's products.)


def side_matmul(a, b):
    """``a @ b`` with the BLAS held at one thread (NOTE [ Side products on one thread ]): for
    a kernel's small products beside work it splits over threads itself.

    Args:
        a: (m, k) NumPy array.
        b: (k, n) NumPy array.

    Returns:
        ndarray: ``a @ b``, the same values as ``np.matmul`` gives.

    Example::

        >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> side_matmul(a, a.T).tolist()
        [[5.0, 14.0], [14.0, 50.0]]
    """
    if (a.shape[-2] * b.shape[-1] * a.shape[-1] < _BLAS_OWN_LIMIT or _parallel._threads() < 2
            or not _parallel._blas_controllers()):
        return a @ b
    _parallel._hold_blas()
    try:
        return a @ b
    finally:
        _parallel._release_blas()


def matmul(a, b, out=None):
    """``np.matmul(a, b)`` for NumPy arrays, with the BLAS at one thread for small products
    (NOTE [ GEMM threads by shape ]); large float32 products on MLAS where NumPy's OpenBLAS
    is pinned below the CPU (NOTE [ Products past a pinned OpenBLAS ]).

    Args:
        a: (..., m, k) array.
        b: (..., k, n) array (or 1-d operands, as ``np.matmul`` takes them).
        out: optional output array, as for ``np.matmul``.

    Returns:
        ndarray: the product: exactly as ``np.matmul`` gives it, or MLAS's (the same
        values to float rounding).

    Example::

        >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> matmul(a, a.T).tolist()
        [[5.0, 14.0], [14.0, 50.0]]
    """
    if a.ndim >= 2 and b.ndim >= 2 and a.size * b.shape[-1] >= _mlas.MIN_WORK_2D:
        r = _mlas.matmul(a, b, out)  # NOTE [ Products past a pinned OpenBLAS ]
        if r is not None:
            return r
    if (a.ndim < 2 or b.ndim < 2
            # below OpenBLAS's own limit: one thread anyway, nothing to decide (the commonest
            # case: a small product pays this one test, not three calls)
            or a.shape[-2] * b.shape[-1] * a.shape[-1] < _BLAS_OWN_LIMIT
            or a.dtype.kind not in "fc"
            or not one_thread(a.shape[-2], b.shape[-1], a.shape[-1])
            or not _parallel._blas_controllers()):
        if (a.ndim >= 2 and b.ndim >= 2 and _parallel._held[0] == 0
                and a.shape[-2] * b.shape[-1] * a.shape[-1] >= _BLAS_OWN_LIMIT
                and _parallel._threads() > 1):
            _parallel.blas_split()  # NOTE [ Pieces and the BLAS workers ]
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    _parallel._hold_blas()
    try:
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    finally:
        _parallel._release_blas()
