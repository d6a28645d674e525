"""``jacrev``'s vectorized Jacobian: one backward pass with a batch of basis cotangents.

NOTE [ jacrev by vmap ]
A reverse-mode Jacobian is ``vjp`` applied to every basis vector of the output space. Run
under ``vmap`` over the stacked basis (an identity matrix viewed as ``(n,) + output.shape``),
that is one backward pass whose gradients are batched tensors: every backward formula runs
once, batched by the rules of ``_batch_rules.py`` (NOTE [ vmap and autograd ]), instead of
``n`` passes. ``chunk_size`` splits the basis into chunks of that many rows.
"""

from __future__ import annotations

from .._core.tensor import Tensor
from ..utils._pytree import tree_unflatten

__all__ = ["jacobian_by_vmap"]


def jacobian_by_vmap(pb, chunk_size=None):
    """The Jacobian of every output leaf of the recorded call ``pb`` (a ``_Pullback``) with
    respect to its stand-ins, arranged as ``jacrev`` returns it (before aux)."""
    from .. import eye
    from ._vmap import vmap

    per_output = []
    for o in pb.out_leaves:
        n = o.nelement()
        if n == 0 or not (isinstance(o, Tensor) and o.requires_grad):
            jacs = [x.new_zeros(tuple(o.shape) + tuple(x.shape)) for x in pb.ins]
            per_output.append(tree_unflatten(jacs, pb.in_spec))
            continue
        basis = eye(n, dtype=o.dtype).view((n,) + tuple(o.shape))

        def rows(c, o=o):
            return tuple(pb.vjp([c], outputs=[o]))

        cols = vmap(rows, chunk_size=chunk_size)(basis)
        jacs = [g.reshape(tuple(o.shape) + tuple(x.shape)) for g, x in zip(cols, pb.ins)]
        per_output.append(tree_unflatten(jacs, pb.in_spec))
    return tree_unflatten(per_output, pb.out_spec)
