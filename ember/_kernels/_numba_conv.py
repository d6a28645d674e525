"""numba kernels for Winograd's F(2x2, 3x3) transforms, planar layout (imported only when
numba is installed and the ``numba`` backend is chosen; see NOTE [ Planar Winograd ] in
``ember/_ops/nn_conv_winograd.py``), for depthwise convolutions on shifted planes, and for
the input adjoint's scatter of planar or channels-last columns (NOTE [ Planar columns
scattered in one pass ] in ``ember/_ops/nn_conv.py``).

Each kernel reads or writes NCHW planes and transformed tiles laid out (16, C, tiles), tiles
in (sample, tile row, tile column) order, so every inner loop runs along one contiguous
row. Compiled with ``cache=True`` and ``nogil=True`` as the other kernels (NOTE [ Fused
kernels ]); the transforms are additions and subtractions only, so the fast-math flags
change nothing but the schedule.

Each kernel takes a channel range, so that a caller could split one call over threads
(they write disjoint channels and release the GIL). Split over ember's thread pool, the
input transform of a (4, 64, 32, 32) chunk measured 0.60 ms on one thread against 3.1 ms
(median) on two on the loaded 2-core development machine, and never below 0.64 ms, so a
call runs its whole range on its thread; threads split the batch instead, one piece of
samples each with its own transforms and GEMMs (NOTE [ Batch pieces on threads ] in
``ember/_parallel.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"reassoc", "contract", "nsz"}


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy", inline="always")
def _diff(out, a, b, sign, n):  # pragma: no cover - compiled
    """out[:n] = a[:n] + sign * b[:n]: one store stream per loop, so LLVM vectorises it."""
    if sign > 0:
        for i in range(n):
            out[i] = a[i] + b[i]
    else:
        for i in range(n):
            out[i] = a[i] - b[i]


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def winograd_input(x, ph, pw, th, tw, v, c_lo, c_hi):  # pragma: no cover - compiled
    """v[4k + l, c, (n, ty, tx)] = (B^T d B)[k, l] of the 4x4 tile at padded (2ty, 2tx) of
    x[n, c] (zero padding ph, pw) for channels c_lo <= c < c_hi; x (N, C, H, W),
    v (16, C, N * th * tw). The rows' combinations are kept for the whole plane, so the
    columns' run once over its tiles (NOTE [ One loop over a plane's tiles ])."""
    n_, _, h, w = x.shape
    hp, wq = 2 * th + 2, tw + 1
    hh, ww = min(h, hp - ph), min(w, 2 * wq - pw)
    m = th * tw
    # the padded plane split by column parity: pad[e, i, q] is padded column 2q + e, so that
    # every transform below reads and writes contiguous runs
    pad = np.zeros((2, hp, wq), x.dtype)
    # B^T d of every tile row, columns split likewise: lo[k, e, (ty, tx)] at column pair tx,
    # hi at tx + 1 (each tile reads pairs tx and tx + 1)
    lo = np.empty((4, 2, m), x.dtype)
    hi = np.empty((4, 2, m), x.dtype)
    for n in range(n_):
        for c in range(c_lo, c_hi):
            for i in range(hh):
                for j in range(ww):
                    col = pw + j
                    pad[col & 1, ph + i, col >> 1] = x[n, c, i, j]
            for ty in range(th):
                y0 = 2 * ty
                b0 = ty * tw
                for e in range(2):
                    p0, p1, p2, p3 = pad[e, y0], pad[e, y0 + 1], pad[e, y0 + 2], pad[e, y0 + 3]
                    _diff(lo[0, e, b0:], p0, p2, -1, tw)
                    _diff(lo[1, e, b0:], p1, p2, 1, tw)
                    _diff(lo[2, e, b0:], p2, p1, -1, tw)
                    _diff(lo[3, e, b0:], p1, p3, -1, tw)
                    _diff(hi[0, e, b0:], p0[1:], p2[1:], -1, tw)
                    _diff(hi[1, e, b0:], p1[1:], p2[1:], 1, tw)
                    _diff(hi[2, e, b0:], p2[1:], p1[1:], -1, tw)
                    _diff(hi[3, e, b0:], p1[1:], p3[1:], -1, tw)
            t0 = n * m
            for k in range(4):
                # tile (ty, tx) reads padded columns 2tx .. 2tx + 3: lo[k, 0], lo[k, 1],
                # hi[k, 0], hi[k, 1]
                _diff(v[4 * k, c, t0:], lo[k, 0], hi[k, 0], -1, m)
                _diff(v[4 * k + 1, c, t0:], lo[k, 1], hi[k, 0], 1, m)
                _diff(v[4 * k + 2, c, t0:], hi[k, 0], lo[k, 1], -1, m)
                _diff(v[4 * k + 3, c, t0:], lo[k, 1], hi[k, 1], -1, m)


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def winograd_output(m, th, tw, y, o_lo, o_hi):  # pragma: no cover - compiled
    """y[n, o] = A^T M A of every tile, cropped to y's (Ho, Wo); m (16, O, N * th * tw),
    y (N, O, Ho, Wo); channels o_lo <= o < o_hi."""
    n_, _, ho, wo = y.shape
    s = np.empty((2, 4, tw), m.dtype)
    for n in range(n_):
        for o in range(o_lo, o_hi):
            for ty in range(th):
                t0 = (n * th + ty) * tw
                for b in range(4):
                    for tx in range(tw):
                        m0 = m[b, o, t0 + tx]
                        m1 = m[4 + b, o, t0 + tx]
                        m2 = m[8 + b, o, t0 + tx]
                        m3 = m[12 + b, o, t0 + tx]
                        s[0, b, tx] = m0 + m1 + m2
                        s[1, b, tx] = m1 - m2 - m3
                for r in range(2):
                    row = 2 * ty + r
                    if row < ho:
                        for tx in range(tw):
                            c0 = 2 * tx
                            q0 = s[r, 0, tx]
                            q1 = s[r, 1, tx]
                            q2 = s[r, 2, tx]
                            q3 = s[r, 3, tx]
                            y[n, o, row, c0] = q0 + q1 + q2
                            if c0 + 1 < wo:
                                y[n, o, row, c0 + 1] = q1 - q2 - q3


# NOTE [ One loop over a plane's tiles ]
# The input transform and the adjoint output transform keep their row combinations for a
# whole plane (``lo``/``hi`` and ``r`` below), so that each of the 16 outputs is written by
# one loop over the plane's th * tw tiles rather than th loops of tw: with tw = 12 (the MNIST
# CNN's conv2) a loop that short ran in the vector loop's scalar remainder. One thread:
# a (4, 64, 24, 24) chunk's dM 440 -> 185 us; a (4, 32, 26, 26) chunk's V 230 -> 185 us
# (its row pass now makes the tx + 1 half apart, twice the additions there, still in rows of
# tw). The same bits: the same additions of the same values
# (tests/perf/test_winograd_output_adjoint_plane.py). The forward's output transform done
# the same way measured 1.4-1.9x slower (its second pass still writes rows of tw, and the
# plane's sums cost a pass more), so it keeps its loops.


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def winograd_output_adjoint(g, th, tw, dm, o_lo, o_hi):  # pragma: no cover - compiled
    """dm[4k + l, o, (n, ty, tx)] = (A dY A^T)[k, l] of the 2x2 tile dY at (2ty, 2tx) of
    g[n, o] (zero beyond g's edge), o_lo <= o < o_hi; g (N, O, Ho, Wo), dm (16, O, N * th *
    tw). (Written with interleaved reads: splitting the columns by parity, as the input
    transform does, measured 10-50% slower here; one loop a plane: NOTE [ One loop over a
    plane's tiles ].)"""
    n_, _, ho, wo = g.shape
    m = th * tw
    w2 = 2 * tw
    r = np.empty((4, 2 * m), g.dtype)
    zero = np.zeros(1, g.dtype)[0]   # (a literal 0 would make the sums below float64)
    for n in range(n_):
        for o in range(o_lo, o_hi):
            gp = g[n, o]
            for ty in range(th):
                row = 2 * ty
                base = ty * w2
                if row + 1 < ho and w2 <= wo:  # both rows, every column inside the plane
                    g0 = gp[row]
                    g1 = gp[row + 1]
                    for j in range(w2):
                        d0 = g0[j]
                        d1 = g1[j]
                        r[0, base + j] = d0
                        r[1, base + j] = d0 + d1
                        r[2, base + j] = d0 - d1
                        r[3, base + j] = -d1
                else:
                    for j in range(w2):
                        d0 = gp[row, j] if row < ho and j < wo else zero
                        d1 = gp[row + 1, j] if row + 1 < ho and j < wo else zero
                        r[0, base + j] = d0
                        r[1, base + j] = d0 + d1
                        r[2, base + j] = d0 - d1
                        r[3, base + j] = -d1
            t0 = n * m
            for k in range(4):
                rk = r[k]
                a0 = dm[4 * k, o, t0:t0 + m]
                a1 = dm[4 * k + 1, o, t0:t0 + m]
                a2 = dm[4 * k + 2, o, t0:t0 + m]
                a3 = dm[4 * k + 3, o, t0:t0 + m]
                for i in range(m):
                    c0 = rk[2 * i]
                    c1 = rk[2 * i + 1]
                    a0[i] = c0
                    a1[i] = c0 + c1
                    a2[i] = c0 - c1
                    a3[i] = -c1


# ------------------------------------------------------------------------------------------------
# depthwise convolution on shifted planes (NOTE [ Shifted-plane columns ] in
# ``ember/_ops/nn_conv_grid.py``): buf (N, C, S) holds each channel's phase planes, tap t of
# output grid position l reads buf[n, c, offsets[t] + l]


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def depthwise_forward(buf, w, offsets, y):  # pragma: no cover - compiled
    """y[n, c, l] = sum_t w[c, t] * buf[n, c, offsets[t] + l]; y (N, C, L)."""
    n_, c_, length = y.shape
    for n in range(n_):
        for c in range(c_):
            yr = y[n, c]
            br = buf[n, c]
            for i in range(length):
                yr[i] = 0
            for t in range(offsets.shape[0]):
                wt = w[c, t]
                # a view per tap: indexing br[off + i] instead runs 3x slower (not vectorised)
                src = br[offsets[t]:offsets[t] + length]
                for i in range(length):
                    yr[i] += wt * src[i]


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def depthwise_input_grad(g, w, offsets, out):  # pragma: no cover - compiled
    """out[n, c, offsets[t] + l] += w[c, t] * g[n, c, l] (out zeroed by the caller);
    g (N, C, L) with zeros at the grid's dropped positions, out (N, C, S)."""
    n_, c_, length = g.shape
    for n in range(n_):
        for c in range(c_):
            gr = g[n, c]
            orow = out[n, c]
            for t in range(offsets.shape[0]):
                wt = w[c, t]
                dst = orow[offsets[t]:offsets[t] + length]
                for i in range(length):
                    dst[i] += wt * gr[i]


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def depthwise_weight_grad(buf, g, offsets, gw):  # pragma: no cover - compiled
    """gw[c, t] = sum_{n, l} g[n, c, l] * buf[n, c, offsets[t] + l]; gw (C, T). Each
    sample's sum over l is one vectorised dot product in the arrays' type, those sums are
    accumulated in float64; samples are the middle loop so that a channel's planes stay in
    cache for all its taps."""
    n_, c_, length = g.shape
    taps = offsets.shape[0]
    acc = np.zeros(taps, np.float64)
    for c in range(c_):
        acc[:] = 0
        for n in range(n_):
            gr = g[n, c]
            br = buf[n, c]
            for t in range(taps):
                src = br[offsets[t]:offsets[t] + length]
                part = gr[0] * src[0]
                for i in range(1, length):
                    part += gr[i] * src[i]
                acc[t] += part
        for t in range(taps):
            gw[c, t] = acc[t]


# ------------------------------------------------------------------------------------------------
# the input adjoint's scatter of planar columns (NOTE [ Planar columns scattered in one pass ]
# in ``ember/_ops/nn_conv.py``)


@njit(cache=True, nogil=True, error_model="numpy")
def planar_col2im(cols, sh, sw, ph, pw, gx):  # pragma: no cover - compiled
    """gx[n, c] = the sum, tap by tap in (kh, kw) order from zero, of cols[c, kh, kw, n]
    placed at input rows i * sh + kh - ph and columns j * sw + kw - pw (those inside the
    plane); cols (C, KH, KW, N, OH, OW), gx (N, C, H, W). Plain float arithmetic (no
    fast-math flags): each element's additions are the tap-by-tap scatter's, in its order.
    A plane is summed split by phase (input position (r, s) at [r % sh, s % sw, r // sh,
    s // sw]), so that each tap adds one contiguous block onto another, and interleaved
    once at the end."""
    c_, kh_, kw_, n_, oh, ow = cols.shape
    h, w = gx.shape[2], gx.shape[3]
    buf = np.empty((sh, sw, (h + sh - 1) // sh, (w + sw - 1) // sw), gx.dtype)
    for n in range(n_):
        for c in range(c_):
            buf[:] = 0
            for kh in range(kh_):
                # the output rows whose tap lands inside the plane, and where they land
                i0 = max(0, -((kh - ph) // sh))
                i1 = min(oh, (h - 1 - kh + ph) // sh + 1)
                eh = (kh - ph) % sh
                r0 = i0 + (kh - ph - eh) // sh
                for kw in range(kw_):
                    j0 = max(0, -((kw - pw) // sw))
                    j1 = min(ow, (w - 1 - kw + pw) // sw + 1)
                    ew = (kw - pw) % sw
                    q0 = j0 + (kw - pw - ew) // sw
                    # (views, indexed by the loops' own counters: LLVM vectorises these)
                    dst = buf[eh, ew, r0:r0 + i1 - i0, q0:q0 + j1 - j0]
                    src = cols[c, kh, kw, n, i0:i1, j0:j1]
                    for i in range(i1 - i0):
                        for j in range(j1 - j0):
                            dst[i, j] += src[i, j]
            for r in range(h):
                row = gx[n, c, r]
                for ew in range(sw):
                    part = buf[r % sh, ew, r // sh]
                    for q in range((w - ew + sw - 1) // sw):
                        row[q * sw + ew] = part[q]


@njit(cache=True, nogil=True, error_model="numpy")
def channels_last_col2im(gcols, sh, sw, ph, pw, gx):  # pragma: no cover - compiled
    """gx[n] = the sum, tap by tap in (kh, kw) order from zero, of the channel vectors
    gcols[n, i, j, kh, kw] placed at input position (i * sh + kh - ph, j * sw + kw - pw)
    (those inside the plane), as (C, H, W) planes; gcols (N, OH, OW, KH, KW, C), gx (N, C,
    H, W). Plain float arithmetic: each element's additions are the tap-by-tap scatter's,
    in its order. A sample is summed channels last in a buffer that stays in cache and
    transposed once into gx."""
    n_, oh, ow, kh_, kw_, c_ = gcols.shape
    h, w = gx.shape[2], gx.shape[3]
    buf = np.empty((h, w, c_), gx.dtype)
    for n in range(n_):
        buf[:] = 0
        for kh in range(kh_):
            i0 = max(0, -((kh - ph) // sh))
            i1 = min(oh, (h - 1 - kh + ph) // sh + 1)
            for kw in range(kw_):
                j0 = max(0, -((kw - pw) // sw))
                j1 = min(ow, (w - 1 - kw + pw) // sw + 1)
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        dst = buf[i * sh + kh - ph, j * sw + kw - pw]
                        src = gcols[n, i, j, kh, kw]
                        for q in range(c_):
                            dst[q] += src[q]
        for q in range(c_):
            plane = gx[n, q]
            for r in range(h):
                for s in range(w):
                    plane[r, s] = buf[r, s, q]
