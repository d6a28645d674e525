"""Moving a DTensor's local pieces between placements, and the autograd rules for it.

NOTE [ DTensor redistribution ]
``transform(local, spec, placements)`` turns this rank's piece of a DTensor laid out as
``spec`` into its piece under ``placements``, one mesh dimension at a time: first every
``Shard`` that must go is gathered (all-gather, last mesh dimension first, so a tensor
dimension cut by several mesh dimensions is rebuilt from the inside out), then every
``Partial`` that must go is reduced (all-reduce, or kept as is for a Partial target), then
every new ``Shard`` is cut (first mesh dimension first) and every new ``Partial`` made from
a replicated value (``sum`` divides by the number of ranks, the other reductions keep it).
Uneven pieces are padded to the largest for the all-gather and cut back after.

Gradients: a DTensor's gradient is laid out as the DTensor, except that a ``Partial`` one
has a ``Replicate`` gradient (every term receives the whole gradient of the sum). So the
backward of a redistribution is the reverse redistribution of the gradient
(``Redistribute``), and an op that reads a replicated input while its output is sharded or
partial along that mesh dimension leaves on each rank only that rank's share of the input's
gradient: ``grad_sum`` marks such an input so its gradient is summed over the mesh
dimension's group in backward, which makes it replicated again (NOTE [ DTensor ops ]).
"""

from __future__ import annotations

from .placement_types import Partial, Replicate, Shard, chunk_bounds


def norm_dim(d: int, ndim: int) -> int:
    """``d`` counted from the front (a negative ``Shard`` dimension resolved)."""
    return d + ndim if d < 0 else d


def local_layout(shape, mesh, placements, coordinate=None):
    """``(local shape, global offsets)`` of the piece at ``coordinate`` (default: this rank's).

    Example::

        >>> local_layout((5, 2), mesh, (Shard(0),))  # doctest: +SKIP
        ((3, 2), (0, 0))
    """
    coordinate = mesh.get_coordinate() if coordinate is None else coordinate
    size, off = list(shape), [0] * len(shape)
    if coordinate is None:
        return tuple(0 for _ in shape), tuple(off)
    for m, p in enumerate(placements):
        if isinstance(p, Shard):
            d = norm_dim(p.dim, len(shape))
            lo, hi = chunk_bounds(size[d], mesh.size(m), coordinate[m])
            off[d] += lo
            size[d] = hi - lo
    return tuple(size), tuple(off)


_OPS = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN"}


def _reduce(local, op, group):
    from ... import distributed as dist

    out = local.detach().clone().contiguous()
    dist.all_reduce(out, op=getattr(dist.ReduceOp, _OPS[op]), group=group)
    return out


def _gather(local, d, mesh, m, parent):
    """All pieces of dimension ``d`` along mesh dimension ``m`` (parent size ``parent``)."""
    from ... import cat, distributed as dist, empty, zeros

    k = mesh.size(m)
    step = -(-parent // k) if parent else 0
    piece = local.detach().movedim(d, 0)
    if piece.shape[0] < step:
        pad = zeros((step - piece.shape[0],) + tuple(piece.shape[1:]), dtype=local.dtype)
        piece = cat([piece, pad])
    out = empty((step * k,) + tuple(piece.shape[1:]), dtype=local.dtype)
    dist.all_gather_into_tensor(out, piece.contiguous(), group=mesh.get_group(m))
    return out[:parent].movedim(0, d).contiguous()


def _size_before(shape, mesh, placements, m, d):
    """Size of dimension ``d`` of this rank's piece before mesh dimension ``m`` cuts it."""
    size = shape[d]
    coord = mesh.get_coordinate()
    for j in range(m):
        p = placements[j]
        if isinstance(p, Shard) and norm_dim(p.dim, len(shape)) == d:
            lo, hi = chunk_bounds(size, mesh.size(j), coord[j])
            size = hi - lo
    return size


def transform(local, mesh, shape, src, dst):
    """This rank's piece under placements ``dst`` from its piece under ``src`` (no autograd;
    see NOTE [ DTensor redistribution ])."""
    from ... import no_grad

    src, dst = list(src), list(dst)
    if src == dst:
        return local
    ndim = len(shape)
    cur = list(src)
    with no_grad():
        x = local.detach()
        for m in reversed(range(len(cur))):
            if isinstance(cur[m], Shard) and cur[m] != dst[m]:
                d = norm_dim(cur[m].dim, ndim)
                x = _gather(x, d, mesh, m, _size_before(shape, mesh, cur, m, d))
                cur[m] = Replicate()
        for m, p in enumerate(cur):
            if isinstance(p, Partial) and p != dst[m]:
                x = _reduce(x, p.reduce_op, mesh.get_group(m))
                cur[m] = Replicate()
        for m, p in enumerate(dst):
            if cur[m] == p:
                continue
            if isinstance(p, Shard):
                d = norm_dim(p.dim, ndim)
                lo, hi = chunk_bounds(x.shape[d], mesh.size(m), mesh.get_local_rank(m))
                x = x.narrow(d, lo, hi - lo).contiguous()
            elif isinstance(p, Partial):
                x = x / mesh.size(m) if p.reduce_op == "sum" else x.clone()
            cur[m] = p
        if x is local or x._data is local._data:
            x = x.clone()
    return x


def grad_placements(placements):
    """The placements of the gradient of a DTensor laid out as ``placements``."""
    return tuple(Replicate() if isinstance(p, Partial) else p for p in placements)


class _Fns:
    """The autograd functions, made on first use (ember.autograd imports late)."""

    redistribute = None
    grad_sum = None

    @classmethod
    def make(cls):
        from ...autograd import Function

        class Redistribute(Function):
            @staticmethod
            def forward(ctx, local, mesh, shape, src, dst):
                ctx.args = (mesh, shape, src, dst)
                return transform(local, mesh, shape, src, dst)

            @staticmethod
            def backward(ctx, grad):
                mesh, shape, src, dst = ctx.args
                g = transform(grad, mesh, shape, grad_placements(dst), grad_placements(src))
                for m, p in enumerate(src):
                    # each term of an average weighs 1/k in it
                    if isinstance(p, Partial) and p.reduce_op == "avg" and dst[m] != p:
                        g = g / mesh.size(m)
                return g, None, None, None, None

        class GradSum(Function):
            @staticmethod
            def forward(ctx, local, group):
                ctx.group = group
                return local.view_as(local)

            @staticmethod
            def backward(ctx, grad):
                return _reduce(grad, "sum", ctx.group), None

        cls.redistribute, cls.grad_sum = Redistribute, GradSum


def redistribute_local(local, mesh, shape, src, dst):
    """``transform`` recorded for autograd when ``local`` requires grad."""
    if tuple(src) == tuple(dst):
        return local
    if _Fns.redistribute is None:
        _Fns.make()
    if local.requires_grad:
        return _Fns.redistribute.apply(local, mesh, tuple(shape), tuple(src), tuple(dst))
    return transform(local, mesh, shape, src, dst)


def grad_sum(local, mesh, dims):
    """``local`` unchanged, whose gradient is summed over the groups of mesh ``dims``."""
    if not local.requires_grad or not dims:
        return local
    if _Fns.grad_sum is None:
        _Fns.make()
    for m in dims:
        local = _Fns.grad_sum.apply(local, mesh.get_group(m))
    return local
