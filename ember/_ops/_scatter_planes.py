"""Scatter-add and gather over the flat spatial positions of each (N, C) plane.

The two ops are each other's adjoint. Max pooling's backward and ``max_unpool`` scatter-add
gradients or values to recorded argmax positions; the reflect, replicate and circular pads
scatter-add their gradient to the input position each output read. They live below both
pooling and padding so that neither imports the other.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch, _kernels
from ._registry import Op
from ._xp_compat import ufunc_at
from .indexing import linear_jvp


def _unpool_add_kernel(xp, g, index, *, input_shape):
    """Scatter-add g into zeros of input_shape at flat spatial ``index`` (per N, C)."""
    if not g.size or not math.prod(input_shape):  # nothing to scatter (an empty batch)
        return xp.zeros(tuple(input_shape), dtype=g.dtype)
    if g.dtype == np.float32:  # one compiled scatter (NOTE [ Compiled max pooling ])
        r = _kernels.max_pool_backward(g, index, input_shape)
        if r is not None:
            return r
    n, c = input_shape[:2]
    plane = math.prod(input_shape[2:])
    gi = g.reshape(n * c, -1)
    ii = index.reshape(n * c, -1)
    flat = (ii + (xp.arange(n * c) * plane)[:, None]).reshape(-1)
    if gi.dtype.kind == "c" or xp is not np:
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


def _gather_kernel(xp, gx, index):
    n, c = index.shape[:2]
    flat = gx.reshape(n * c, -1)
    return xp.take_along_axis(flat, index.reshape(n * c, -1), axis=1).reshape(index.shape)


def _unpool_add_vjp(gg, _g, index, *, input_shape):
    return _dispatch.apply(gather_op, (gg, index), {}), None


def _gather_vjp(gz, gx, index):
    return _dispatch.apply(unpool_add_op, (gz, index), {"input_shape": tuple(gx.shape)}), None


unpool_add_op = Op("max_pool_backward", _unpool_add_kernel, vjp=_unpool_add_vjp)
gather_op = Op("max_pool_gather", _gather_kernel, vjp=_gather_vjp)
# forward mode: both are linear in their data (the indices are fixed)
linear_jvp(unpool_add_op, (0,))
linear_jvp(gather_op, (0,))
