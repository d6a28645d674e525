"""Winograd's minimal filtering F(2x2, 3x3) for stride-1 3x3 convolutions.

NOTE [ Winograd convolution ]
A 3x3 convolution's output, taken in 2x2 tiles, is linear in each 4x4 input tile (the
tiles overlap by 2). In one dimension, two outputs of a 3-tap filter over four inputs d are

    y = A^T [ (G w) * (B^T d) ]      B^T d = (d0 - d2, d1 + d2, d2 - d1, d1 - d3)
                                     G w   = (w0, (w0 + w1 + w2)/2, (w0 - w1 + w2)/2, w2)
                                     A^T m = (m0 + m1 + m2, m1 - m2 - m3)

(Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016). In two
dimensions each of the 16 transformed positions xi is an independent channel mixing, so a
whole convolution is 16 GEMMs ``M[xi] = V[xi] @ U[xi]`` of (tiles, C) by (C, O): 16
multiplications per tile and channel pair where the direct form takes 36. The transforms
are additions (and halvings of the weights), so the rounding error stays that of the
direct form (measured against float64: within 1.5x of it in float32). They are memory
passes, cheap beside the GEMMs when channels are many and planes small, which is where
gathered columns do worst (NOTE [ Planar columns ]).

The adjoints are Winograd convolutions too:
- in x, the adjoint is the convolution of g with the flipped, transposed kernel, whose
  transform is U's with the positions' order reversed (flipping the taps reverses G's
  columns, which is G with rows 0 and 3 swapped) -- no second weight transform;
- in w, the gradient of U[xi] is ``V[xi]^T @ dM[xi]``, where ``dM = A dY A^T`` (the
  adjoint of the output transform) of each 2x2 tile dY of g, and ``dw = G^T dU G``.

Layout: the padded input is held channels last with rows and columns split by parity
(padded position 2i + e stored at [e, i]), so each of a tile's four row (column) offsets
is a run of whole contiguous blocks and every transform pass is a long vectorised
add over contiguous memory. Batches are taken in chunks whose transformed tiles stay in
cache between the transform and the GEMMs.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch, _parallel
from .._kernels import _blas, _mlas, _weight_tiles
from .channels_last import copy_channels_last

_G = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
# (16, 9): the 2-D weight transform G w G^T on flattened taps (position 4a + b, tap 3k + l)
_WEIGHT_TRANSFORM = np.kron(_G, _G)
# position 4a + b of the flipped kernel's transform is position 4P(a) + P(b) of the
# kernel's, P swapping 0 and 3
_P = (3, 1, 2, 0)
_FLIPPED = tuple(4 * _P[a] + _P[b] for a in range(4) for b in range(4))

# a batch chunk's transformed tiles stay under _TILE_BYTES (in the cache that the GEMMs
# read them from), unless that leaves fewer than _MIN_TILES rows per GEMM (below which
# OpenBLAS runs at two thirds of its speed)
_TILE_BYTES = 2 * 2**20
_MIN_TILES = 512


def eligible(xp, x_shape, w_shape, stride, padding, dilation, groups, dtype):
    """Whether a convolution takes the Winograd path: NumPy arrays (CuPy keeps gathered
    columns until measured on a GPU), 2-D, 3x3, stride 1, undilated, ungrouped, padding at
    most 2 (so that the input adjoint is a convolution too), float32/float64, and many
    channels over small planes (NOTE [ Winograd convolution ])."""
    if xp is not np or len(w_shape) != 4 or tuple(w_shape[2:]) != (3, 3) or groups != 1:
        return False
    if any(p > 2 for p in padding):
        return False
    if tuple(stride) != (1, 1) or tuple(dilation) != (1, 1):
        return False
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        return False
    ho, wo, _, _ = _tiles(x_shape, padding)
    if ho < 1 or wo < 1 or x_shape[0] == 0:
        return False
    return _winograd_pays(x_shape[1], w_shape[0], x_shape[-1])


def _winograd_pays(c, o, row):
    """Measured on ResNet-sized layers (batch 8-32, forward and both adjoints, against
    gathered columns): F(2x2, 3x3) wins from 64 channels on planes up to 24 wide (by 25-45%
    on ResNet-18's 16x16 to 4x4 stages) and from 256 on 32-wide ones; with fewer channels
    or wider planes the transforms' memory passes cost more than the GEMM work saved."""
    k = min(c, o)
    return k >= 64 and (row <= 24 or k >= 256)


def _tiles(x_shape, padding):
    """Output size (Ho, Wo) and tile counts (Th, Tw) of x padded by ``padding``."""
    ho, wo = (x_shape[2 + i] + 2 * padding[i] - 2 for i in range(2))
    return ho, wo, (ho + 1) // 2, (wo + 1) // 2


def _chunks(n, per_sample, tiles):
    step = max(1, _TILE_BYTES // max(per_sample, 1), -(-_MIN_TILES // tiles))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def weight_tiles(xp, w):
    """U (16, O, C): G w G^T of each (O, C) kernel, position-major."""
    o, c = w.shape[:2]
    kw = xp.asarray(_WEIGHT_TRANSFORM, dtype=w.dtype)
    if xp is np:  # in blocks on the threads (NOTE [ Weight transforms on threads ])
        return _weight_tiles.transform(kw, w)
    return xp.matmul(kw, w.reshape(o * c, 9).T).reshape(16, o, c)


def _one_thread_for(xp, work):
    """The BLAS held at one thread for a loop of small NumPy GEMMs of ``work`` multiply-adds
    each (NOTE [ GEMM threads by shape ] in ember/_kernels/_blas.py): under load, the 16
    two-thread products of a ResNet-18 stage-3 Winograd chunk each waited for a time slice
    (6.6 s of a 16 s step at load 9)."""
    return _blas.one_thread_for(work if xp is np else 0)


def _parity_split(xp, a, pad, rows, cols):
    """(N, C, H, W) -> (N, 2, rows, 2, cols, C): zero-padded by ``pad``, channels last,
    padded position 2i + e at [e, i]."""
    n, c, h, w = a.shape
    out = xp.zeros((n, 2, rows, 2, cols, c), a.dtype)
    for eh in (0, 1):
        r0 = (eh - pad[0]) % 2
        for ew in (0, 1):
            c0 = (ew - pad[1]) % 2
            src = a[:, :, r0::2, c0::2]
            i0, j0 = (r0 + pad[0]) // 2, (c0 + pad[1]) // 2
            copy_channels_last(xp, out[:, eh, i0:i0 + src.shape[2], ew, j0:j0 + src.shape[3]],
                               src)
    return out


def input_tiles(xp, xs, th, tw):
    """V (16, N*Th*Tw, C): B^T d B of every 4x4 tile (stride 2) of an input split by
    ``_parity_split`` into (N, 2, Th+1, 2, Tw+1, C)."""
    n, c = xs.shape[0], xs.shape[-1]
    # rows: tile row ty at offset k reads padded row 2ty + k, i.e. [k % 2, ty + k // 2]
    r = [xs[:, k % 2, k // 2:k // 2 + th] for k in range(4)]  # (N, Th, 2, Tw+1, C)
    t = xp.empty((4, n, th, 2, tw + 1, c), xs.dtype)
    xp.subtract(r[0], r[2], out=t[0])
    xp.add(r[1], r[2], out=t[1])
    xp.subtract(r[2], r[1], out=t[2])
    xp.subtract(r[1], r[3], out=t[3])
    v = xp.empty((16, n, th, tw, c), xs.dtype)
    for k in range(4):
        cl = [t[k][:, :, l % 2, l // 2:l // 2 + tw] for l in range(4)]  # (N, Th, Tw, C)
        xp.subtract(cl[0], cl[2], out=v[4 * k])
        xp.add(cl[1], cl[2], out=v[4 * k + 1])
        xp.subtract(cl[2], cl[1], out=v[4 * k + 2])
        xp.subtract(cl[1], cl[3], out=v[4 * k + 3])
    return v.reshape(16, n * th * tw, c)


def output_tiles(xp, m, n, th, tw, ho, wo):
    """A^T M A of every tile: M (16, N*Th*Tw, O) -> channels-last output (N, Ho, Wo, O)."""
    o = m.shape[-1]
    m = m.reshape(4, 4, n, th, tw, o)
    s = xp.empty((2, 4, n, th, tw, o), m.dtype)
    xp.add(m[0], m[1], out=s[0])
    s[0] += m[2]
    xp.subtract(m[1], m[2], out=s[1])
    s[1] -= m[3]
    y = xp.empty((n, th, 2, tw, 2, o), m.dtype)
    for r in range(2):
        y0, y1 = y[:, :, r, :, 0], y[:, :, r, :, 1]
        xp.add(s[r, 0], s[r, 1], out=y0)
        y0 += s[r, 2]
        xp.subtract(s[r, 1], s[r, 2], out=y1)
        y1 -= s[r, 3]
    return y.reshape(n, 2 * th, 2 * tw, o)[:, :ho, :wo]


def output_tiles_adjoint(xp, gs, th, tw):
    """dM (16, N*Th*Tw, O) = A dY A^T of every 2x2 tile of g, split by ``_parity_split``
    into (N, 2, Th, 2, Tw, O): the adjoint of ``output_tiles``."""
    n, o = gs.shape[0], gs.shape[-1]
    # rows: (dy0, dy0 + dy1, dy0 - dy1, -dy1)
    t = xp.empty((4, n, th, 2, tw, o), gs.dtype)
    t[0] = gs[:, 0]
    xp.add(gs[:, 0], gs[:, 1], out=t[1])
    xp.subtract(gs[:, 0], gs[:, 1], out=t[2])
    xp.negative(gs[:, 1], out=t[3])
    dm = xp.empty((16, n, th, tw, o), gs.dtype)
    for k in range(4):
        c0, c1 = t[k][:, :, 0], t[k][:, :, 1]
        dm[4 * k] = c0
        xp.add(c0, c1, out=dm[4 * k + 1])
        xp.subtract(c0, c1, out=dm[4 * k + 2])
        xp.negative(c1, out=dm[4 * k + 3])
    return dm.reshape(16, n * th * tw, o)


def _mm(xp, a, b, out):
    """``a @ b`` into ``out``: NumPy's (or MLAS's where chosen, NOTE [ Products past a pinned
    OpenBLAS ]), or the array library's own."""
    if xp is np:
        return _mlas.product(a, b, out)
    return xp.matmul(a, b, out=out)


def _products(xp, v, u, out, flipped=False):
    """out[xi] = v[xi] @ u[xi]^T (or v[xi] @ u[flip xi] for the input adjoint)."""
    with _one_thread_for(xp, v.shape[1] * v.shape[2] * out.shape[2]):
        for i in range(16):
            _mm(xp, v[i], u[_FLIPPED[i]] if flipped else u[i].T, out[i])
    return out


def _pieces(xp, fn, n, work):
    """``fn(lo, hi)`` over the batch: in one piece per thread where that applies (NOTE
    [ Batch pieces on threads ] in ember/_parallel.py), else whole; the pieces' results."""
    parts = _parallel.split_batch(fn, n, work) if xp is np else None
    return [fn(0, n)] if parts is None else parts


def _convolve_samples(xp, x, u, pad, flipped, y, lo, hi):
    """Samples lo:hi of the Winograd convolution of x with transformed weights u, written
    into y[lo:hi]."""
    c = x.shape[1]
    o = y.shape[1]
    ho, wo, th, tw = _tiles(x.shape, pad)
    xs = _parity_split(xp, x[lo:hi], pad, th + 1, tw + 1)
    for sl in _chunks(hi - lo, 16 * th * tw * max(c, o) * x.dtype.itemsize, th * tw):
        k = len(range(*sl.indices(hi - lo)))
        v = input_tiles(xp, xs[sl], th, tw)
        m = _products(xp, v, u, xp.empty((16, v.shape[1], o), x.dtype), flipped)
        y[lo + sl.start:lo + sl.start + k] = xp.moveaxis(
            output_tiles(xp, m, k, th, tw, ho, wo), -1, 1)


# NOTE [ Few tiles: products split by position ]
# On the smallest planes a batch piece holds too few tiles for a good product: ResNet-18's
# 512 -> 512 layers on 4x4 planes have 4 tiles a sample, so each of two pieces multiplies
# (64, 512) by (512, 512) sixteen times, a shape at which OpenBLAS runs at two thirds of its
# speed, and both pieces read all of U (16.8 MB) at once. There the batch is transformed
# whole and the 16 tile-space products, each over every tile of the batch, are shared out
# by position instead, one block of positions per thread with the BLAS at one thread
# (``_parallel.split_batch`` over the positions); the transforms, small on such planes, run
# on the calling thread. Each product is the one the batch pieces would make over more rows:
# the same values (the weight gradient's sums over tiles in another order). Measured at two
# threads, in-process, alternating (2-CPU EPYC, bench/RESULTS.md): (32, 512, 4, 4) forward
# 8.9 -> 7.1-7.5 ms (PyTorch 5.5), both adjoints 15.4 -> 12.6-13.8; on (32, 256, 8, 8) (16
# tiles a sample) the batch pieces stay ahead (forward 6.3 against 7.1), hence a piece's
# rows below ``_POSITION_ROWS`` as the test.
_POSITION_ROWS = 128


def _by_position(xp, n, th, tw):
    """Whether the products split by position rather than the batch in pieces (NOTE [ Few
    tiles: products split by position ])."""
    t = _parallel._threads()
    return xp is np and t > 1 and n > 1 and -(-n // t) * th * tw < _POSITION_ROWS


def _positions(fn, work):
    """``fn(lo, hi)`` over the 16 positions: a block per thread where that applies (NOTE
    [ Few tiles: products split by position ]), else whole, with the BLAS held at one thread
    where its shape asks for that; ``work`` is the multiply-adds of all 16 products."""
    if _parallel.split_batch(fn, 16, work) is None:
        with _one_thread_for(np, work // 16):
            fn(0, 16)


def _convolve_by_position(xp, x, u, pad, flipped, y):
    """``_convolve`` over the whole batch at once, the products split by position."""
    n, o = x.shape[0], y.shape[1]
    ho, wo, th, tw = _tiles(x.shape, pad)
    v = input_tiles(xp, _parity_split(xp, x, pad, th + 1, tw + 1), th, tw)
    m = xp.empty((16, v.shape[1], o), x.dtype)

    def positions(lo, hi):
        for i in range(lo, hi):
            _mm(xp, v[i], u[_FLIPPED[i]] if flipped else u[i].T, m[i])

    _positions(positions, 16 * v.shape[1] * v.shape[2] * o)
    y[...] = xp.moveaxis(output_tiles(xp, m, n, th, tw, ho, wo), -1, 1)


def _convolve(xp, x, u, pad, flipped=False):
    """The Winograd convolution of x with transformed weights u, (N, O, Ho, Wo). The batch
    runs in pieces on threads, all with the one transform ``u`` (NOTE [ One weight transform
    per step ] in ember/_kernels/_weight_tiles.py), or, on the smallest planes, whole with
    the products split by position (NOTE [ Few tiles: products split by position ])."""
    n, c = x.shape[:2]
    o = u.shape[2] if flipped else u.shape[1]
    ho, wo, th, tw = _tiles(x.shape, pad)
    y = xp.empty((n, o, ho, wo), x.dtype)
    if _by_position(xp, n, th, tw):
        _convolve_by_position(xp, x, u, pad, flipped, y)
        return y
    _pieces(xp, lambda lo, hi: _convolve_samples(xp, x, u, pad, flipped, y, lo, hi), n,
            16 * n * th * tw * c * o)
    return y


def _keeps(xp):
    # a forward keeps its weight transform for the backward only where a graph is being
    # recorded (NOTE [ One weight transform per step ])
    return xp is np and _dispatch.state.grad_enabled


def conv2d(xp, x, w, b, padding):
    """Forward: x (N, C, H, W), w (O, C, 3, 3), b (O,) or None."""
    u = weight_tiles(xp, w)
    if _keeps(xp):
        _weight_tiles.keep("f2", x, w, u)
    y = _convolve(xp, x, u, padding)
    if b is not None:
        y += b.reshape(-1, 1, 1)
    return y


def input_grad(xp, g, w, padding, u=None):
    """Adjoint in x: g convolved with the flipped, transposed kernel (padding 2 - p)."""
    u = weight_tiles(xp, w) if u is None else u
    return _convolve(xp, g, u, tuple(2 - p for p in padding), flipped=True)


def _weight_tiles_sum(xp, x, g, padding, lo, hi):
    """Samples lo:hi's share of the weight gradient in tile space: the sum over their tiles
    of V^T dM, (16, O, C)."""
    c, o = x.shape[1], g.shape[1]
    _, _, th, tw = _tiles(x.shape, padding)
    du = xp.empty((16, o, c), x.dtype)
    part = xp.empty((o, c), x.dtype)
    xs = _parity_split(xp, x[lo:hi], padding, th + 1, tw + 1)
    gs = _parity_split(xp, g[lo:hi], (0, 0), th, tw)
    for sl in _chunks(hi - lo, 16 * th * tw * max(c, o) * x.dtype.itemsize, th * tw):
        v = input_tiles(xp, xs[sl], th, tw)
        dm = output_tiles_adjoint(xp, gs[sl], th, tw)
        with _one_thread_for(xp, o * c * v.shape[1]):
            for i in range(16):
                if sl.start == 0:  # the first chunk writes the sums, later ones add
                    _mm(xp, dm[i].T, v[i], du[i])
                else:
                    _mm(xp, dm[i].T, v[i], part)
                    du[i] += part
    return du


def weight_from_parts(xp, parts):
    """dw = G^T dU G: the (O, C, 3, 3) weight gradient from the batch pieces' tile-space
    sums ``parts`` (each (16, O, C)), added on the way (NOTE [ Weight transforms on
    threads ] in ember/_kernels/_weight_tiles.py)."""
    o, c = parts[0].shape[1:]
    kw = xp.asarray(_WEIGHT_TRANSFORM, dtype=parts[0].dtype)
    if xp is np:
        return _weight_tiles.inverse(parts, kw).reshape(o, c, 3, 3)
    du = parts[0]
    for p in parts[1:]:
        du = du + p
    return xp.matmul(du.reshape(16, o * c).T, kw).reshape(o, c, 3, 3)


def weight_grad(xp, x, g, padding):
    """Adjoint in w: G^T (sum over tiles of V^T dM) G, (O, C, 3, 3); the batch in pieces on
    threads, their tile-space sums added before the one inverse transform."""
    n, c = x.shape[:2]
    _, _, th, tw = _tiles(x.shape, padding)
    if _by_position(xp, n, th, tw):
        return weight_from_parts(xp, [_weight_tiles_by_position(xp, x, g, padding)])
    parts = _pieces(xp, lambda lo, hi: _weight_tiles_sum(xp, x, g, padding, lo, hi), n,
                    16 * n * th * tw * c * g.shape[1])
    return weight_from_parts(xp, parts)


def _weight_tiles_by_position(xp, x, g, padding, also=None):
    """The whole batch's tile-space weight gradient (16, O, C), the products split by
    position (NOTE [ Few tiles: products split by position ]); ``also(i)``, where given,
    runs beside position i's product on the same thread."""
    c, o = x.shape[1], g.shape[1]
    _, _, th, tw = _tiles(x.shape, padding)
    v = input_tiles(xp, _parity_split(xp, x, padding, th + 1, tw + 1), th, tw)
    dm = output_tiles_adjoint(xp, _parity_split(xp, g, (0, 0), th, tw), th, tw)
    du = xp.empty((16, o, c), x.dtype)

    def positions(lo, hi):
        for i in range(lo, hi):
            _mm(xp, dm[i].T, v[i], du[i])
            if also is not None:
                also(i)

    _positions(positions, 16 * o * c * v.shape[1] * (1 if also is None else 2))
    return du


def backward(xp, g, x, w, padding):
    """Both adjoints, with the weight transform the forward kept (or one made here) and the
    batch in pieces on threads, each piece computing both."""
    u = _weight_tiles.take("f2", x, w) if xp is np else None
    u = weight_tiles(xp, w) if u is None else u
    n, c = x.shape[:2]
    o = g.shape[1]
    pad_g = tuple(2 - p for p in padding)
    ho, wo, th, tw = _tiles(g.shape, pad_g)
    gx = xp.empty(x.shape, x.dtype)
    if _by_position(xp, n, th, tw):
        # (NOTE [ Few tiles: products split by position ])
        vg = input_tiles(xp, _parity_split(xp, g, pad_g, th + 1, tw + 1), th, tw)
        m = xp.empty((16, vg.shape[1], c), x.dtype)

        def input_product(i):
            _mm(xp, vg[i], u[_FLIPPED[i]], m[i])

        du = _weight_tiles_by_position(xp, x, g, padding, also=input_product)
        gx[...] = xp.moveaxis(output_tiles(xp, m, n, th, tw, ho, wo), -1, 1)
        return gx, weight_from_parts(xp, [du])

    def samples(lo, hi):
        _convolve_samples(xp, g, u, pad_g, True, gx, lo, hi)
        return _weight_tiles_sum(xp, x, g, padding, lo, hi)

    parts = _pieces(xp, samples, n, 32 * n * th * tw * c * o)
    return gx, weight_from_parts(xp, parts)
