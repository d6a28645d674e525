"""Both adjoints of a planar F(2x2, 3x3) Winograd convolution from one transform of the
output gradient (numba backend).

NOTE [ One output transform for both adjoints ]
The planar F(2x2, 3x3) path (NOTE [ Planar Winograd ] in ``ember/_ops/nn_conv_winograd.py``)
computes a training step's two adjoints apart: the input adjoint as a forward Winograd
convolution of g with the flipped kernel (an input transform of the padded g, 16 GEMMs, an
output transform), the weight adjoint from ``dM = A dY A^T`` of g's tiles and the input's
transform V. But the input adjoint is also ``B (U[xi]^T dM[xi]) B^T`` summed over the
overlapping tiles -- the adjoint of the forward's own steps -- and dM is already at hand
for the weight adjoint. So one pass over g serves both: per batch chunk, V of x and dM of
g, then ``dU[xi] += dM[xi] V[xi]^T`` and ``dV[xi] = U[xi]^T dM[xi]``, and dV goes back
to the input's planes by the adjoint of the input transform
(``ember/_kernels/_numba_winograd_adjoint.py``). This drops the input transform of the
padded g (on the MNIST CNN's second layer, 64 channels of 28x28 against the input's 32 of
26x26, the largest of its transforms) and GEMMs over the forward's tiles, which are fewer
than those of g padded by 2 - p. The weight gradient is bit for bit the separate path's
(same chunks, same GEMMs, same sums); the input gradient agrees to float rounding.

Used where both adjoints are wanted and the planar F(2x2, 3x3) path applies and F(4x4,
3x3) does not (NOTE [ Winograd F(4x4, 3x3) ]).
"""

from __future__ import annotations

import numpy as np

from .. import _parallel
from . import _blas, _mlas, _weight_tiles

# a batch chunk's tiles (V, dM and dV) stay under this many bytes: that of the separate
# weight adjoint, whose chunks (and so sums) this path must repeat
_TILE_BYTES = 4 * 2**20

# NOTE [ The input adjoint in cache-sized pieces ]
# The weight adjoint's chunks are fixed (its sums must be the separate path's), but each
# sample's input adjoint stands alone: ``dV = U^T dM`` and its adjoint transform back to the
# input's planes run over as many samples at a time as keep dV (16 x C x tiles a sample)
# within ``_ADJOINT_BYTES``, so that it is still in the core's L2 cache when the transform
# reads it. Measured on one thread (AMD EPYC, L2 1 MB a core, medians, load 7-9): the MNIST
# CNN's conv2 backward (64, 32 -> 64, 26x26; 295 KB of dV a sample, four samples a chunk)
# 0.86-0.88x the time of whole chunks in pieces of one sample, 0.99x in pieces of two
# (590 KB); ResNet-18's stage 2 (32, 128 -> 128, 16x16; 524 KB a sample) 1.06x in pieces of
# one (its GEMMs get 64 columns), so where one sample's dV reaches the bound the chunks run
# whole, as before. The input gradient's bits do not change: every column of dV is the same
# GEMM's dot product over O, whatever the piece. (Stage 2's dV is exactly 2**19 bytes, 16 x
# 128 x 64 x 4, and until session 26 the floor division gave it pieces of one sample, the
# case measured slower: whole chunks took its backward 31.9 -> 30.0 ms under
# ``OPENBLAS_CORETYPE=Haswell``, 23.6 -> 22.4 unset, one thread; bench/RESULTS.md.)
_ADJOINT_BYTES = 2**19


def _impl():
    from . import _numba_conv, _numba_winograd_adjoint

    return _numba_conv, _numba_winograd_adjoint


def backward(x, g, w, padding):
    """Input and weight gradients of a 3x3 stride-1 convolution of x (N, C, H, W) with w
    (O, C, 3, 3), zero padding ``padding``, given g (N, O, Ho, Wo).

    Args:
        x: the input, float32.
        g: the output gradient.
        w: the weight.
        padding: (ph, pw), each at most 2.

    Returns:
        (gx, gw): arrays shaped as x and w.

    Example::

        >>> x = np.ones((1, 16, 16, 16), np.float32)
        >>> g = np.ones((1, 16, 16, 16), np.float32)
        >>> [a.shape for a in backward(x, g, np.ones((16, 16, 3, 3), np.float32), (1, 1))]
        [(1, 16, 16, 16), (16, 16, 3, 3)]
    """
    from .._ops import nn_conv_winograd as planar
    from .._ops import nn_winograd as winograd

    k, ka = _impl()
    n, c, h, wd = x.shape
    o = g.shape[1]
    _, _, th, tw = planar._tiles(h, wd, padding)
    # the forward's transform where it kept one (NOTE [ One weight transform per step ] in
    # ember/_kernels/_weight_tiles.py); its transposed view multiplies as fast as a copy
    u = _weight_tiles.take("f2", x, w)
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    ut = (winograd.weight_tiles(np, w) if u is None else u).transpose(0, 2, 1)  # (16, C, O)
    gx = np.empty(x.shape, x.dtype)
    per_sample = 16 * th * tw * (c + o) * x.itemsize
    tiles = th * tw
    # samples per piece of the input adjoint (NOTE [ The input adjoint in cache-sized pieces ]):
    # whole chunks (0) where one sample's dV alone reaches the bound
    sample_dv = 16 * c * tiles * x.itemsize
    piece = (_ADJOINT_BYTES // sample_dv if sample_dv < _ADJOINT_BYTES else 0) or n

    def samples(lo, hi):
        du = np.zeros((16, o, c), x.dtype)
        part = np.empty((16, o, c), x.dtype)
        for sl in planar._chunks(hi - lo, per_sample, _TILE_BYTES):
            sl = slice(lo + sl.start, lo + sl.stop)
            m_ = sl.stop - sl.start
            v, dm = planar.weight_tiles_into(k, x[sl], g[sl], padding, th, tw, du, part)
            # (v is spent: its buffer takes dV, piece by piece)
            dv = v.reshape(-1)[:16 * c * min(piece, m_) * tiles]
            for a in range(0, m_, piece):
                b = min(a + piece, m_)
                dvp = dv[:16 * c * (b - a) * tiles].reshape(16, c, (b - a) * tiles)
                _mlas.product(ut, dm[:, :, a * tiles:b * tiles], dvp)
                ka.input_adjoint(dvp.reshape(16, c, b - a, th, tw), padding[0], padding[1],
                                 gx[sl.start + a:sl.start + b])
        return du

    parts = _parallel.split_batch(samples, n, 32 * n * th * tw * c * o)
    if parts is None:
        step = planar._chunks(n, per_sample, _TILE_BYTES)[0].stop
        with _blas.one_thread_for(step * th * tw * c * o):
            parts = [samples(0, n)]
    return gx, winograd.weight_from_parts(np, parts)


# NOTE [ Channels-last F(2x2) adjoints ]
# The adjoints through channels-last tiles (NOTE [ Channels-last F(2x2) tiles ] in
# ember/_ops/nn_conv_winograd.py): per batch chunk, the input's tiles V (16, tiles, C) as
# the forward makes them, g copied channels-last and its tiles dM = A dY A^T (16, tiles, O)
# (``output_adjoint_cl``), then
#
# - the weight adjoint ``dU[xi] += dM[xi]^T @ V[xi]``, sixteen products each reducing over
#   the chunk's tiles -- (O, tiles) by (tiles, C), the first operand a transposed view,
#   which MLAS takes as it is;
# - the input adjoint ``dV[xi] = dM[xi] @ U[xi]`` (U (16, O, C) as the forward keeps it)
#   in V's spent buffer, taken back to NCHW planes by the adjoint of the input transform
#   (``input_adjoint_cl``, a sample summed channels-last in a buffer that stays in cache).
#
# Every transform loop runs over the channels where the planar kernels run over a plane's
# tile columns. The sums are F(2x2)'s, in another order (the weight adjoint's over tiles in
# other chunks): float rounding apart from the planar path. Measured (ms, both adjoints,
# in-process A/B against the planar path's shared transform of g, NOTE [ One output
# transform for both adjoints ]): the MNIST CNN's conv2 (64, 32 -> 64, 26x26) 21.1 -> 17.6
# at one thread, 12.2 -> 10.7 at two; (32, 32 -> 32, 32x32) 7.3 -> 6.3 and (32, 16 -> 16,
# 32x32) 3.2 -> 2.8 at two. The weight adjoint alone (where F(4x4) takes the input
# adjoint) measured no faster than the planar kernels (64 -> 64 on 32x32: 16.0 against
# 15.4 at one thread), so it keeps them. The weight adjoint's products reducing over a
# chunk's tiles are one stack with transposed first members, one MLAS call (NOTE [ Stacks of
# transposed members ] in _mlas.py): the MNIST CNN's conv2 0.189 -> 0.148 ms a chunk against
# NumPy's stacked matmul.
_CL_TILE_BYTES = 2 * 2**20


def backward_cl(x, g, w, padding, want_input=True):
    """Weight (and input) gradients of a 3x3 stride-1 convolution of x (N, C, H, W) with w
    (O, C, 3, 3), zero padding ``padding``, given g (N, O, Ho, Wo), through channels-last
    F(2x2) tiles (NOTE [ Channels-last F(2x2) adjoints ]).

    Args:
        x: the input, float32.
        g: the output gradient.
        w: the weight (only read for the input gradient; None without it).
        padding: (ph, pw), each at most 2.
        want_input: whether to compute the input gradient too.

    Returns:
        (gx or None, gw): arrays shaped as x and w.

    Example::

        >>> x = np.ones((1, 16, 16, 16), np.float32)
        >>> g = np.ones((1, 16, 16, 16), np.float32)
        >>> gx, gw = backward_cl(x, g, np.ones((16, 16, 3, 3), np.float32), (1, 1))
        >>> gx.shape, gw.shape
        ((1, 16, 16, 16), (16, 16, 3, 3))
    """
    from .._ops import nn_conv_winograd as planar
    from .._ops import nn_winograd as winograd
    from . import _numba_winograd22 as k2, _numba_winograd43 as k4
    from ._winograd43 import channels_last_tiles

    n, c, h, wd = x.shape
    o = g.shape[1]
    ho, wo, th, tw = planar._tiles(h, wd, padding)
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    u = None
    if want_input:
        u = _weight_tiles.take("f2", x, w)
        u = winograd.weight_tiles(np, w) if u is None else u     # (16, O, C)
    gx = np.empty(x.shape, x.dtype) if want_input else None
    tiles = th * tw
    if planar._whole_batch(n, th, tw, c, o):
        # (NOTE [ Whole-batch transforms on threads ] in ember/_ops/nn_conv_winograd.py)
        v = channels_last_tiles(x, padding, th, tw, 2, split=True)
        gp = np.empty((n, 2 * th, 2 * tw, o), x.dtype)
        dm = np.empty((16, n * tiles, o), x.dtype)

        def g_tiles(lo, hi):
            k4.channels_last_padded(g[lo:hi], 0, 0, gp[lo:hi])
            k2.output_adjoint_cl_part(gp, th, tw, dm, lo, hi)

        planar.by_samples(g_tiles, n, dm.size)
        del gp
        du = np.empty((16, o, c), x.dtype)

        def positions(lo, hi):
            for i in range(lo, hi):
                _mlas.product(dm[i].T, v[i], du[i])
                if want_input:
                    _mlas.product(dm[i], u[i], v[i])     # dV[i] into V[i], now spent

        winograd._positions(positions, 16 * n * tiles * c * o * (2 if want_input else 1))
        if want_input:
            planar.by_samples(lambda lo, hi: k2.input_adjoint_cl_part(
                v, th, tw, padding[0], padding[1], gx, lo, hi), n, gx.size)
        return gx, winograd.weight_from_parts(np, [du])
    step = max(1, _CL_TILE_BYTES // (16 * tiles * (c + o) * x.itemsize))

    def samples(lo, hi):
        du = np.zeros((16, o, c), x.dtype)
        part = np.empty((16, o, c), x.dtype)
        for a in range(lo, hi, step):
            b = min(a + step, hi)
            m_ = b - a
            v = channels_last_tiles(x[a:b], padding, th, tw, 2)
            gp = np.empty((m_, 2 * th, 2 * tw, o), x.dtype)
            k4.channels_last_padded(g[a:b], 0, 0, gp)
            dm = np.empty((16, m_ * tiles, o), x.dtype)
            k2.output_adjoint_cl(gp, th, tw, dm)
            del gp
            # one stack of transposed members (NOTE [ Stacks of transposed members ] in
            # _mlas.py; NumPy's stacked matmul where MLAS is not the engine)
            du += _mlas.product(dm.transpose(0, 2, 1), v, part)
            if want_input:
                _mlas.product(dm, u, v)      # dV into V's spent buffer
                k2.input_adjoint_cl(v, th, tw, padding[0], padding[1], gx[a:b])
        return du

    parts = _parallel.split_batch(samples, n, 32 * n * tiles * c * o)
    if parts is None:
        with _blas.one_thread_for(min(step, n) * tiles * c * o):
            parts = [samples(0, n)]
    return gx, winograd.weight_from_parts(np, parts)
