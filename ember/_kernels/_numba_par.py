"""Row, block and element-wise kernels on numba's own thread pool (imported only when numba
is installed and the ``numba`` backend is chosen; see NOTE [ A hand-over without the GIL ] in
``ember/_parallel.py``).

Each driver cuts its rows (or blocks) into ``nch`` contiguous chunks, exactly as
``split_on_threads`` would with equal pieces, and runs the very kernel of the one-thread
path on each chunk in a ``prange``: every row's numbers, and every block's sum, are those of
one call. Only the hand-over changes: numba's OpenMP (or TBB) workers wait in compiled code,
so a split no longer has a Python thread retake the GIL on either side.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
from numba import njit, prange

from . import _numba as _k
from ._numba_reduce import block_sums
from ._numba_softmax import log_softmax_backward_rows, softmax_backward_rows


@njit(inline="always", cache=True)
def _chunk(m, nch, c):  # pragma: no cover - compiled
    """The rows ``[lo, hi)`` of chunk ``c`` of ``nch`` over ``m`` rows."""
    step = (m + nch - 1) // nch
    lo = min(m, c * step)
    return lo, min(m, lo + step)


@njit(parallel=True, nogil=True, cache=True)
def softmax_rows(x, out, nch, log):  # pragma: no cover - compiled
    """``_numba.softmax_rows`` (or ``log_softmax_rows``) over ``nch`` chunks of rows."""
    m = x.shape[0]
    no_max = np.empty(0, x.dtype)  # (the kernel's own maxima; a global array defeats caching)
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        if log:
            _k.log_softmax_rows(x[lo:hi], no_max, out[lo:hi])
        else:
            _k.softmax_rows(x[lo:hi], no_max, out[lo:hi])


@njit(parallel=True, nogil=True, cache=True)
def softmax_backward(g, y, out, nch, log):  # pragma: no cover - compiled
    """The softmax (or log-softmax) backward rows over ``nch`` chunks of rows."""
    m = y.shape[0]
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        if log:
            log_softmax_backward_rows(g[lo:hi], y[lo:hi], out[lo:hi])
        else:
            softmax_backward_rows(g[lo:hi], y[lo:hi], out[lo:hi])


@njit(parallel=True, nogil=True, cache=True)
def cross_entropy_rows(x, target, weight, probs, losses, nch):  # pragma: no cover - compiled
    """``_numba.cross_entropy_rows`` over ``nch`` chunks of rows."""
    m = x.shape[0]
    no_max = np.empty(0, x.dtype)
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        _k.cross_entropy_rows(x[lo:hi], no_max, target[lo:hi], weight[lo:hi], probs[lo:hi],
                              losses[lo:hi])


@njit(parallel=True, nogil=True, cache=True)
def cross_entropy_class_rows(x, target, ignore_index, probs, losses, valid,
                             nch):  # pragma: no cover - compiled
    """``_numba.cross_entropy_class_rows`` over ``nch`` chunks of rows; returns the first
    row of all whose target is out of range, or -1."""
    m = x.shape[0]
    bad = np.full(nch, -1, np.int64)
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        r = _k.cross_entropy_class_rows(x[lo:hi], target[lo:hi], ignore_index, probs[lo:hi],
                                        losses[lo:hi], valid[lo:hi])
        if r >= 0:
            bad[c] = lo + r
    for c in range(nch):  # (chunks in row order: the first bad one holds the first row)
        if bad[c] >= 0:
            return bad[c]
    return -1


@njit(parallel=True, nogil=True, cache=True)
def cross_entropy_backward_rows(probs, target, scale, out, nch):  # pragma: no cover
    """``_numba.cross_entropy_backward_rows`` over ``nch`` chunks of rows."""
    m = probs.shape[0]
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        _k.cross_entropy_backward_rows(probs[lo:hi], target[lo:hi], scale[lo:hi], out[lo:hi])


@njit(parallel=True, nogil=True, cache=True)
def block_sums_on(x, out, block, nch):  # pragma: no cover - compiled
    """``_numba_reduce.block_sums`` over ``nch`` chunks of the blocks (``out.size`` blocks
    of ``block`` elements of ``x``)."""
    m = out.size
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        block_sums(x[lo * block:hi * block], out[lo:hi], block)



# NOTE [ Element-wise kernels on the pool ]
# The flat element-wise kernels (exp, sigmoid, SiLU, GELU, ReLU and the backward of SiLU and GELU)
# went to the relay (NOTE [ Compiled element-wise kernels on threads ] in ``__init__.py``), whose
# round trip of ~20-50 us was a fifth of a 1M-element SiLU at two threads; the drivers below cut the
# flat arrays into ``nch`` contiguous runs, each a whole number of ``FLAT_ALIGN`` elements (no two
# threads write one cache line, and every element runs the code it runs in one call: NOTE [ Flat
# cuts on the vector grid ]), and run the one-thread kernel on each, so the results are those of one
# call. The kernel is picked by its index in ``UNARY`` (or ``BINARY``), one compiled driver for the
# family rather than one per kernel. Layer norm's rows (forward and backward) take the pool the same
# way. Measured one framework per process as the bench runs them (2-CPU EPYC, ``chrt -f 10``, load
# 7-8 from other sessions with the load check off, 2 threads; relay -> pool, PyTorch beside): SiLU
# over 1M float32 160 -> 130 us (134-138), GELU forward+backward 446-464 -> 390-396 us (454-555),
# SiLU forward+backward 388 -> 314-325 us (315-334), layer norm (64, 128, 256) forward+backward
# 822-903 -> 764-868 us (779-782). At two threads the pool's SiLU takes 121 us where one chunk takes
# 237. Tried in session 33 and not kept: pieces claimed with atomic adds as the threads come
# (a few per thread, from either end, so that a late worker takes fewer): over 4M float32 at
# two threads the sum took 90.6 against 86.1 us and ``a + b`` 555 against 566 (``chrt -f
# 10``, same process, alternating), and under load neither was steadier than the static cut.

# NOTE [ Flat cuts on the vector grid ]
# LLVM compiles each flat loop three times: a main loop of 16 float32 lanes (AVX-512 here),
# an epilogue of 4 lanes, and a scalar loop for the last 0-3 elements. Under the ``reassoc``
# flag the three need not round alike: GELU's scalar loop (``gelu_out_into`` and
# ``gelu_backward_into``) gives 1 ulp other than its vector loops for ~1.7% of inputs (every
# other flat kernel agrees; tests/perf/test_elementwise_33.py checks them all). So which loop
# an element meets must not depend on the cut: every piece of a split flat kernel starts at
# a multiple of ``FLAT_ALIGN`` elements and all but the last are whole multiples of it, so
# each element falls in the main loop exactly where one call over the whole array puts it,
# and the last piece ends in the same epilogue and scalar tail. ``FLAT_ALIGN`` (64) is a
# multiple of the main loop's step (16 elements here; up to 64 where LLVM unrolls it), and
# 256 bytes: no two threads write one cache line. Both the pool's drivers and the relay's
# split (``_run_flat`` in ``__init__.py``) cut on this grid: a split's bits are one call's
# at any thread count. (The relay cut at ``ceil(size / threads)`` before session 33: an odd
# size put 1-3 elements near the cut in GELU's scalar loop, 1 ulp away from one thread's.)
#: the grid, in elements, that every cut of a split flat kernel falls on
FLAT_ALIGN = 64

#: the one-input kernels ``unary_on`` runs, by index: ``f(x, out)``
UNARY = ("exp_into", "sigmoid_into", "silu_into", "gelu_out_into", "relu_into")
#: the two-input kernels ``binary_on`` runs, by index: ``f(g, x, out)``
BINARY = ("silu_backward_into", "gelu_backward_into")


@njit(inline="always", cache=True)
def _flat_chunk(size, nch, c):  # pragma: no cover - compiled
    """The elements ``[lo, hi)`` of chunk ``c`` of ``nch`` over ``size`` elements."""
    step = (size + nch - 1) // nch
    step = (step + FLAT_ALIGN - 1) // FLAT_ALIGN * FLAT_ALIGN
    lo = min(size, c * step)
    return lo, min(size, lo + step)


@njit(parallel=True, nogil=True, cache=True)
def unary_on(x, out, nch, op):  # pragma: no cover - compiled
    """``UNARY[op](x, out)`` over ``nch`` chunks of the flat arrays."""
    for c in prange(nch):
        lo, hi = _flat_chunk(x.size, nch, c)
        xs, os_ = x[lo:hi], out[lo:hi]
        if op == 0:
            _k.exp_into(xs, os_)
        elif op == 1:
            _k.sigmoid_into(xs, os_)
        elif op == 2:
            _k.silu_into(xs, os_)
        elif op == 3:
            _k.gelu_out_into(xs, os_)
        else:
            _k.relu_into(xs, os_)


@njit(parallel=True, nogil=True, cache=True)
def binary_on(g, x, out, nch, op):  # pragma: no cover - compiled
    """``BINARY[op](g, x, out)`` over ``nch`` chunks of the flat arrays."""
    for c in prange(nch):
        lo, hi = _flat_chunk(x.size, nch, c)
        if op == 0:
            _k.silu_backward_into(g[lo:hi], x[lo:hi], out[lo:hi])
        else:
            _k.gelu_backward_into(g[lo:hi], x[lo:hi], out[lo:hi])



#: the NumPy ufuncs ``arith_on`` runs, by index: ``out = a <op> b``
ARITH = ("add", "subtract", "multiply", "divide")


@njit(error_model="numpy", nogil=True, cache=True)
def arith_into(a, b, out, op):  # pragma: no cover - compiled
    """``out = a <op> b`` over flat arrays, ``op`` an index into ``ARITH``: one IEEE
    operation per element, as NumPy's loop makes it (no fast-math), so the same bits."""
    if op == 0:
        for j in range(a.size):
            out[j] = a[j] + b[j]
    elif op == 1:
        for j in range(a.size):
            out[j] = a[j] - b[j]
    elif op == 2:
        for j in range(a.size):
            out[j] = a[j] * b[j]
    else:
        for j in range(a.size):
            out[j] = a[j] / b[j]


@njit(parallel=True, nogil=True, cache=True)
def arith_on(a, b, out, nch, op):  # pragma: no cover - compiled
    """``arith_into`` over ``nch`` chunks of the flat arrays (the loop in a kernel of its
    own: written inside the ``prange`` body it did not vectorise, 4x slower)."""
    for c in prange(nch):
        lo, hi = _flat_chunk(a.size, nch, c)
        arith_into(a[lo:hi], b[lo:hi], out[lo:hi], op)

@njit(parallel=True, nogil=True, cache=True)
def layer_norm_rows(x, w, b, has_w, has_b, eps, y, mean, rstd, big_mean, small_rstd,
                    nch):  # pragma: no cover - compiled
    """``_numba.layer_norm_rows`` over ``nch`` chunks of rows; returns the sum of the
    chunks' counts."""
    m = x.shape[0]
    counts = np.zeros(nch, np.int64)
    for c in prange(nch):
        lo, hi = _chunk(m, nch, c)
        counts[c] = _k.layer_norm_rows(x[lo:hi], w, b, has_w, has_b, eps, y[lo:hi],
                                       mean[lo:hi], rstd[lo:hi], big_mean, small_rstd)
    return counts.sum()


@njit(parallel=True, nogil=True, cache=True)
def layer_norm_backward_rows(g, x, w, has_w, mean, rstd, gx, gw, gb,
                             block):  # pragma: no cover - compiled
    """``_numba.layer_norm_backward_rows`` over ``gw.shape[0]`` chunks of whole
    ``block``-row groups (those ``split_on_threads`` would cut with equal pieces), chunk
    ``c`` adding its sums into the float64 rows ``gw[c]`` and ``gb[c]``."""
    m = x.shape[0]
    nch = gw.shape[0]
    groups = (m + block - 1) // block
    for c in prange(nch):
        lo, hi = _chunk(groups, nch, c)
        lo, hi = min(m, lo * block), min(m, hi * block)
        _k.layer_norm_backward_rows(g[lo:hi], x[lo:hi], w, has_w, mean[lo:hi], rstd[lo:hi],
                                    gx[lo:hi], gw[c], gb[c])


# NOTE [ The pool's workers spin briefly ]
# After each parallel loop GNU OpenMP's workers spin before they sleep: 300000 rounds by
# default, 3.6 ms of a core here. In a training step the next thing after a softmax is often
# a product on two OpenBLAS threads, whose second thread then waits for the core the spinning
# worker holds. The pool's runtime therefore loads with a spin count of ``SPIN_COUNT``.
# It was 30000 until session 32, and that still cost the products: a round is a ``pause``,
# which takes tens of cycles on these EPYCs, and a (256, 512) @ (512, 512) product on two
# threads right after a pool call took 605-714 us against 388-457 after the same call through
# the relay, for up to 0.4 ms after the call (gone at 0.8 ms); with 3000 rounds, 397 against
# 391 (2-CPU EPYC, ``chrt -f 10``, load 8-11, same process, alternating). That was why the
# flat kernels lost inside training steps on the pool (NOTE [ Flat kernels stay on the
# relay in training steps ] in ``__init__.py``, which says why they still stay): the MLP
# step 3.37 against 2.52 ms with them on the pool at 30000 rounds, 2.57-2.69 against
# 2.51-2.59 at 3000. The shorter spin also
# speeds up the steps as they are, whose softmax and layer-norm rows run on the pool: GPT
# 83.9-96.6 -> 75.1-79.3 ms, MNIST CNN 26.5-28.6 -> 25.6-26.1 ms, LSTM LM unchanged (36.6-38.3
# against 36.7-40.2); and back-to-back kernels lose nothing (softmax (256, 1000) 41-44 us
# either way, cross entropy forward+backward 100-108 us, sums over 4M 88-106 us), since
# 3000 rounds still cover the Python between two calls. GNU OpenMP reads the count once,
# when the library loads -- so only when the pool has a runtime of its own (next note).

# NOTE [ The pool's own OpenMP runtime ]
# PyTorch's wheel loads a GNU OpenMP of its own (``torch/lib/libgomp.so.1``) into the global
# symbol scope, and a numba pool loaded after it bound ``GOMP_parallel`` to that copy rather
# than to the system's ``libgomp.so.1.0.0`` it names (``LD_DEBUG=bindings``): the pool then
# ran on PyTorch's runtime, whose spin count had been read at PyTorch's import -- the
# default's 3.6 ms, whatever ember set later. That was session 22's unexplained LSTM LM loss
# (102-106 ms a step without the pool, 131-135 with it, gone under OMP_WAIT_POLICY=passive,
# and not at a spin count of 3000, which never reached the runtime in use): it appears only
# with PyTorch imported first (the bench, the tests), and an ember-only process lost nothing.
# So ``layer`` imports numba's OpenMP module with ``RTLD_DEEPBIND`` (glibc): its symbols are
# looked up in its own dependencies first, so the pool runs on the system's runtime, loaded
# then with the short spin, whichever of the two libraries came first; PyTorch keeps its own
# runtime and settings. Measured (2-CPU EPYC, load 15-19, ``chrt -f 50``, PyTorch imported,
# pool on/off alternating in one process): LSTM LM step 1.28-1.34x the pool-off time before,
# 1.01-1.05x after; the spin after a softmax 3.58 ms of CPU before, 0.05 ms after. (The rest
# was the pool's calls just after two-thread products: NOTE [ The pool and the polling BLAS
# workers ] in ``ember/_parallel.py``.) If numba's threading layer was loaded before ember
# asked (a user's own parallel function), it stays as numba loaded it.
#: the spin count the pool's OpenMP runtime loads with, unless GOMP_SPINCOUNT is set
SPIN_COUNT = 3000


@njit(parallel=True, nogil=True, cache=True)
def _probe(out):  # pragma: no cover - compiled
    for c in prange(out.size):
        out[c] = c


def load_kernels() -> None:
    """Load each one-thread kernel the drivers call, before any driver runs.

    A driver's cached machine code carries its own copy of the kernels it calls, and when
    those kernels are not yet loaded in the process, its calls went to that copy, which
    rounded some softmax rows 1 ulp away from the one-thread kernel's (measured: 11% of a
    (256, 1000) softmax's elements). Loaded first, the kernels are the ones every call runs,
    and the drivers' results are the one-thread path's bit for bit.

    Returns:
        None

    Example::

        >>> load_kernels()
    """
    x = np.ones((1, 2), np.float32)
    none = np.empty(0, np.float32)
    t = np.zeros(1, np.int64)
    w = np.ones(1, np.float32)
    _k.softmax_rows(x, none, x.copy())
    _k.log_softmax_rows(x, none, x.copy())
    softmax_backward_rows(x, x, x.copy())
    log_softmax_backward_rows(x, x, x.copy())
    _k.cross_entropy_rows(x, none, t, w, x.copy(), w.copy())
    _k.cross_entropy_class_rows(x, t, -100, x.copy(), w.copy(), w.copy())
    _k.cross_entropy_backward_rows(x, t, w, x.copy())
    for dt in (np.float32, np.float64):
        block_sums(np.ones(4, dt), np.empty(2, dt), 2)
    v = np.ones(4, np.float32)
    for name in UNARY:
        getattr(_k, name)(v, v.copy())
    for name in BINARY:
        getattr(_k, name)(v, v, v.copy())
    for op in range(len(ARITH)):
        arith_into(v, v, v.copy(), op)
    w2, stat, one = np.ones(2, np.float32), np.ones(1, np.float32), np.float32(1)
    _k.layer_norm_rows(x, w2, w2, True, True, one, x.copy(), stat, stat.copy(), one, one)
    _k.layer_norm_backward_rows(x, x, w2, True, stat, stat, x.copy(), np.zeros(2),
                                np.zeros(2))


def layer() -> str:
    """The threading layer numba runs ``prange`` on in this process (launching an empty
    parallel loop first, which makes numba choose one).

    Returns:
        str: ``"omp"``, ``"tbb"`` or ``"workqueue"``.

    Example::

        >>> layer() in ("omp", "tbb", "workqueue")
        True
    """
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # not chosen before the first parallel launch: it loads the layer now
        pass
    # GNU OpenMP reads its spin count once, when it loads: a short one for the pool's copy,
    # the caller's environment restored at once (NOTE [ The pool's workers spin briefly ])
    old = os.environ.get("GOMP_SPINCOUNT")
    if old is None:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    try:
        _load_omp_module()
        _probe(np.zeros(2, np.int64))
    finally:
        if old is None:
            del os.environ["GOMP_SPINCOUNT"]
    return numba.threading_layer()


def _load_omp_module() -> None:
    """Import numba's OpenMP pool module bound to its own GNU OpenMP first (NOTE [ The
    pool's own OpenMP runtime ]), where the platform has ``RTLD_DEEPBIND`` and numba has not
    loaded a threading layer yet; otherwise nothing (numba imports it as usual)."""
    deep = getattr(os, "RTLD_DEEPBIND", 0)
    name = "numba.np.ufunc.omppool"
    if not deep or name in sys.modules:
        return
    from numba.np.ufunc import parallel

    if parallel._is_initialized:
        return
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | deep)
    try:
        importlib.import_module(name)
    except ImportError:  # (no OpenMP build of numba here: numba picks another layer)
        pass
    finally:
        sys.setdlopenflags(flags)
