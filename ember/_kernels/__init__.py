"""Fused CPU kernels for the hot composites of training: softmax, log-softmax, cross
entropy, layer norm and SiLU (forward and backward), GELU (with its derivative), and the
Adam/AdamW step.

NOTE [ Fused kernels ]
NumPy runs each step of a composite as its own pass over memory: softmax is a max, a
subtraction, an exp, a sum and a division, five passes and two temporaries where PyTorch
makes one or two. With numba installed (the optional extra ``ember[fast]``), these
functions run one compiled loop per row instead, with a SIMD exp of our own (NOTE
[ Vectorisable exp ] in ``_numba.py``); without it, or for inputs the kernels do not
cover, they return None and the op's NumPy kernel runs as before. So every caller reads::

    r = _kernels.softmax(a, dim, log=False)
    if r is None:
        ...  # the NumPy path

Covered: NumPy float32 arrays (other dtypes keep their NumPy kernels, which also give the
reference the fast path is tested against), normalised rows of at most ``_ROW_MAX``
elements (float32 accumulators in a few SIMD lanes stay within a few ulps of NumPy's
pairwise sums up to there; see NOTE [ Sums through BLAS ] in ``_ops/linalg.py``).

Results agree with the NumPy path to float32 rounding, not bit for bit (the exp is within
1 ulp of the correctly rounded value, sums are reassociated); tests/perf compare every
kernel with the NumPy path and with PyTorch. The row kernels are single-threaded: on two
loaded cores a ``prange`` softmax measured from 1.5x faster to 7x slower than one thread,
so no kernel uses numba's threads.
Tried again on the quiet machine with the split only while it is not oversubscribed
(``_parallel.contended``): a (256, 1000) softmax went 222 -> 113 us with ``prange`` over two
threads (PyTorch: 100 us) and cross entropy 1.62x -> 1.07x PyTorch's, but no training step
gained (GPT 154.4 vs 154.9 ms, same process, alternating) and the LSTM LM lost 6% (106 vs
100 ms: the OpenMP workers spin after each loop and take a core from the next BLAS call;
numba's ``workqueue`` layer does not spin, and does not speed the kernel up either), while
loading the cached parallel kernels cost 0.85 s per process. A ``ThreadPoolExecutor`` round trip
cost ~95 us on these VMs; ember's pool now hands pieces over through a lock per worker
(NOTE [ A relay for split work ] in ``_parallel.py``), and the row kernels, like the
element-wise ones (``threshold_backward``, exp, sigmoid, SiLU, GELU; NOTE [ Compiled
element-wise kernels on threads ]), run contiguous blocks of rows on its threads when the
call is large enough to pay for the hand-over (NOTE [ Row kernels on threads ]), all of it
governed by ``set_num_threads``.
Session 22 measured numba's pool once more, now as a hand-over for the split kernels (NOTE
[ A hand-over without the GIL ] in ``_parallel.py``): the kernels gain (softmax 1.40x ->
0.94x PyTorch's time), the LSTM LM step lost 25-30%, so the pool was opt-in. Session 23
found why (the pool on PyTorch's OpenMP runtime, NOTE [ The pool's own OpenMP runtime ] in
``_numba_par.py``; pool calls beside OpenBLAS's polling workers, NOTE [ The pool and the
polling BLAS workers ] in ``_parallel.py``) and turned it on by default
(``EMBER_NATIVE_SPLIT=0`` turns it off).

The backend is chosen on the first call: the environment variable ``EMBER_KERNELS``
(``numpy`` turns the fast path off, ``numba`` or ``auto``, the default, use numba when it
imports); ``set_backend`` switches it at run time (tests compare the two paths with it).
numba is imported then, not when ember is, and the compiled kernels are cached on disk.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from .. import _parallel
from .._lazy_import import keep_warnings_seen, prepare_numba

_ROW_MAX = 16384
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_max_reduce = np.maximum.reduce

_impl = None          # the ``_numba`` module, False for NumPy only, None until chosen
_choice = None        # the backend asked for: "auto", "numba" or "numpy"


def _load():
    global _impl
    choice = _choice or os.environ.get("EMBER_KERNELS", "auto").lower()
    if choice == "numpy":
        _impl = False
        return _impl
    try:
        with keep_warnings_seen():  # NOTE [ First-use imports keep the warnings seen ]
            from . import _numba

            prepare_numba()
    except Exception as e:  # not installed, or an install that fails to import (a numba
        if choice == "numba":  # built for another NumPy raises AttributeError): NumPy kernels
            raise
        if not isinstance(e, ImportError):
            import warnings

            warnings.warn(f"ember: numba is installed but failed to import ({type(e).__name__}: "
                          f"{e}); using the NumPy kernels", RuntimeWarning, stacklevel=2)
        _impl = False
    else:
        _impl = _numba
    return _impl


def backend() -> str:
    """The backend of the fused kernels: ``"numba"`` or ``"numpy"``."""
    impl = _impl if _impl is not None else _load()
    return "numba" if impl else "numpy"


def set_backend(name: str) -> str:
    """Choose the fused kernels' backend and return the previous one.

    Args:
        name: ``"numba"`` (raises ImportError without numba), ``"numpy"`` (the plain NumPy
            kernels of each op) or ``"auto"`` (numba when it imports).

    Returns:
        str: the backend in use before the call, ``"numba"`` or ``"numpy"``.

    Example::

        >>> from ember import _kernels
        >>> old = _kernels.set_backend("numpy")
        >>> _kernels.backend()
        'numpy'
        >>> _ = _kernels.set_backend(old)
    """
    global _choice, _impl
    if name not in ("auto", "numba", "numpy"):
        raise ValueError(f"set_backend: expected 'auto', 'numba' or 'numpy', got {name!r}")
    old = backend()
    _choice, _impl = name, None
    _load()
    return old


def _on_gpu(a):
    """The CUDA kernels (NOTE [ Fused CUDA rows ] in ``_cuda.py``) for a CuPy array, else
    None; CuPy is never imported here."""
    if type(a).__module__.startswith("cupy"):
        from . import _cuda

        return _cuda
    return None


def _fast(*arrays):
    """The numba module when it should take these arrays, else None."""
    impl = _impl if _impl is not None else _load()
    if not impl:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != _F32 or a.size == 0:
            return None
    return impl


def _rows(a, ndim=1):
    """``a`` as C-contiguous rows over its last ``ndim`` axes, or None for rows too long."""
    n = math.prod(a.shape[a.ndim - ndim:])
    if n == 0 or n > _ROW_MAX:
        return None
    return np.ascontiguousarray(a).reshape(-1, n)


# NOTE [ Row kernels on threads ]
# Each row of softmax, log-softmax (and their backward), cross entropy and layer norm is
# computed alone, so the rows are cut into one contiguous block per thread on ember's pool
# (``_parallel.split_on_threads``; it declines on one thread, on an oversubscribed machine,
# or while another split holds the workers): every row's numbers are those of one call. A
# block must be worth the hand-over (~20-40 us): from ``_ROWS_SPLIT_EXP`` elements for the
# kernels with an exp per element (softmax, log-softmax and its backward, cross entropy:
# ~1 ns an element on one core here, so ~130 us), from ``_ROWS_SPLIT`` for the others
# (layer norm, softmax's backward, cross entropy's: 0.3-0.5 ns an element). Layer norm's
# backward also sums ``g * xhat`` and ``g`` over the rows: each thread's block of rows keeps
# float64 partial sums of whole ``_LN_BLOCK``-row groups (the kernel's float32 sums per
# group stay those of one call) and the partials are added in row order, so only the
# float64 association moves, far below float32's rounding. Where numba's pool takes them
# (NOTE [ A hand-over without the GIL ] in ``ember/_parallel.py``), layer norm's rows are cut
# as the relay cuts them, the backward's partial sums included, so both give the same bits.
_ROWS_SPLIT_EXP = 1 << 17
_ROWS_SPLIT = 1 << 18


#: [numba's pool drivers (``_numba_par``) and the most threads numba may run, or None when
#: its pool cannot take split work; unset until first asked]
_pool = []
_pool_threads = threading.local()  # .n: the thread count last given numba in this thread


def _pool_drivers():
    """``(_numba_par, most threads)`` when numba's own thread pool may run split row and
    block kernels (NOTE [ A hand-over without the GIL ] in ``ember/_parallel.py``), else
    None: no numba, ``EMBER_NATIVE_SPLIT=0`` (the pool is on by default: NOTE [ The pool's
    own OpenMP runtime ] in ``_numba_par.py``), or a threading layer other than OpenMP or
    TBB."""
    if not _pool:
        found = None
        if os.environ.get("EMBER_NATIVE_SPLIT", "1") != "0":
            try:
                from numba.core import config

                from . import _numba_par

                if _numba_par.layer() in ("omp", "tbb") and config.NUMBA_NUM_THREADS > 1:
                    _numba_par.load_kernels()
                    found = (_numba_par, config.NUMBA_NUM_THREADS)
            except Exception:  # (a numba without a usable parallel backend)
                found = None
        _pool.append(found)
    return _pool[0]


#: the fewest elements of a row kernel split on numba's pool: its hand-over costs ~2 us where
#: the relay's costs ~27 (NOTE [ A hand-over without the GIL ] in ``ember/_parallel.py``), so
#: from ~15 us of work on one thread
POOL_ROWS_MIN = 1 << 17


def _on_pool(driver, elements, least, units):
    """Run ``driver(par, n)`` on numba's pool (``par`` the ``_numba_par`` module, ``n`` the
    threads) when the numba backend is in use and ``elements`` reach ``least``; whether it
    ran (NOTE [ A hand-over without the GIL ]). A driver that returns False has run nothing
    (``par`` has no driver for that call)."""
    if elements < least or units < 2 or not _impl:
        return False
    pool = _pool_drivers()
    if pool is None:
        return False
    par, most = pool

    def run(n):
        n = min(n, most)
        if getattr(_pool_threads, "n", None) != n:  # (numba's count is per calling thread)
            import numba

            numba.set_num_threads(n)
            _pool_threads.n = n
        ran.append(driver(par, min(n, units)) is not False)

    ran = []
    return _parallel.native_split(run, units, 2) and ran[0]


def _on_row_blocks(kernel, m, n, block=1, least=_ROWS_SPLIT, driver=None):
    """Run ``kernel(lo, hi)`` over the rows ``range(m)`` of ``n`` elements, in contiguous
    blocks of whole ``block``-row groups on several threads when there are at least
    ``least`` elements (NOTE [ Row kernels on threads ]), else at once. ``driver(par, n)``,
    where given, runs the same rows on numba's pool instead (NOTE [ A hand-over without the
    GIL ] in ``ember/_parallel.py``)."""
    groups = -(-m // block)
    if driver is not None and _on_pool(driver, m * n, POOL_ROWS_MIN, m):
        return
    if m * n >= least and groups > 1:
        def run(lo, hi):
            kernel(lo * block, min(hi * block, m))

        # (rows alone may be cut anywhere: NOTE [ The caller's head start ])
        if _parallel.split_on_threads(run, groups, min_size=2, even=block != 1,
                                      key=getattr(kernel, "__code__", None)):
            return
    kernel(0, m)


# NOTE [ Row maxima in the kernel ]
# Softmax, log-softmax and cross entropy take each row's maximum inside their compiled pass,
# from the row while it is in the cache, with integer keys in SIMD lanes (NOTE [ Row maxima
# on integer keys ] in ``_numba.py``): the same maxima as NumPy's ``maximum.reduce`` (NaN
# where a row holds one), so the same bits. NumPy's reduce along rows costs ~50 ns a row to
# set up and 0.15 ns an element, and reads the array once more: (256, 1000) softmax rows
# 153 -> 136 us, (1024, 98) 139 -> 93 us, (4096, 32) 312 -> 114 us (one thread). (This was
# once NOTE [ Short rows' maxima in the kernel ], for cross entropy's rows of at most 256
# classes, when the kernel's maximum was a scalar loop.) The kernels still take maxima
# passed in as ``mx`` for rows longer than ``_OWN_MAX_ROW`` (none now: the tests lower it to
# compare the two paths bit for bit).
_OWN_MAX_ROW = _ROW_MAX
_NO_MAX = np.empty(0, np.float32)


def _row_maxima(rows):
    """``rows``' maxima for a row kernel: none (the kernel takes its own) for rows of at most
    ``_OWN_MAX_ROW`` elements, else NumPy's (NOTE [ Row maxima in the kernel ])."""
    return _NO_MAX if rows.shape[1] <= _OWN_MAX_ROW else _max_reduce(rows, 1)


def softmax(a, dim, log=False):
    """Softmax (or log-softmax) of ``a`` along ``dim``, or None where not covered.

    Args:
        a: a NumPy array.
        dim: the (non-negative) axis to normalise.
        log: log-softmax instead.

    Returns:
        ndarray | None: a new float32 array of ``a``'s shape.

    Example::

        >>> r = softmax(np.zeros((2, 4), np.float32), 1)
        >>> r is None or bool(np.allclose(r, 0.25))
        True
    """
    gpu = _on_gpu(a)
    if gpu is not None:
        return gpu.softmax(a, dim, log)
    impl = _fast(a)
    if impl is None or dim != a.ndim - 1:
        return None
    rows = _rows(a)
    if rows is None:
        return None
    out = np.empty(rows.shape, np.float32)
    kernel = impl.log_softmax_rows if log else impl.softmax_rows

    def run(lo, hi):
        r = rows[lo:hi]
        kernel(r, _row_maxima(r), out[lo:hi])

    def on_pool(par, n):
        par.softmax_rows(rows, out, n, log)

    own_max = rows.shape[1] <= _OWN_MAX_ROW  # (the drivers take the kernel's own maxima)
    _on_row_blocks(run, *rows.shape, least=_ROWS_SPLIT_EXP, driver=on_pool if own_max else None)
    return out.reshape(a.shape)


def softmax_backward(g, y, dim, log=False):
    """The gradient of softmax (or log-softmax) from its output ``y`` and the output's
    gradient ``g``, one pass over each row on several threads when large, or None where not
    covered (as ``softmax``, and ``g`` of ``y``'s shape).

    Args:
        g: the gradient of the output, a NumPy array.
        y: the forward's output (probabilities, or log-probabilities with ``log``).
        dim: the (non-negative) axis that was normalised.
        log: the backward of log-softmax instead.

    Returns:
        ndarray | None: ``y * (g - sum(g * y))`` (``g - exp(y) * sum(g)`` with ``log``),
        summed along ``dim``: a new float32 array of ``y``'s shape.

    Example::

        >>> y = np.full((1, 4), 0.25, np.float32)
        >>> r = softmax_backward(np.ones((1, 4), np.float32), y, 1)
        >>> r is None or r.tolist() == [[0.0, 0.0, 0.0, 0.0]]
        True
    """
    impl = _fast(g, y)
    if impl is None or dim != y.ndim - 1 or g.shape != y.shape:
        return None
    rows = _rows(y)
    if rows is None:
        return None
    from . import _numba_softmax

    kernel = (_numba_softmax.log_softmax_backward_rows if log else
              _numba_softmax.softmax_backward_rows)
    grows = np.ascontiguousarray(g).reshape(rows.shape)
    out = np.empty(rows.shape, np.float32)

    def run(lo, hi):
        kernel(grows[lo:hi], rows[lo:hi], out[lo:hi])

    def on_pool(par, n):
        par.softmax_backward(grows, rows, out, n, log)

    _on_row_blocks(run, *rows.shape, least=_ROWS_SPLIT_EXP if log else _ROWS_SPLIT,
                   driver=on_pool)
    return out.reshape(y.shape)


def cross_entropy(rows, target, weight):
    """Fused softmax and NLL over rows of logits, or None where not covered.

    Args:
        rows: logits (M, C), classes last.
        target: (M,) valid class indices.
        weight: (M,) each row's weight (0 for ignored rows).

    Returns:
        tuple | None: (probabilities (M, C), losses (M,)), float32.

    Example::

        >>> r = cross_entropy(np.zeros((1, 2), np.float32), np.zeros(1, np.int64),
        ...                   np.ones(1, np.float32))
        >>> r is None or bool(np.isclose(r[1][0], np.log(2)))
        True
    """
    gpu = _on_gpu(rows)
    if gpu is not None:
        return gpu.cross_entropy(rows, target, weight)
    impl = _fast(rows, weight)
    if impl is None or rows.shape[1] > _ROW_MAX:
        return None
    rows = np.ascontiguousarray(rows)
    probs = np.empty(rows.shape, np.float32)
    losses = np.empty(rows.shape[0], np.float32)
    target = np.ascontiguousarray(target, np.int64)
    weight = np.ascontiguousarray(weight)

    def run(lo, hi):
        r = rows[lo:hi]
        impl.cross_entropy_rows(r, _row_maxima(r), target[lo:hi], weight[lo:hi], probs[lo:hi],
                                losses[lo:hi])

    def on_pool(par, n):
        par.cross_entropy_rows(rows, target, weight, probs, losses, n)

    own_max = rows.shape[1] <= _OWN_MAX_ROW  # (the drivers take the kernel's own maxima)
    _on_row_blocks(run, *rows.shape, least=_ROWS_SPLIT_EXP, driver=on_pool if own_max else None)
    return probs, losses


def cross_entropy_classes(x, target, ignore_index):
    """Cross entropy over class indices with no class weights, the targets checked in the
    same pass (NOTE [ Cross entropy's checks in the kernel ] in ``ember/_ops/nn_ops.py``),
    or None where not covered (no numba, not 2-d C-contiguous float32 logits of 1 to
    ``_ROW_MAX`` classes, targets not a C-contiguous int64 array of one per row).

    Args:
        x: logits (M, C), classes last.
        target: (M,) class indices, ``ignore_index`` for rows left out.
        ignore_index: the index of rows whose loss is 0.

    Returns:
        tuple | None: (probabilities (M, C), losses (M,), valid (M,) of 1 and 0, the first
        row whose target is out of range or -1), float32 arrays.

    Example::

        >>> r = cross_entropy_classes(np.zeros((2, 2), np.float32), np.array([0, -100]),
        ...                           -100)
        >>> r is None or (r[1].tolist(), r[2].tolist(), r[3]) == ([np.log(np.float32(2)),
        ...                                                       0.0], [1.0, 0.0], -1)
        True
    """
    impl = _fast(x)
    if impl is None or x.ndim != 2 or not 0 < x.shape[1] <= _ROW_MAX or \
            not x.flags.c_contiguous or type(target) is not np.ndarray or \
            target.dtype != np.int64 or target.shape != x.shape[:1] or \
            not target.flags.c_contiguous:
        return None
    m = x.shape[0]
    probs = np.empty(x.shape, np.float32)
    losses = np.empty(m, np.float32)
    valid = np.empty(m, np.float32)
    bad = []

    def run(lo, hi):
        row = impl.cross_entropy_class_rows(x[lo:hi], target[lo:hi], ignore_index,
                                            probs[lo:hi], losses[lo:hi], valid[lo:hi])
        if row >= 0:  # (blocks may finish in any order: keep the first row of all)
            bad.append(lo + row)

    def on_pool(par, n):
        row = par.cross_entropy_class_rows(x, target, ignore_index, probs, losses, valid, n)
        if row >= 0:
            bad.append(int(row))

    _on_row_blocks(run, *x.shape, least=_ROWS_SPLIT_EXP, driver=on_pool)
    return probs, losses, valid, min(bad) if bad else -1


def cross_entropy_backward(probs, target, scale):
    """``scale[:, None] * (probs - onehot(target))`` over rows, or None where not covered.

    Args:
        probs: (M, C) probabilities.
        target: (M,) valid class indices.
        scale: (M,) each row's factor.

    Returns:
        ndarray | None: (M, C) float32.

    Example::

        >>> r = cross_entropy_backward(np.full((1, 2), 0.5, np.float32),
        ...                            np.zeros(1, np.int64), np.ones(1, np.float32))
        >>> r is None or r.tolist() == [[-0.5, 0.5]]
        True
    """
    gpu = _on_gpu(probs)
    if gpu is not None:
        return gpu.cross_entropy_backward(probs, target, scale)
    impl = _fast(probs, scale)
    if impl is None:
        return None
    probs = np.ascontiguousarray(probs)
    out = np.empty(probs.shape, np.float32)
    target = np.ascontiguousarray(target, np.int64)
    scale = np.ascontiguousarray(scale)

    def run(lo, hi):
        impl.cross_entropy_backward_rows(probs[lo:hi], target[lo:hi], scale[lo:hi],
                                         out[lo:hi])

    def on_pool(par, n):
        par.cross_entropy_backward_rows(probs, target, scale, out, n)

    _on_row_blocks(run, *probs.shape, driver=on_pool)
    return out


def _param(p, n):
    """A weight or bias as a flat contiguous float32 array, and whether it was given."""
    if p is None:
        return np.empty(n, np.float32), False
    return np.ascontiguousarray(p, np.float32).reshape(-1), True


def layer_norm(x, w, b, ndim, eps, near=None):
    """Layer norm over the last ``ndim`` axes, or None where not covered.

    Args:
        x: the input array.
        w, b: the weight and bias (shape of the normalised axes) or None.
        ndim: how many trailing axes are normalised.
        eps: added to the variance.
        near: None, or a pair ``(big_mean, small_rstd)`` of float32 bounds: then a fourth
            value says whether any row has ``|mean| >= big_mean`` or ``rstd <= small_rstd``
            (NaN rows aside), found by the kernel as it goes (NOTE [ Welford lanes of
            torch's norms ] in ``ember/_ops/nn_norm.py``).

    Returns:
        tuple | None: (y, mean, rstd), the statistics with the normalised axes kept as 1;
        (y, mean, rstd, near) when ``near`` is given.

    Example::

        >>> r = layer_norm(np.array([[1, 3]], np.float32), None, None, 1, 0.0)
        >>> r is None or r[0].tolist() == [[-1.0, 1.0]]
        True
    """
    gpu = _on_gpu(x)
    if gpu is not None:
        return gpu.layer_norm(x, w, b, ndim, eps)
    impl = _fast(x)
    if impl is None or (w is not None and w.dtype != _F32) or \
            (b is not None and b.dtype != _F32):
        return None
    rows = _rows(x, ndim)
    if rows is None:
        return None
    m, n = rows.shape
    wf, has_w = _param(w, n)
    bf, has_b = _param(b, n)
    y = np.empty((m, n), np.float32)
    mean = np.empty(m, np.float32)
    rstd = np.empty(m, np.float32)
    eps = np.float32(eps)
    # no bounds asked: |mean| >= inf never holds, nor rstd <= -1
    big, small = (np.float32(np.inf), np.float32(-1)) if near is None else \
        (np.float32(near[0]), np.float32(near[1]))
    counts = []   # one count a block of rows (list.append is atomic)

    def run(lo, hi):
        counts.append(impl.layer_norm_rows(rows[lo:hi], wf, bf, has_w, has_b, eps, y[lo:hi],
                                           mean[lo:hi], rstd[lo:hi], big, small))

    def on_pool(par, nch):
        counts.append(par.layer_norm_rows(rows, wf, bf, has_w, has_b, eps, y, mean, rstd, big,
                                          small, nch))

    _on_row_blocks(run, m, n, driver=on_pool)
    kept = x.shape[:x.ndim - ndim] + (1,) * ndim
    if near is not None:
        return y.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept), any(counts)
    return y.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept)


def layer_norm_backward(g, x, w, mean, rstd, ndim, sums=True):
    """(gx, gw, gb) of layer norm over the last ``ndim`` axes, or None where not covered;
    gw is None when ``w`` is.

    Args:
        g: the output's gradient.
        x: the input.
        w: the weight or None.
        mean, rstd: the forward's statistics.
        ndim: how many trailing axes were normalised.
        sums: False when neither parameter wants a gradient: gw and gb are then None, and
            the CPU kernel leaves their sums over the rows out (a device's computes them).

    Returns:
        tuple | None: (gx, gw, gb), float32.

    Example::

        >>> x = np.array([[1, 3]], np.float32)
        >>> r = layer_norm_backward(np.ones_like(x), x, None, np.full((1, 1), 2, np.float32),
        ...                         np.ones((1, 1), np.float32), 1)
        >>> r is None or r[0].tolist() == [[0.0, 0.0]]
        True
    """
    gpu = _on_gpu(x)
    if gpu is not None:
        return gpu.layer_norm_backward(g, x, w, mean, rstd, ndim)
    impl = _fast(g, x, mean, rstd)
    if impl is None or (w is not None and w.dtype != _F32):
        return None
    rows = _rows(x, ndim)
    if rows is None:
        return None
    m, n = rows.shape
    wf, has_w = _param(w, n)
    gx = np.empty((m, n), np.float32)
    g = np.ascontiguousarray(g).reshape(m, n)
    mean = np.ascontiguousarray(mean).reshape(-1)
    rstd = np.ascontiguousarray(rstd).reshape(-1)
    partials = {}  # first row -> (gw, gb) of a block of rows (NOTE [ Row kernels on threads ])
    width = n if sums else 0  # (empty partials: the kernel leaves the sums out)

    def run(lo, hi):
        pw, pb = np.zeros(width, np.float64), np.zeros(width, np.float64)
        impl.layer_norm_backward_rows(g[lo:hi], rows[lo:hi], wf, has_w, mean[lo:hi],
                                      rstd[lo:hi], gx[lo:hi], pw, pb)
        partials[lo] = pw, pb

    def on_pool(par, nch):
        # the relay's cut (whole groups, equal pieces), each chunk's sums in a row of its own
        groups = -(-m // impl._LN_BLOCK)
        nch = min(nch, groups)
        pw, pb = np.zeros((nch, width), np.float64), np.zeros((nch, width), np.float64)
        par.layer_norm_backward_rows(g, rows, wf, has_w, mean, rstd, gx, pw, pb,
                                     impl._LN_BLOCK)
        step = -(-groups // nch) * impl._LN_BLOCK
        for c in range(nch):
            if c * step < m:
                partials[c * step] = pw[c], pb[c]

    _on_row_blocks(run, m, n, block=impl._LN_BLOCK, driver=on_pool)
    if not sums:
        return gx.reshape(x.shape), None, None
    gw, gb = partials.pop(0)
    for lo in sorted(partials):
        gw += partials[lo][0]
        gb += partials[lo][1]
    shape = x.shape[x.ndim - ndim:]
    return (gx.reshape(x.shape), gw.astype(np.float32).reshape(shape) if has_w else None,
            gb.astype(np.float32).reshape(shape))


def _flat(x):
    return np.ascontiguousarray(x).reshape(-1)


def gelu(x):
    """``x Phi(x)`` of a float32 array, with ``Phi(x) + x phi(x)`` beside it from a device
    kernel, or None where not covered.

    The CPU kernel leaves the derivative out: backward recomputes it from the input
    (``gelu_backward``; NOTE [ GELU saves only its input ] in ember/_ops/nn_ops.py). A
    device kernel returns it, and backward multiplies by it.

    Args:
        x: the input array.

    Returns:
        tuple | None: (result, derivative or None).

    Example::

        >>> r = gelu(np.zeros(3, np.float32))
        >>> r is None or (r[0].tolist(), r[1]) == ([0.0, 0.0, 0.0], None)
        True
    """
    gpu = _on_gpu(x)
    if gpu is not None:
        return gpu.gelu(x)
    impl = _fast(x)
    if impl is None:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.gelu_out_into, _flat(x), out.reshape(-1))
    return out, None


def gelu_backward(g, x):
    """``g * (Phi(x) + x phi(x))`` for float32 arrays of one shape in one pass, or None where
    not covered (on a device the forward kernel keeps the derivative instead).

    Args:
        g: the gradient of GELU's result.
        x: GELU's input.

    Returns:
        ndarray | None: a new float32 array of ``x``'s shape.

    Example::

        >>> r = gelu_backward(np.ones(3, np.float32), np.zeros(3, np.float32))
        >>> r is None or r.tolist() == [0.5, 0.5, 0.5]
        True
    """
    impl = _fast(g, x)
    if impl is None or g.shape != x.shape:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.gelu_backward_into, _flat(g), _flat(x), out.reshape(-1))
    return out


def silu(x):
    """``x * sigmoid(x)`` for a float32 array, or None where not covered.

    Example::

        >>> r = silu(np.zeros(2, np.float32))
        >>> r is None or r.tolist() == [0.0, 0.0]
        True
    """
    gpu = _on_gpu(x)
    if gpu is not None:
        return gpu.silu(x)
    impl = _fast(x)
    if impl is None:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.silu_into, _flat(x), out.reshape(-1))
    return out


def silu_backward(g, x):
    """``g * d/dx silu(x)`` for float32 arrays of one shape, or None where not covered.

    Example::

        >>> r = silu_backward(np.ones(1, np.float32), np.zeros(1, np.float32))
        >>> r is None or r.tolist() == [0.5]
        True
    """
    gpu = _on_gpu(x)
    if gpu is not None:
        return gpu.silu_backward(g, x)
    impl = _fast(g, x)
    if impl is None or g.shape != x.shape:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.silu_backward_into, _flat(g), _flat(x), out.reshape(-1))
    return out


# NOTE [ Compiled element-wise kernels on threads ]
# The compiled element-wise loops (exp, sigmoid, SiLU and its backward, GELU) release the
# GIL and each element is computed alone, so a large array is cut into one contiguous run
# per thread on ember's pool (``_parallel.split_on_threads``, which declines on one thread
# or an oversubscribed machine), cut on a grid of ``_FLAT_ALIGN`` elements so that every
# element meets the loop it meets in one call: the same bits as one call (NOTE [ Flat cuts
# on the vector grid ] in ``_numba_par.py``). From 2**18 elements (~0.2 ms of
# exp on one core) the halves save more than the pool's round trip (~40 us) costs. Below
# ``_ELEMENTWISE_MIN`` elements NumPy's own loop costs no more than the compiled call's
# dispatch, and NumPy keeps those. The kernels that numba's pool has drivers for split there
# first, from ``POOL_FLAT_MIN`` elements (NOTE [ Element-wise kernels on the pool ] in
# ``_numba_par.py``); the relay takes the rest, and those calls where the pool declines.
_ELEMENTWISE_MIN = 256
_SPLIT_MIN = 1 << 18
#: the grid every cut of a split flat kernel falls on, in elements (``_numba_par.FLAT_ALIGN``,
#: repeated here so that the relay needs no numba import: NOTE [ Flat cuts on the vector grid ])
_FLAT_ALIGN = 64
_RECIPROCAL_MIN = 1 << 13


#: the fewest elements of a flat kernel (and of float32 ``+ - * /``) split on numba's pool
#: (NOTE [ Element-wise kernels on the pool ] in ``_numba_par.py``): 2**18 by default (NOTE
#: [ Flat kernels on the pool in training steps ]); ``EMBER_FLAT_POOL=0`` keeps them all on
#: the relay, ``EMBER_FLAT_POOL=1`` takes them from 2**16 elements (~15 us of SiLU on one
#: core, where the pool's hand-over costs ~2 us)
POOL_FLAT_MIN = {"0": 1 << 62, "1": 1 << 16}.get(os.environ.get("EMBER_FLAT_POOL"), 1 << 18)

# NOTE [ Flat kernels on the pool in training steps ]
# Alone, a flat kernel split on numba's pool beats the relay (SiLU over 1M float32 at two
# threads 0.98x PyTorch's time against ~1.3x), but inside the training steps, where each
# such call follows the products' two-thread work, it lost until session 32: in-process A/B
# of the rule (2-CPU EPYC, ``chrt -f 10``, quiet machine, medians of 9-15 rounds) MLP step
# 2.89 against 1.98 ms from 2**16 elements; from 2**18, MNIST CNN 30.2 against 28.9 ms and
# ResNet-18 316.7 against 310.6. That was the pool's OpenMP workers' spin after a call (NOTE
# [ The pool's workers spin briefly ] in ``_numba_par.py``, shorter since session 32): with
# it the pool from 2**18 elements measured even with the relay in the steps (MLP 2.42 / 2.42
# ms, MNIST CNN 29.21 / 28.64, GPT-mini 91.78 / 90.76, relay / pool). The relay kept the
# flat kernels for one more session because the pool's results were thought to differ from
# one thread's in the last bit; they did not (its cuts are on the vector grid), the relay's
# did, for GELU at odd sizes (NOTE [ Flat cuts on the vector grid ] in ``_numba_par.py``).
# Session 33 (2-CPU EPYC, ``chrt -f 10``, load 4-6 from other sessions with the load check
# off, 2 threads): the kernels alone, one framework per process, relay -> pool with PyTorch
# beside, SiLU over 1M float32 166 -> 128 us (121), SiLU forward+backward 401 -> 300 (302),
# GELU forward+backward 488 -> 396 (442), ``a + b`` over 4M 420 -> 372 (434); in the steps,
# in-process A/B medians of 9-15 rounds, pool / relay: MNIST CNN 29.03 / 28.52, 30.96 /
# 30.91 and 30.76 / 31.36 ms, GPT-mini 81.32 / 82.02, MLP 1.91 / 1.92 (nothing of its is
# that large), ResNet-18 318.9 / 312.3 (rounds spread 291-348): even within the noise. So
# from session 33 they take the pool by default, from 2**18 elements as measured.


def _run_flat(kernel, *arrays):
    """``kernel(*slices)`` over flat arrays of one length, on several threads when they are
    large (NOTE [ Compiled element-wise kernels on threads ]): on numba's pool when it is the
    kernel of a pool driver (NOTE [ Element-wise kernels on the pool ] in ``_numba_par.py``),
    else on ember's relay."""
    size = arrays[0].size
    if size >= POOL_FLAT_MIN and _parallel._threads() > 1 and \
            _on_pool(_flat_driver(kernel.__name__, arrays), size, POOL_FLAT_MIN, size // 16):
        return
    if size < _SPLIT_MIN:  # (no slices: a fresh view costs numba's dispatch ~1 us each)
        kernel(*arrays)
        return

    def run(lo, hi):  # cut on the grid: NOTE [ Flat cuts on the vector grid ] in _numba_par.py
        lo, hi = lo * _FLAT_ALIGN, min(hi * _FLAT_ALIGN, size)
        kernel(*[a[lo:hi] for a in arrays])

    if not _parallel.split_on_threads(run, -(-size // _FLAT_ALIGN),
                                      min_size=_SPLIT_MIN // _FLAT_ALIGN):
        kernel(*arrays)


def _flat_driver(name, arrays):
    """``driver(par, nch)`` running the kernel named ``name`` over ``arrays`` through
    ``_numba_par``'s element-wise drivers; it returns False, having run nothing, for a
    kernel they do not run."""

    def driver(par, nch):
        if len(arrays) == 2 and name in par.UNARY:
            par.unary_on(arrays[0], arrays[1], nch, par.UNARY.index(name))
        elif len(arrays) == 3 and name in par.BINARY:
            par.binary_on(arrays[0], arrays[1], arrays[2], nch, par.BINARY.index(name))
        else:
            return False
        return True

    return driver


#: NumPy's float arithmetic ufuncs, by their index in ``_numba_par.ARITH``
_ARITH = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}


def ufunc_on_threads(f, *arrays):
    """``_parallel.ufunc_on_threads(f, *arrays)``, with float32 ``+ - * /`` of two arrays of
    one shape first offered to numba's pool (NOTE [ Large arithmetic on the pool ]).

    Args:
        f: a NumPy ufunc with one output.
        *arrays: NumPy arrays of one shape, or Python scalars.

    Returns:
        The result array, or None where neither the pool nor the relay takes the call.

    Example::

        >>> a = np.ones(1 << 20, np.float32)
        >>> r = ufunc_on_threads(np.add, a, a)
        >>> r is None or float(r[-1]) == 2.0
        True
    """
    if len(arrays) == 2:
        r = _arith_on_pool(f, *arrays)
        if r is not None:
            return r
    return _parallel.ufunc_on_threads(f, *arrays)


# NOTE [ Large arithmetic on the pool ]
# ``a + b`` over millions of float32 is bound by memory, and at two threads its split went
# through the relay (NOTE [ Threaded element-wise ops ] in ``ember/_parallel.py``), whose
# ~20-50 us round trip and the late start of its worker (NOTE [ The caller's head start ])
# left the second core idle for part of a 1-ms call. On numba's pool both halves start at
# once: over 4M float32 (2-CPU EPYC, ``chrt -f 10``, load 8-11 from other sessions, same
# process, alternating) 0.69 ms against 0.97 through the relay and 1.34 on one thread, in
# another run 0.50 against 0.52; one framework per process, as the bench runs, the two were
# within noise of each other (0.59-0.61 ms against 0.60-0.61; PyTorch 0.55-0.90): bound by
# memory, the call's time is mostly the traffic, which the split does not change.
# ``arith_into`` makes one IEEE operation per element, as NumPy's loop does, so the bits
# are NumPy's (NaN payloads aside). Only float32 arrays of one shape, both C-contiguous:
# anything else goes to the relay as before.


def _arith_on_pool(f, a, b):
    """``f(a, b)`` on numba's pool for float32 ``+ - * /`` (NOTE [ Large arithmetic on the
    pool ]), or None when it does not apply or the pool declines."""
    op = _ARITH.get(f)
    if op is None or type(a) is not np.ndarray or type(b) is not np.ndarray or \
            a.shape != b.shape or a.size < POOL_FLAT_MIN or _fast(a, b) is None or \
            not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    out = np.empty(a.shape, np.float32)

    def driver(par, nch):
        par.arith_on(a.reshape(-1), b.reshape(-1), out.reshape(-1), nch, op)

    return out if _on_pool(driver, a.size, POOL_FLAT_MIN, a.size // 16) else None


def _flat_out(x, out):
    """A float32 output for ``x`` (``out`` itself when it fits: C-contiguous float32 of
    ``x``'s shape), or None when ``out`` does not fit."""
    if out is None:
        return np.empty(x.shape, np.float32)
    if type(out) is not np.ndarray or out.dtype != _F32 or out.shape != x.shape or \
            not out.flags.c_contiguous:
        return None
    return out


def exp(x, out=None):
    """``exp(x)`` of a float32 array in one compiled pass (NOTE [ Vectorisable exp ] in
    ``_numba.py``; within 1 ulp of the correctly rounded value), on several threads when it
    is large; None where not covered (no numba, another dtype, not C-contiguous, fewer than
    ``_ELEMENTWISE_MIN`` elements, an ``out`` that is not a C-contiguous float32 array of
    ``x``'s shape).

    Args:
        x: a NumPy array.
        out: the array to write (may be ``x``), or None for a new one.

    Returns:
        ndarray | None: the result.

    Example::

        >>> r = exp(np.zeros(300, np.float32))
        >>> r is None or bool((r == 1).all())
        True
    """
    impl = _fast(x)
    if impl is None or x.size < _ELEMENTWISE_MIN or not x.flags.c_contiguous:
        return None
    o = _flat_out(x, out)
    if o is None:
        return None
    _run_flat(impl.exp_into, x.reshape(-1), o.reshape(-1))
    return o


def reciprocal_times(x, c):
    """``(1 / x) * c`` for a float32 or float64 array and a number, in one compiled pass
    (the two roundings of PyTorch's ``reciprocal`` then ``mul``: NOTE [ A number over a
    tensor ] in ``ember/_ops/arithmetic.py``), on several threads when it is large; None
    where not covered (no numba, another dtype, not C-contiguous, fewer than
    ``_RECIPROCAL_MIN`` elements: below ~8K NumPy's ``reciprocal`` and an in-place
    ``multiply`` cost no more than the compiled call's dispatch).

    Args:
        x: the array.
        c: the number (cast to ``x``'s dtype).

    Returns:
        ndarray | None: a new array of ``x``'s shape and dtype.

    Example::

        >>> r = reciprocal_times(np.full(1 << 13, 4.0, np.float32), 2.0)
        >>> bool(r is None or r[0] == 0.5)
        True
    """
    impl = _impl if _impl is not None else _load()
    if not impl or type(x) is not np.ndarray or (x.dtype != _F32 and x.dtype != _F64) or \
            x.size < _RECIPROCAL_MIN or not x.flags.c_contiguous:
        return None
    c = x.dtype.type(c)
    out = np.empty(x.shape, x.dtype)
    kernel = impl.reciprocal_times_into

    def run(xs, outs):
        kernel(xs, c, outs)

    _run_flat(run, x.reshape(-1), out.reshape(-1))
    return out


def sigmoid(x):
    """``1 / (1 + exp(-x))`` of a float32 array in one compiled pass, on several threads
    when it is large; None where not covered (as ``exp``).

    Args:
        x: a NumPy array.

    Returns:
        ndarray | None: a new float32 array.

    Example::

        >>> r = sigmoid(np.zeros(300, np.float32))
        >>> r is None or bool((r == 0.5).all())
        True
    """
    impl = _fast(x)
    if impl is None or x.size < _ELEMENTWISE_MIN or not x.flags.c_contiguous:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.sigmoid_into, x.reshape(-1), out.reshape(-1))
    return out


def gelu_tanh_backward(g, x):
    """``g * d/dx gelu_tanh(x)`` in one pass, or None where not covered (CUDA arrays only:
    on the CPU the generic kernel is the path).

    Example::

        >>> gelu_tanh_backward(np.ones(2, np.float32), np.zeros(2, np.float32)) is None
        True
    """
    gpu = _on_gpu(x)
    return gpu.gelu_tanh_backward(g, x) if gpu is not None else None


# NOTE [ Selecting without branches ]
# NumPy's ``where`` takes a branch per element: on a mask of random signs -- a derivative
# formula's ``x > 0`` over activations -- half of them are mispredicted, and 2^20 float32
# values cost ~6 ms against ~0.5 ms for a compiled loop that LLVM turns into vector blends
# (and ~0.8 ms for NumPy on a sorted mask, where the compiled loop is still faster).
# The selection copies bits: it runs on integer views of the values' width, so one
# compiled loop per width serves every dtype of it (float16 and bfloat16 too).
_SELECT_AS = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
              8: np.dtype(np.int64)}


def where(mask, x, y):
    """``where(mask, x, y)`` as one compiled pass (NOTE [ Selecting without branches ]), or
    None where not covered: NumPy arrays, a boolean mask, ``x`` and ``y`` of one dtype 1, 2,
    4 or 8 bytes wide, each of the mask's shape or 0-d, every full-size array C-contiguous,
    at least 4096 elements (below that NumPy's call costs less than the dispatch here).

    Example::

        >>> m = np.arange(5000) % 2 == 0
        >>> r = where(m, np.ones(5000), np.zeros(5000))
        >>> r is None or r[:3].tolist() == [1.0, 0.0, 1.0]
        True
    """
    impl = _impl if _impl is not None else _load()
    if not impl or type(mask) is not np.ndarray or type(x) is not np.ndarray or \
            type(y) is not np.ndarray or mask.dtype != np.bool_ or x.dtype != y.dtype or \
            x.dtype.kind not in "biufcV" or mask.size < 4096 or not mask.flags.c_contiguous:
        return None
    view = _SELECT_AS.get(x.dtype.itemsize)
    if view is None:
        return None
    shape = mask.shape
    xs, ys = x.ndim == 0, y.ndim == 0
    if (not xs and (x.shape != shape or not x.flags.c_contiguous)) or \
            (not ys and (y.shape != shape or not y.flags.c_contiguous)) or (xs and ys):
        return None
    out = np.empty(shape, x.dtype)
    m, o = mask.reshape(-1), out.reshape(-1).view(view)
    xv, yv = x.view(view), y.view(view)
    if xs:
        impl.select_x_scalar_into(m, xv[()], yv.reshape(-1), o)
    elif ys:
        impl.select_y_scalar_into(m, xv.reshape(-1), yv[()], o)
    else:
        impl.select_into(m, xv.reshape(-1), yv.reshape(-1), o)
    return out


def threshold_backward(g, y, threshold):
    """relu's (and ``threshold``'s) backward ``where(y <= threshold, 0, g)`` in one pass,
    on both halves of large arrays at once (NOTE [ Threaded element-wise ops ] in
    ``ember/_parallel.py``), or None where not covered: float32 arrays of one shape, both
    C-contiguous.

    NumPy's ``where`` takes two passes and a boolean temporary: for ResNet-18's (32, 64, 32,
    32) activations 1.5 ms against 0.55 ms here on one thread.

    Example::

        >>> r = threshold_backward(np.ones(3, np.float32), np.array([-1, 0, 2], np.float32), 0)
        >>> r is None or r.tolist() == [0.0, 0.0, 1.0]
        True
    """
    gpu = _on_gpu(y)
    if gpu is not None:
        return gpu.threshold_backward(g, y, threshold)
    impl = _fast(g, y)
    if impl is None or g.shape != y.shape or not (g.flags.c_contiguous and
                                                  y.flags.c_contiguous):
        return None
    with np.errstate(over="ignore"):
        t = np.float32(threshold)
    if not np.isfinite(t) and np.isfinite(threshold):
        return None  # a threshold beyond float32's range: NumPy's comparison is exact
    out = np.empty(g.shape, np.float32)
    gf, yf, of = g.reshape(-1), y.reshape(-1), out.reshape(-1)

    def run(lo, hi):
        impl.threshold_backward_into(gf[lo:hi], yf[lo:hi], t, of[lo:hi])

    if not _parallel.split_on_threads(run, gf.size):
        run(0, gf.size)
    return out


_RELU_MIN = 1 << 13


def relu(x):
    """``max(x, 0)`` of a float32 array in one compiled pass, on several threads when it is
    large (NOTE [ Compiled element-wise kernels on threads ]); None where not covered (no
    numba, another dtype, not C-contiguous, fewer than ``_RELU_MIN`` elements).

    NumPy's float32 ``maximum`` checks for NaN as it goes: 0.56 ns an element here on one
    thread against the compiled compare-and-blend's 0.1-0.26 (cached / from memory), which
    gives the same bits, -0.0 and NaN included. Below ``_RELU_MIN`` elements the compiled
    call's ~3 us of dispatch cost more than NumPy's loop.

    Args:
        x: the input array.

    Returns:
        ndarray | None: a new float32 array of ``x``'s shape.

    Example::

        >>> r = relu(np.array([-1.0, 0.5] * 4096, np.float32))
        >>> r is None or r[:2].tolist() == [0.0, 0.5]
        True
    """
    impl = _fast(x)
    if impl is None or x.size < _RELU_MIN or not x.flags.c_contiguous:
        return None
    out = np.empty(x.shape, np.float32)
    _run_flat(impl.relu_into, x.reshape(-1), out.reshape(-1))
    return out


def adam(p, g, m, v, *, beta1, beta2, lr, weight_decay, eps, bias1, bias2_sqrt,
         decoupled, maximize):
    """One Adam/AdamW step (no amsgrad) in place on the arrays ``p``, ``m``, ``v``; False
    (having changed nothing) where not covered: arrays not all float32, C-contiguous and of
    one shape.

    Returns:
        bool: whether the step ran.

    Example::

        >>> p, g = np.ones(3, np.float32), np.ones(3, np.float32)
        >>> m, v = np.zeros(3, np.float32), np.zeros(3, np.float32)
        >>> ran = adam(p, g, m, v, beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0,
        ...            eps=1e-8, bias1=0.1, bias2_sqrt=0.001 ** 0.5, decoupled=False,
        ...            maximize=False)
        >>> not ran or bool(np.allclose(p, 0.9))
        True
    """
    impl = _fast(p, g, m, v)
    if impl is None:
        return False
    shape = p.shape
    for a in (p, g, m, v):
        if a.shape != shape or not a.flags.c_contiguous or (a is not g and
                                                             not a.flags.writeable):
            return False
    f = np.float32
    flats = (p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1))
    args = (f(1 - beta1), abs(1 - beta1) < 0.5, f(beta2), f(1 - beta2),
            f(1 - lr * weight_decay), f(weight_decay), f(-lr / bias1), f(bias2_sqrt), f(eps),
            bool(decoupled), bool(maximize))

    def run(lo, hi):  # NOTE [ Optimizer steps on threads ] in _train.py
        impl.adam_into(*[a[lo:hi] for a in flats], *args)

    if not _parallel.split_on_threads(run, p.size, min_size=OPTIM_SPLIT):
        run(0, p.size)
    return True


# the training step's other kernels (max pooling, batch norm, SGD, Adadelta)
from ._train import (  # noqa: E402  (they use the helpers above)
    OPTIM_SPLIT,
    adadelta,
    batch_norm,
    batch_norm_backward,
    max_pool2d,
    max_pool_backward,
    sgd,
)
