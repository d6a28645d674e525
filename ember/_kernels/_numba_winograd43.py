"""numba kernels for Winograd's F(4x4, 3x3) transforms on NCHW planes (imported only when
numba is installed and the ``numba`` backend is chosen; see NOTE [ Winograd F(4x4, 3x3) ]
in ``ember/_kernels/_winograd43.py``).

Transformed tiles are laid out (36, C, tiles), tiles in (sample, tile row, tile column)
order. The padded plane is held with its columns split by their remainder mod 4 (padded
column 4q + e at [e, q]), so a tile's six columns are runs of consecutive q in four phase
rows and every loop below reads and writes contiguous runs. Loops index 1-d views (not
computed offsets into the whole array, whose negative-index handling keeps LLVM from
vectorising: 1.5x slower measured). Compiled with ``cache=True`` and ``nogil=True`` as the
other kernels; the transforms are small-integer combinations, so the fast-math flags change
the schedule, not the values beyond float rounding.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"reassoc", "contract", "nsz"}
_OPTS = dict(cache=True, nogil=True, fastmath=_FM, error_model="numpy")

# NOTE [ Float32 constants in the transforms ]
# numba types a Python int or float literal as a 64-bit number, and a float32 value times
# one is a float64: with ``4 * p0`` the transforms below ran in float64, each load widened
# and each store narrowed, half as many lanes a vector. The constants are float32 (the
# transforms run only on float32 planes), so the arithmetic stays in float32: the
# channels-last input transform of (7, 64, 34, 34) took 0.66 -> 0.31 ms (one thread). The
# values move by float32 rounding of the small-integer combinations (about one ulp of the
# tile's largest value).
_2 = np.float32(2.0)
_4 = np.float32(4.0)
_5 = np.float32(5.0)
_8 = np.float32(8.0)


@njit(inline="always")
def _bt(p0, p1, p2, p3, p4, p5):  # pragma: no cover - compiled
    """B^T d of six values (NOTE [ Winograd F(4x4, 3x3) ])."""
    return (_4 * p0 - _5 * p2 + p4, p3 + p4 - _4 * (p1 + p2), p4 - p3 + _4 * (p1 - p2),
            p4 - p2 + _2 * (p3 - p1), p4 - p2 - _2 * (p3 - p1), _4 * p1 - _5 * p3 + p5)


@njit(inline="always")
def _at(m0, m1, m2, m3, m4, m5):  # pragma: no cover - compiled
    """A^T m of six values (NOTE [ Winograd F(4x4, 3x3) ])."""
    return (m0 + (m1 + m2) + (m3 + m4), (m1 - m2) + _2 * (m3 - m4), (m1 + m2) + _4 * (m3 + m4),
            (m1 - m2) + _8 * (m3 - m4) + m5)


@njit(**_OPTS)
def input_tiles(x, ph, pw, th, tw, v):  # pragma: no cover - compiled
    """v[6k + l, c, (n, ty, tx)] = (B^T d B)[k, l] of the 6x6 tile at padded (4ty, 4tx) of
    x[n, c] (zero padding ph, pw); x (N, C, H, W), v (36, C, N * th * tw)."""
    n_, c_, h, w = x.shape
    hp, wq = 4 * th + 2, tw + 1
    hh, ww = min(h, hp - ph), min(w, 4 * wq - pw)
    pad = np.zeros((4, hp, wq), x.dtype)
    r = np.empty((6, 4, wq), x.dtype)       # B^T d of one tile row, columns split likewise
    for n in range(n_):
        for c in range(c_):
            for i in range(hh):
                for j in range(ww):
                    col = pw + j
                    pad[col & 3, ph + i, col >> 2] = x[n, c, i, j]
            base = n * th * tw
            for ty in range(th):
                y0 = 4 * ty
                for e in range(4):
                    d0, d1, d2 = pad[e, y0], pad[e, y0 + 1], pad[e, y0 + 2]
                    d3, d4, d5 = pad[e, y0 + 3], pad[e, y0 + 4], pad[e, y0 + 5]
                    o0, o1, o2, o3, o4, o5 = r[0, e], r[1, e], r[2, e], r[3, e], r[4, e], r[5, e]
                    for q in range(wq):
                        p0, p1, p2, p3, p4, p5 = d0[q], d1[q], d2[q], d3[q], d4[q], d5[q]
                        o0[q], o1[q], o2[q], o3[q], o4[q], o5[q] = _bt(p0, p1, p2, p3, p4, p5)
                t0 = base + ty * tw
                t1 = t0 + tw
                for k in range(6):
                    # tile column tx reads padded columns 4tx .. 4tx + 5: phases 0-3 at tx,
                    # then phases 0-1 at tx + 1
                    a0, a1, a2, a3, b0, b1 = r[k, 0], r[k, 1], r[k, 2], r[k, 3], r[k, 0, 1:], \
                        r[k, 1, 1:]
                    o0, o1, o2 = v[6 * k, c, t0:t1], v[6 * k + 1, c, t0:t1], v[6 * k + 2, c, t0:t1]
                    o3, o4 = v[6 * k + 3, c, t0:t1], v[6 * k + 4, c, t0:t1]
                    o5 = v[6 * k + 5, c, t0:t1]
                    for tx in range(tw):
                        p0, p1, p2, p3, p4, p5 = a0[tx], a1[tx], a2[tx], a3[tx], b0[tx], b1[tx]
                        o0[tx], o1[tx], o2[tx], o3[tx], o4[tx], o5[tx] = _bt(p0, p1, p2, p3, p4,
                                                                                    p5)


@njit(**_OPTS)
def output_tiles(m, y):  # pragma: no cover - compiled
    """y[n, o] = A^T M A of every tile, cropped to y's (Ho, Wo); m (36, O, N, th, tw),
    y (N, O, Ho, Wo). (Indexed by the tile coordinates themselves, loop counters that LLVM
    knows are not negative: views per tile row cost more than these short loops.)"""
    n_, o_, ho, wo = y.shape
    th, tw = m.shape[3], m.shape[4]
    s = np.empty((4, 6, th, tw), m.dtype)   # A^T over the tiles' rows
    row = np.empty(4 * tw, m.dtype)
    for n in range(n_):
        for o in range(o_):
            for b in range(6):
                for ty in range(th):
                    for tx in range(tw):
                        m0, m1, m2 = m[b, o, n, ty, tx], m[6 + b, o, n, ty, tx], \
                            m[12 + b, o, n, ty, tx]
                        m3, m4, m5 = m[18 + b, o, n, ty, tx], m[24 + b, o, n, ty, tx], \
                            m[30 + b, o, n, ty, tx]
                        s[0, b, ty, tx], s[1, b, ty, tx], s[2, b, ty, tx], s[3, b, ty, tx] = \
                            _at(m0, m1, m2, m3, m4, m5)
            for ty in range(th):
                for a in range(4):
                    if 4 * ty + a >= ho:
                        break
                    for tx in range(tw):
                        m0, m1, m2 = s[a, 0, ty, tx], s[a, 1, ty, tx], s[a, 2, ty, tx]
                        m3, m4, m5 = s[a, 3, ty, tx], s[a, 4, ty, tx], s[a, 5, ty, tx]
                        row[4 * tx], row[4 * tx + 1], row[4 * tx + 2], row[4 * tx + 3] = \
                            _at(m0, m1, m2, m3, m4, m5)
                    for i in range(wo):
                        y[n, o, 4 * ty + a, i] = row[i]


# -- channels-last tiles (NOTE [ Channels-last Winograd tiles ] in _winograd43.py) --------
# Tiles laid out (36, tiles, channels): every loop below runs over the channels, contiguous
# and as long as the layer is wide, where the planar kernels above run over a plane's tile
# columns (four on a 16x16 plane).


@njit(**_OPTS)
def channels_last_padded(x, ph, pw, out):  # pragma: no cover - compiled
    """out[n, ph + i, pw + j, c] = x[n, c, i, j], zeros around; x (N, C, H, W), out (N, Hp,
    Wp, C) with Hp >= H + ph and Wp >= W + pw (the tiles' padded plane always holds x)."""
    n_, c_, h, w = x.shape
    hp, wp = out.shape[1], out.shape[2]
    # NOTE [ Channels-last copies and 4 KiB planes ]
    # Each output row gathers one value from every channel's plane. Where the planes lie a
    # multiple of 4 KiB apart (32x32 or 64x64 float32 planes), those reads all fall in one
    # set of the L1 cache and evict each other: such planes copy sixteen channels' rows
    # whole (vector loads) into a block that stays in L1, then write it out transposed.
    # Other planes gather directly, which is about twice as fast (one thread, us, block /
    # gather, warm and cold caches): (2, 64, 24, 24) 32 / 19 and 83 / 46, (2, 32, 26, 26)
    # 21 / 12 and 44 / 24 (the MNIST CNN's conv2), (8, 128, 14, 14) 322 / 116 cold, (2,
    # 256, 8, 8) 37 / 19; against (7, 64, 32, 32) 206 / 761 and (2, 64, 64, 64) 225 / 875.
    # Inside the MNIST CNN's step on a loaded machine both measured 4.8 ms a step (in-process
    # A/B, one thread): there the input arrives from memory, which bounds either.
    blocked = (h * w * x.itemsize) % 4096 == 0
    rows = np.empty((16, w), x.dtype)       # sixteen channels' rows, read contiguously
    for n in range(n_):
        for i in range(hp):
            ii = i - ph
            if ii < 0 or ii >= h:
                out[n, i, :, :] = 0
                continue
            for j in range(pw):
                out[n, i, j, :] = 0
            for j in range(pw + w, wp):
                out[n, i, j, :] = 0
            if not blocked:
                for j in range(w):
                    o = out[n, i, pw + j]
                    for c in range(c_):
                        o[c] = x[n, c, ii, j]
                continue
            for c0 in range(0, c_, 16):
                c1 = min(c0 + 16, c_)
                for c in range(c0, c1):
                    src = x[n, c, ii]
                    dst = rows[c - c0]
                    for j in range(w):
                        dst[j] = src[j]
                for j in range(w):
                    o = out[n, i, pw + j]
                    for c in range(c0, c1):
                        o[c] = rows[c - c0, j]


@njit(**_OPTS)
def input_tiles_cl(xp, th, tw, v):  # pragma: no cover - compiled
    """v[6k + l, t, c] = (B^T d B)[k, l] of the 6x6 tile at (4ty, 4tx) of the padded
    channels-last xp (N, 4th + 2, 4tw + 2, C); t = (n, ty, tx); v (36, N * th * tw, C)."""
    n_, c_ = xp.shape[0], xp.shape[3]
    e = np.empty((6, 6, c_), xp.dtype)      # B^T d: tile row k, column j
    for n in range(n_):
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for j in range(6):
                    col = 4 * tx + j
                    d0, d1, d2 = xp[n, 4 * ty, col], xp[n, 4 * ty + 1, col], \
                        xp[n, 4 * ty + 2, col]
                    d3, d4, d5 = xp[n, 4 * ty + 3, col], xp[n, 4 * ty + 4, col], \
                        xp[n, 4 * ty + 5, col]
                    e0, e1, e2, e3, e4, e5 = e[0, j], e[1, j], e[2, j], e[3, j], e[4, j], e[5, j]
                    for c in range(c_):
                        p0, p1, p2, p3, p4, p5 = d0[c], d1[c], d2[c], d3[c], d4[c], d5[c]
                        e0[c], e1[c], e2[c], e3[c], e4[c], e5[c] = _bt(p0, p1, p2, p3, p4, p5)
                for k in range(6):
                    a0, a1, a2, a3, a4, a5 = e[k, 0], e[k, 1], e[k, 2], e[k, 3], e[k, 4], e[k, 5]
                    o0, o1, o2 = v[6 * k, t], v[6 * k + 1, t], v[6 * k + 2, t]
                    o3, o4, o5 = v[6 * k + 3, t], v[6 * k + 4, t], v[6 * k + 5, t]
                    for c in range(c_):
                        p0, p1, p2, p3, p4, p5 = a0[c], a1[c], a2[c], a3[c], a4[c], a5[c]
                        o0[c], o1[c], o2[c], o3[c], o4[c], o5[c] = _bt(p0, p1, p2, p3, p4, p5)


@njit(**_OPTS)
def output_tiles_cl(m, th, tw, bias, y):  # pragma: no cover - compiled
    """y[n, o] = A^T M A of every tile (+ bias[o]), cropped to y's (Ho, Wo); m (36, N * th *
    tw, O), y (N, O, Ho, Wo). A tile row is assembled channels-last, then written out
    plane by plane."""
    n_, o_, ho, wo = y.shape
    s = np.empty((4, 6, o_), m.dtype)        # A^T over the tile's rows
    r = np.empty((4, 4 * tw, o_), m.dtype)   # one tile row of outputs, channels-last
    for n in range(n_):
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for b in range(6):
                    m0, m1, m2 = m[b, t], m[6 + b, t], m[12 + b, t]
                    m3, m4, m5 = m[18 + b, t], m[24 + b, t], m[30 + b, t]
                    s0, s1, s2, s3 = s[0, b], s[1, b], s[2, b], s[3, b]
                    for o in range(o_):
                        s0[o], s1[o], s2[o], s3[o] = _at(m0[o], m1[o], m2[o], m3[o], m4[o], m5[o])
                for a in range(4):
                    m0, m1, m2 = s[a, 0], s[a, 1], s[a, 2]
                    m3, m4, m5 = s[a, 3], s[a, 4], s[a, 5]
                    r0, r1, r2, r3 = r[a, 4 * tx], r[a, 4 * tx + 1], r[a, 4 * tx + 2], \
                        r[a, 4 * tx + 3]
                    for o in range(o_):
                        r0[o], r1[o], r2[o], r3[o] = _at(m0[o], m1[o], m2[o], m3[o], m4[o], m5[o])
            rows = min(4, ho - 4 * ty)
            for o in range(o_):
                bo = bias[o]
                for a in range(rows):
                    yr = y[n, o, 4 * ty + a]
                    ra = r[a]
                    for i in range(wo):
                        yr[i] = ra[i, o] + bo
