"""numba kernels for Winograd's F(2x2, 3x3) through channels-last tiles (imported only when
numba is installed and the ``numba`` backend is chosen; see NOTE [ Channels-last F(2x2)
tiles ] in ``ember/_ops/nn_conv_winograd.py``).

Tiles are laid out (16, tiles, channels), tiles in (sample, tile row, tile column) order,
so every loop below runs over the channels, contiguous, as in the channels-last F(4x4)
kernels (``_numba_winograd43.py``, whose ``channels_last_padded`` makes the padded input).
The transforms are additions and subtractions only: the same values, in the same order,
as the planar F(2x2) kernels (``_numba_conv.py``), so the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"reassoc", "contract", "nsz"}
_OPTS = dict(cache=True, nogil=True, fastmath=_FM, error_model="numpy")


@njit(inline="always")
def _bt(p0, p1, p2, p3):  # pragma: no cover - compiled
    """B^T d of four values (NOTE [ Winograd convolution ] in ember/_ops/nn_winograd.py)."""
    return p0 - p2, p1 + p2, p2 - p1, p1 - p3


@njit(inline="always")
def _at(m0, m1, m2, m3):  # pragma: no cover - compiled
    """A^T m of four values."""
    return m0 + m1 + m2, m1 - m2 - m3


@njit(**_OPTS)
def input_tiles_cl(xp, th, tw, v):  # pragma: no cover - compiled
    """v[4k + l, t, c] = (B^T d B)[k, l] of the 4x4 tile at (2ty, 2tx) of the padded
    channels-last xp (N, 2th + 2, 2tw + 2, C); t = (n, ty, tx); v (16, N * th * tw, C)."""
    input_tiles_cl_part(xp, th, tw, v, 0, xp.shape[0])


@njit(**_OPTS)
def input_tiles_cl_part(xp, th, tw, v, lo, hi):  # pragma: no cover - compiled
    """``input_tiles_cl`` for the samples lo..hi-1 only (NOTE [ Whole-batch transforms on
    threads ] in ember/_ops/nn_conv_winograd.py)."""
    c_ = xp.shape[3]
    e = np.empty((4, 4, c_), xp.dtype)      # B^T d: tile row k, column j
    for n in range(lo, hi):
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for j in range(4):
                    col = 2 * tx + j
                    d0, d1 = xp[n, 2 * ty, col], xp[n, 2 * ty + 1, col]
                    d2, d3 = xp[n, 2 * ty + 2, col], xp[n, 2 * ty + 3, col]
                    e0, e1, e2, e3 = e[0, j], e[1, j], e[2, j], e[3, j]
                    for c in range(c_):
                        e0[c], e1[c], e2[c], e3[c] = _bt(d0[c], d1[c], d2[c], d3[c])
                for k in range(4):
                    a0, a1, a2, a3 = e[k, 0], e[k, 1], e[k, 2], e[k, 3]
                    o0, o1 = v[4 * k, t], v[4 * k + 1, t]
                    o2, o3 = v[4 * k + 2, t], v[4 * k + 3, t]
                    for c in range(c_):
                        o0[c], o1[c], o2[c], o3[c] = _bt(a0[c], a1[c], a2[c], a3[c])


@njit(**_OPTS)
def output_tiles_cl(m, th, tw, bias, y):  # pragma: no cover - compiled
    """y[n, o] = A^T M A of every tile (+ bias[o]), cropped to y's (Ho, Wo); m (16, N * th *
    tw, O), y (N, O, Ho, Wo). A tile row is assembled channels-last, then written out
    plane by plane."""
    output_tiles_cl_part(m, th, tw, bias, y, 0, y.shape[0])


@njit(**_OPTS)
def output_tiles_cl_part(m, th, tw, bias, y, lo, hi):  # pragma: no cover - compiled
    """``output_tiles_cl`` for the samples lo..hi-1 only."""
    o_, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    s = np.empty((2, 4, o_), m.dtype)        # A^T over the tile's rows
    r = np.empty((2, 2 * tw, o_), m.dtype)   # one tile row of outputs, channels-last
    for n in range(lo, hi):
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for b in range(4):
                    m0, m1, m2, m3 = m[b, t], m[4 + b, t], m[8 + b, t], m[12 + b, t]
                    s0, s1 = s[0, b], s[1, b]
                    for o in range(o_):
                        s0[o], s1[o] = _at(m0[o], m1[o], m2[o], m3[o])
                for a in range(2):
                    m0, m1, m2, m3 = s[a, 0], s[a, 1], s[a, 2], s[a, 3]
                    r0, r1 = r[a, 2 * tx], r[a, 2 * tx + 1]
                    for o in range(o_):
                        r0[o], r1[o] = _at(m0[o], m1[o], m2[o], m3[o])
            rows = min(2, ho - 2 * ty)
            for o in range(o_):
                bo = bias[o]
                for a in range(rows):
                    yr = y[n, o, 2 * ty + a]
                    ra = r[a]
                    for i in range(wo):
                        yr[i] = ra[i, o] + bo


@njit(**_OPTS)
def output_adjoint_cl(gp, th, tw, dm):  # pragma: no cover - compiled
    """dm[4k + l, t, o] = (A dY A^T)[k, l] of the 2x2 tile dY at (2ty, 2tx) of the
    channels-last gp (N, 2th, 2tw, O) (zeros beyond the output gradient's edge); t = (n,
    ty, tx); dm (16, N * th * tw, O). The adjoint of ``output_tiles_cl``'s A^T M A."""
    output_adjoint_cl_part(gp, th, tw, dm, 0, gp.shape[0])


@njit(**_OPTS)
def output_adjoint_cl_part(gp, th, tw, dm, lo, hi):  # pragma: no cover - compiled
    """``output_adjoint_cl`` for the samples lo..hi-1 only."""
    o_ = gp.shape[3]
    e = np.empty((4, 2, o_), gp.dtype)      # A dY: tile row k, column j
    for n in range(lo, hi):
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for j in range(2):
                    d0, d1 = gp[n, 2 * ty, 2 * tx + j], gp[n, 2 * ty + 1, 2 * tx + j]
                    e0, e1, e2, e3 = e[0, j], e[1, j], e[2, j], e[3, j]
                    for o in range(o_):
                        a, b = d0[o], d1[o]
                        e0[o], e1[o], e2[o], e3[o] = a, a + b, a - b, -b
                for k in range(4):
                    a0, a1 = e[k, 0], e[k, 1]
                    q0, q1 = dm[4 * k, t], dm[4 * k + 1, t]
                    q2, q3 = dm[4 * k + 2, t], dm[4 * k + 3, t]
                    for o in range(o_):
                        a, b = a0[o], a1[o]
                        q0[o], q1[o], q2[o], q3[o] = a, a + b, a - b, -b


@njit(**_OPTS)
def input_adjoint_cl(dv, th, tw, ph, pw, gx):  # pragma: no cover - compiled
    """gx[n, c] = the crop at (ph, pw) of the sum over tiles of B dV B^T, each 4x4 tile
    added at padded (2ty, 2tx): the adjoint of ``input_tiles_cl``. dv (16, N * th * tw, C)
    holds position 4k + l of tile t = (n, ty, tx); gx (N, C, H, W). A sample is summed
    channels-last in a buffer that stays in cache, then written out plane by plane."""
    input_adjoint_cl_part(dv, th, tw, ph, pw, gx, 0, gx.shape[0])


@njit(**_OPTS)
def input_adjoint_cl_part(dv, th, tw, ph, pw, gx, lo, hi):  # pragma: no cover - compiled
    """``input_adjoint_cl`` for the samples lo..hi-1 only."""
    c_, h, w = gx.shape[1], gx.shape[2], gx.shape[3]
    buf = np.empty((2 * th + 2, 2 * tw + 2, c_), gx.dtype)
    q = np.empty((4, 4, c_), gx.dtype)      # B dV: input row j, tile column l
    for n in range(lo, hi):
        buf[:] = 0
        for ty in range(th):
            for tx in range(tw):
                t = (n * th + ty) * tw + tx
                for l in range(4):
                    v0, v1, v2, v3 = dv[l, t], dv[4 + l, t], dv[8 + l, t], dv[12 + l, t]
                    r0, r1, r2, r3 = q[0, l], q[1, l], q[2, l], q[3, l]
                    for c in range(c_):
                        a, b, d, e = v0[c], v1[c], v2[c], v3[c]
                        r0[c], r1[c], r2[c], r3[c] = a, b - d + e, b + d - a, -e
                for j in range(4):
                    p0, p1 = buf[2 * ty + j, 2 * tx], buf[2 * ty + j, 2 * tx + 1]
                    p2, p3 = buf[2 * ty + j, 2 * tx + 2], buf[2 * ty + j, 2 * tx + 3]
                    s0, s1, s2, s3 = q[j, 0], q[j, 1], q[j, 2], q[j, 3]
                    for c in range(c_):
                        a, b, d, e = s0[c], s1[c], s2[c], s3[c]
                        p0[c] += a
                        p1[c] += b - d + e
                        p2[c] += b + d - a
                        p3[c] -= e
        for c in range(c_):
            plane = gx[n, c]
            for i in range(h):
                row = buf[ph + i]
                out = plane[i]
                for jj in range(w):
                    out[jj] = row[pw + jj, c]
