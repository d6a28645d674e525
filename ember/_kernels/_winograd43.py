"""Winograd's F(4x4, 3x3) on NCHW planes with compiled transforms (numba backend).

NOTE [ Winograd F(4x4, 3x3) ]
The planar F(2x2, 3x3) path (NOTE [ Planar Winograd ] in ``ember/_ops/nn_conv_winograd.py``)
spends about half of a ResNet stage-1 layer in its 16 thin GEMMs. F(4x4, 3x3) takes 6x6
input tiles to 4x4 output tiles: 36 products per output tile and channel pair for 16
outputs, 2.25 per output against F(2x2)'s 4 and the direct form's 9, and its transformed
input is 2.25 times the input where F(2x2)'s is 4 times, so both the GEMMs and the memory
the transforms write shrink. In one dimension, with the points 0, +-1, +-2 and infinity
(Lavin & Gray, 2016):

    B^T d = (4d0 - 5d2 + d4, -4d1 - 4d2 + d3 + d4, 4d1 - 4d2 - d3 + d4,
             -2d1 - d2 + 2d3 + d4, 2d1 - d2 - 2d3 + d4, 4d1 - 5d3 + d5)
    G w   = (w0/4, -(w0 + w1 + w2)/6, -(w0 - w1 + w2)/6, (w0 + 2w1 + 4w2)/24,
             (w0 - 2w1 + 4w2)/24, w2)
    A^T m = (m0 + m1 + m2 + m3 + m4, m1 - m2 + 2m3 - 2m4, m1 + m2 + 4m3 + 4m4,
             m1 - m2 + 8m3 - 8m4 + m5)

The larger constants cost accuracy: against float64, a 64-channel float32 tile's error is
about 5x F(2x2)'s (1e-5 absolute on outputs of magnitude 5; the conv tests' tolerance is
2e-4 relative to the largest value). The weight transform is done in float64.

The three ops mirror the planar F(2x2) path, tiles laid out (36, C, tiles):

- forward: ``M[xi] = U[xi] @ V[xi]``, (O, C) by (C, tiles), one stacked matmul per chunk;
- input adjoint: the same with the flipped, transposed kernel and padding 2 - p.

The weight adjoint stays with F(2x2, 3x3): as 36 GEMMs reducing over the tiles
(``dU[xi] = dM[xi] @ V[xi]^T``, ``dM = A dY A^T``) it measured no faster than the 16 of
F(2x2) on ResNet's stage-1 layer (34 against 32 ms, one thread, loaded machine), its
transforms costing what its GEMMs save.

Used for float32, 3x3, stride 1, undilated, ungrouped convolutions with padding at most 2
where ``pays`` says so (measured, see there); everything else stays with the other paths.
"""

from __future__ import annotations

import numpy as np

from .. import _parallel
from . import _blas, _mlas


_G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
# (36, 9): G w G^T on flattened taps (position 6a + b, tap 3k + l)
_WEIGHT_TRANSFORM = np.kron(_G, _G)

# a batch chunk's transformed tiles stay under this many bytes (in L2 between the transform
# and the GEMMs): on ResNet's stage-1 layer 2 MB (3 samples) measured 16 ms against 23 ms
# at 1 MB (one sample: 64-tile GEMMs) and 19 ms at 4 MB
_TILE_BYTES = 2 * 2**20


def _impl():
    from . import backend

    if backend() != "numba":
        return None
    from . import _numba_winograd43

    return _numba_winograd43


def eligible(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype):
    """Whether a convolution takes the F(4x4, 3x3) path (NOTE [ Winograd F(4x4, 3x3) ]).

    Args:
        xp: the array module of the operands.
        x_shape, w_shape: the input's and the weight's shapes.
        stride, padding, dilation: per spatial dim.
        groups: the channel groups.
        dtype: the operands' dtype.

    Returns:
        bool: True where this path runs.

    Example::

        >>> eligible(np, (2, 8, 8, 8), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1,
        ...          np.float64)
        False
    """
    from .._ops.nn_conv_winograd import output_plane

    plane = output_plane(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype)
    if plane is None or not pays(x_shape[1], w_shape[0], *plane):
        return False
    return _impl() is not None


def pays(c, o, ho, wo):
    """Whether F(4x4, 3x3) beats the planar F(2x2, 3x3) path for c -> o channels and
    output planes (ho, wo). Measured (one thread, CPU time, ms, forward / input gradient;
    loaded machine, so +-15%):

    ============================  ===========  ===========  ===========
    layer (batch, c, plane, o)    F(4x4)       F(2x2)       PyTorch
    ============================  ===========  ===========  ===========
    32, 64, 32x32, 64 (pad 1)     19.9 / 22.0  26.6 / 30.8  19.0 / 22.3
    64, 32, 26x26, 64 (pad 0)     26.0 / 25.0  15.8 / 20.2  16.5 / 14.6
    32, 128, 16x16, 128           21.8 / 22.1  20.5 / 22.1  21.8 / 22.9
    ============================  ===========  ===========  ===========

    The transforms cost more per input than F(2x2)'s, and only on large planes with many
    channels do the GEMMs they save outweigh them: from 64 channels each way on output
    planes at least 28 wide."""
    return min(c, o) >= 64 and min(ho, wo) >= 28


def _tiles(h, w, pad):
    ho, wo = h + 2 * pad[0] - 2, w + 2 * pad[1] - 2
    return ho, wo, (ho + 3) // 4, (wo + 3) // 4


def _chunks(n, per_sample, budget):
    step = max(1, budget // max(per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def weight_tiles(w):
    """U = G w G^T of every (O, C) kernel, (36, O, C), computed in float64."""
    o, c = w.shape[:2]
    # one BLAS thread (NOTE [ Side products on one thread ] in ember/_kernels/_blas.py)
    u = _blas.side_matmul(_WEIGHT_TRANSFORM, w.reshape(o * c, 9).T.astype(np.float64))
    return np.ascontiguousarray(u.reshape(36, o, c).astype(w.dtype))


def _convolve(x, u, pad, out_channels):
    """Winograd convolution of x (N, C, H, W) with transformed weights u (36, O, C):
    (N, O, Ho, Wo)."""
    k = _impl()
    n, c, h, w = x.shape
    ho, wo, th, tw = _tiles(h, w, pad)
    x = np.ascontiguousarray(x)
    y = np.empty((n, out_channels, ho, wo), x.dtype)
    per_sample = 36 * th * tw * max(c, out_channels) * x.itemsize

    def samples(lo, hi):
        for sl in _chunks(hi - lo, per_sample, _TILE_BYTES):
            xs = x[lo + sl.start:lo + sl.stop]
            m_ = xs.shape[0]
            v = np.empty((36, c, m_ * th * tw), x.dtype)
            k.input_tiles(xs, pad[0], pad[1], th, tw, v)
            m = _mlas.product(u, v)
            k.output_tiles(m.reshape(36, out_channels, m_, th, tw),
                           y[lo + sl.start:lo + sl.stop])

    # batch pieces on threads where asked for (NOTE [ Batch pieces on threads ])
    if _parallel.split_batch(samples, n, 36 * n * th * tw * c * out_channels) is None:
        step = _chunks(n, per_sample, _TILE_BYTES)[0].stop
        with _blas.one_thread_for(step * th * tw * c * out_channels):
            samples(0, n)
    return y


def conv2d(x, w, b, padding):
    """Forward: x (N, C, H, W), w (O, C, 3, 3), b (O,) or None; (N, O, Ho, Wo).

    Example::

        >>> x = np.ones((1, 16, 16, 16), np.float32)
        >>> conv2d(x, np.ones((16, 16, 3, 3), np.float32), None, (1, 1)).shape
        (1, 16, 16, 16)
    """
    y = _convolve(x, weight_tiles(w), padding, w.shape[0])
    if b is not None:
        y += b.reshape(-1, 1, 1)
    return y


def input_grad(g, w, padding):
    """Adjoint in x: g (N, O, Ho, Wo) convolved with the flipped, transposed kernel
    (padding 2 - p); (N, C, H, W).

    Example::

        >>> g = np.ones((1, 16, 16, 16), np.float32)
        >>> input_grad(g, np.ones((16, 16, 3, 3), np.float32), (1, 1)).shape
        (1, 16, 16, 16)
    """
    wf = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    return _convolve(g, weight_tiles(wf), tuple(2 - p for p in padding), w.shape[1])
