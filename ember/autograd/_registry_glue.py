"""The two ops the engine itself applies to gradients: sum-to-shape and dtype cast.

They are ordinary registered ops (so ``create_graph`` differentiates through them) with
private names; see NOTE [ Gradient metadata per input ] in ``_nodes.py``.
"""

from __future__ import annotations

import numpy as np

from .._ops._registry import Op
from .._ops.conversion import to_copy_op as cast_op  # noqa: F401  (re-exported)


def _sum_to_kernel(xp, a, *, shape, in_shape):
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and a.shape[i + lead] != 1)
    if not axes:
        return xp.asarray(a).reshape(shape)
    if a.dtype.itemsize == 2 and a.dtype.kind in "fV":
        # float16/bfloat16 summed in float32 and rounded once, as torch's sum (NumPy's own
        # reduction of bfloat16 rounds every partial sum)
        r = a.sum(axis=axes, keepdims=True, dtype=np.float32).astype(a.dtype)
    else:
        r = a.sum(axis=axes, keepdims=True)
    return xp.asarray(r).reshape(shape)


def _sum_to_vjp(g, _a, *, shape, in_shape):
    from .._dispatch import apply

    return apply(expand_op, (g,), {"shape": in_shape, "in_shape": shape})


def _expand_kernel(xp, a, *, shape, in_shape):
    return xp.broadcast_to(a, shape).copy()


def _expand_vjp(g, _a, *, shape, in_shape):
    from .._dispatch import apply

    return apply(sum_to_op, (g,), {"shape": in_shape, "in_shape": shape})


sum_to_op = Op("_autograd_sum_to", _sum_to_kernel, vjp=_sum_to_vjp, linear=True)
sum_to_op.node_name = "SumToSizeBackward0"
expand_op = Op("_autograd_expand", _expand_kernel, vjp=_expand_vjp, linear=True)
expand_op.node_name = "ExpandBackward0"
