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

import weakref

from .placement_types import Partial, Replicate, Shard, _StridedShard, chunk_bounds

# NOTE [ Strided shards ]
# ``fully_shard`` over the ``dp`` dimension of a 2-D mesh cuts a parameter that tensor
# parallelism already cut along ``tp``: when both cut the same tensor dimension, each rank
# holds a piece of its TP piece -- the ``tp`` cut is made first although its mesh dimension
# comes second. PyTorch labels the ``dp`` placement ``_StridedShard(d, sf)``; here a strided
# shard is cut after every plain ``Shard`` (``cut_order``), so the layout of the piece
# (``local_layout``) is the TP piece's rows cut again, a contiguous block. A redistribution
# from or to such a layout goes through the whole tensor (gathered innermost cut first); ops
# on such DTensors run on the pieces when every operand has the same layout, else on whole
# tensors (NOTE [ DTensor ops ]).


def cut_order(placements) -> list:
    """The mesh dimensions in the order their cuts are made (NOTE [ Strided shards ])."""
    plain = [m for m, p in enumerate(placements) if not isinstance(p, _StridedShard)]
    return plain + [m for m, p in enumerate(placements) if isinstance(p, _StridedShard)]


def _is_cut(p) -> bool:
    return isinstance(p, (Shard, _StridedShard))


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
    for m in cut_order(placements):
        p = placements[m]
        if _is_cut(p):
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
    dist.all_gather_single(out, piece.contiguous(), group=mesh.get_group(m))
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


def _size_before_cut(shape, mesh, placements, m, d):
    """Size of dimension ``d`` of this rank's piece before the cut of mesh dimension ``m``,
    cuts made in ``cut_order``."""
    size = shape[d]
    coord = mesh.get_coordinate()
    for j in cut_order(placements):
        if j == m:
            break
        p = placements[j]
        if _is_cut(p) and norm_dim(p.dim, len(shape)) == d:
            lo, hi = chunk_bounds(size, mesh.size(j), coord[j])
            size = hi - lo
    return size


def _through_whole(local, mesh, shape, src, dst):
    """``transform`` for layouts with strided shards: gather (innermost cut first) and
    reduce to the whole tensor, then cut ``dst`` in its cut order (NOTE [ Strided
    shards ])."""
    ndim = len(shape)
    x = local.detach()
    for m in reversed(cut_order(src)):
        p = src[m]
        if _is_cut(p):
            d = norm_dim(p.dim, ndim)
            x = _gather(x, d, mesh, m, _size_before_cut(shape, mesh, src, m, d))
    for m, p in enumerate(src):
        if isinstance(p, Partial) and p != dst[m]:
            x = _reduce(x, p.reduce_op, mesh.get_group(m))
    for m in cut_order(dst):
        p = dst[m]
        if _is_cut(p):
            d = norm_dim(p.dim, ndim)
            lo, hi = chunk_bounds(x.shape[d], mesh.size(m), mesh.get_local_rank(m))
            x = x.narrow(d, lo, hi - lo).contiguous()
        elif isinstance(p, Partial) and src[m] != p:
            x = x / mesh.size(m) if p.reduce_op == "sum" else x.clone()
    return x.clone() if x._data is local._data else x


def transform(local, mesh, shape, src, dst):
    """This rank's piece under placements ``dst`` from its piece under ``src`` (no autograd;
    see NOTE [ DTensor redistribution ])."""
    from ... import no_grad

    src, dst = list(src), list(dst)
    if src == dst:
        return local
    if any(isinstance(p, _StridedShard) for p in src + dst):
        with no_grad():
            return _through_whole(local, mesh, shape, src, dst)
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
    lazy = None

    @classmethod
    def make_lazy(cls):
        from ...autograd import Function

        class LazyGradSum(Function):
            @staticmethod
            def forward(ctx, local, mesh, dims, ref):
                ctx.args = (mesh, dims, ref)
                return local.view_as(local)

            @staticmethod
            def backward(ctx, grad):
                mesh, dims, ref = ctx.args
                leaf = ref()
                if leaf is not None and _USES.get(leaf) == {dims}:
                    _PENDING[leaf] = (mesh, dims)
                    return grad, None, None, None
                for m in dims:
                    grad = _reduce(grad, "sum", mesh.get_group(m))
                return grad, None, None, None

        cls.lazy = LazyGradSum

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


# NOTE [ Partial gradients of leaves ]
# A replicated leaf (a parameter, an input that requires grad) read by an op whose result
# is sharded or partial along a mesh dimension receives on each rank only that rank's share
# of its gradient. PyTorch leaves such a gradient ``Partial(sum)`` -- the sum happens when
# something needs the whole value -- and so does ember, while every use of the leaf is of
# that kind along the same mesh dimensions: ``lazy_grad_sum`` records the use and its
# backward passes the share through; ``note_use`` records the uses that give whole
# gradients (the leaf's own layout kept, ``to_local``, ``redistribute``). Once a leaf has
# both kinds its shares are summed in backward, and a gradient it holds unsummed is summed
# there and then (every rank records the same uses, so the collectives pair up). The leaf's
# ``.grad`` shows ``Partial(sum)`` on the pending dimensions; reading its raw data (the
# optimizers' fused kernels) or setting it to None ends the pending state, summing first.

class _ByTensor:
    """A mapping keyed by tensors' identity that forgets a tensor once it is gone (a weak
    dictionary compares its keys with ``==``, which tensors answer element by element)."""

    def __init__(self):
        self._items = {}

    def get(self, t, default=None):
        entry = self._items.get(id(t))
        return default if entry is None or entry[0]() is not t else entry[1]

    def __setitem__(self, t, value):
        key = id(t)
        items = self._items
        self._items[key] = (weakref.ref(t, lambda _r, key=key: items.pop(key, None)), value)

    def pop(self, t, default=None):
        entry = self._items.get(id(t))
        if entry is None or entry[0]() is not t:
            return default
        del self._items[id(t)]
        return entry[1]


#: leaf -> the kinds of its uses: tuples of mesh dimensions (``()``: a whole gradient)
_USES = _ByTensor()
#: leaf -> (mesh, mesh dimensions) its ``.grad`` holds unsummed
_PENDING = _ByTensor()


def is_grad_leaf(t) -> bool:
    """Whether ``t`` is a leaf that accumulates a gradient from a use now (grad mode on)."""
    from ... import _dispatch

    return t.requires_grad and t._grad_fn is None and _dispatch.state.grad_enabled


def note_use(leaf, mesh=None, dims=()) -> None:
    """Record that ``leaf`` (a gradient-accumulating leaf) is read by a use of kind ``dims``
    (NOTE [ Partial gradients of leaves ]); with a new kind, a pending gradient is summed."""
    uses = _USES.get(leaf)
    kind = tuple(dims)
    if uses is None:
        _USES[leaf] = {kind}
        return
    if kind in uses:
        return
    uses.add(kind)
    settle(leaf)


#: leaf -> a weak reference to the DTensor its ``.grad`` returned while pending
VIEWS = _ByTensor()


def settle(leaf) -> None:
    """Sum ``leaf``'s pending (unsummed) gradient in place, if it has one; the DTensor its
    ``.grad`` handed out shows the summed layout from then on."""
    pending = _PENDING.pop(leaf, None)
    ref = VIEWS.pop(leaf, None)
    view = None if ref is None else ref()
    if view is not None:
        spec = view._spec
        view._spec = type(spec)(spec.mesh, tuple(Replicate() if isinstance(p, Partial) else p
                                                 for p in spec.placements), spec.shape)
    g = leaf.grad
    if pending is None or g is None:
        return
    mesh, dims = pending
    from ... import no_grad

    with no_grad():
        for m in dims:
            g.copy_(_reduce(g, "sum", mesh.get_group(m)))


def pending_dims(leaf):
    """The mesh dimensions over which ``leaf``'s gradient is held unsummed (``()``: none)."""
    pending = _PENDING.get(leaf)
    return () if pending is None or leaf.grad is None else pending[1]


def lazy_grad_sum(leaf, mesh, dims):
    """``leaf`` (a replicated gradient-accumulating leaf) read by an op whose result is
    sharded or partial along mesh ``dims``: its gradient share is summed only if the leaf
    has other kinds of uses (NOTE [ Partial gradients of leaves ])."""
    note_use(leaf, mesh, dims)
    if _Fns.lazy is None:
        _Fns.make_lazy()
    return _Fns.lazy.apply(leaf, mesh, tuple(dims), weakref.ref(leaf))
