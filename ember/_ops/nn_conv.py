"""Convolution (1-d, 2-d, 3-d; strided, padded, dilated, grouped) and its transpose.

NOTE [ Convolution as three linear ops ]
A convolution ``y = conv(x, w)`` is linear in ``x`` and in ``w`` separately. Three ops
cover forward, backward and every higher derivative:

- ``conv(x, w)``: the forward convolution;
- ``conv_input_grad(g, w)``: its adjoint in ``x`` (a transposed convolution);
- ``conv_weight_grad(x, g)``: its adjoint in ``w``.

Each op's derivatives are the other two (adjoints of adjoints), so double backward through a
CNN needs no extra code. ``conv_transpose`` is ``conv_input_grad`` under another name.

Kernels gather input windows into channels-last columns (NOTE [ Channels-last columns ])
so the arithmetic is one GEMM per group; the adjoint in ``x`` scatters the columns back
with one add per kernel tap. Stride-1 3x3 convolutions with many channels on small planes
take Winograd's F(2x2, 3x3) instead, for all three ops (NOTE [ Winograd convolution ] in
``nn_winograd.py``); with numba (the ``fast`` extra) float32 ones on planes from 14 wide
take Winograd with compiled transforms (NOTE [ Planar Winograd ] in
``nn_conv_winograd.py``), the largest of them F(4x4, 3x3) for the forward and input adjoint
(NOTE [ Winograd F(4x4, 3x3) ] in ``ember/_kernels/_winograd43.py``; up to 256 channels its
tiles laid out channels-last, NOTE [ Channels-last Winograd tiles ] there), the others both
adjoints from one transform of g (NOTE [ One output transform for both adjoints ] in
``ember/_kernels/_winograd_backward.py``). Grouped convolutions, depthwise ones above all,
gather shifted-plane columns (NOTE [ Shifted-plane columns ] in ``nn_conv_grid.py``).

Which path runs, first match (CuPy arrays take planar or channels-last columns only):

=====================================================  ======================================
case                                                   path
=====================================================  ======================================
3x3 stride 1, float32, numba, 64 <= c, o <= 256,       F(4x4, 3x3) Winograd through
output plane at least 9 wide (the input adjoint: by    channels-last tiles
its own channels and plane)
3x3 stride 1, float32, numba, c, o >= 64, plane >= 28  compiled F(4x4, 3x3) Winograd
(so: more than 256 channels on one side)               (forward and input adjoint)
3x3 stride 1, float32, numba, c, o >= 16, plane >= 14  compiled F(2x2) Winograd (with MLAS
(with MLAS: plane >= 4, 64 to 512 channels)            through channels-last tiles; else
                                                       both adjoints from one transform of g)
depthwise, float32, numba                              compiled depthwise loops
3x3 stride 1, c, o >= 64, rows <= 24 (or >= 256 ch)    NumPy Winograd
ungrouped, rows >= 16 (20 strided), or 1x1             planar columns
grouped (NumPy), rows >= 16, or depthwise              shifted-plane columns
everything else                                        channels-last columns
=====================================================  ======================================

With two or more threads configured, NumPy float convolutions large enough run one piece
of the batch per thread, whatever the path (NOTE [ Convolutions in batch pieces ]).

The rules were measured under OpenBLAS's AVX-512 (SkylakeX) kernels and rechecked under its
AVX2 ones (``OPENBLAS_CORETYPE=Haswell``, products ~1.9x slower): each of ResNet-18's and the
MNIST CNN's layers keeps the same fastest path under both, so the choice does not read the
BLAS kernel type (``python -m bench._conv_paths``; NOTE [ Convolution paths by layer ]).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .. import _dispatch, _parallel
from .._core import dtype as _dt
from .._core.tensor import Tensor
from .._kernels import _blas
from .._kernels import _winograd43 as winograd43
from .._kernels import _winograd_backward as winograd_backward
from . import nn_conv_grid as grid
from . import nn_conv_half as conv_half
from . import nn_conv_winograd as fast_winograd
from . import nn_winograd as winograd
from .channels_last import channels_last, copy_channels_last
from .linalg import upcast_lowp
from . import _node_names
from ._memory_format import keep_layout
from ._registry import Op, observing_profiler, public, recorded_as
from .indexing import multilinear_jvp  # forward-mode rules
from .nn_pad import pad
from .nn_checks import kernel_dtype


def strided_view(xp, a, shape, strides):
    """A read-only view of ``a`` with the given shape and byte strides (windows of an input,
    for gathers that copy them out)."""
    if xp is np:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def sliding_windows(xp, a, out, ksize, stride, dilation):
    """View (N, C, *out, *k) of the windows of ``a`` (N, C, *spatial), already padded."""
    nd = len(ksize)
    st = a.strides
    shape = a.shape[:2] + tuple(out) + tuple(ksize)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) + \
        tuple(st[2 + i] * dilation[i] for i in range(nd))
    return strided_view(xp, a, shape, strides)


def _channel_rows(xp, a):
    """(N, C, *S) -> (C, N * prod(S)): one row per channel, whole planes copied."""
    n, c = a.shape[:2]
    return xp.ascontiguousarray(xp.moveaxis(a.reshape(n, c, -1), 1, 0)).reshape(c, -1)


def _to_channels_last_padded(xp, x, padding):
    """(N, C, *S) -> a fresh (N, *S_padded, C) array: one copy does the transpose and the
    zero padding."""
    nd = x.ndim - 2
    shape = (x.shape[0],) + tuple(x.shape[2 + i] + 2 * padding[i] for i in range(nd)) + \
        (x.shape[1],)
    out = xp.zeros(shape, dtype=x.dtype) if any(padding) else xp.empty(shape, dtype=x.dtype)
    inner = (slice(None),) + tuple(slice(p, p + x.shape[2 + i]) for i, p in
                                   enumerate(padding)) + (slice(None),)
    copy_channels_last(xp, out[inner], x)
    return out


def _out_shape(spatial, ksize, stride, dilation):
    return tuple((spatial[i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i] + 1
                 for i in range(len(ksize)))


def _columns(xp, x, ksize, stride, padding, dilation, groups):
    """Channels-last columns (G, N*prod(out), prod(k)*C/G) and the output spatial shape.

    NOTE [ Channels-last columns ]
    Windows are gathered from a channels-last copy of the input, so each copied run is a
    contiguous stretch of C values and the GEMM's reduction dimension (kernel taps x
    channels) is contiguous: this is several times faster than gathering NCHW windows.
    """
    nd = len(ksize)
    xl = _to_channels_last_padded(xp, x, padding)
    n, c = x.shape[0], x.shape[1]
    out = _out_shape(xl.shape[1:1 + nd], ksize, stride, dilation)
    st = xl.strides
    shape = (n,) + out + tuple(ksize) + (c,)
    strides = (st[0],) + tuple(st[1 + i] * stride[i] for i in range(nd)) + \
        tuple(st[1 + i] * dilation[i] for i in range(nd)) + (st[-1],)
    win = strided_view(xp, xl, shape, strides)
    kp = math.prod(ksize)
    if groups == 1:
        cols = xp.ascontiguousarray(win).reshape(1, n * math.prod(out), kp * c)
    else:
        cg = c // groups
        win = win.reshape((n,) + out + tuple(ksize) + (groups, cg))
        perm = (1 + 2 * nd,) + tuple(range(1 + 2 * nd)) + (2 + 2 * nd,)
        cols = xp.ascontiguousarray(win.transpose(perm)).reshape(groups, n * math.prod(out),
                                                                 kp * cg)
    return cols, out


def _weight_matrix(w, groups):
    """(O, C/G, *k) -> (G, O/G, prod(k)*C/G), taps-major to match the columns."""
    o, cg = w.shape[:2]
    nd = w.ndim - 2
    wl = w.transpose((0,) + tuple(range(2, 2 + nd)) + (1,))  # (O, *k, C/G)
    return wl.reshape(groups, o // groups, -1)


def _grad_rows(xp, g, groups):
    """(N, O, *out) -> (G, N*prod(out), O/G) channels-last rows of the output gradient."""
    n, o = g.shape[:2]
    if groups == 1:
        return channels_last(xp, g).reshape(1, -1, o)
    gl = xp.moveaxis(g, 1, -1)  # (N, *out, O)
    gl = gl.reshape(gl.shape[:-1] + (groups, o // groups))
    nd = g.ndim - 2
    perm = (1 + nd,) + tuple(range(1 + nd)) + (2 + nd,)
    return xp.ascontiguousarray(gl.transpose(perm)).reshape(groups, -1, o // groups)


def _grouped_matmul(xp, a, b, transpose_a=False, transpose_b=False):
    """a[g] @ b[g] for each group as plain 2-D GEMMs (NumPy's stacked matmul misses BLAS
    for transposed operands); one group needs no stacking copy."""
    def one(i):
        x = a[i].T if transpose_a else a[i]
        y = b[i].T if transpose_b else b[i]
        # BLAS threads by shape (NOTE [ GEMM threads by shape ] in ember/_kernels/_blas.py)
        return _blas.matmul(x, y) if xp is np else x @ y

    if a.shape[0] == 1:
        return one(0)[None]
    return xp.stack([one(i) for i in range(a.shape[0])])


# NOTE [ Conv batch chunks ]
# The columns matrix is prod(kernel) times the size of the input; for a whole batch it can
# be tens of megabytes. Above _COLUMN_BYTES the batch is processed in chunks of samples,
# which bounds the peak memory of forward and weight gradient and keeps each chunk's
# columns in cache between the gather and the GEMM.
_COLUMN_BYTES = 8 * 2**20


def _batch_chunks(x, ksize, stride, padding, dilation):
    """Slices of the batch whose columns stay under _COLUMN_BYTES each (at least 1 sample)."""
    spatial = tuple(x.shape[2 + i] + 2 * padding[i] for i in range(len(ksize)))
    per_sample = math.prod(_out_shape(spatial, ksize, stride, dilation)) * \
        math.prod(ksize) * x.shape[1] * x.dtype.itemsize
    return _sample_slices(x.shape[0], per_sample)


def _sample_slices(n, per_sample):
    """Slices of n samples, each holding at most _COLUMN_BYTES of columns (at least 1)."""
    step = max(1, _COLUMN_BYTES // max(per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def tap_region(tap, out, stride, dilation):
    """The input positions (one slice per spatial dim) that kernel tap ``tap`` reads for the
    ``out`` output positions."""
    return tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (out[i] - 1) + 1,
                       stride[i]) for i in range(len(out)))


# NOTE [ Planar columns ]
# For ungrouped convolutions on wide enough inputs the columns are gathered the other way
# round: (C * prod(k), N * prod(out)), row (c, tap) a shifted copy of input plane c, so every
# copied run is a row of the input (contiguous in NCHW for stride 1) and no channels-last
# transpose of the input is needed. The GEMM ``W @ cols`` yields (O, N, *out), which goes
# back to NCHW as whole output planes, and the weight gradient is ``g @ cols.T`` from the
# same columns. Measured against channels-last columns:
#
# * stride 1: a 3x3 64->64 conv of (32, 64, 32, 32) forward 31 -> 23 ms and weight gradient
#   34 -> 30 ms; 32->64 of (64, 32, 26, 26) forward 18 -> 17 ms and weight gradient
#   24 -> 17 ms. At 16x16 forward and weight gradient are equal, but planar columns give the
#   shared-column backward (NOTE [ Shared gradient columns ]): a 128->128 conv of
#   (32, 128, 16, 16) forward+backward 56 -> 49 ms. At 8x8 and 4x4 they are up to 20% slower.
# * strided: the runs are strided too, and still win on wide rows: a 3x3 stride-2 64->128
#   conv of (32, 64, 32, 32) forward 17.5 -> 10 ms, weight gradient 17 -> 10 ms and input
#   gradient (scattered back tap by tap onto planar planes) 16 -> 12 ms; at 16x16 it is
#   28 -> 30-40 ms forward+backward.
# * a 1x1 kernel needs no gather at all, only one row per channel: ResNet's stride-2
#   shortcuts 7.7 -> 2 ms forward at 32x32, 2.8 -> 1.2 at 16x16. These take planar columns
#   whatever their size.
#
# Everything else (short rows, grouped convolutions) keeps channels-last columns, whose
# runs stay C long whatever the stride.


# planar columns need input rows at least this long to beat channels-last ones
_PLANAR_MIN_ROW = 16
_PLANAR_MIN_ROW_STRIDED = 20


def _mm(xp, a, b):
    """``a @ b``; NumPy's through ``_blas.matmul``, which picks the BLAS threads and keeps
    track of them (NOTE [ GEMM threads by shape ] in ember/_kernels/_blas.py, NOTE [ Pieces
    and the BLAS workers ] in ember/_parallel.py)."""
    return _blas.matmul(a, b) if xp is np else a @ b


def _planar(row, ksize, stride, groups):
    """Whether a convolution of inputs whose rows (last spatial dim) are ``row`` long takes
    planar columns (NOTE [ Planar columns ])."""
    if groups != 1:
        return False
    if all(k == 1 for k in ksize):
        return True
    return row >= (_PLANAR_MIN_ROW if stride[-1] == 1 else _PLANAR_MIN_ROW_STRIDED)


def _planar_columns(xp, x, ksize, stride, padding, dilation):
    """Columns (C * prod(k), N * prod(out)) of x (N, C, *S) (NOTE [ Planar columns ])."""
    nd = len(ksize)
    if any(padding):
        xpad = xp.zeros(x.shape[:2] + tuple(x.shape[2 + i] + 2 * padding[i]
                                            for i in range(nd)), dtype=x.dtype)
        xpad[(slice(None), slice(None)) + tuple(slice(p, p + x.shape[2 + i])
                                                for i, p in enumerate(padding))] = x
    else:
        xpad = x
    n, c = x.shape[:2]
    out = _out_shape(xpad.shape[2:], ksize, stride, dilation)
    st = xpad.strides
    shape = (c,) + tuple(ksize) + (n,) + out
    strides = (st[1],) + tuple(st[2 + i] * dilation[i] for i in range(nd)) + (st[0],) + \
        tuple(st[2 + i] * stride[i] for i in range(nd))
    win = strided_view(xp, xpad, shape, strides)
    return xp.ascontiguousarray(win).reshape(c * math.prod(ksize), n * math.prod(out)), out


# NOTE [ Few-channel planar products per sample ]
# With few column rows (C * prod(k): a network's first convolution, 1 or 3 input channels),
# the GEMM ``W @ cols`` is cheap and the copy that takes its (O, N, *out) result back to NCHW
# is most of the forward's time. Multiplied sample by sample -- one stacked ``np.matmul``
# over the columns viewed as (N, C * prod(k), P) -- each product lands in its sample's
# (O, P) block of the output directly. The dot products are the same; OpenBLAS's kernels
# for a block's last columns may round a few of them differently (one ulp on 2.9% of the
# elements of a stride-2 (3, 4, 20, 20) case; none in 11 other shapes, and in each of
# those where the one GEMM gave PyTorch's values, these are PyTorch's too). Measured (one
# thread, CPU time, ms): the MNIST CNN's conv1, (64, 1, 28, 28) 1->32, 1.13 -> 0.54; 3->64
# on (32, 3, 32, 32) 3.5 -> 2.3; a 1x1 stride-2 64->128 shortcut on 32x32 3.7 -> 2.7; even
# at 144 rows; 8-17% slower from 288. The weight gradient likewise skips the channel-rows
# copy of g, as sums of per-sample products (N, O, C * prod(k)) added over the batch --
# another summation order, so float rounding apart from the one GEMM --, where that copy
# dominates: at most 32 rows and 16 output channels or more (conv1: 1.65 -> 0.68 ms;
# 3->64: 3.5 -> 3.0; with 8 output channels or 36 rows it measured no faster, so those keep
# the one GEMM). float32 and float64 only (the types measured).
_PER_SAMPLE_ROWS = 128
_PER_SAMPLE_GRAD_ROWS = 32
_PER_SAMPLE_GRAD_MIN_OUT = 16


def _planar_conv(xp, x, w, stride, padding, dilation):
    """Ungrouped convolution through planar columns, batch chunk by chunk; (N, O, *out)."""
    o = w.shape[0]
    wm = w.reshape(o, -1)
    y = None
    for sl in _batch_chunks(x, w.shape[2:], stride, padding, dilation):
        cols, out = _planar_columns(xp, x[sl], w.shape[2:], stride, padding, dilation)
        if y is None:
            y = xp.empty((x.shape[0], o) + out, dtype=cols.dtype)
        n, p = cols.shape[1] // math.prod(out), math.prod(out)
        if xp is np and cols.shape[0] <= _PER_SAMPLE_ROWS and cols.dtype in _SPLIT_DTYPES:
            # NOTE [ Few-channel planar products per sample ]
            _blas.matmul(wm, cols.reshape(-1, n, p).transpose(1, 0, 2),
                         out=y.reshape(y.shape[0], o, p)[sl])
            continue
        part = _mm(xp, wm, cols).reshape((o, n) + out)
        y[sl] = xp.moveaxis(part, 0, 1)
    return y


def _conv_rows(xp, x, wm, ksize, stride, padding, dilation, groups):
    """The convolution as channels-last rows (N, *out, O), without bias; ``wm`` is the
    weight as _weight_matrix lays it out (made once per call: it is a transposing copy)."""
    n, o = x.shape[0], wm.shape[0] * wm.shape[1]
    cols, out = _columns(xp, x, ksize, stride, padding, dilation, groups)
    y = _grouped_matmul(xp, cols, wm, transpose_b=True)  # (G, N*out, O/G)
    nd = len(out)
    if groups == 1:
        return y.reshape((n,) + out + (o,))
    y = y.reshape((groups, n) + out + (o // groups,))
    return y.transpose(tuple(range(1, 2 + nd)) + (0, 2 + nd)).reshape((n,) + out + (o,))


def _grid_grouped(xp, x_shape, w_shape, groups):
    """Whether a grouped convolution takes shifted-plane columns (NOTE [ Shifted-plane
    columns ] in ``nn_conv_grid.py``) rather than channels-last ones: measured (one thread,
    CPU time, (32, 64, 32, 32)) depthwise 3x3 forward 38 -> 7.6 ms, input gradient 37 -> 8 ms,
    weight gradient 33 -> 8.7 ms; 4 groups on 16x16 forward 5.0 -> 4.2 ms. Rows shorter than
    16 keep channels-last columns (the grid's dropped positions grow), except depthwise."""
    return xp is np and groups > 1 and (w_shape[1] == 1 or x_shape[-1] >= 16)


def _conv_kernel(xp, x, w, b, *, stride, padding, dilation, groups):
    if winograd43.channels_last_eligible(xp, x.shape, w.shape, stride, padding, dilation,
                                         groups, x.dtype):
        return winograd43.conv2d_cl(x, w, b, padding)
    if winograd43.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
        return winograd43.conv2d(x, w, b, padding)
    if fast_winograd.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
        return fast_winograd.conv2d(x, w, b, padding)
    if winograd.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
        return winograd.conv2d(xp, x, w, b, padding)
    if _planar(x.shape[-1], w.shape[2:], stride, groups):
        y = _planar_conv(xp, x, w, stride, padding, dilation)
        if b is not None:
            y += b.reshape((-1,) + (1,) * (x.ndim - 2))
        return y
    if grid.depthwise_eligible(xp, x.dtype, w.shape, groups):
        y = grid.depthwise_conv(xp, x, w, stride, padding, dilation)
        if b is not None:
            y += b.reshape((-1,) + (1,) * (x.ndim - 2))
        return y
    if _grid_grouped(xp, x.shape, w.shape, groups):
        y = grid.conv(xp, x, w, stride, padding, dilation, groups)
        if b is not None:
            y += b.reshape((-1,) + (1,) * (x.ndim - 2))
        return y
    chunks = _batch_chunks(x, w.shape[2:], stride, padding, dilation)
    wm = xp.ascontiguousarray(_weight_matrix(w, groups))
    rows = functools.partial(_conv_rows, xp, wm=wm, ksize=w.shape[2:], stride=stride,
                             padding=padding, dilation=dilation, groups=groups)
    if len(chunks) == 1:
        y = rows(x)
    else:
        first = rows(x[chunks[0]])
        y = xp.empty((x.shape[0],) + first.shape[1:], dtype=first.dtype)
        y[chunks[0]] = first
        for sl in chunks[1:]:
            y[sl] = rows(x[sl])
    if b is not None:
        y += b
    return xp.ascontiguousarray(xp.moveaxis(y, -1, 1))


def _adjoint_is_conv(ksize, stride, padding, dilation):
    """Whether the input adjoint is a plain convolution of g (stride 1, padding no more
    than the dilated kernel's reach)."""
    return all(st == 1 for st in stride) and all(
        padding[i] <= dilation[i] * (ksize[i] - 1) for i in range(len(ksize)))


def _flipped_kernel(xp, w, groups):
    """(O, C/G, *k) -> (C, O/G, *k) with every spatial axis reversed: the kernel of the
    input adjoint as a convolution."""
    ksize = w.shape[2:]
    cg = w.shape[1]
    wt = w.reshape((groups, w.shape[0] // groups, cg) + tuple(ksize))
    wt = xp.swapaxes(wt, 1, 2).reshape((cg * groups, w.shape[0] // groups) + tuple(ksize))
    return xp.ascontiguousarray(wt[(slice(None), slice(None)) +
                                   (slice(None, None, -1),) * len(ksize)])


def _adjoint_padding(ksize, padding, dilation):
    return tuple(dilation[i] * (ksize[i] - 1) - padding[i] for i in range(len(ksize)))


def _crop(gx, input_shape):
    nd = gx.ndim - 2
    if gx.shape[2:] == tuple(input_shape[2:]):
        return gx
    return gx[(slice(None), slice(None)) + tuple(slice(0, input_shape[2 + i])
                                                 for i in range(nd))]


def _conv_backward_kernel(xp, g, x, w, *, stride, padding, dilation):
    """Both adjoints of a stride-1 convolution from one gather of g (grouped ones through
    shifted-plane columns, ``nn_conv_grid.backward_stride1``).

    NOTE [ Shared gradient columns ]
    The input adjoint gathers the columns of g padded by d(k-1) - p. The weight gradient
    ``gw[o, c, s] = sum_{n,q} x[n, c, q] * g[n, o, q + p - s*d]`` reads the same windows:
    the column of tap t = k-1-s. So ``cols_g @ x_rows`` (x as one row per channel, a cheap
    copy rather than a k-times larger gather of x) is the weight gradient with its taps
    reversed. Saves one of the three gathers of a training step's convolution: 15% of the
    backward of a 3x3 64->64 conv of (32, 64, 32, 32). With channels-last columns (short
    rows) it gained nothing measurable, so only planar columns take this path.
    """
    groups = x.shape[1] // w.shape[1]
    if winograd43.channels_last_eligible(xp, x.shape, w.shape, stride, padding, dilation,
                                         groups, x.dtype, adjoint=True):
        # the input adjoint through channels-last tiles, the weight's through F(2x2)'s
        # (NOTE [ Channels-last Winograd tiles ] in ember/_kernels/_winograd43.py)
        gw = _weight_grad_kernel(xp, x, g, weight_shape=w.shape, stride=stride,
                                 padding=padding, dilation=dilation, groups=groups)
        return winograd43.input_grad_cl(g, w, padding), gw
    if fast_winograd.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups,
                              x.dtype):
        if winograd43.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups,
                               x.dtype):
            return winograd43.input_grad(g, w, padding), fast_winograd.weight_grad(x, g,
                                                                                   padding)
        if fast_winograd._tiles_pay(x.shape[1], w.shape[0]) or fast_winograd._small_plane(
                *g.shape[2:]):
            # (NOTE [ Channels-last F(2x2) adjoints ] in ember/_kernels/_winograd_backward.py)
            return winograd_backward.backward_cl(x, g, w, padding)
        # one output transform of g for both (NOTE [ One output transform for both
        # adjoints ] in ember/_kernels/_winograd_backward.py)
        return winograd_backward.backward(x, g, w, padding)
    if winograd.eligible(xp, x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
        return winograd.backward(xp, g, x, w, padding)
    if groups > 1:
        # shifted-plane columns of g, shared the same way (NOTE [ Shifted-plane columns ])
        return grid.backward_stride1(xp, g, x, w, padding, dilation, groups)
    ksize = w.shape[2:]
    nd = len(ksize)
    o, c = w.shape[:2]
    wt = _flipped_kernel(xp, w, 1)
    pad = _adjoint_padding(ksize, padding, dilation)
    gx, gw = None, None
    for sl in _batch_chunks(g, ksize, stride, pad, dilation):
        gs, xs = g[sl], x[sl]
        n = gs.shape[0]
        cols, out = _planar_columns(xp, gs, ksize, stride, pad, dilation)  # (O*kp, n*P)
        part = _mm(xp, wt.reshape(c, -1), cols).reshape((c, n) + out)
        gwf = _mm(xp, cols, _channel_rows(xp, xs).T)
        gwf = xp.moveaxis(gwf.reshape((o,) + tuple(ksize) + (c,)), -1, 1)
        if gx is None:
            gx = xp.empty((g.shape[0], c) + out, dtype=part.dtype)
        gx[sl] = xp.moveaxis(part, 0, 1)
        gw = gwf.copy() if gw is None else xp.add(gw, gwf, out=gw)
    gw = gw[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
    return _crop(gx, x.shape), xp.ascontiguousarray(gw)


# NOTE [ Planar columns scattered in one pass ]
# The input adjoint through planar columns adds each tap's (C, N, *out) planes onto the
# strided positions it came from: nine NumPy passes over a zeroed (C, N, *padded) grid for a
# 3x3 kernel, each one strided read-modify-write, then a crop and a transposing copy back to
# NCHW. With numba (``planar_col2im`` in ``ember/_kernels/_numba_conv.py``) one pass does it:
# plane by plane, the taps summed in the same order from zero in a small phase-split buffer
# that stays in L1, written once into the NCHW result -- the same additions in the same
# order, so the same bits. 2-D, undilated kernels of more than one tap (a 1x1 kernel's one
# strided copy is as fast in NumPy). Measured (one thread, 2-CPU EPYC, medians): ResNet-18's
# stride-2 3x3 64 -> 128 on (32, 64, 32, 32), the whole input adjoint 12.9 -> 9.6 ms (the
# scatter 8.2 -> 3.6-4.0, the GEMM 5.9 unchanged). The channels-last columns of short rows
# (``channels_last_col2im``) likewise, each sample summed channels last in a buffer that
# stays in cache and transposed once into NCHW: the scatter, crop and copy of the stride-2
# 128 -> 256 on (32, 128, 16, 16) 2.2 -> 1.1 ms, of 256 -> 512 on 8x8 0.69 -> 0.26.


def _compiled_scatter(xp, ksize, dilation, dtype):
    """The compiled kernels' module where the input adjoint's scatter of planar or
    channels-last columns runs compiled (NOTE [ Planar columns scattered in one pass ]),
    else None."""
    if xp is not np or len(ksize) != 2 or math.prod(ksize) == 1 or tuple(dilation) != (1, 1) \
            or dtype not in _SPLIT_DTYPES:
        return None
    return fast_winograd._impl()


def _planar_input_grad(xp, g, w, input_shape, stride, padding, dilation):
    """Adjoint of an ungrouped conv in x through planar columns: the weights' transpose
    times g's channel rows gives one (C, N, *out) plane stack per kernel tap, each added
    onto the strided positions it came from (NOTE [ Planar columns ]); batch chunk by chunk."""
    n, o = g.shape[:2]
    c, ksize, out = w.shape[1], tuple(w.shape[2:]), tuple(g.shape[2:])
    nd = len(out)
    wt = w.reshape(o, -1).T                                      # (C * prod(k), O)
    k = _compiled_scatter(xp, ksize, dilation, g.dtype)
    if k is not None:  # NOTE [ Planar columns scattered in one pass ]
        gx = np.empty(tuple(input_shape), g.dtype)
        for sl in _sample_slices(n, c * math.prod(ksize) * math.prod(out) * g.dtype.itemsize):
            gs = g[sl]
            cols = _mm(xp, wt, _channel_rows(xp, gs))
            k.planar_col2im(cols.reshape((c,) + ksize + (gs.shape[0],) + out), stride[0],
                            stride[1], padding[0], padding[1], gx[sl])
        return gx
    padded = tuple(input_shape[2 + i] + 2 * padding[i] for i in range(nd))
    gx = xp.zeros((c, n) + padded, dtype=g.dtype)
    for sl in _sample_slices(n, c * math.prod(ksize) * math.prod(out) * g.dtype.itemsize):
        gs = g[sl]
        cols = _mm(xp, wt, _channel_rows(xp, gs)).reshape((c,) + ksize + (gs.shape[0],) + out)
        for tap in itertools.product(*(range(k) for k in ksize)):
            gx[(slice(None), sl) + tap_region(tap, out, stride, dilation)] += \
                cols[(slice(None),) + tap]
    crop = (slice(None), slice(None)) + tuple(slice(padding[i], padding[i] + input_shape[2 + i])
                                              for i in range(nd))
    return xp.ascontiguousarray(xp.moveaxis(gx[crop], 0, 1))


def _input_grad_kernel(xp, g, w, *, input_shape, stride, padding, dilation, groups):
    """Adjoint of conv in x: rows of g times the weights, scattered back tap by tap onto a
    channels-last padded grid (each add moves contiguous runs of channels)."""
    n = g.shape[0]
    out = g.shape[2:]
    nd = len(out)
    ksize = w.shape[2:]
    cg = w.shape[1]
    c = cg * groups
    # a transposed conv's output_padding can make the input grid longer than g's windows
    # need (stride 1 with dilation): only the adjoint-as-conv and the scatter loop take that
    exact = all((input_shape[2 + i] + 2 * padding[i] - dilation[i] * (ksize[i] - 1) - 1)
                // stride[i] + 1 == out[i] for i in range(nd))
    if not exact:
        pass
    elif winograd43.channels_last_eligible(xp, input_shape, w.shape, stride, padding,
                                           dilation, groups, g.dtype, adjoint=True):
        return winograd43.input_grad_cl(g, w, padding)
    elif winograd43.eligible(xp, input_shape, w.shape, stride, padding, dilation, groups,
                             g.dtype):
        return winograd43.input_grad(g, w, padding)
    elif fast_winograd.eligible(xp, input_shape, w.shape, stride, padding, dilation, groups,
                                g.dtype):
        return fast_winograd.input_grad(g, w, padding)
    elif winograd.eligible(xp, input_shape, w.shape, stride, padding, dilation, groups,
                           g.dtype):
        return winograd.input_grad(xp, g, w, padding)
    elif grid.depthwise_eligible(xp, g.dtype, w.shape, groups):
        return grid.depthwise_input_grad(xp, g, w, input_shape, stride, padding, dilation)
    if _adjoint_is_conv(ksize, stride, padding, dilation):
        # stride 1: the adjoint is itself a convolution of g with the flipped, transposed
        # kernel (one gather and one GEMM instead of a GEMM and one scatter per tap); a
        # transposed conv's output_padding reads zeros past g's end
        short = [input_shape[2 + i] - (g.shape[2 + i] + dilation[i] * (ksize[i] - 1) -
                                       2 * padding[i]) for i in range(nd)]
        if any(n > 0 for n in short):
            g = xp.pad(g, ((0, 0), (0, 0)) + tuple((0, max(n, 0)) for n in short))
        gx = _conv_kernel(xp, g, _flipped_kernel(xp, w, groups), None, stride=stride,
                          padding=_adjoint_padding(ksize, padding, dilation),
                          dilation=dilation, groups=groups)
        return _crop(gx, input_shape)
    if exact and _planar(input_shape[-1], ksize, stride, groups):
        return _planar_input_grad(xp, g, w, input_shape, stride, padding, dilation)
    if exact and _grid_grouped(xp, input_shape, w.shape, groups):
        return grid.input_grad_scatter(xp, g, w, input_shape, stride, padding, dilation, groups)
    rows, wm = _grad_rows(xp, g, groups), _weight_matrix(w, groups)
    gcols = _grouped_matmul(xp, rows, wm)  # (G, N*out, kCg)
    if groups == 1:
        gcols = gcols.reshape((n,) + tuple(out) + tuple(ksize) + (c,))
    else:
        gcols = gcols.reshape((groups, n) + tuple(out) + tuple(ksize) + (cg,))
        perm = tuple(range(1, 2 + 2 * nd)) + (0, 2 + 2 * nd)
        gcols = xp.ascontiguousarray(gcols.transpose(perm)).reshape(
            (n,) + tuple(out) + tuple(ksize) + (c,))
    k = _compiled_scatter(xp, ksize, dilation, gcols.dtype) if exact else None
    if k is not None:  # NOTE [ Planar columns scattered in one pass ]
        gx = np.empty(tuple(input_shape), gcols.dtype)
        k.channels_last_col2im(gcols, stride[0], stride[1], padding[0], padding[1], gx)
        return gx
    spatial = tuple(input_shape[2 + i] + 2 * padding[i] for i in range(nd))
    gx = xp.zeros((n,) + spatial + (c,), dtype=gcols.dtype)
    for tap in itertools.product(*(range(k) for k in ksize)):
        region = (slice(None),) + tap_region(tap, out, stride, dilation) + (slice(None),)
        gx[region] += gcols[(slice(None),) * (1 + nd) + tap]
    crop = (slice(None),) + tuple(slice(padding[i], padding[i] + input_shape[2 + i])
                                  for i in range(nd)) + (slice(None),)
    return xp.ascontiguousarray(xp.moveaxis(gx[crop], -1, 1))


def _weight_grad_kernel(xp, x, g, *, weight_shape, stride, padding, dilation, groups):
    """Adjoint of conv in w: columns of x (transposed) times the rows of g."""
    if x.shape[0] == 0:
        return xp.zeros(weight_shape, dtype=x.dtype)  # the batch loops below would sum nothing
    if fast_winograd.eligible(xp, x.shape, weight_shape, stride, padding, dilation, groups,
                              x.dtype):
        return fast_winograd.weight_grad(x, g, padding)
    if winograd.eligible(xp, x.shape, weight_shape, stride, padding, dilation, groups, x.dtype):
        return winograd.weight_grad(xp, x, g, padding)
    if _planar(x.shape[-1], weight_shape[2:], stride, groups):
        o = weight_shape[0]
        gw = None
        for sl in _batch_chunks(x, weight_shape[2:], stride, padding, dilation):
            cols, _ = _planar_columns(xp, x[sl], weight_shape[2:], stride, padding, dilation)
            if (xp is np and cols.shape[0] <= _PER_SAMPLE_GRAD_ROWS
                    and o >= _PER_SAMPLE_GRAD_MIN_OUT and cols.dtype in _SPLIT_DTYPES):
                # NOTE [ Few-channel planar products per sample ]
                n = g[sl].shape[0]
                p = cols.shape[1] // n
                part = _blas.matmul(g[sl].reshape(n, o, p),
                                    cols.reshape(-1, n, p).transpose(1, 2, 0)).sum(0)
            else:
                part = _mm(xp, _channel_rows(xp, g[sl]), cols.T)
            gw = part if gw is None else xp.add(gw, part, out=gw)
        return gw.reshape(weight_shape)
    if grid.depthwise_eligible(xp, x.dtype, weight_shape, groups):
        return grid.depthwise_weight_grad(xp, x, g, weight_shape, stride, padding, dilation)
    if _grid_grouped(xp, x.shape, weight_shape, groups) and weight_shape[1] == 1:
        # depthwise: one GEMM per channel with a reduction of prod(k) is where channels-last
        # columns do worst (33 -> 8.7 ms, see _grid_grouped); wider groups keep them
        return grid.weight_grad(xp, x, g, weight_shape, stride, padding, dilation, groups)
    gw = None
    for sl in _batch_chunks(x, weight_shape[2:], stride, padding, dilation):
        cols, _ = _columns(xp, x[sl], weight_shape[2:], stride, padding, dilation, groups)
        part = _grouped_matmul(xp, _grad_rows(xp, g[sl], groups), cols,
                               transpose_a=True)  # (G, O/G, kCg)
        if gw is None:
            gw = part
        else:
            gw += part
    o, cg = weight_shape[:2]
    ksize = weight_shape[2:]
    nd = len(ksize)
    gw = gw.reshape((o,) + tuple(ksize) + (cg,))
    return xp.ascontiguousarray(gw.transpose((0, 1 + nd) + tuple(range(1, 1 + nd))))


# NOTE [ Convolutions in batch pieces ]
# With more than one thread configured, a NumPy convolution large enough to pay for it runs
# as one piece of the batch per thread, each piece the whole single-threaded kernel (its
# gathers, GEMMs and scatters) with the BLAS held at one thread (NOTE [ Batch pieces on
# threads ] in ``ember/_parallel.py``): the gathers and scatters, single-threaded passes
# between two-thread GEMMs before, now run on every core. Forward and input gradient write
# their pieces of one output; weight gradients are the sum of the pieces'. Measured in
# ResNet-18's training step (batch 32, two threads, ms, before -> after, one process
# alternating): the stride-2 3x3 64->128 conv on 32x32, forward 67 -> 30, input gradient
# 96 -> 42, weight gradient 77 -> 36 (a loaded machine: the ratios are what counts).
# The compiled Winograd path splits its own batch loop (no copy of the pieces' outputs).

_SPLIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _conv_work(n, out, o, c, ksize):
    """Multiply-adds of a convolution (or of either adjoint): the threshold's measure."""
    return n * math.prod(out) * o * c * math.prod(ksize)


def _splits(xp, a, b, w_shape, stride, padding, dilation, groups, x_shape):
    """Whether a convolution of operands ``a`` (batched: the input, or the output gradient)
    and ``b`` may run in batch pieces: NumPy float arrays of one dtype, two samples at least,
    and not a Winograd path (which split their own loops, around one weight transform)."""
    return (xp is np and a.shape[0] > 1 and a.dtype in _SPLIT_DTYPES and a.dtype == b.dtype
            and not any(m(xp, x_shape, w_shape, stride, padding, dilation, groups, a.dtype)
                        for m in (fast_winograd.eligible, winograd.eligible,
                                  winograd43.channels_last_eligible)))


def _conv_pieces(xp, x, w, b, *, stride, padding, dilation, groups):
    """``_conv_kernel`` in batch pieces on threads where that applies (NOTE [ Convolutions
    in batch pieces ])."""
    if _splits(xp, x, w, w.shape, stride, padding, dilation, groups, x.shape):
        nd = x.ndim - 2
        out = _out_shape(tuple(x.shape[2 + i] + 2 * padding[i] for i in range(nd)),
                         w.shape[2:], stride, dilation)
        if all(s > 0 for s in out):
            y = np.empty((x.shape[0], w.shape[0]) + out, x.dtype)

            def piece(lo, hi):
                y[lo:hi] = _conv_kernel(xp, x[lo:hi], w, b, stride=stride, padding=padding,
                                        dilation=dilation, groups=groups)

            work = _conv_work(x.shape[0], out, w.shape[0], w.shape[1], w.shape[2:])
            if _parallel.split_batch(piece, x.shape[0], work) is not None:
                return y
    return _conv_kernel(xp, x, w, b, stride=stride, padding=padding, dilation=dilation,
                        groups=groups)


def _input_grad_pieces(xp, g, w, *, input_shape, stride, padding, dilation, groups):
    """``_input_grad_kernel`` in batch pieces on threads where that applies."""
    if _splits(xp, g, w, w.shape, stride, padding, dilation, groups, input_shape):
        gx = np.empty(tuple(input_shape), g.dtype)

        def piece(lo, hi):
            gx[lo:hi] = _input_grad_kernel(xp, g[lo:hi], w, input_shape=(hi - lo,) + tuple(
                input_shape[1:]), stride=stride, padding=padding, dilation=dilation,
                groups=groups)

        work = _conv_work(g.shape[0], g.shape[2:], w.shape[0], w.shape[1], w.shape[2:])
        if _parallel.split_batch(piece, g.shape[0], work) is not None:
            return gx
    return _input_grad_kernel(xp, g, w, input_shape=input_shape, stride=stride,
                              padding=padding, dilation=dilation, groups=groups)


def _weight_grad_pieces(xp, x, g, *, weight_shape, stride, padding, dilation, groups):
    """``_weight_grad_kernel`` in batch pieces on threads where that applies (the pieces'
    gradients added in batch order)."""
    if _splits(xp, x, g, weight_shape, stride, padding, dilation, groups, x.shape):
        def piece(lo, hi):
            return _weight_grad_kernel(xp, x[lo:hi], g[lo:hi], weight_shape=weight_shape,
                                       stride=stride, padding=padding, dilation=dilation,
                                       groups=groups)

        work = _conv_work(g.shape[0], g.shape[2:], weight_shape[0], weight_shape[1],
                          weight_shape[2:])
        parts = _parallel.split_batch(piece, x.shape[0], work)
        if parts is not None:
            gw = parts[0]
            for p in parts[1:]:
                gw += p
            return gw
    return _weight_grad_kernel(xp, x, g, weight_shape=weight_shape, stride=stride,
                               padding=padding, dilation=dilation, groups=groups)


def _backward_pieces(xp, g, x, w, *, stride, padding, dilation):
    """``_conv_backward_kernel`` (both adjoints) in batch pieces where that applies."""
    groups = x.shape[1] // w.shape[1]
    if _splits(xp, x, w, w.shape, stride, padding, dilation, groups, x.shape) and \
            g.dtype == x.dtype:
        gx = np.empty(x.shape, x.dtype)

        def piece(lo, hi):
            gx[lo:hi], gw = _conv_backward_kernel(xp, g[lo:hi], x[lo:hi], w, stride=stride,
                                                  padding=padding, dilation=dilation)
            return gw

        work = _conv_work(g.shape[0], g.shape[2:], w.shape[0], w.shape[1], w.shape[2:])
        parts = _parallel.split_batch(piece, x.shape[0], work)
        if parts is not None:
            gw = parts[0]
            for p in parts[1:]:
                gw += p
            return gx, gw
    return _conv_backward_kernel(xp, g, x, w, stride=stride, padding=padding,
                                 dilation=dilation)


def _params(p):
    return dict(stride=p["stride"], padding=p["padding"], dilation=p["dilation"],
                groups=p["groups"])


# Each adjoint is computed only for inputs that take part in autograd: a network's first
# convolution reads data that needs no gradient, and its input adjoint would be a whole
# transposed convolution thrown away.


def _shared_grouped(xp, x, w, groups):
    """Whether a grouped convolution's two adjoints come from one gather of shifted-plane
    columns: a 4-group 3x3 64->64 conv of (32, 64, 16, 16) took 6.3 ms for both against
    8.5 ms apart (one thread); the compiled depthwise loops stay apart (6.7 ms against
    11.8)."""
    return _grid_grouped(xp, x.shape, w.shape, groups) and not grid.depthwise_eligible(
        xp, x._data.dtype, w.shape, groups)


def _conv_vjp(g, x, w, _b, *, stride, padding, dilation, groups, needs_input_grad):
    # the bias's gradient is a sum of ``g``: the bias itself is not kept (nor version-checked)
    p = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    session = observing_profiler()
    if session is not None:
        # PyTorch's node runs one op for the three gradients; with only the profiler
        # watching, its event covers ember's adjoints and the bias sum, unseen one by one
        return session.as_one_op("aten::convolution_backward",
                                 lambda: (g, x, w) + (None,) * 8, _conv_vjp, (g, x, w, _b),
                                 dict(p, needs_input_grad=needs_input_grad))
    need_x, need_w, need_b = needs_input_grad
    ksize = tuple(w.shape[2:])
    xp = _dispatch.xp_of(x._data)
    shared = any(m(xp, x.shape, w.shape, stride, padding, dilation, groups, x._data.dtype)
                 for m in (fast_winograd.eligible, winograd.eligible,
                           winograd43.channels_last_eligible)) or (
        (_planar(g.shape[-1], ksize, stride, groups) or _shared_grouped(xp, x, w, groups))
        and _adjoint_is_conv(ksize, stride, padding, dilation))
    if need_x and need_w and not _dispatch.state.grad_enabled and shared:
        # both adjoints from one gather (NOTE [ Shared gradient columns ]); under
        # create_graph the two separate ops keep double backward
        gx, gw = _dispatch.apply(conv_backward_op, (g, x, w), dict(
            stride=stride, padding=padding, dilation=dilation))
        gb = _bias_grad(g, dilation) if need_b else None
        return gx, gw, gb
    return _adjoints(g, x, w, needs_input_grad, p)


def _bias_grad(g, dilation):
    """The bias's gradient, a sum of ``g`` over all dims but the channels. torch's dilated
    float16 kernel (SlowDilated) sums each sample's gradient, rounds it, and adds it onto the
    bias's float16 gradient: one more rounding per sample (measured against torch 2.13)."""
    if g.dtype.name == "float16" and g.device.type == "cpu" and g.shape[0] > 1 and any(
            d != 1 for d in dilation):
        dims = list(range(1, g.dim() - 1))
        gb = g[0].sum(dims)
        for i in range(1, g.shape[0]):
            gb = gb + g[i].sum(dims)
        return gb
    return g.sum([0] + list(range(2, g.dim())))


# PyTorch's node calls one op for the three gradients: the profiler shows the two adjoints
# and the bias sum under its name (NOTE [ Composite op events ] in ember/profiler/_recorder.py)
@recorded_as("aten::convolution_backward", ("g", "x", "w") + (None,) * 8)
def _adjoints(g, x, w, needs_input_grad, p):
    need_x, need_w, need_b = needs_input_grad
    gx = conv_input_grad(g, w, tuple(x.shape), **p) if need_x else None
    gw = conv_weight_grad(x, g, tuple(w.shape), **p) if need_w else None
    gb = _bias_grad(g, p["dilation"]) if need_b else None
    return gx, gw, gb


def _input_grad_vjp(gz, g, w, *, input_shape, stride, padding, dilation, groups,
                    needs_input_grad):
    p = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    # gz lives on the input grid; adjoint in g is the forward conv, in w the weight adjoint.
    # A transposed conv's output_padding leaves gz longer than the windows of g: pad it by
    # hand (p on the left, zeros on the right), cut it to the exact span, and run unpadded.
    nd = g.dim() - 2
    target = tuple((g.shape[2 + i] - 1) * stride[i] - 2 * padding[i] +
                   dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(nd))
    if tuple(gz.shape[2:]) != target:
        from .nn_pad import pad as _pad
        span = [t + 2 * q for t, q in zip(target, padding)]
        widths = []
        for i in reversed(range(nd)):
            widths += [padding[i], max(0, span[i] - padding[i] - gz.shape[2 + i])]
        gz = _pad(gz, widths)[(slice(None), slice(None)) + tuple(slice(0, m) for m in span)]
        p["padding"] = (0,) * nd
    return (conv_nd(gz, w, None, **p) if needs_input_grad[0] else None,
            conv_weight_grad(gz, g, tuple(w.shape), **p) if needs_input_grad[1] else None)


def _weight_grad_vjp(gu, x, g, *, weight_shape, stride, padding, dilation, groups,
                     needs_input_grad):
    p = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return (conv_input_grad(g, gu, tuple(x.shape), **p) if needs_input_grad[0] else None,
            conv_nd(x, gu, None, **p) if needs_input_grad[1] else None)


# float16 adjoints round where torch's slow CPU kernels do (NOTE [ float16 convolutions as
# the slow CPU kernels ] in nn_conv_half.py); bfloat16 and the forward round once
_upcast_input_grad = upcast_lowp(_input_grad_pieces)
_upcast_weight_grad = upcast_lowp(_weight_grad_pieces)
_upcast_backward = upcast_lowp(_backward_pieces)


def _lowp_input_grad(xp, g, w, **params):
    if conv_half.is_half(g, w):
        return conv_half.input_grad(g, w, **params)
    return _upcast_input_grad(xp, g, w, **params)


def _lowp_weight_grad(xp, x, g, **params):
    if conv_half.is_half(x, g):
        def columns(xn, *, stride, padding, dilation):
            return _planar_columns(np, xn, params["weight_shape"][2:], stride, padding,
                                   dilation)[0]

        return conv_half.weight_grad(columns, x, g, **params)
    return _upcast_weight_grad(xp, x, g, **params)


def _lowp_backward(xp, g, x, w, *, stride, padding, dilation):
    if conv_half.is_half(g, x, w):
        p = dict(stride=stride, padding=padding, dilation=dilation,
                 groups=x.shape[1] // w.shape[1])
        return (_lowp_input_grad(xp, g, w, input_shape=x.shape, **p),
                _lowp_weight_grad(xp, x, g, weight_shape=w.shape, **p))
    return _upcast_backward(xp, g, x, w, stride=stride, padding=padding, dilation=dilation)


_upcast_conv = upcast_lowp(_conv_pieces)


def _lowp_conv(xp, x, w, b, **params):
    if conv_half.is_half(x, w):
        ksize = w.shape[2:]

        def columns(x32, *, stride, padding, dilation):
            return _planar_columns(np, x32, ksize, stride, padding, dilation)[0]

        return conv_half.forward(columns, x, w, b, **params)
    return _upcast_conv(xp, x, w, b, **params)


conv_op = Op("convolution", _lowp_conv, vjp=_conv_vjp)
multilinear_jvp(conv_op, (0, 1), (2,))
conv_op.node_name = "ConvolutionBackward0"
conv_input_grad_op = Op("convolution_input_grad", _lowp_input_grad, vjp=_input_grad_vjp)
conv_weight_grad_op = Op("convolution_weight_grad", _lowp_weight_grad, vjp=_weight_grad_vjp)
multilinear_jvp(conv_input_grad_op, (0, 1))
multilinear_jvp(conv_weight_grad_op, (0, 1))
conv_backward_op = Op("convolution_backward", _lowp_backward)


def conv_nd(x, w, b, *, stride, padding, dilation, groups):
    return _dispatch.apply(conv_op, (x, w, b), dict(stride=stride, padding=padding,
                                                     dilation=dilation, groups=groups))


def conv_input_grad(g, w, input_shape, *, stride, padding, dilation, groups):
    return _dispatch.apply(conv_input_grad_op, (g, w), dict(
        input_shape=tuple(input_shape), stride=stride, padding=padding, dilation=dilation,
        groups=groups))


def conv_weight_grad(x, g, weight_shape, *, stride, padding, dilation, groups):
    return _dispatch.apply(conv_weight_grad_op, (x, g), dict(
        weight_shape=tuple(weight_shape), stride=stride, padding=padding, dilation=dilation,
        groups=groups))


# ------------------------------------------------------------------------------------------------
# public functional forms


def _tuple(v, n, name, op):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(i) for i in v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of "
                           f"{n} values to match the convolution dimensions, but got "
                           f"{name}={list(v)}")
    return v


def _check_conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): expected Tensor arguments for input and weight")
    if weight.dim() != nd + 2:
        raise RuntimeError(
            f"{op}: expected weight to be {nd + 2}-dimensional, but got weight of size "
            f"{list(weight.shape)}")
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}")
    if not batched:
        input = input.unsqueeze(0)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _tuple(stride, nd, "stride", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    _check_weight_size(weight, groups, nd)
    c = input.shape[1]
    if c != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {c} "
            "channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size {list(weight.shape)} instead")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
            f"with {weight.shape[0]} elements, but got bias of size {list(bias.shape)} "
            "instead")
    # torch's kernel (chosen by dims and dilation) refuses its dtypes before any type match
    kernel_dtype("slow_conv_dilated" if any(d > 1 for d in dilation) else
                 "slow_conv3d" if nd == 3 else "slow_conv2d", input)
    _check_operand_dtypes(input, weight, bias)
    ksize = weight.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = []
            for i in range(nd):
                total = dilation[i] * (ksize[i] - 1)
                pads.append((total // 2, total - total // 2))
        else:
            raise ValueError(
                f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
        if any(lo != hi for lo, hi in pads):
            # asymmetric 'same' padding: pad the extra element on the right explicitly
            flat = []
            for lo, hi in reversed(pads):
                flat += [0, hi - lo]
            input = pad(input, flat)
        padding = tuple(lo for lo, _ in pads)
    else:
        padding = _tuple(padding, nd, "padding", op)
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
    eff = [dilation[i] * (ksize[i] - 1) + 1 for i in range(nd)]
    for i in range(nd):
        if input.shape[2 + i] + 2 * padding[i] < eff[i]:
            raise RuntimeError(  # (the kernel's size as dilated)
                f"Calculated padded input size per channel: "
                f"({' x '.join(str(input.shape[2 + j] + 2 * padding[j]) for j in range(nd))}"
                f"). Kernel size: ({' x '.join(str(k) for k in eff)}). Kernel size can't be "
                "greater than actual input size")
    _check_empty_input(input)
    return input, batched, stride, padding, dilation


def _empty_batch(shape, x, weight, bias):
    """The (empty) result of a convolution of an empty batch, still a function of its
    operands, so their gradients are zeros as in torch."""
    from .creation import zeros

    y = zeros(shape, dtype=x.dtype, device=x.device)
    # (sums of empty slices: exact zeros, whatever the operands hold)
    for t in (x, weight, bias):
        if isinstance(t, Tensor):
            y = y + t.reshape(-1)[:0].sum()
    return y


def _check_weight_size(weight, groups, nd):
    """torch's checks of a weight's sizes: at least ``groups`` output channels (input
    channels for a transposed weight) and no empty kernel dim."""
    if weight.shape[0] < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead")
    ksize = tuple(weight.shape[2:])
    if weight.shape[1] and any(k <= 0 for k in ksize):  # (no channels: nothing to check)
        names = ("kernel_depth", "kernel_height", "kernel_width")[3 - max(nd, 2):]
        shown = ((1,) + ksize) if nd == 1 else ksize
        raise RuntimeError("kernel size should be greater than zero, but got " + " ".join(
            f"{n}: {k}" for n, k in zip(names, shown)))


def _legacy_name(t):
    """How torch's type check names the second operand: a real tensor's legacy type name,
    a complex one's backend type (it has no legacy name)."""
    from ._legacy_types import type_name
    return f"CPU{t.dtype.scalar_name}Type" if t.is_complex() else type_name(t)


def _type_mismatch(input, other, what):
    """torch's RuntimeError for an operand ``what`` ('weight' or 'bias') whose dtype differs
    from ``input``'s, where the convolution's backend checks it: complex inputs (built of
    real convolutions) and bfloat16 ones (oneDNN) name both tensors' types."""
    name = f"CPU{input.dtype.scalar_name}Type"
    if input.is_complex():
        return RuntimeError(f"Input type ({name}) and {what} type ({_legacy_name(other)}) "
                            "should be the same")
    return RuntimeError(f"Input type ({name}) and {what} type ({_legacy_name(other)}) should "
                        f"be the same or input should be a MKLDNN tensor and {what} is a "
                        "dense tensor")


def _check_operand_dtypes(input, weight, bias):
    """Input, weight and bias share one dtype (torch's RuntimeErrors: the bias is compared
    first, then the weight)."""
    if isinstance(bias, Tensor) and bias.dtype != input.dtype:
        c = _dispatch._C_NAMES
        raise RuntimeError(
            f"Input type ({c.get(input.dtype.scalar_name, input.dtype.scalar_name)}) and bias "
            f"type ({c.get(bias.dtype.scalar_name, bias.dtype.scalar_name)}) should be the same")
    if input._data.dtype != weight._data.dtype:
        if input.is_complex() or input.dtype.name == "bfloat16":
            raise _type_mismatch(input, weight, "weight")
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                           f"{weight.dtype.scalar_name}")


def _check_transposed_bias(input, bias):
    """The bias of a transposed convolution of another dtype than ``input``: torch's 1-d and
    2-d kernels cast a real one into a real result, but a complex input (whose convolution
    is built of real ones) and a batched bfloat16 input (oneDNN) take only their own dtype,
    a complex bias cannot be cast into a real result, and the 3-d kernel casts nothing."""
    name, bname = input.dtype.scalar_name, bias.dtype.scalar_name
    if input.is_complex() or (input.dtype.name == "bfloat16" and input.numel()):
        raise _type_mismatch(input, bias, "bias")
    if bias.is_complex():
        raise RuntimeError(f"result type {bname} can't be cast to the desired output type "
                           f"{name}")


def _check_empty_input(x):
    """A batched input may be empty in its batch or channels only (torch's RuntimeError)."""
    if x.shape[0] and x.shape[1] and any(n == 0 for n in x.shape[2:]):
        shape = list(x.shape) if x.dim() > 3 else [x.shape[0], x.shape[1], 1, x.shape[2]]
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got "
                           f"input shape: {shape}")


# NOTE [ Checked convolution calls ]
# A network calls each convolution with the same shapes, dtypes and geometry at every step,
# and torch's argument checks (about twenty, reading shapes through Size objects) cost more
# host time than a GPU convolution's launch. A call whose checks passed is remembered by
# those shapes, dtypes, array types and arguments -- everything the checks read -- with the
# normalised geometry, and the next such call skips straight to the op. Only plain tensors
# with no mode or transform active take the shortcut (under vmap, ``_data`` is not the
# shape the checks see), autocast excepted (``_dispatch.plain_data``: its casts come before
# and leave ``_data`` as the checks see it); unbatched, empty and asymmetrically padded calls
# always check.
_conv_checked: dict = {}
_CONV_CHECKED_MAX = 1024


def _conv_key(nd, input, weight, bias, stride, padding, dilation, groups):
    """The key of NOTE [ Checked convolution calls ], or None when the call must check."""
    if (_dispatch.intercept and not _dispatch.plain_data()) or type(input) is not Tensor or \
            type(weight) is not Tensor or (bias is not None and type(bias) is not Tensor):
        return None
    xd, wd = input._data, weight._data
    bd = None if bias is None else bias._data
    try:
        return (nd, type(xd), xd.shape, xd.dtype, type(wd), wd.shape, wd.dtype,
                None if bd is None else (type(bd), bd.shape, bd.dtype),
                stride if isinstance(stride, int) else tuple(stride),
                padding if isinstance(padding, (int, str)) else tuple(padding),
                dilation if isinstance(dilation, int) else tuple(dilation), groups)
    except TypeError:  # an argument that is not a number or a sequence: the checks say so
        return None


def conv(nd, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    key = _conv_key(nd, input, weight, bias, stride, padding, dilation, groups)
    geometry = None if key is None else _conv_checked.get(key)
    if geometry is not None:  # NOTE [ Checked convolution calls ]
        stride, padding, dilation = geometry
        y = conv_nd(input, weight, bias, stride=stride, padding=padding, dilation=dilation,
                    groups=groups)
        if input._data.flags.c_contiguous and weight._data.flags.c_contiguous:
            return y  # (keep_layout's answer for contiguous operands)
        return keep_layout(y, input, weight)
    op = f"conv{nd}d"
    x, batched, stride, padding, dilation = _check_conv(op, nd, input, weight, bias, stride,
                                                        padding, dilation, groups)
    if key is not None and batched and x is input and x.shape[0] and x.shape[1]:
        if len(_conv_checked) >= _CONV_CHECKED_MAX:
            _conv_checked.clear()
        _conv_checked[key] = (stride, padding, dilation)
    if x.shape[0] == 0 or x.shape[1] == 0:
        out = tuple((x.shape[2 + i] + 2 * padding[i] - dilation[i] * (weight.shape[2 + i] - 1)
                     - 1) // stride[i] + 1 for i in range(nd))
        # torch's result for an input without channels has no channels either
        c_out = weight.shape[0] if x.shape[1] else 0
        y = _empty_batch((x.shape[0], c_out) + out, x, weight, bias)
        return y if batched else y.squeeze(0)
    y = conv_nd(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                groups=groups)
    return keep_layout(y, x, weight) if batched else y.squeeze(0)


def conv_transpose(nd, input, weight, bias=None, stride=1, padding=0, output_padding=0,
                   groups=1, dilation=1):
    """The adjoint of ``conv{nd}d`` in its input; weight is (C_in, C_out/groups, *k)."""
    op = f"conv_transpose{nd}d"
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional, but got "
                           f"{list(weight.shape)}")
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    _check_weight_size(weight, groups, nd)
    if weight.numel() == 0:
        raise RuntimeError(f"non-empty {nd + 1 if nd == 1 else nd + 2}D weight tensor "
                           f"expected, but got: {list(weight.shape)}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} "
            "channels instead")
    _check_empty_input(x)
    kernel_dtype("slow_conv_transpose3d" if nd == 3 else "slow_conv_transpose2d", input)
    _check_operand_dtypes(input, weight, None)
    if isinstance(bias, Tensor) and bias.dtype != input.dtype:
        _check_transposed_bias(input, bias)
        if nd == 3:  # (torch's 3-d kernel checks the bias; the 1-d and 2-d ones cast it)
            raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                               f"{bias.dtype.scalar_name}")
    stride = _tuple(stride, nd, "stride", op)
    padding = _tuple(padding, nd, "padding", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    output_padding = _tuple(output_padding, nd, "output_padding", op)
    if any(output_padding[i] >= max(stride[i], dilation[i]) for i in range(nd)):
        # torch names every dim (a 1-d one runs as 2-d, its height 0 / 1 / 1)
        lift = ((0,), (1,), (1,)) if nd == 1 else ((), (), ())
        names = ("depth", "height", "width")[-max(nd, 2):]
        parts = [f"{what}_{dim}: {v}"
                 for what, vals in (("output_padding", lift[0] + tuple(output_padding)),
                                    ("stride", lift[1] + tuple(stride)),
                                    ("dilation", lift[2] + tuple(dilation)))
                 for dim, v in zip(names, vals)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    ksize = weight.shape[2:]
    out_spatial = tuple((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] +
                        dilation[i] * (ksize[i] - 1) + output_padding[i] + 1
                        for i in range(nd))
    if any(n <= 0 for n in out_spatial):
        lift = (1,) if nd == 1 else ()  # 1-d runs as 2-d in torch
        raise RuntimeError(
            f"Given input size per channel: "
            f"({' x '.join(map(str, lift + tuple(x.shape[2:])))}). Calculated output size per "
            f"channel: ({' x '.join(map(str, lift + out_spatial))}). Output size is too small")
    c_out = weight.shape[1] * groups
    if x.shape[0] == 0:
        y = _empty_batch((0, c_out) + out_spatial, x, weight, bias)
        return y if batched else y.squeeze(0)
    shape = (x.shape[0], c_out) + out_spatial
    if bias is not None and x.dtype.name == "bfloat16" and x.device.type == "cpu":
        # torch's oneDNN kernel adds the bias to the float32 sums before their one rounding
        # (NOTE [ float16 convolutions as the slow CPU kernels ] in nn_conv_half.py)
        y = conv_input_grad(x.float(), weight.float(), shape, stride=stride, padding=padding,
                            dilation=dilation, groups=groups)
        y = (y + bias.float().reshape((1, c_out) + (1,) * nd)).to(x.dtype)
    else:
        y = conv_input_grad(x, weight, shape, stride=stride, padding=padding,
                            dilation=dilation, groups=groups)
        if bias is not None:  # torch adds in the dtypes' common type, into y's dtype
            y = (y + bias.reshape((1, c_out) + (1,) * nd)).to(y.dtype)
    y = keep_layout(y, x, weight)
    if y._grad_fn is not None:  # one node, as torch's (NOTE [ One node for a composite ])
        y = _node_names.as_one_node("ConvolutionBackward0", y, (x, weight, bias), {
            "input": x, "weight": weight, "stride": stride, "padding": padding,
            "dilation": dilation, "output_padding": output_padding, "groups": groups,
            "transposed": True, "bias_sym_sizes_opt": (0,) if bias is None else
            tuple(bias.shape)})
    return y if batched else y.squeeze(0)


# ------------------------------------------------------------------------------------------------
# named forms: nn.functional.convNd and torch.convNd are one function


_CONV_DOC = """{nd}-d convolution (cross-correlation) of a batch of {nd}-d signals.

    Args:
        input: (N, C_in, {sp}) or unbatched (C_in, {sp}).
        weight: (C_out, C_in / groups, {ks}).
        bias: (C_out,) or None.
        stride: the step between windows (an int or one per dim).
        padding: zeros added on both sides (an int, one per dim, or 'valid' / 'same').
        dilation: the spacing between kernel taps.
        groups: split channels into this many independent groups.

    Returns:
        (N, C_out, {sp_out}).

    Differences from PyTorch:
        Complex NaN, infinite and near-overflow inputs: which parts of the result are NaN can
        differ from PyTorch's (ember multiplies complex numbers with NumPy's rules). Real
        infinite and NaN inputs: whether a result is inf or NaN follows the order of the BLAS
        kernel, which differs from PyTorch's vendor kernels on some CPUs.

    Example:
        >>> import ember
        >>> ember.conv{nd}d(ember.ones({ones_in}), ember.ones({ones_w})).shape
        {shape}
    """

_CONV_TRANSPOSE_DOC = """{nd}-d transposed convolution: the adjoint of ``conv{nd}d`` in its input
    (sometimes called deconvolution).

    Args:
        input: (N, C_in, {sp}) or unbatched (C_in, {sp}).
        weight: (C_in, C_out / groups, {ks}).
        bias: (C_out,) or None.
        stride, padding, dilation: those of the convolution this is the adjoint of.
        output_padding: extra size added on one side of each output dim.
        groups: split channels into this many independent groups.

    Returns:
        (N, C_out, {sp_out}).

    Differences from PyTorch:
        Infinite and NaN inputs: where an infinity meets another of the other sign or a NaN
        in the products, whether a result is inf or NaN follows the order of the BLAS kernel,
        which differs from PyTorch's vendor kernels on some CPUs.

    Example:
        >>> import ember
        >>> ember.conv_transpose{nd}d(ember.ones({ones_in}), ember.ones({ones_w})).shape
        {tshape}
    """


def _conv_doc(template, nd):
    sp = ", ".join("DHW"[3 - nd:])
    return template.format(
        nd=nd, sp=sp, ks=", ".join(f"k{c}" for c in "DHW"[3 - nd:]),
        sp_out=", ".join(f"{c}_out" for c in "DHW"[3 - nd:]),
        ones_in=", ".join(["1", "1"] + ["4"] * nd), ones_w=", ".join(["1", "1"] + ["3"] * nd),
        shape="ember.Size([" + ", ".join(["1", "1"] + ["2"] * nd) + "])",
        tshape="ember.Size([" + ", ".join(["1", "1"] + ["6"] * nd) + "])")


def _named_conv(nd):
    def fn(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        return conv(nd, input, weight, bias, stride, padding, dilation, groups)

    fn.__name__ = fn.__qualname__ = f"conv{nd}d"
    fn.__doc__ = _conv_doc(_CONV_DOC, nd)
    return public(fn, method=False)


def _named_conv_transpose(nd):
    def fn(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
           dilation=1):
        return conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)

    fn.__name__ = fn.__qualname__ = f"conv_transpose{nd}d"
    fn.__doc__ = _conv_doc(_CONV_TRANSPOSE_DOC, nd)
    return public(fn, method=False)


conv1d, conv2d, conv3d = _named_conv(1), _named_conv(2), _named_conv(3)
conv_transpose1d, conv_transpose2d, conv_transpose3d = (
    _named_conv_transpose(1), _named_conv_transpose(2), _named_conv_transpose(3))


@public(method=False)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    """The general convolution PyTorch's named ones lower to: ``weight.dim() - 2`` spatial
    dims, direct or transposed, every argument required.

    Args:
        input: ``(N, C_in, *spatial)``, batched.
        weight: ``(C_out, C_in / groups, *k)``, or ``(C_in, C_out / groups, *k)`` when
            transposed.
        bias: ``(C_out,)`` or None.
        stride, padding, dilation: per spatial dim (or one int for all).
        transposed: compute the transposed convolution.
        output_padding: extra output size of the transposed convolution.
        groups: the number of channel groups.

    Returns:
        ``(N, C_out, *spatial_out)``.

    Example:
        >>> import ember
        >>> ember.convolution(ember.ones(1, 1, 4), ember.ones(1, 1, 3), None, [1], [0], [1],
        ...                   False, [0], 1)
        tensor([[[3., 3.]]])
    """
    nd = weight.dim() - 2
    if input.dim() != weight.dim():
        raise RuntimeError(
            f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
            f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
            f"{list(input.shape)} instead")
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a weight of 3 to 5 dims, got "
                           f"{list(weight.shape)}")
    if isinstance(bias, Tensor) and isinstance(input, Tensor) and bias.dtype != input.dtype \
            and not bias.is_complex() and not input.is_complex() and not (
                transposed and input.dtype in (_dt.int32, _dt.int16, _dt.int8, _dt.uint8,
                                               _dt.bool_)):  # (no such kernel: refused below)
        # PyTorch's CPU kernels behind this op (slow_conv2d and its kin) add the bias in the
        # input's dtype, whatever its own, but for the 3-d transposed one, which refuses; the
        # named convolutions (conv2d, ...) insist that the two match, and so does oneDNN,
        # where torch's convolution sends the input (in its words, as named from this op)
        if not _native_kernel(input, weight, stride, dilation, groups, transposed,
                              output_padding):
            if input.dtype == _dt.float32:
                from ._legacy_types import type_name

                raise RuntimeError(
                    f"Input type ({type_name(input)}) and bias type ({_legacy_name(bias)}) "
                    "should be the same or input should be a MKLDNN tensor and bias is a "
                    "dense tensor")
            raise _type_mismatch(input, bias, "bias")
        elif transposed and nd == 3:
            raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                               f"{bias.dtype.scalar_name}")
        elif transposed and bias.is_floating_point() and not input.is_floating_point():
            # (the transposed kernels add it in place, which refuses the narrowing)
            raise RuntimeError(f"result type {bias.dtype.scalar_name} can't be cast to the "
                               f"desired output type {input.dtype.scalar_name}")
        else:
            bias = bias.to(input.dtype)
    if transposed:
        y = conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
    else:
        y = conv(nd, input, weight, bias, stride, padding, dilation, groups)
    if isinstance(input, Tensor) and input.is_complex() and input.numel():
        # the named convolutions split a complex one into real ones before this op; called
        # directly, torch's kernels refuse it (after the shape checks, which ran above)
        name = (f"slow_conv_transpose{max(nd, 2)}d_out_cpu" if transposed else
                "compute_columns3d" if nd == 3 else "slow_conv2d_cpu")
        raise NotImplementedError(
            f'"{name}" not implemented for \'{input.dtype.scalar_name}\'')
    return y


def _native_kernel(input, weight, stride, dilation, groups, transposed, output_padding):
    """Whether PyTorch's ``convolution`` computes on a CPU ``input`` with its own kernels
    rather than oneDNN's: float64, float16 and integers always; float32 and bfloat16 when a
    transposed convolution's output padding reaches its stride; otherwise float32 by torch's
    rule of shapes and threads (seen as 2-d, a 1-d kernel being 1 x k); bfloat16 goes to oneDNN on
    CPUs with its bfloat16 instructions (taken here, as on the CPUs torch is tested on)."""
    from .. import get_num_threads

    if input.dtype not in (_dt.float32, _dt.bfloat16):
        return True
    nd = weight.dim() - 2

    def per_dim(v):
        return [v] * nd if isinstance(v, int) else list(v)

    st, di = per_dim(stride), per_dim(dilation)
    if transposed and any(o >= s for o, s in zip(per_dim(output_padding), st)):
        return True
    if input.dtype != _dt.float32:
        return False
    kw = weight.shape[-1]
    kh = weight.shape[-2] if nd > 1 else 1
    shape = list(input.shape) if nd > 1 else [input.shape[0], input.shape[1], 1,
                                                input.shape[2]]
    n = shape[0]
    worth = any(v != 1 for v in st) or any(v != 1 for v in di) or n >= 16 or kw != 1 or \
        kh != 1 or get_num_threads() > 1
    big = groups > 1 or (kw > 3 and kh > 3) or n > 1 or math.prod(shape[:4]) > 20480
    return not (worth and big)


def _pad_time(x, before, after):
    """``x`` (T, B, C) with ``before`` / ``after`` zero steps around its time dim."""
    return pad(x, (0, 0, 0, 0, before, after)) if before or after else x


@public(method=False)
def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of time-batch-channel data: input (T, B, C_in), weight
    (k, C_in, C_out), bias (C_out,), ``pad`` zeros on both ends of time.

    Args:
        input: (T, B, C_in).
        weight: (k, C_in, C_out).
        bias: (C_out,).
        pad: zeros added before and after the sequence.

    Returns:
        (T + 2 * pad - k + 1, B, C_out).

    Example:
        >>> import ember
        >>> ember.conv_tbc(ember.ones(5, 2, 3), ember.ones(2, 3, 4), ember.zeros(4)).shape
        ember.Size([4, 2, 4])
    """
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    # torch's definition, term by term: the bias (in the input's dtype), then one product
    # per kernel tap over the (time * batch, C_in) rows of the padded input, so the checks
    # (a row view of the input, the product's dtypes) and the sums' order are torch's
    from .creation import zeros

    t, b_, _ = input.shape
    k, c_out = weight.shape[0], weight.shape[2]
    n_out = t + 2 * pad - k + 1
    if n_out < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n_out}: "
                           f"[{n_out}, {b_}, {c_out}]")
    kernel_dtype("addmm", input)
    rows = input  # (torch views it as (T * B, C_in) rows, refusing some strided layouts)
    y = zeros((n_out, b_, c_out), dtype=input.dtype, device=input.device) + bias.to(input.dtype)
    # every operand takes part even when no tap reaches the output (zero gradients, as torch)
    y = y + input.reshape(-1)[:0].sum() + weight.reshape(-1)[:0].sum()
    for i in range(k):
        # output step o reads padded step o + i, i.e. input step o + i - pad
        lo, hi = max(0, pad - i), min(n_out, t + pad - i)
        if hi <= lo:
            continue
        part = rows[lo + i - pad:hi + i - pad].reshape(-1, rows.shape[2]) @ weight[i]
        y = y + _pad_time(part.reshape(hi - lo, b_, c_out), lo, n_out - hi)
    return y
