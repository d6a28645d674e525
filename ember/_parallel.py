"""Element-wise NumPy ufuncs over large arrays on several threads.

NOTE [ Threaded element-wise ops ]
NumPy runs a ufunc on one thread, but releases the GIL inside its inner loop, so the halves
of one large array can be computed at the same time by two Python threads. For a ufunc over
C-contiguous operands of one shape (no broadcasting), ``ufunc_on_threads`` splits the flat
arrays into one chunk per thread, runs all but the last chunk on persistent workers (those
of ``split_on_threads``: NOTE [ A relay for split work ]) and the last on the calling
thread, each writing its slice of one output array. Results are the same, element for
element, as one call (a ufunc computes each element independently).

The split pays only for large arrays: below ``MIN_ELEMENTS`` elements (4 MB of float32)
the hand-over costs more than it saves -- a round trip through the pool takes ~95 us on
these VMs, so on the quiet 2-core machine ``a + b`` over 2**18 float32 took 137 us on one
thread and 189 us on two, over 2**19 228 and 257 us, over 2**20 633 and 568 us, over 2**22
2.27 and 1.40 ms -- and the caller's single test is one size comparison. Nor does it pay
while the machine is oversubscribed (``contended``): a piece then waits for its core.
The thread count is ``ember.get_num_threads()`` (read once, again after each
``set_num_threads``), so that one setting governs BLAS and these loops alike. A forked child
(a DataLoader worker) starts a pool of its own: the parent's threads do not exist there.

Measured on the 2-core development machine (idle): ``a + b`` over 4M float32, 1.60 ms on one
thread, 0.98 ms on two (PyTorch: 0.79 ms); ``exp``, 1.53 ms and 0.88 ms (PyTorch: 0.52 ms).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import wait

import numpy as np

#: operands smaller than this run on the calling thread alone
MIN_ELEMENTS = 1 << 20

_count = [None]  # threads to use; None: read from the settings at the next call
_pool = [None, 0]  # (executor, its size)
_lock = threading.Lock()


def _forget_pool_in_child():
    # a forked child has the pool objects but none of their threads: new ones on demand
    _pool[0], _pool[1] = None, 0
    _relay[0] = None
    _native_usable[0] = False  # NOTE [ A hand-over without the GIL ]
    global _relay_lock
    _relay_lock = threading.Lock()  # (a parent thread may have held it at the fork)


os.register_at_fork(after_in_child=_forget_pool_in_child)


def reset() -> None:
    """Forget the thread count (``set_num_threads`` calls this)."""
    _count[0] = None


try:
    _CPUS = len(os.sched_getaffinity(0))
except (AttributeError, OSError):  # not Linux
    _CPUS = os.cpu_count() or 1

#: [oversubscribed, when it was last read (time.monotonic)]
_load = [False, -10.0]


def contended() -> bool:
    """Whether more threads want to run than there are CPUs for them: the 1-minute load
    average above the usable CPUs plus one (this process's own busy threads count once each),
    read at most once a second. Work split across threads waits for every piece, and on an
    oversubscribed machine a piece can wait a scheduler time slice for its core, so the
    callers that split for speed (BLAS threads for mid-size GEMMs, NOTE [ GEMM threads by
    shape ]; the fused row kernels, NOTE [ Fused kernels ]) stay on one thread then.

    Returns:
        bool: True while the machine is oversubscribed.

    Example::

        >>> contended() in (True, False)
        True
    """
    now = time.monotonic()
    if now - _load[1] > 1.0:
        try:
            _load[0] = os.getloadavg()[0] > _CPUS + 1
        except (AttributeError, OSError):  # no load average on this platform
            _load[0] = False
        _load[1] = now
    return _load[0]


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
    if n < 2 or f.nout != 1 or contended():
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
    out = np.empty(first.shape, dtype)
    flat_out = out.reshape(-1)
    flats = [a.reshape(-1) if isinstance(a, np.ndarray) else a for a in arrays]

    def run(lo, hi):
        f(*[x[lo:hi] if isinstance(x, np.ndarray) else x for x in flats], out=flat_out[lo:hi])

    # (the relay: a cheaper round trip than the executor's, NOTE [ A relay for split work ])
    return out if split_on_threads(run, first.size, min_size=2, even=False) else None


# NOTE [ A relay for split work ]
# ``split_on_threads`` hands its pieces to workers of its own rather than to the
# ``ThreadPoolExecutor``: each worker waits on a lock of its own, the caller puts the piece in
# the worker's slot and releases the lock, and the worker releases a second lock when done.
# No queue, no Future, no condition variable: a round trip with an empty piece measured
# 22-40 us (medians) against the executor's 28-67 us on the 2-core development machine at
# load 10, the two alternating in one process; that is what lets row kernels of a few
# hundred microseconds (softmax over (256, 1000)) gain from two threads.
# One caller at a time uses the workers: a second thread that finds them taken (another
# Python thread, or a piece that itself tries to split) runs its work whole instead of
# waiting, so a split can never wait on itself.


class _Worker:
    """A daemon thread that runs one piece each time its ``go`` lock is released."""

    __slots__ = ("go", "done", "job", "error", "alive", "started")

    def __init__(self):
        self.go = threading.Lock()
        self.done = threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.job = None
        self.error = None
        self.alive = True
        self.started = 0.0  # when the last piece began (NOTE [ The caller's head start ])
        threading.Thread(target=self._loop, daemon=True, name="ember-split").start()

    def _loop(self):
        err = None
        clock = time.perf_counter
        while True:
            self.go.acquire()
            if not self.alive:
                return
            want, fn, lo, hi = self.job
            try:
                if want != err:  # NumPy's error settings are per thread: take the caller's
                    np.seterr(**want)
                    err = want
                self.started = clock()
                fn(lo, hi)
            except BaseException as e:  # handed to the caller, which raises it
                self.error = e
            # nothing of the piece stays referenced while the thread waits: a closure over a
            # kernel's output would keep that array from being handed on without a copy
            # (NOTE [ Accumulating .grad ] in ember/autograd/_engine.py steals sole arrays)
            self.job = fn = None
            self.done.release()

    def stop(self):
        self.alive = False
        self.go.release()


_relay = [None]  # the workers of split_on_threads (a list of _Worker), made on demand
_relay_lock = threading.Lock()  # held by the one caller using the workers


def _workers(n):
    ws = _relay[0]
    if ws is None or len(ws) != n:
        if ws is not None:
            for w in ws:
                w.stop()
        ws = _relay[0] = [_Worker() for _ in range(n)]
    return ws


# NOTE [ The caller's head start ]
# A worker starts its piece some microseconds after the caller starts its own: the caller's
# release of the worker's lock must wake a thread (on a virtual machine, an idle virtual CPU:
# 15-25 us here) and that thread must take the GIL. With equal pieces the caller then finishes
# first and waits. So where the pieces may be cut anywhere (``even=False``: every output element,
# row or block is computed alone, so the bits do not depend on the cut), the workers' pieces are
# shortened by the work the caller does in that lag: ``_lag`` keeps a running mean of how much
# later the workers start than the caller, ``_unit_s`` one of the caller's seconds per unit of
# work for each kernel and size (keyed by the piece's code object, which one call site shares
# across calls, and the size cut), and each worker's piece loses ``lag / seconds_per_unit`` units
# (never more than half of an even share) to the caller's. Callers whose results depend on the cut
# (sums per piece, equal column blocks) keep equal pieces (``even=True``, the default). Measured
# on the 2-CPU EPYC at 2 threads under ``chrt -f 50`` (load 7, same process, alternating): the sum
# of 4M float32 155 -> 141 us and 151 -> 133 us; a (256, 1000) softmax unchanged (104 -> 102, 102
# -> 104 us): there the two pieces now end together, yet the caller still gets control back ~16 us
# after the worker's end (the worker must retake the GIL, then wake the caller), which no cut
# removes. Polling the worker's done lock for up to 50 us (releasing the GIL between polls)
# instead of blocking did not measurably shorten that tail, and is not done.
#: [running mean of the seconds by which a worker's piece starts after the caller's]
_lag = [0.0]
#: (piece code object, size) -> running mean of the caller's seconds per unit of ``size``
_unit_s: dict = {}
#: the most keys ``_unit_s`` keeps
_KEYS_MAX = 512
#: weight of the newest sample in those running means
_MEAN_WEIGHT = 0.25
#: samples above this (a preempted thread) are clipped, so one does not skew the next calls
_LAG_CLIP_S = 2e-4


def _bounds(size, n, key):
    step = -(-size // n)
    per = _unit_s.get(key)
    if per:
        # each worker's piece shorter by the work the caller does while it waits to start
        step = max(1, step // 2, (size - min(int(_lag[0] / per), size)) // n)
    cuts = [min(i * step, size) for i in range(n)] + [size]
    return [(lo, hi) for lo, hi in zip(cuts[:-2], cuts[1:-1]) if lo < hi] + [(cuts[-2], size)]


def _note_times(key, used, t0, t1, units):
    w = _MEAN_WEIGHT
    if units > 0:
        sample = (t1 - t0) / units
        old = _unit_s.get(key)
        if old is None and len(_unit_s) >= _KEYS_MAX:  # (sizes seen once: start again)
            _unit_s.clear()
        _unit_s[key] = sample if old is None else old + w * (sample - old)
    lag = sum(min(max(u.started - t0, 0.0), _LAG_CLIP_S) for u in used) / len(used)
    _lag[0] += w * (lag - _lag[0])


def split_on_threads(fn, size, min_size=MIN_ELEMENTS, even=True, key=None):
    """Run ``fn(lo, hi)`` over ``range(size)`` cut into one piece per thread, the last piece
    on the calling thread; False (nothing run) when ``size`` is below ``min_size``, one
    thread is configured, the machine is oversubscribed, or the workers are taken by another
    split (NOTE [ A relay for split work ]). ``fn`` must release the GIL for this to pay
    (NumPy's loops and ember's compiled kernels do) and write disjoint outputs.

    Args:
        fn: ``fn(lo, hi)``.
        size: the length to cut.
        min_size: the smallest ``size`` worth splitting.
        even: cut equal pieces (the default); False where ``fn``'s results do not depend on
            the cut, so the caller may take a longer piece than the workers, which start
            later (NOTE [ The caller's head start ]).
        key: with ``even=False``, what names the work for the cut's timings (default:
            ``fn``'s code object; a wrapper running several kernels passes the kernel's).

    Returns:
        bool: whether ``fn`` ran.

    Example::

        >>> out = np.zeros(8)
        >>> def fill(lo, hi): out[lo:hi] = 1
        >>> if not split_on_threads(fill, 8, min_size=1, even=False):  # declined: run whole
        ...     fill(0, 8)
        >>> float(out.sum())
        8.0
    """
    n = _threads()
    if n < 2 or size < min_size or contended():
        return False
    if not _relay_lock.acquire(blocking=False):
        return False
    try:
        code = None if even else (key or getattr(fn, "__code__", None))
        if code is None:
            step = -(-size // n)
            bounds = [(i, min(i + step, size)) for i in range(0, size, step)]
        else:
            code = (code, size)
            bounds = _bounds(size, n, code)
        ws = _workers(n - 1)
        err = np.geterr()
        used = ws[:len(bounds) - 1]
        for w, (lo, hi) in zip(used, bounds):
            w.job = (err, fn, lo, hi)
            w.go.release()
        errors = []
        clock = time.perf_counter
        t0 = clock()
        try:
            fn(*bounds[-1])
        finally:  # (after an error too: no piece may outlive the call)
            t1 = clock()
            for w in used:
                w.done.acquire()
                if w.error is not None:
                    errors.append(w.error)
                    w.error = None
        if errors:
            raise errors[0]
        if code is not None and used:
            _note_times(code, used, t0, t1, bounds[-1][1] - bounds[-1][0])
        return True
    finally:
        _relay_lock.release()


# NOTE [ A hand-over without the GIL ]
# A split through the relay (NOTE [ A relay for split work ]) costs ~27 us of wake-ups a call
# on these VMs, however it is cut (NOTE [ The caller's head start ]): the worker's thread must
# be woken and then take the GIL before its piece starts, and once the piece ends it must
# retake the GIL to wake the caller. The compiled kernels (softmax, log-softmax and their
# backward, cross entropy, the blocked float sums, layer norm and its backward, and since
# session 30 the flat element-wise kernels: exp, sigmoid, SiLU, GELU, ReLU and the backward
# of SiLU and GELU) skip it: ``native_split`` runs a numba
# ``prange`` driver (``ember/_kernels/_numba_par.py``) whose workers are numba's OpenMP (or
# TBB) threads, waiting in compiled code and spinning briefly after each loop, as PyTorch's
# OpenMP workers do, with no GIL on either side. Measured on the 2-CPU EPYC (load 4, 2
# threads, same process, alternating): an empty split 17 us through the relay, 1.8 us through
# numba's pool; a (256, 1000) softmax 114 us on one thread, 148-150 through the relay, 60
# through the pool (PyTorch 76-81). The drivers cut the rows into the same contiguous chunks
# and run the one-thread kernels on them, so every result is bit for bit that of one thread.
# On by default since session 23 (``EMBER_NATIVE_SPLIT=0`` turns it off): session 22's LSTM
# LM loss with the pool (131-135 ms a step against 102-106) had two causes, the pool running
# on PyTorch's OpenMP runtime with its long spin (NOTE [ The pool's own OpenMP runtime ] in
# ``ember/_kernels/_numba_par.py``) and pool calls just after a two-thread product (NOTE
# [ The pool and the polling BLAS workers ]).
# Not used: under numba's ``workqueue`` layer (a launch costs ~53 us, and two Python threads
# launching at once abort the process), in a forked child (GNU OpenMP kills a child that
# launches a pool its parent used: it falls back to the relay), inside batch pieces, while
# another split holds the relay (one split at a time, as there), or while OpenBLAS's workers
# poll.

# NOTE [ The pool and the polling BLAS workers ]
# After a product split over its threads, OpenBLAS's worker polls for the next one for about
# 0.12 s without yielding its core (NOTE [ Pieces and the BLAS workers ]). A pool call then
# finds one core taken: its OpenMP worker waits to be scheduled while the caller, its own
# piece done, spins at the join (OpenMP's wait) on the other core, so the call ends only when
# that spin gives up. Cross entropy over (2048, 96) logits right after a (2048, 96) @ (96,
# 256) product took 1.66 ms on the pool against 0.18 through the relay and 0.16 on one
# thread (81 us on the pool, 118 through the relay, with the BLAS idle; 2-CPU EPYC,
# ``chrt -f 50``, load 14); the LSTM LM makes both its pool calls (cross entropy's forward
# and backward) in that window. So ``native_split`` declines while the workers poll
# (``_polling_until``) and the split goes to the relay, as it did before the pool: the pool
# takes the calls away from products (softmax rows, the kernels bench, the sums), and a
# training step is where it was without the pool (LSTM LM 0.98-1.01x, GPT 1.00-1.01x the
# pool-off step, same process, alternating).
# Where ember has shortened the poll to ~0.4 ms (NOTE [ Short polling for OpenBLAS's
# workers ]), so has the window in which it declines.

#: [whether this process may launch numba's pool: False in a forked child]
_native_usable = [True]


def native_split(fn, size, min_size=MIN_ELEMENTS):
    """Run ``fn(n)`` (a compiled driver on numba's thread pool, ``n`` the thread count) when
    a split over ``size`` units pays; False (nothing run) when ``size`` is below ``min_size``,
    one thread is configured, the machine is oversubscribed, this is a forked child or a
    batch piece, another split holds the workers (NOTE [ A hand-over without the GIL ]), or
    OpenBLAS's workers still poll after a two-thread product (NOTE [ The pool and the polling
    BLAS workers ]).

    Args:
        fn: ``fn(n)``.
        size: the units of work (rows, blocks) that would be cut.
        min_size: the smallest ``size`` worth splitting.

    Returns:
        bool: whether ``fn`` ran.

    Example::

        >>> ran = []
        >>> native_split(ran.append, 8, min_size=1) in (True, False)
        True
    """
    n = _threads()
    if n < 2 or size < min_size or not _native_usable[0] or contended() or \
            getattr(_piece, "busy", False) or time.monotonic() < _polling_until[0]:
        return False
    if not _relay_lock.acquire(blocking=False):
        return False
    try:
        fn(n)
        return True
    finally:
        _relay_lock.release()


# NOTE [ Batch pieces on threads ]
# A convolution runs many thin GEMMs (Winograd's 16 per batch chunk, a gather's columns
# per chunk) between passes of its own (transforms, gathers). With BLAS on two threads each
# GEMM forks and joins its threads, and the passes between them run on one core: in a 3x3
# 64->64 Winograd forward of (32, 64, 32, 32), 6-7 ms of single-threaded input transform
# beside 14-15 ms of two-thread GEMMs. ``split_batch`` instead cuts the batch into one
# contiguous piece per thread and runs the whole sequence (passes and GEMMs) of each piece
# on its own thread with the BLAS held at one thread meanwhile, as PyTorch's kernels split
# the outer dimension: no fork/join per GEMM, and the passes run on every core. Results are
# those of one call for per-sample outputs (each sample's arithmetic is unchanged); sums over
# the batch (weight gradients) are added piece by piece, a reassociation. On the loaded
# 2-core development machine (same process, alternating) that forward took 28 ms in pieces
# against 56-60 ms, and a whole ResNet-18 training step went from 4.4x PyTorch's time to
# 0.87x: a GEMM on two threads waits for both to be scheduled, and under load that wait
# dominates. On a quiet machine they had measured slower (a ResNet-18 step 1.41 s in pieces
# against 1.13 s), and that was OpenBLAS's doing: after any product it ran on two threads,
# its worker polls for the next one for about 0.12 s, holding the second core, so a piece
# handed to ember's pool waited for a core the worker had (NOTE [ Side products on one
# thread ] in ember/_kernels/_blas.py). With the convolutions' small side products kept on
# one thread, nothing in a ResNet-18 step wakes the workers any more, and pieces pay on a
# quiet machine too: the step 878-914 ms -> 644 ms wall, process CPU 1.67-1.72 s -> 1.06 s
# (PyTorch 533 ms), both cores to the process alone (SCHED_FIFO on the 2-core development
# machine, its 1-minute load 10 from other sessions). ``EMBER_BATCH_PIECES=0`` turns them off.

#: the least arithmetic (multiply-adds) that ``split_batch`` splits (1 << 62: never, with
#: ``EMBER_BATCH_PIECES=0``)
SPLIT_MIN_WORK = 1 << 62 if os.environ.get("EMBER_BATCH_PIECES") == "0" else 1 << 24

# NOTE [ Pieces and the BLAS workers ]
# Two timestamps keep batch pieces and OpenBLAS's polling workers apart. ``_blas.matmul``
# notes when it last let a product run on several BLAS threads (``_polling_until``: the
# workers poll until then), and ``split_batch`` declines while they poll: its pieces would
# share a core with a worker and run one after the other. ``split_batch`` in turn notes when
# a call last qualified for pieces (``_pieces_wanted_at``); for a second after that,
# ``_blas`` keeps mid-size products (below ``ONE_THREAD_WORK``) on one thread, as it does
# under load, so that a network mixing convolutions with fully connected layers (the MNIST
# CNN: its (64, 9216) @ (9216, 128) products took 0.93 ms on two threads, 1.33 on one) stops
# waking the workers before every convolution. A process that never qualifies for pieces
# (an MLP, a transformer) keeps its two-thread products.

# NOTE [ Short polling for OpenBLAS's workers ]
# After a product split over its threads, each OpenBLAS worker polls for the next one for
# 2**28 cycles (0.1 s; NOTE [ Side products on one thread ] in ember/_kernels/_blas.py),
# holding the second core: for that long ember's own two-thread kernels (batch pieces, the
# numba pool) must decline or share a core with it, and in a transformer, with a product
# every few milliseconds, that is always: a GPT step ran its attention, layer norms and
# GELUs on one core. OpenBLAS reads how long its workers poll (``OPENBLAS_THREAD_TIMEOUT``,
# log2 of the cycles) when it starts its threads, and NumPy starts them before ember can set
# the variable; so at import ember sets it for the moment of one call to OpenBLAS's own
# ``openblas_read_env`` and stops the workers (``blas_thread_shutdown_``), which the next
# product starts again with the short timeout (``_short_blas_polling``). 2**20 cycles
# (0.4 ms here) still covers back-to-back products: the bench GPT step, in-process,
# alternating, 2-CPU EPYC at load ~1: 2**28 162.5 ms (process CPU 324 ms), 2**20 152.3 ms
# (284 ms), 2**18 152.3 ms; LSTM LM 92.0 / 91.6 / 92.6 ms (2**16: 99.4, the per-step
# products' wake-ups), MLP 4.0 / 4.0 / 4.3 ms, MNIST CNN and ResNet-18 unchanged. The window
# in which ember's pool and pieces decline (``BLAS_POLL_S``) shrinks to match: never
# declining made the cross entropy right after the GPT's head product 0.9 ms instead of
# 0.1 (its pool call waiting out the poll), declining for 0.1 s kept every other kernel of
# the step on one core (the step 199 ms against 156 under the profiler). Left as it was
# where the user set ``OPENBLAS_THREAD_TIMEOUT``, with ``EMBER_BLAS_POLL=0``, or for a BLAS
# without those entry points (then the long window below stays).

#: log2 of the cycles OpenBLAS's workers poll for, once ember has set it
BLAS_POLL_LOG2 = 20
#: the workers poll this long after a product split over their threads: 2**28 cycles at
#: 2.3 GHz unless ``_short_blas_polling`` shortened it
BLAS_POLL_S = 0.12


def _short_blas_polling():
    """Shorten the polling of the OpenBLAS libraries loaded now (NOTE [ Short polling for
    OpenBLAS's workers ]); returns the paths of those it changed."""
    if os.environ.get("OPENBLAS_THREAD_TIMEOUT") or os.environ.get("EMBER_BLAS_POLL") == "0":
        return []
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split(None, 5)[5].strip() for line in f
                            if "openblas" in line.rsplit("/", 1)[-1].lower()
                            and len(line.split(None, 5)) == 6})
    except OSError:  # not Linux: nothing to do
        return []
    import ctypes

    done = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            read_env, timeout = lib.openblas_read_env, lib.openblas_thread_timeout
            shutdown = lib.blas_thread_shutdown_
        except (OSError, AttributeError):
            continue
        timeout.restype = ctypes.c_int
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(BLAS_POLL_LOG2)
        try:
            read_env()
            ok = timeout() == BLAS_POLL_LOG2
        finally:
            del os.environ["OPENBLAS_THREAD_TIMEOUT"]
        if ok:
            shutdown()  # (the next product starts the workers with the short timeout)
            done.append(path)
    return done


if _short_blas_polling():
    BLAS_POLL_S = (1 << BLAS_POLL_LOG2) / 2.0e9  # (2**20 cycles at 2 GHz or faster)
#: [the time (time.monotonic) until which OpenBLAS's workers poll]
_polling_until = [0.0]
#: [the last time a split_batch call qualified for pieces]
_pieces_wanted_at = [-1e9]


def blas_split(now=None):
    """Note that a product was just split over the BLAS threads (NOTE [ Pieces and the
    BLAS workers ]).

    Args:
        now: ``time.monotonic()`` if the caller has it.

    Returns:
        None

    Example::

        >>> blas_split()
        >>> _polling_until[0] > 0
        True
    """
    _polling_until[0] = (time.monotonic() if now is None else now) + BLAS_POLL_S


def pieces_wanted() -> bool:
    """Whether batch pieces were wanted within the last second (NOTE [ Pieces and the BLAS
    workers ]): mid-size products then stay on one BLAS thread.

    Returns:
        bool: True within a second of a ``split_batch`` call that qualified.

    Example::

        >>> pieces_wanted() in (True, False)
        True
    """
    return time.monotonic() - _pieces_wanted_at[0] < 1.0


_blas = [None]    # threadpoolctl's controllers of the loaded BLAS libraries, [] if none
_blas_scipy = [False]  # whether scipy.linalg (and SciPy's BLAS) was loaded at that lookup
_held = [0, ()]   # (pieces running with the BLAS held at one thread, the counts to restore)
_blas_lock = threading.Lock()
_piece = threading.local()  # .busy: this thread runs a piece of split_batch


def _blas_controllers():
    libs = _blas[0]
    # SciPy brings a BLAS library of its own, loaded with ``scipy.linalg``: looked up again
    # once that is imported, so that a hold holds it too (it was left at every thread)
    scipy_blas = "scipy.linalg" in sys.modules
    if libs is None or scipy_blas != _blas_scipy[0]:
        _blas_scipy[0] = scipy_blas
        try:
            from threadpoolctl import ThreadpoolController

            libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        except Exception:  # threadpoolctl missing or failing: no batch pieces
            libs = []
        _blas[0] = libs
    return libs


def _hold_blas():
    with _blas_lock:
        if _held[0] == 0:
            libs = _blas_controllers()
            _held[1] = tuple((lib, lib.get_num_threads()) for lib in libs)
            for lib, n in _held[1]:
                if n != 1:
                    lib.set_num_threads(1)
        _held[0] += 1


def _release_blas():
    with _blas_lock:
        _held[0] -= 1
        if _held[0] == 0:
            for lib, n in _held[1]:
                if n != 1:
                    lib.set_num_threads(n)
            _held[1] = ()


def split_batch(fn, n, work, min_work=None, claim=True):
    """Run ``fn(lo, hi)`` over the samples ``range(n)`` cut into one contiguous piece per
    thread, with the BLAS at one thread meanwhile (NOTE [ Batch pieces on threads ]); None
    (nothing run) when one thread is configured, ``n`` is 1, the arithmetic is too small to
    pay for the hand-over, the BLAS threads cannot be controlled, or OpenBLAS's workers are
    still polling after a two-thread product (NOTE [ Pieces and the BLAS workers ]).

    Args:
        fn: ``fn(lo, hi)``; it must write disjoint outputs (or return a partial result).
        n: the batch size.
        work: the call's arithmetic (multiply-adds, roughly), for the threshold.
        min_work: the least ``work`` worth splitting (default ``SPLIT_MIN_WORK``).
        claim: whether a call that qualifies keeps mid-size products on one BLAS thread for
            the next second (``pieces_wanted``); False for kernels whose pieces gain less
            than those products lose (NOTE [ Attention pieces do not claim the BLAS ] in
            ember/_ops/nn_attention.py).

    Returns:
        list | None: the pieces' results in batch order, or None.

    Example::

        >>> out = np.zeros(8)
        >>> def fill(lo, hi): out[lo:hi] = 1
        >>> r = split_batch(fill, 8, work=1 << 30)
        >>> r is None or float(out.sum()) == 8.0
        True
    """
    t = min(_threads(), n)
    least = SPLIT_MIN_WORK if min_work is None else min_work
    if t < 2 or work < least or getattr(_piece, "busy", False) or not _blas_controllers():
        return None
    now = time.monotonic()
    if claim:
        _pieces_wanted_at[0] = now
    if now < _polling_until[0]:  # NOTE [ Pieces and the BLAS workers ]
        return None
    step = -(-n // t)
    bounds = [(i, min(i + step, n)) for i in range(0, n, step)]
    ex = _executor(_threads() - 1)
    err = np.geterr()
    _hold_blas()
    futures = []
    try:
        futures = [ex.submit(_as_piece, err, fn, lo, hi) for lo, hi in bounds[:-1]]
        last = _as_piece(None, fn, *bounds[-1])
        return [fut.result() for fut in futures] + [last]
    finally:
        wait(futures)  # (after an error too: no piece may outlive the held BLAS)
        _release_blas()


def _as_piece(err, fn, lo, hi):
    # a piece's own calls do not split again: the pool's threads are all taken
    _piece.busy = True
    try:
        if err is None:
            return fn(lo, hi)
        with np.errstate(**err):
            return fn(lo, hi)
    finally:
        _piece.busy = False
