"""The fused CPU kernels of the training step's other hot spots: max pooling and its
backward, batch norm in training mode, and the SGD and Adadelta steps (NOTE [ Fused
kernels ] in ``__init__.py`` for the conventions: None or False where not covered, numba
imported on first use, results tested against the NumPy paths in tests/perf). Re-exported
by ``ember._kernels``, which callers use.
"""

from __future__ import annotations

import importlib
import math
import sys

import numpy as np

from .. import _parallel

_F32 = np.dtype(np.float32)
_loaded: dict = {}


def _module(name):
    """``ember._kernels.<name>`` (a numba module), imported on first use and kept: an import
    statement in a hot function costs ~3 us a call in the import machinery."""
    m = _loaded.get(name)
    if m is None:
        m = _loaded[name] = importlib.import_module(f"{__package__}.{name}")
    return m


def _fast(*arrays):
    # (the package imports this module, so its functions are found at call time)
    return sys.modules[__package__]._fast(*arrays)


def _param(p, n):
    return sys.modules[__package__]._param(p, n)

# NOTE [ Compiled max pooling ]
# NumPy's max pooling (``_max_pool_kernel`` in ``ember/_ops/nn_pool.py``) makes one pass
# per tap for the maximum, another per tap for the comparisons that find the argmax, and
# a table lookup; its backward is a ``bincount`` through float64 weights and a cast. The
# compiled kernels (``_numba_pool.py``) make one pass over the input for values and
# indices together, and one scatter over the gradient, accumulating in its dtype in window
# order as PyTorch's CPU kernel does (colliding positions, from overlapping windows, may
# differ from the float64 sum in the last bit). Covered: the forward for the common 2x2
# window with stride 2, no padding or dilation, of C-contiguous float32 (N, C, H, W)
# arrays (a general window loop was slower than the NumPy passes); the backward for every
# float32 gradient with int64 indices (any window, 1-, 2- or 3-d, and the pads that share
# the scatter).
#
# (64, 64, 24, 24), the MNIST CNN's pooling, CPU time of one thread (load 7), forward /
# backward: compiled 2.1 / 1.3 ms, NumPy 8.7 / 6.0 ms, PyTorch (one thread) 14.8 / 2.4 ms.
# Every plane is pooled alone, so forward inputs from ``POOL_SPLIT`` elements cut their
# planes into one contiguous run per thread on ember's pool (``_parallel.split_on_threads``,
# which declines on one thread or a busy machine): each plane's values and indices are
# those of one call. (64, 64, 24, 24) on two threads, same process, alternating: 9.4-9.9
# -> 4.9-5.2 ms wall. (The kernel itself is slower on this AVX2 machine than the figures
# above: 9.7 ms at one thread, 2.3 us a plane over 512 planes or more against 0.5 us when
# the same 64 planes repeat -- a row of 12 windows is shorter than LLVM's vector loop, and
# the scalar selects look mispredicted: left for later.)
# The backward scatter stays whole: split, it measured 1.2-1.3 -> 1.4 ms (likely the first
# touch of the freshly zeroed gradient's pages, which two threads contend for).

#: pooling inputs from this many elements split their planes over the threads (a pool
#: round trip costs 10-40 us; 2**18 float32 elements take ~0.25 ms a pass on one core)
POOL_SPLIT = 1 << 18


def _pool_impl(*arrays):
    if _fast(*arrays) is None:
        return None
    return _module("_numba_pool")


def max_pool2d(x, kernel_size, stride, padding, dilation, out_size):
    """2-d max pooling with indices (NOTE [ Compiled max pooling ]), or None where not
    covered.

    Args:
        x: (N, C, H, W) array.
        kernel_size, stride, padding, dilation: pairs of ints.
        out_size: the output plane (OH, OW).

    Returns:
        tuple | None: (values (N, C, OH, OW) of x's dtype, indices int64: the flat position
        ``h * W + w`` of each maximum in its input plane).

    Example::

        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> r = max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (2, 2))
        >>> r is None or (r[0].ravel().tolist(), r[1].ravel().tolist()) == (
        ...     [5.0, 7.0, 13.0, 15.0], [5, 7, 13, 15])
        True
    """
    if tuple(kernel_size) != (2, 2) or tuple(stride) != (2, 2) or any(padding) or \
            tuple(dilation) != (1, 1):
        return None
    impl = _pool_impl(x)
    if impl is None or x.ndim != 4 or not x.flags.c_contiguous:
        return None
    n, c, h, w = x.shape
    oh, ow = out_size
    if 2 * oh > h or 2 * ow > w:  # a ceil_mode window past the edge
        return None
    values = np.empty((n, c, oh, ow), x.dtype)
    index = np.empty((n, c, oh, ow), np.int64)
    xs, vs, js = (x.reshape(n * c, h, w), values.reshape(n * c, oh, ow),
                  index.reshape(n * c, oh, ow))

    def run(lo, hi):  # NOTE [ Compiled max pooling ]: planes on threads
        impl.max_pool2x2_planes(xs[lo:hi], vs[lo:hi], js[lo:hi])

    if x.size < POOL_SPLIT or not _parallel.split_on_threads(run, n * c, min_size=2):
        run(0, n * c)
    return values, index


def max_pool_backward(g, index, input_shape):
    """Scatter-add ``g`` into zeros of ``input_shape`` at the flat plane positions ``index``
    (max pooling's backward; NOTE [ Compiled max pooling ]), or None where not covered
    (including any index outside its plane: the caller's path reports it).

    Args:
        g: (N, C, *out) float32 gradient.
        index: int64 positions, g's shape.
        input_shape: (N, C, *spatial).

    Returns:
        ndarray | None: float32 array of ``input_shape``.

    Example::

        >>> r = max_pool_backward(np.ones((1, 1, 1, 2), np.float32),
        ...                       np.array([[[[1, 1]]]]), (1, 1, 2, 2))
        >>> r is None or r.ravel().tolist() == [0.0, 2.0, 0.0, 0.0]
        True
    """
    impl = _pool_impl(g)
    if impl is None or index.dtype != np.int64 or index.shape != g.shape or g.ndim < 2:
        return None
    planes = math.prod(input_shape[:2])
    if planes == 0 or tuple(g.shape[:2]) != tuple(input_shape[:2]):
        return None
    gx = np.zeros(tuple(input_shape), g.dtype)
    ok = impl.scatter_add_planes(np.ascontiguousarray(g).reshape(planes, -1),
                                 np.ascontiguousarray(index).reshape(planes, -1),
                                 gx.reshape(planes, -1))
    return gx if ok else None


# NOTE [ Fused optimizer steps ]
# An optimizer's functional update is about eight tensor ops per parameter (SGD with
# momentum three to five, Adadelta eleven), each a pass over memory with a temporary. For
# float32 NumPy arrays the steps below are one compiled pass (``_numba_optim.py``; Adam and
# AdamW are ``adam`` above), computing each element with the ops' float32 operations in
# their order, so the results equal the op-by-op update's. The callers (``ember/optim``)
# take them only where no mode intercepts ops and no graph is recorded, as for Adam.


def _optim_impl(*arrays):
    impl = _fast(*arrays)
    if impl is None:
        return None
    shape = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != shape or not a.flags.c_contiguous or (i != 1 and not a.flags.writeable):
            return None
    return _module("_numba_optim")


def sgd(p, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """One SGD step in place on the arrays ``p`` and ``buf`` (``buf`` None without momentum;
    NOTE [ Fused optimizer steps ]); False (having changed nothing) where not covered.

    Args:
        p, g, buf: float32 arrays of one shape, C-contiguous (``g`` is only read).
        lr, momentum, dampening, weight_decay: the hyper-parameters (floats).
        nesterov, maximize: the flags.

    Returns:
        bool: whether the step ran.

    Example::

        >>> p, g, b = np.ones(2, np.float32), np.ones(2, np.float32), np.ones(2, np.float32)
        >>> ran = sgd(p, g, b, lr=0.5, momentum=0.5, dampening=0.0, weight_decay=0.0,
        ...           nesterov=False, maximize=False)
        >>> not ran or (p.tolist(), b.tolist()) == ([0.25, 0.25], [1.5, 1.5])
        True
    """
    has_momentum = momentum != 0
    if has_momentum and buf is None:
        return False
    impl = _optim_impl(p, g, buf) if has_momentum else _optim_impl(p, g)
    if impl is None:
        return False
    f = np.float32
    keep = 1 - dampening
    pf, gf, bf = p.reshape(-1), g.reshape(-1), (buf if has_momentum else p).reshape(-1)
    args = (f(-lr), f(momentum), f(keep), bool(nesterov), f(weight_decay), bool(maximize),
            has_momentum, keep != 1)

    def run(lo, hi):  # NOTE [ Optimizer steps on threads ]
        impl.sgd_into(pf[lo:hi], gf[lo:hi], bf[lo:hi], *args)

    if not _parallel.split_on_threads(run, pf.size, min_size=OPTIM_SPLIT):
        run(0, pf.size)
    return True


def adadelta(p, g, square_avg, acc_delta, *, lr, rho, eps, weight_decay, maximize):
    """One Adadelta step in place on the arrays ``p``, ``square_avg`` and ``acc_delta``
    (NOTE [ Fused optimizer steps ]); False (having changed nothing) where not covered.

    Args:
        p, g, square_avg, acc_delta: float32 arrays of one shape, C-contiguous.
        lr, rho, eps, weight_decay: the hyper-parameters (floats).
        maximize: ascend instead.

    Returns:
        bool: whether the step ran.

    Example::

        >>> p, g = np.zeros(1, np.float32), np.ones(1, np.float32)
        >>> sa, ad = np.zeros(1, np.float32), np.zeros(1, np.float32)
        >>> ran = adadelta(p, g, sa, ad, lr=1.0, rho=0.0, eps=0.0, weight_decay=0.0,
        ...                maximize=False)
        >>> not ran or (sa.tolist(), p.tolist()) == ([1.0], [-0.0])
        True
    """
    impl = _optim_impl(p, g, square_avg, acc_delta)
    if impl is None:
        return False
    f = np.float32
    flats = (p.reshape(-1), g.reshape(-1), square_avg.reshape(-1), acc_delta.reshape(-1))
    args = (f(-lr), f(rho), f(1 - rho), f(eps), f(weight_decay), bool(maximize))

    def run(lo, hi):  # NOTE [ Optimizer steps on threads ]
        impl.adadelta_into(*[a[lo:hi] for a in flats], *args)

    if not _parallel.split_on_threads(run, p.size, min_size=OPTIM_SPLIT):
        run(0, p.size)
    return True


# NOTE [ Optimizer steps on threads ]
# A step updates every element on its own, so a large parameter's arrays are cut into one
# contiguous run per thread on ember's pool (``_parallel.split_on_threads``, which declines
# on one thread or an oversubscribed machine): the same bits as one pass. The kernels are
# memory-bound (~0.5 ns an element), so the pool's ~40 us round trip pays from about 2**19
# elements (the MNIST CNN's (128, 9216) weight; its small tensors stay on one thread).
OPTIM_SPLIT = 1 << 19


# NOTE [ Compiled batch norm ]
# Batch norm is memory-bound: NumPy's training forward makes six passes over x (the sums
# through BLAS, the centred copy, its square, the scale and the shift; NOTE [ Batch norm
# passes ] in ``ember/_ops/nn_norm.py``) and its backward eight. The kernels in
# ``_numba_norm.py`` work channel by channel: the forward reads a channel's planes three
# times (sum, centred sum of squares, output) and the backward twice (both sums in one
# pass, then the gradient), all but the first from the cache. Covered: training mode,
# float32 inputs of two dimensions or more (strided ones are copied first, so that every
# layout gives the same numbers), float32 (or no) weight and bias. Inputs from
# ``BATCH_NORM_SPLIT`` elements split their channels over ember's threads
# (``_parallel.split_on_threads``): every channel's numbers are the same whichever thread
# computes it.


def _norm_impl(*arrays):
    if _fast(*arrays) is None:
        return None
    return _module("_numba_norm")


#: batch norm inputs from this many elements split their channels over the threads: a
#: pool round trip costs 10-100 us, and (32, 64, 32, 32) takes ~3.5 ms a pass on one thread
BATCH_NORM_SPLIT = 1 << 17


def _by_channels(fn, x):
    """``fn(lo, hi)`` over x's channels, split over the threads for large inputs (NOTE
    [ Compiled batch norm ]): each channel's result is the same on any thread."""
    c = x.shape[1]
    if x.size < BATCH_NORM_SPLIT or not _parallel.split_on_threads(fn, c, min_size=2):
        fn(0, c)


def _channel_planes(a):
    n, c = a.shape[:2]
    return a.reshape(n, c, -1)


def batch_norm(x, w, b, eps):
    """Training-mode batch norm (NOTE [ Compiled batch norm ]) or None where not covered.

    Args:
        x: (N, C, *) float32 array.
        w, b: (C,) weight and bias, or None.
        eps: added to the variance.

    Returns:
        tuple | None: (y of x's shape, mean (C,), rstd (C,)), float32.

    Example::

        >>> r = batch_norm(np.array([[1.0], [3.0]], np.float32), None, None, 0.0)
        >>> r is None or (r[0].ravel().tolist(), r[1].tolist()) == ([-1.0, 1.0], [2.0])
        True
    """
    impl = _norm_impl(x)
    if impl is None or x.ndim < 2:
        return None
    x = np.ascontiguousarray(x)  # (strided inputs too: the same numbers for every layout)
    c = x.shape[1]
    for p in (w, b):
        if p is not None and (type(p) is not np.ndarray or p.dtype != _F32 or p.size != c):
            return None
    y = np.empty(x.shape, np.float32)
    mean = np.empty(c, np.float32)
    rstd = np.empty(c, np.float32)
    wf, has_w = _param(w, c)
    bf, has_b = _param(b, c)
    xc, yc, epsf = _channel_planes(x), _channel_planes(y), np.float32(eps)
    _by_channels(lambda lo, hi: impl.batch_norm_train(xc, wf, bf, has_w, has_b, epsf, yc,
                                                      mean, rstd, lo, hi), x)
    return y, mean, rstd


def batch_norm_backward(g, x, w, mean, rstd):
    """Training-mode batch norm gradients (gx, gw, gb) (NOTE [ Compiled batch norm ]), or
    None where not covered; gw is an empty array when ``w`` is None.

    Args:
        g: the output's gradient, x's shape.
        x: the (N, C, *) float32 input.
        w: (C,) weight or None.
        mean, rstd: (C,) the forward's statistics.

    Returns:
        tuple | None: (gx, gw, gb), float32.

    Example::

        >>> x = np.array([[1.0], [3.0]], np.float32)
        >>> r = batch_norm_backward(np.ones_like(x), x, None, np.array([2.0], np.float32),
        ...                         np.array([1.0], np.float32))
        >>> r is None or (r[0].ravel().tolist(), r[2].tolist()) == ([0.0, 0.0], [2.0])
        True
    """
    impl = _norm_impl(g, x, mean, rstd)
    if impl is None or x.ndim < 2 or g.shape != x.shape:
        return None
    c = x.shape[1]
    if w is not None and (type(w) is not np.ndarray or w.dtype != _F32 or w.size != c):
        return None
    if mean.size != c or rstd.size != c:
        return None
    g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
    gx = np.empty(x.shape, np.float32)
    gw = np.empty(c, np.float32)
    gb = np.empty(c, np.float32)
    wf, has_w = _param(w, c)
    gc, xc, gxc = _channel_planes(g), _channel_planes(x), _channel_planes(gx)
    mean, rstd = np.ascontiguousarray(mean).reshape(-1), np.ascontiguousarray(rstd).reshape(-1)
    _by_channels(lambda lo, hi: impl.batch_norm_train_backward(gc, xc, wf, has_w, mean, rstd,
                                                               gxc, gw, gb, lo, hi), x)
    return gx, (gw if has_w else gw[:0]), gb
