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

import sys

import numpy as np

from .. import _parallel
from . import _blas, _mlas, _train, _weight_tiles


_G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
               [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
# (36, 9): G w G^T on flattened taps (position 6a + b, tap 3k + l)
_WEIGHT_TRANSFORM = np.kron(_G, _G)

# a batch chunk's transformed tiles stay under this many bytes (in L2 between the transform
# and the GEMMs): on ResNet's stage-1 layer 2 MB (3 samples) measured 16 ms against 23 ms
# at 1 MB (one sample: 64-tile GEMMs) and 19 ms at 4 MB
_TILE_BYTES = 2 * 2**20


def _compiled():
    """The F(2x2) and F(4x4) kernel modules (numba), each imported once (``_train._module``)."""
    return _train._module("_numba_winograd22"), _train._module("_numba_winograd43")


def _impl():
    if sys.modules[__package__].backend() != "numba":
        return None
    return _compiled()[1]


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

    step = _chunks(n, per_sample, _TILE_BYTES)[0].stop
    _on_threads(samples, n, th * tw * c * out_channels, step)
    return y


def _on_threads(samples, n, work, step):
    """``samples(lo, hi)`` over the batch in one piece per thread where asked for (NOTE
    [ Batch pieces on threads ] in ember/_parallel.py), else whole with the products on one
    thread when a chunk of ``step`` samples is small; ``work`` is a sample's multiply-adds
    in one of the 36 products."""
    if _parallel.split_batch(samples, n, 36 * n * work) is None:
        with _blas.one_thread_for(min(step, n) * work):
            samples(0, n)


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


# NOTE [ Channels-last Winograd tiles ]
# On small planes the planar kernels above spend most of a layer in loop overhead: their
# inner loops run over one plane's tile columns (four on 16x16, one on 4x4), so on
# ResNet-18's 128 -> 128 16x16 layer the input transform took 7.0 ms against the products'
# 2.7 (one thread, MLAS). Laid out (36, tiles, channels) instead, every transform loop runs
# over the channels: contiguous and 64-512 long. The input is first copied to a padded
# channels-last array (the transpose is a pass over memory, 0.7 ms there), the products are
# ``M[xi] = V[xi] @ U[xi]`` with U (36, C, O), and the output transform assembles a tile row
# channels-last and writes it out plane by plane (with the bias). The same layer's forward
# took 6-7.7 ms against 12.9-14 (one thread, CPU time, load 3-5); ResNet-18's training step
# 0.96x the time before (two threads, in-process A/B). Where the tiles pay is in
# ``channels_last_pays``.
#
# F(4x4)'s larger constants cost accuracy (NOTE [ Winograd F(4x4, 3x3) ]): on that layer
# the forward's largest error against float64 is 7.3e-5 on outputs up to 8, F(2x2)'s 3.5e-6
# and PyTorch's 2.5e-6; a mean of 2.2e-6 against 2.7e-7. So, as for the planar F(4x4) path,
# only layers of 64 channels and more take it.
#
# The input adjoint is the forward of g with the flipped kernel, through the same tiles. The
# weight adjoint stays with F(2x2)'s paths: through these tiles (``dU[xi] = dM[xi]^T V[xi]``,
# ``dM = A dY A^T``) it was faster (11.5 against 13.6 ms on that layer) but its sums over
# the tiles carry F(4x4)'s larger constants into every kernel tap: 5.6e-5 absolute error on
# gradients up to 40 of a 64 -> 64 5x6 layer, where torch's and F(2x2)'s agree to 1e-5.
#
# A product's second operand is repacked by MLAS on every call, so a chunk of the batch
# holds at least twice U's bytes of tiles: U is (36, C, O), 9.4 MB for 512 channels, and
# chunks of 4 MB had ResNet's 256 -> 256 8x8 forward at 6.6 ms against 5.5 whole. Below
# that, chunks of 2 MB (two of a core's L2) measured best once the transforms ran in
# float32: (32, 64, 32x32) -> 64 forward / forward and both adjoints 5.3 / 19.2 ms at 4 MB,
# 4.6 / 18.1 at 2, 5.2 / 18.2 at 1 (two threads, in-process A/B; one thread 8.6 / 32.8 ->
# 7.6 / 31.0).
_CL_TILE_BYTES = 2 * 2**20


def channels_last_eligible(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype,
                           adjoint=False):
    """Whether a convolution's forward, or with ``adjoint`` its input adjoint, takes the
    channels-last tiles (NOTE [ Channels-last Winograd tiles ]).

    Args:
        xp: the array module of the operands.
        x_shape, w_shape: the input's and the weight's shapes.
        stride, padding, dilation: per spatial dim.
        groups: the channel groups.
        dtype: the operands' dtype.
        adjoint: ask for the input adjoint (a convolution of the output gradient, from O to
            C channels, onto the input's plane) rather than the forward.

    Returns:
        bool: True where this path runs.

    Example::

        >>> channels_last_eligible(np, (2, 8, 8, 8), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1),
        ...                        1, np.float32)
        False
    """
    from .._ops.nn_conv_winograd import output_plane

    plane = output_plane(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype)
    if plane is None:
        return False
    c, o = x_shape[1], w_shape[0]
    if not (channels_last_pays(o, c, *x_shape[2:]) if adjoint else
            channels_last_pays(c, o, *plane)):
        return False
    return _impl() is not None


def channels_last_pays(c, o, ho, wo):
    """Whether the channels-last tiles (NOTE [ Channels-last Winograd tiles ]) beat the
    other paths for a convolution of c -> o channels onto output planes (ho, wo): 64 to 256
    channels each way on planes at least 9 wide.

    U of 512 x 512 channels is 38 MB, repacked for each product, and its float64 transform
    alone takes 9 ms. On 8x8
    (ResNet-18's 256 -> 256) the forward was 6.3 against 6.7 ms at two threads but the
    backward, without F(2x2)'s shared transforms, 13.8 against 12.4 (the 16x16 layer: 5.1 /
    12.8 against 8.4 / 15.5 at two threads). Fewer than 64 channels keep F(2x2), as the
    planar F(4x4) path does (``pays``), for its accuracy: the MNIST CNN's second layer (32
    -> 64 onto 24x24) took 7.3 ms against 12.0, but 15 Adadelta steps of that example then
    ended 5.7e-6 (relative) from PyTorch's loss and 2.7e-4 from its weights, where F(2x2)
    stays within 1e-7 and 1.5e-8. Measured (one thread, CPU time, ms, load 5-7):

    ==========================  ======================  ==================  ==============
    layer (n, c, plane, o, p)   channels-last F(4x4)    before              PyTorch
    ==========================  ======================  ==================  ==============
    32, 128, 16x16, 128, 1      8.1 (backward 22.7)     13.8 (26.3)         10.4 (22.1)
    32, 64, 16x16, 64, 1        4.3                     4.7                 -
    32, 64, 32x32, 64, 1        11.9                    10.8 (F(4x4))       11.3
    ==========================  ======================  ==================  ==============

    Planes wider than 24 kept the planar F(4x4) kernels until their transforms ran in
    float32 (NOTE [ Float32 constants in the transforms ] in _numba_winograd43.py) and the
    channels-last copy read whole rows: then, in-process A/B at two threads (ms, forward /
    forward and both adjoints), (32, 64, 32x32, 64) 5.80 / 19.2 -> 5.43 / 18.6, (16, 128,
    28x28, 128) 7.9 / 25.7 -> 6.1 / 23.2, (8, 64, 56x56, 64) 4.6 / 14.5 -> 4.4 / 14.0.
    """
    return 64 <= min(c, o) and max(c, o) <= 256 and max(ho, wo) >= 9


def _cl_step(n, per_sample, u_bytes):
    return max(1, max(_CL_TILE_BYTES, 2 * u_bytes) // max(per_sample, 1))


def _cl_weights(w):
    """U (36, C, O) of w (O, C, 3, 3) for ``V @ U`` (float64 arithmetic, w's dtype)."""
    return _weight_tiles.transform(_WEIGHT_TRANSFORM, np.ascontiguousarray(
        w.transpose(1, 0, 2, 3)))


def channels_last_tiles(x, pad, th, tw, size, split=False):
    """The channels-last Winograd tiles of x (N, C, H, W) padded by ``pad``: F(4x4)'s
    (``size`` 4, (36, N * th * tw, C); NOTE [ Channels-last Winograd tiles ]) or F(2x2)'s
    (``size`` 2, (16, N * th * tw, C); NOTE [ Channels-last F(2x2) tiles ] in
    ember/_ops/nn_conv_winograd.py), th x tw tiles a plane.

    With ``split`` (F(2x2) only), the samples are cut over ember's threads where that
    pays (NOTE [ Whole-batch transforms on threads ] in ember/_ops/nn_conv_winograd.py);
    every tile is the same either way.

    Example::

        >>> channels_last_tiles(np.ones((1, 3, 4, 4), np.float32), (1, 1), 2, 2, 2).shape
        (16, 4, 3)
    """
    _numba_winograd22, _numba_winograd43 = _compiled()
    n, c = x.shape[:2]
    xp = np.empty((n, size * th + 2, size * tw + 2, c), x.dtype)
    v = np.empty(((size + 2) ** 2, n * th * tw, c), x.dtype)
    if split and size == 2:
        from .._ops.nn_conv_winograd import by_samples

        def run(lo, hi):
            _numba_winograd43.channels_last_padded(x[lo:hi], pad[0], pad[1], xp[lo:hi])
            _numba_winograd22.input_tiles_cl_part(xp, th, tw, v, lo, hi)

        by_samples(run, n, v.size)
        return v
    _numba_winograd43.channels_last_padded(x, pad[0], pad[1], xp)
    (_numba_winograd43 if size == 4 else _numba_winograd22).input_tiles_cl(xp, th, tw, v)
    return v


def _convolve_cl(x, u, pad, bias=None):
    """x (N, C, H, W) convolved through channels-last tiles with U (36, C, O): (N, O, Ho,
    Wo), plus ``bias`` (O,) where given."""
    k = _impl()
    n, c, h, w = x.shape
    o = u.shape[2]
    ho, wo, th, tw = _tiles(h, w, pad)
    x = np.ascontiguousarray(x)
    y = np.empty((n, o, ho, wo), x.dtype)
    bias = np.zeros(o, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    tiles = th * tw
    step = _cl_step(n, 36 * tiles * max(c, o) * x.itemsize, u.nbytes)

    def samples(lo, hi):
        for a in range(lo, hi, step):
            b = min(a + step, hi)
            v = channels_last_tiles(x[a:b], pad, th, tw, 4)
            k.output_tiles_cl(_mlas.product(v, u), th, tw, bias, y[a:b])

    _on_threads(samples, n, tiles * c * o, step)
    return y


def conv2d_cl(x, w, b, padding):
    """Forward through channels-last tiles: x (N, C, H, W), w (O, C, 3, 3), b (O,) or None.

    Example::

        >>> x = np.ones((1, 64, 8, 8), np.float32)
        >>> conv2d_cl(x, np.ones((64, 64, 3, 3), np.float32), None, (1, 1)).shape
        (1, 64, 8, 8)
    """
    return _convolve_cl(x, _cl_weights(w), padding, b)


def input_grad_cl(g, w, padding):
    """Adjoint in x through channels-last tiles: g convolved with the flipped, transposed
    kernel (padding 2 - p).

    Example::

        >>> g = np.ones((1, 64, 8, 8), np.float32)
        >>> input_grad_cl(g, np.ones((64, 64, 3, 3), np.float32), (1, 1)).shape
        (1, 64, 8, 8)
    """
    u = _weight_tiles.transform(_WEIGHT_TRANSFORM, np.ascontiguousarray(w[:, :, ::-1, ::-1]))
    return _convolve_cl(g, u, tuple(2 - p for p in padding))
