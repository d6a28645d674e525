"""Element-wise NumPy ufuncs over large arrays on several threads.

NOTE [ Threaded element-wise ops ]
NumPy runs a ufunc on one thread, but releases the GIL inside its inner loop, so the halves
of one large array can be computed at the same time by two Python threads. For a ufunc over
C-contiguous operands of one shape (no broadcasting), ``ufunc_on_threads`` splits the flat
arrays into one chunk per thread, runs all but the last chunk on a persistent pool and the
last on the calling thread, each writing its slice of one output array. Results are the
same, element for element, as one call (a ufunc computes each element independently).

The split pays only for large arrays: below ``MIN_ELEMENTS`` elements (about 1 MB of
float32) the hand-over costs more than it saves, and the caller's single test is one size
comparison. The thread count is ``ember.get_num_threads()`` (read once, again after each
``set_num_threads``), so that one setting governs BLAS and these loops alike. A forked child
(a DataLoader worker) starts a pool of its own: the parent's threads do not exist there.

Measured on the 2-core development machine (idle): ``a + b`` over 4M float32, 1.60 ms on one
thread, 0.98 ms on two (PyTorch: 0.79 ms); ``exp``, 1.53 ms and 0.88 ms (PyTorch: 0.52 ms).
"""

from __future__ import annotations

import os
import threading

import numpy as np

#: operands smaller than this run on the calling thread alone
MIN_ELEMENTS = 1 << 18

_count = [None]  # threads to use; None: read from the settings at the next call
_pool = [None, 0]  # (executor, its size)
_lock = threading.Lock()


def _forget_pool_in_child():
    # a forked child has the pool object but none of its threads: make a new one on demand
    _pool[0], _pool[1] = None, 0


os.register_at_fork(after_in_child=_forget_pool_in_child)


def reset() -> None:
    """Forget the thread count (``set_num_threads`` calls this)."""
    _count[0] = None


def _threads() -> int:
    n = _count[0]
    if n is None:
        from ._settings import get_num_threads

        n = _count[0] = max(1, int(get_num_threads()))
    return n


def _executor(n):
    ex, size = _pool
    if ex is None or size != n:
        with _lock:
            ex, size = _pool
            if ex is None or size != n:
                from concurrent.futures import ThreadPoolExecutor

                if ex is not None:
                    ex.shutdown(wait=False)
                ex = ThreadPoolExecutor(max_workers=n, thread_name_prefix="ember-ufunc")
                _pool[0], _pool[1] = ex, n
    return ex


def _under_errstate(err, fn, *args, **kwargs):
    # NumPy's floating-point error settings are per thread: a pool thread takes the caller's,
    # so that (say) ``log`` of a negative number is as quiet there as on the calling thread
    with np.errstate(**err):
        return fn(*args, **kwargs)


def ufunc_on_threads(f, *arrays):
    """``f(*arrays)`` computed in chunks on several threads, or None when that does not apply
    (one thread configured, operands of different shapes or not C-contiguous, a result type
    NumPy would pick differently chunk by chunk).

    Args:
        f: a NumPy ufunc with one output.
        *arrays: NumPy arrays of one shape, or Python scalars.

    Returns:
        The result array, or None.

    Example::

        >>> a = np.ones(1 << 19, np.float32)
        >>> r = ufunc_on_threads(np.add, a, a)
        >>> r is None or float(r[0]) == 2.0
        True
    """
    n = _threads()
    if n < 2 or f.nout != 1:
        return None
    first = None
    for a in arrays:
        if isinstance(a, np.ndarray):
            if type(a) is not np.ndarray:  # a NumPy-backed device's arrays: not ours to split
                return None
            if first is None:
                first = a
            elif a.shape != first.shape:
                return None
            if not a.flags.c_contiguous:
                return None
        elif not isinstance(a, (int, float, bool)):
            return None
    if first is None:
        return None
    # the dtype NumPy gives the whole call, so that no chunk can differ
    try:
        dtype = f.resolve_dtypes(tuple(a.dtype if isinstance(a, np.ndarray) else type(a)
                                       for a in arrays) + (None,))[-1]
    except (TypeError, ValueError, AttributeError):
        return None
    size = first.size
    out = np.empty(first.shape, dtype)
    flat_out = out.reshape(-1)
    flats = [a.reshape(-1) if isinstance(a, np.ndarray) else a for a in arrays]
    step = -(-size // n)
    futures = []
    ex = _executor(n - 1)
    bounds = [(i, min(i + step, size)) for i in range(0, size, step)]
    err = np.geterr()
    for lo, hi in bounds[:-1]:
        futures.append(ex.submit(_under_errstate, err, f, *[
            x[lo:hi] if isinstance(x, np.ndarray) else x for x in flats], out=flat_out[lo:hi]))
    lo, hi = bounds[-1]
    f(*[x[lo:hi] if isinstance(x, np.ndarray) else x for x in flats], out=flat_out[lo:hi])
    for fut in futures:
        fut.result()
    return out


def split_on_threads(fn, size, min_size=MIN_ELEMENTS):
    """Run ``fn(lo, hi)`` over ``range(size)`` cut into one piece per thread, the last piece
    on the calling thread; False (nothing run) when ``size`` is below ``min_size`` or one
    thread is configured. ``fn`` must release the GIL for this to pay (NumPy's loops do) and
    write disjoint outputs.

    Args:
        fn: ``fn(lo, hi)``.
        size: the length to cut.
        min_size: the smallest ``size`` worth splitting.

    Returns:
        bool: whether ``fn`` ran.

    Example::

        >>> out = np.zeros(8)
        >>> def fill(lo, hi): out[lo:hi] = 1
        >>> _ = split_on_threads(fill, 8, min_size=1)
        >>> float(out.sum())
        8.0
    """
    n = _threads()
    if n < 2 or size < min_size:
        return False
    step = -(-size // n)
    bounds = [(i, min(i + step, size)) for i in range(0, size, step)]
    ex = _executor(n - 1)
    err = np.geterr()
    futures = [ex.submit(_under_errstate, err, fn, lo, hi) for lo, hi in bounds[:-1]]
    fn(*bounds[-1])
    for fut in futures:
        fut.result()
    return True
