"""Scatter-add and gather over the flat spatial positions of each (N, C) plane.

The two ops are each other's adjoint. Max pooling's backward and ``max_unpool`` scatter-add
gradients or values to recorded argmax positions; the reflect, replicate and circular pads
scatter-add their gradient to the input position each output read. They live below both
pooling and padding so that neither imports the other.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import _dispatch, _kernels, _parallel
from .._core import dtype as _dt
from ._registry import Op
from ._xp_compat import ufunc_at
from .indexing import linear_jvp

_HALF = (np.dtype(np.float16), _dt.bfloat16.np)


def _unpool_add_kernel(xp, g, index, *, input_shape, tiles_2x2=False):
    """Scatter-add g into zeros of input_shape at flat spatial ``index`` (per N, C).
    ``tiles_2x2`` promises that the indices come from a 2x2, stride-2 max pool tiling the
    input (each names a tap of its own window), which needs no scatter."""
    if not g.size or not math.prod(input_shape):  # nothing to scatter (an empty batch)
        return xp.zeros(tuple(input_shape), dtype=g.dtype)
    if g.dtype == np.float32:  # one compiled scatter (NOTE [ Compiled max pooling ])
        r = _kernels.max_pool_backward(g, index, input_shape)
        if r is not None:
            return r
    if tiles_2x2 and xp is np and g.flags.c_contiguous and index.flags.c_contiguous and \
            index.dtype == np.int64 and sys.byteorder == "little":
        return _unpool_2x2(g, index, input_shape)
    n, c = input_shape[:2]
    plane = math.prod(input_shape[2:])
    gi = g.reshape(n * c, -1)
    ii = index.reshape(n * c, -1)
    flat = (ii + (xp.arange(n * c) * plane)[:, None]).reshape(-1)
    if xp is np and g.dtype in _HALF:
        # half precision: torch adds each window's gradient onto its argmax in window order,
        # each add rounded to the dtype; the r-th arrivals at all positions are one add
        out = np.zeros(n * c * plane, dtype=g.dtype)
        order = np.argsort(flat, kind="stable")
        sf = flat[order]
        starts = np.flatnonzero(np.r_[True, sf[1:] != sf[:-1]]) if sf.size else sf
        rank = np.arange(sf.size) - np.repeat(starts, np.diff(np.r_[starts, sf.size]))
        src = gi.reshape(-1)[order]
        for r in range(int(rank.max()) + 1 if rank.size else 0):
            at = rank == r
            out[sf[at]] += src[at]
    elif gi.dtype.kind == "c" or xp is not np:
        # (on a device, bincount reads the largest index back to the host: a sync per
        # backward; ufunc_at scatters with atomic adds on the device, half types widened)
        out = xp.zeros(n * c * plane, dtype=g.dtype)
        ufunc_at(xp, "add", out, flat, gi.reshape(-1))
    else:
        # bincount sums colliding positions (overlapping windows, reflect padding) in one
        # pass; it accumulates in float64, then the result returns to g's dtype
        out = xp.bincount(flat, weights=gi.reshape(-1).astype(xp.float64),
                          minlength=n * c * plane).astype(g.dtype)
    return out.reshape(input_shape)


#: output elements per block of planes in ``_unpool_2x2`` (its buffers stay in L2 cache)
_PAIR_BLOCK = 1 << 15
#: the fewest output elements worth cutting over the threads
_PAIR_SPLIT = 1 << 17


def _unpool_2x2(g, index, input_shape):
    """Max pooling's backward for a 2x2, stride-2 pool tiling the input (NOTE [ 2x2 max
    pooling in pairs ] in nn_pool.py): each window's gradient goes to the tap its index
    names and zeros to the other three, one input row pair at a time, without a scatter."""
    n, c, h, w = input_shape
    oh, ow = h // 2, w // 2
    gx = np.empty((n * c, h, w), dtype=g.dtype)
    gp = g.reshape(n * c, oh * ow)
    ip = index.reshape(n * c, oh * ow)
    origin = ((np.arange(oh) * (2 * w))[:, None] + np.arange(ow) * 2).reshape(-1)
    block = max(1, _PAIR_BLOCK // (oh * ow))

    # the values move as unsigned integers of their width: bits * 1 is the gradient itself,
    # bits * 0 is +0.0, and an inf or NaN gradient reaches its own tap alone (a float
    # product by a 0/1 mask would spread NaN, and turn -x * 0 into -0.0)
    bits = np.dtype(f"u{g.itemsize}")
    gb = gp.view(bits)

    below = origin + w  # the lower row's first position in each window

    def run(lo, hi):
        m = min(block, hi - lo) * oh * ow
        lower = np.empty(m, dtype=bool)
        right = np.empty(m, dtype=bool)
        upper = np.empty(m, dtype=bool)
        hit = np.empty(m, dtype=bool)
        row = np.empty((m, 2), dtype=bits)
        for p0 in range(lo, hi, block):
            p1 = min(p0 + block, hi)
            k = (p1 - p0) * oh * ow
            lw, rt, ht = lower[:k], right[:k], hit[:k]
            np.greater_equal(ip[p0:p1], below, out=lw.reshape(p1 - p0, -1))
            # the column is the index's parity (W and each window's origin are even): the
            # low byte of each little-endian int64 holds it
            np.bitwise_and(ip[p0:p1].reshape(-1).view(np.uint8)[::8], 1, out=rt.view(np.uint8))
            src = gb[p0:p1].reshape(-1)
            pair = row[:k]
            for a in (0, 1):
                here = lw if a else np.logical_not(lw, out=upper[:k])
                np.greater(here, rt, out=ht)  # this row, left column
                np.multiply(src, ht, out=pair[:, 0])
                np.logical_and(here, rt, out=ht)  # this row, right column
                np.multiply(src, ht, out=pair[:, 1])
                np.copyto(gx[p0:p1, a::2], pair.reshape(p1 - p0, oh, w).view(g.dtype))

    if not _parallel.split_on_threads(run, n * c, min_size=max(2, _PAIR_SPLIT // (oh * ow))):
        run(0, n * c)
    return gx.reshape(tuple(input_shape))


def _gather_kernel(xp, gx, index):
    n, c = index.shape[:2]
    flat = gx.reshape(n * c, -1)
    return xp.take_along_axis(flat, index.reshape(n * c, -1), axis=1).reshape(index.shape)


def _unpool_add_vjp(gg, _g, index, *, input_shape, tiles_2x2=False):
    return _dispatch.apply(gather_op, (gg, index), {}), None


def _gather_vjp(gz, gx, index):
    return _dispatch.apply(unpool_add_op, (gz, index), {"input_shape": tuple(gx.shape)}), None


unpool_add_op = Op("max_pool_backward", _unpool_add_kernel, vjp=_unpool_add_vjp)
gather_op = Op("max_pool_gather", _gather_kernel, vjp=_gather_vjp)
# forward mode: both are linear in their data (the indices are fixed)
linear_jvp(unpool_add_op, (0,))
linear_jvp(gather_op, (0,))
