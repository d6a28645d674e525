"""Winograd's F(2x2, 3x3) on NCHW planes with compiled transforms (the ``fast`` extra).

NOTE [ Planar Winograd ]
The NumPy Winograd path (NOTE [ Winograd convolution ] in ``nn_winograd.py``) spends most
of its time in the transforms: each is a dozen NumPy passes over arrays four times the
input's size, so it only pays on small planes with many channels. With numba the three
transforms (input tiles B^T d B, output A^T M A and its adjoint A dY A^T) are one loop each
(``ember/_kernels/_numba_conv.py``), reading and writing NCHW planes directly: transformed
tiles are laid out (16, C, tiles), tiles in (sample, row, column) order, so

- forward: ``M[xi] = U[xi] @ V[xi]``, (O, C) by (C, tiles), one stacked matmul;
- input adjoint: the convolution of g with the flipped kernel, ``U[flip xi]^T @ V_g[xi]``;
- weight adjoint: ``dU[xi] = dM[xi] @ V[xi]^T``, then ``G^T dU G``;

and no layout change of input or output is needed. The GEMMs do 16 multiplications per
output tile and channel pair against 36 for direct convolution (2.25x fewer flops), which is
what makes a 3x3 stride-1 layer beat gathered columns even on ResNet's 32x32 stage, where
the NumPy transforms cost more than they save. The transforms are near the memory's speed
(the input transform writes four times the input); what is left is OpenBLAS's speed on
these thin GEMMs (about 140 GFLOP/s on one core here, PyTorch's conv kernels about 200).
Measured in ``_pays``. With more than one thread configured, the batch is cut into one
piece per thread, each running its transforms and GEMMs with the BLAS at one thread (NOTE
[ Batch pieces on threads ] in ``ember/_parallel.py``): at two threads the transforms had
run on one core between two-thread GEMMs. A 3x3 64->64 forward of (32, 64, 32, 32) took
28 ms in pieces against 56-60 ms before on the loaded development machine (same process,
alternating); the weight gradient adds the pieces' ``dU``.

Covered: NumPy float32 arrays, 3x3, stride 1, undilated, ungrouped, padding at most 2; the
caller (``nn_conv``) keeps every other case, and every case when the kernels backend is
``numpy`` (``EMBER_KERNELS=numpy``).
"""

from __future__ import annotations

import numpy as np

from .. import _kernels, _parallel
from .._kernels import _blas, _mlas, _weight_tiles
from . import nn_winograd as winograd

_F32 = np.dtype(np.float32)

# a batch chunk's transformed tiles stay under this many bytes: 1 MB (in L2 between the
# transform and the GEMMs) measured best for the forward and input adjoint, 15.2 against
# 16.4 ms at 4 MB on a 3x3 64->64 conv of (32, 64, 32, 32); the weight adjoint, whose
# GEMMs reduce over the tiles, is indifferent and takes 4 MB (fewer, longer GEMMs)
_TILE_BYTES = 2**20
_WEIGHT_TILE_BYTES = 4 * 2**20


def _impl():
    if _kernels.backend() != "numba":
        return None
    return _kernels._train._module("_numba_conv")


def output_plane(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype):
    """The output plane (ho, wo) of a convolution every compiled Winograd path can take --
    float32 NumPy, 3x3, stride 1, no dilation or groups, padding at most 2 -- or None."""
    if xp is not np or np.dtype(dtype) != _F32 or len(w_shape) != 4:
        return None
    if tuple(w_shape[2:]) != (3, 3) or groups != 1 or tuple(stride) != (1, 1):
        return None
    if tuple(dilation) != (1, 1) or any(p > 2 for p in padding) or x_shape[0] == 0:
        return None
    ho, wo = (x_shape[2 + i] + 2 * padding[i] - 2 for i in range(2))
    return (ho, wo) if ho >= 1 and wo >= 1 else None


def eligible(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype):
    """Whether a convolution takes the planar Winograd path (NOTE [ Planar Winograd ])."""
    plane = output_plane(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype)
    if plane is None or not _pays(x_shape[1], w_shape[0], *plane):
        return False
    return _impl() is not None


def _pays(c, o, ho, wo):
    """Whether the compiled Winograd path beats the others for c -> o channels and output
    planes (ho, wo). Measured (one thread, CPU time; forward / input gradient / weight
    gradient, ms) against the path that ran before (planar columns, or the NumPy Winograd
    path for the last two rows):

    ===========================  ==================  ==================  ==================
    layer (batch, c, plane, o)   before              compiled Winograd   PyTorch
    ===========================  ==================  ==================  ==================
    32, 64, 32x32, 64 (pad 1)    24.1 / 24.1 / 27.8  15.3 / 15.3 / 20.0  12.2 / 13.4 / 13.5
    64, 32, 26x26, 64 (pad 0)    14.4 / 22.8 / 16.2  9.6 / 13.5 / 19.1   7.6 / 7.9 / 7.8
    32, 128, 16x16, 128          15.5 / 15.2 / 15.6  12.4 / 12.9 / 18.2  10.9 / 11.2 / 11.9
    32, 16, 32x32, 16            3.7 / 3.7 / 4.9     2.3 / 2.4 / 3.8     1.2 / 1.2 / 1.2
    64, 64, 8x8, 64              3.1 / 3.0 / 3.5     3.8 / 3.9 / 5.1     1.4 / 1.4 / 1.7
    32, 256, 8x8, 256            11.3 / 11.0 / 11.2  12.1 / 13.6 / 14.0  10.3 / 10.4 / 13.1
    ===========================  ==================  ==================  ==================

    So: from 16 channels each way on output planes at least 14 wide. Smaller planes keep
    the NumPy Winograd path (many channels) or gathered columns, cheap there -- except that
    the channels-last tiles (NOTE [ Channels-last F(2x2) tiles ]) take planes from 4 wide
    with 64 to 512 channels, their products split by position where a batch piece holds
    few tiles or U is large (``_whole_batch``). In-process A/B against the NumPy Winograd
    path (ms, forward / both adjoints):

    ========================  ========================  ========================
    layer (batch, c, plane)   two threads               one thread
    ========================  ========================  ========================
    32, 512, 4x4 -> 512       6.9 / 13.8 -> 6.3 / 11.9  12.1 / 21.1 -> 10.9 / 19.2
    32, 512, 8x8 -> 512       16.5 / 37.8 -> 16.8 / 34  30.7 / 63.4 -> 27.5 / 57.4
    32, 256, 8x8 -> 256       6.9 / 13.7 -> 5.7 / 11.6  11.8 / 20.8 -> 10.2 / 17.3
    32, 128, 8x8 -> 128       3.4 / 7.1 -> 1.9 / 4.2    -
    ========================  ========================  ========================
    """
    if min(c, o) < 16:
        return False
    # below 14 wide only from 64 channels (NOTE [ Exact zeros of few-channel weight
    # gradients ])
    return min(ho, wo) >= 14 or (min(ho, wo) >= 4 and min(c, o) >= 64 and max(c, o) <= 512
                                 and _tiles_pay(c, o))


# NOTE [ Exact zeros of few-channel weight gradients ]
# A direct (columns) weight gradient is exactly 0 for a tap whose products x * g are all
# zero, which ReLU nets on small planes make often: a few channels, each live on a few
# pixels. Winograd's transforms mix the taps, so it leaves a rounding residue there (about
# 1e-11 against gradients of 1e-3), and Adam's first steps divide by |g| + eps: the residue
# becomes 0.4% of a full step and a 15-step Grad-CAM training ends 3e-4 from PyTorch. The
# small-plane tiles therefore start at 64 channels, where the NumPy Winograd path ran
# before them anyway; fewer channels keep the exact columns, cheap at that size.


def _small_plane(ho, wo):
    # below the planar kernels' own range: only the channels-last tiles run there (``_pays``)
    return min(ho, wo) < 14


def _tiles(h, w, pad):
    ho, wo = h + 2 * pad[0] - 2, w + 2 * pad[1] - 2
    return ho, wo, (ho + 1) // 2, (wo + 1) // 2


def _chunks(n, per_sample, budget=None):
    step = max(1, (budget or _TILE_BYTES) // max(per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _gemm_work(n, tiles, c, o, budget, per_tile=None):
    """Multiply-adds of one of a chunk's 16 GEMMs, for the BLAS thread choice: they are
    small (about 2**20-2**23), so the loop runs with the BLAS at one thread (NOTE [ GEMM
    threads by shape ] in ``ember/_kernels/_blas.py``; a CNN step's Winograd weight gradient
    took 1.3 s on two threads under load against tens of ms on one)."""
    per_sample = 16 * tiles * (per_tile or max(c, o)) * 4
    return min(n, max(1, budget // per_sample)) * tiles * c * o


def _convolve(x, u, pad, out_channels):
    """Winograd convolution of x (N, C, H, W) with transformed weights u (16, O, C)
    arranged for ``u[xi] @ v[xi]``: (N, O, Ho, Wo)."""
    k = _impl()
    n, c, h, w = x.shape
    ho, wo, th, tw = _tiles(h, w, pad)
    x = np.ascontiguousarray(x)
    y = np.empty((n, out_channels, ho, wo), x.dtype)

    def samples(lo, hi):
        for sl in _chunks(hi - lo, 16 * th * tw * max(c, out_channels) * x.itemsize):
            sl = slice(lo + sl.start, lo + sl.stop)
            xs = x[sl]
            m_ = xs.shape[0]
            v = np.empty((16, c, m_ * th * tw), x.dtype)
            k.winograd_input(xs, pad[0], pad[1], th, tw, v, 0, c)
            k.winograd_output(_mlas.product(u, v), th, tw, y[sl], 0, out_channels)

    if _parallel.split_batch(samples, n, 16 * n * th * tw * c * out_channels) is None:
        with _blas.one_thread_for(_gemm_work(n, th * tw, c, out_channels, _TILE_BYTES)):
            samples(0, n)
    return y


def conv2d(x, w, b, padding):
    """Forward: x (N, C, H, W), w (O, C, 3, 3), b (O,) or None."""
    u = winograd.weight_tiles(np, w)
    if winograd._keeps(np):  # for the backward (NOTE [ One weight transform per step ])
        _weight_tiles.keep("f2", x, w, u)
    if _tiles_pay(x.shape[1], w.shape[0]):
        return _convolve_cl(x, u.transpose(0, 2, 1), padding, b)
    y = _convolve(x, u, padding, w.shape[0])
    if b is not None:
        y += b.reshape(-1, 1, 1)
    return y


# NOTE [ Channels-last F(2x2) tiles ]
# The planar kernels' loops run over one plane's tile columns (twelve on the MNIST CNN's
# 24x24 conv2), short for the vector units. As for F(4x4) (NOTE [ Channels-last Winograd
# tiles ] in ember/_kernels/_winograd43.py), the forward's tiles may instead be laid out
# (16, tiles, channels), every transform loop running over the channels: the input is
# copied to a padded channels-last array, the products are ``M[xi] = V[xi] @ U[xi]`` with
# U (16, C, O), and the output transform writes NCHW planes with the bias. The transforms'
# additions are the planar kernels', in their order, and each product sums over C in
# order, so the forward's values are the planar path's (the tests check them bit for bit
# where MLAS runs both). Measured on the MNIST CNN's conv2 ((64, 32, 26, 26) -> 64, one
# thread, CPU time): 10.1 -> 7.8 ms. The backward keeps the planar kernels, which share one
# transform of g between both adjoints (NOTE [ One output transform for both adjoints ]).
_CL_TILE_BYTES = 2 * 2**20


def _tiles_pay(c, o):
    """Whether the forward takes channels-last F(2x2) tiles (NOTE [ Channels-last F(2x2)
    tiles ]): with MLAS for the products and at least 16 channels each way (the planar
    F(2x2) path's own rule, ``_pays``, decides the rest)."""
    return min(c, o) >= 16 and _mlas.engine() == "mlas"


# U of at least this many bytes is multiplied once per position over the whole batch
# rather than once per chunk (MLAS packs its second operand on every call)
_WHOLE_BATCH_U_BYTES = 4 * 2**20


def _whole_batch(n, th, tw, c, o):
    """Whether the channels-last tiles take the whole batch at once, their products split
    by position (NOTE [ Few tiles: products split by position ] in nn_winograd.py): where
    a batch piece holds few tiles, or U is large enough that packing it for every chunk's
    product costs more than the chunks save."""
    return winograd._by_position(np, n, th, tw) or 16 * c * o * 4 >= _WHOLE_BATCH_U_BYTES


# NOTE [ Whole-batch transforms on threads ]
# Where the channels-last tiles take the whole batch at once (``_whole_batch``: ResNet-18's
# 256- and 512-channel layers on 8x8 and 4x4 planes), the products are split by position
# over the threads, but the transforms around them -- the padded channels-last copy, the
# input tiles, the output tiles, and in the backward g's copy, its adjoint tiles and the
# input adjoint -- once ran whole on the calling thread while the other core waited: ~20
# ms of a two-thread ResNet-18 step (cProfile, wall against process CPU). Each transform
# works sample by sample, so ``by_samples`` cuts the samples over ember's pool (one
# contiguous run a thread, the kernels' ``*_part`` forms indexing the whole arrays), with
# the same values as one call.
_SPLIT_TRANSFORM = 1 << 16


def by_samples(fn, n, elements):
    """Run ``fn(lo, hi)`` over the samples ``range(n)``: one contiguous run per thread where
    the transform is large enough (``elements`` written) and ember's pool is free, else
    whole (NOTE [ Whole-batch transforms on threads ]).

    Args:
        fn: ``fn(lo, hi)``, writing disjoint outputs per sample.
        n: the samples.
        elements: the size of what ``fn`` writes over all samples.

    Example::

        >>> out = np.zeros(4)
        >>> by_samples(lambda lo, hi: out.__setitem__(slice(lo, hi), 1), 4, 4)
        >>> out.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    if elements < _SPLIT_TRANSFORM or not _parallel.split_on_threads(fn, n, min_size=2):
        fn(0, n)


def _convolve_cl(x, u, pad, bias=None):
    """x (N, C, H, W) convolved through channels-last F(2x2) tiles with U (16, C, O), any
    layout: (N, O, Ho, Wo), plus ``bias`` (O,) where given."""
    from .._kernels import _numba_winograd22 as k2
    from .._kernels._winograd43 import channels_last_tiles

    n, c, h, w = x.shape
    o = u.shape[2]
    ho, wo, th, tw = _tiles(h, w, pad)
    x = np.ascontiguousarray(x)
    y = np.empty((n, o, ho, wo), x.dtype)
    bias = np.zeros(o, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    tiles = th * tw
    if _whole_batch(n, th, tw, c, o):
        v = channels_last_tiles(x, pad, th, tw, 2, split=True)
        m = np.empty((16, n * tiles, o), x.dtype)

        def positions(lo, hi):
            for i in range(lo, hi):   # (u[i] in any layout: a transposed view costs no copy)
                _mlas.product(v[i], u[i], m[i])

        winograd._positions(positions, 16 * n * tiles * c * o)
        by_samples(lambda lo, hi: k2.output_tiles_cl_part(m, th, tw, bias, y, lo, hi), n,
                   m.size)
        return y
    step = max(1, _CL_TILE_BYTES // (16 * tiles * max(c, o) * x.itemsize))
    u = np.ascontiguousarray(u)   # (a stack is multiplied in one call)

    def samples(lo, hi):
        for a in range(lo, hi, step):
            b = min(a + step, hi)
            v = channels_last_tiles(x[a:b], pad, th, tw, 2)
            k2.output_tiles_cl(_mlas.product(v, u), th, tw, bias, y[a:b])

    if _parallel.split_batch(samples, n, 16 * n * tiles * c * o) is None:
        with _blas.one_thread_for(_gemm_work(n, tiles, c, o, _CL_TILE_BYTES)):
            samples(0, n)
    return y


def input_grad(g, w, padding):
    """Adjoint in x: g convolved with the flipped, transposed kernel (padding 2 - p)."""
    u = winograd.weight_tiles(np, w)                       # (16, O, C)
    pad = tuple(2 - p for p in padding)
    if _tiles_pay(w.shape[1], w.shape[0]):
        # (NOTE [ Channels-last F(2x2) tiles ]: U of the flipped kernel as (16, O, C) is the
        # (16, C', O') the tiles multiply by)
        return _convolve_cl(g, np.ascontiguousarray(u[list(winograd._FLIPPED)]), pad)
    uf = np.ascontiguousarray(u[list(winograd._FLIPPED)].transpose(0, 2, 1))  # (16, C, O)
    return _convolve(g, uf, pad, w.shape[1])


def weight_grad(x, g, padding):
    """Adjoint in w: G^T (sum over tiles of dM V^T) G, (O, C, 3, 3)."""
    k = _impl()
    n, c, h, w = x.shape
    o = g.shape[1]
    ho, wo, th, tw = _tiles(h, w, padding)
    if _small_plane(ho, wo):   # (NOTE [ Channels-last F(2x2) adjoints ])
        from .._kernels import _winograd_backward

        return _winograd_backward.backward_cl(x, g, None, padding, want_input=False)[1]
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)

    def samples(lo, hi):
        du = np.zeros((16, o, c), x.dtype)
        part = np.empty((16, o, c), x.dtype)
        for sl in _chunks(hi - lo, 16 * th * tw * (c + o) * x.itemsize, _WEIGHT_TILE_BYTES):
            sl = slice(lo + sl.start, lo + sl.stop)
            weight_tiles_into(k, x[sl], g[sl], padding, th, tw, du, part)
        return du

    parts = _parallel.split_batch(samples, n, 16 * n * th * tw * c * o)
    if parts is None:
        with _blas.one_thread_for(_gemm_work(n, th * tw, c, o, _WEIGHT_TILE_BYTES, c + o)):
            parts = [samples(0, n)]
    return winograd.weight_from_parts(np, parts)


def weight_tiles_into(k, x, g, padding, th, tw, du, part):
    """Add one chunk of samples' ``dM V^T`` (tile space, (16, O, C)) into ``du``; ``part``
    is a (16, O, C) scratch. Returns the chunk's transforms (V, dM) for a caller that reuses
    them (NOTE [ One output transform for both adjoints ] in
    ember/_kernels/_winograd_backward.py)."""
    m_ = x.shape[0]
    c, o = x.shape[1], g.shape[1]
    v = np.empty((16, c, m_ * th * tw), x.dtype)
    k.winograd_input(x, padding[0], padding[1], th, tw, v, 0, c)
    dm = np.empty((16, o, m_ * th * tw), x.dtype)
    k.winograd_output_adjoint(g, th, tw, dm, 0, o)
    # NOTE [ Weight adjoint products on MLAS ]
    _mlas.product(dm, v.transpose(0, 2, 1), part)
    du += part
    return v, dm


# NOTE [ Weight adjoint products on MLAS ]
# The weight adjoint's 16 products ``dM[xi] @ V[xi]^T`` reduce over a chunk's tiles: one
# stack whose second operand's members are transposed views, which MLAS runs as one
# ``FusedMatMul`` call (NOTE [ Stacks of transposed members ] in ember/_kernels/_mlas.py):
# ResNet-18's 64x64 on 32x32, 0.66 -> 0.33 ms a chunk against NumPy's stacked matmul, and
# 128x128 on 16x16 0.87 -> 0.67 against one MLAS call a position, as this path ran before.
# Where MLAS is not the engine, or declines the stack, NumPy's stacked matmul runs it.


