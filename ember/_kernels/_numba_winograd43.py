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
                        o0[q] = 4 * p0 - 5 * p2 + p4
                        o1[q] = p3 + p4 - 4 * (p1 + p2)
                        o2[q] = p4 - p3 + 4 * (p1 - p2)
                        o3[q] = p4 - p2 + 2 * (p3 - p1)
                        o4[q] = p4 - p2 - 2 * (p3 - p1)
                        o5[q] = 4 * p1 - 5 * p3 + p5
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
                        o0[tx] = 4 * p0 - 5 * p2 + p4
                        o1[tx] = p3 + p4 - 4 * (p1 + p2)
                        o2[tx] = p4 - p3 + 4 * (p1 - p2)
                        o3[tx] = p4 - p2 + 2 * (p3 - p1)
                        o4[tx] = p4 - p2 - 2 * (p3 - p1)
                        o5[tx] = 4 * p1 - 5 * p3 + p5


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
                        s[0, b, ty, tx] = m0 + (m1 + m2) + (m3 + m4)
                        s[1, b, ty, tx] = (m1 - m2) + 2 * (m3 - m4)
                        s[2, b, ty, tx] = (m1 + m2) + 4 * (m3 + m4)
                        s[3, b, ty, tx] = (m1 - m2) + 8 * (m3 - m4) + m5
            for ty in range(th):
                for a in range(4):
                    if 4 * ty + a >= ho:
                        break
                    for tx in range(tw):
                        m0, m1, m2 = s[a, 0, ty, tx], s[a, 1, ty, tx], s[a, 2, ty, tx]
                        m3, m4, m5 = s[a, 3, ty, tx], s[a, 4, ty, tx], s[a, 5, ty, tx]
                        row[4 * tx] = m0 + (m1 + m2) + (m3 + m4)
                        row[4 * tx + 1] = (m1 - m2) + 2 * (m3 - m4)
                        row[4 * tx + 2] = (m1 + m2) + 4 * (m3 + m4)
                        row[4 * tx + 3] = (m1 - m2) + 8 * (m3 - m4) + m5
                    for i in range(wo):
                        y[n, o, 4 * ty + a, i] = row[i]
