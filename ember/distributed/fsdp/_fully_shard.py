"""``fully_shard``: sharded data parallelism (PyTorch's FSDP2, ``torch.distributed.fsdp``).

NOTE [ fully_shard ]
``fully_shard(module)`` keeps on each rank only a shard of every parameter the module
manages: rows ``[r*c, (r+1)*c)`` of dim 0, with ``c = ceil(rows / world_size)`` (the last
shards may be shorter or empty, as ``torch.chunk`` splits). The module's parameters *are*
the shards, so an optimizer built afterwards updates (and keeps state for) the shard only.
Before the module's forward, a pre-hook all-gathers the full parameters (padded to equal
shards) through an autograd function and puts them in place of the shards; after the
forward the shards are put back (``reshard_after_forward``), while the autograd graph
keeps the gathered tensors it needs. In backward, that function reduce-scatters the full
gradient, divided by the world size, into the shard's ``.grad``: gradients are averaged as
with DDP, but each rank holds only its part. Apply it to submodules first (each layer a
unit whose parameters are gathered only while it runs), then to the root, which manages
the parameters no unit took. Parameters are not DTensors in ember: ``state_dict()`` holds
the local shards (``full_state_dict`` in ``ember.distributed.fsdp`` gathers them).
"""

from __future__ import annotations

import math
import weakref

__all__ = ["FSDPModule", "fully_shard"]


class FSDPModule:
    """The class ``fully_shard`` mixes into a module (``isinstance(m, FSDPModule)``).

    Example::

        >>> m = fully_shard(ember.nn.Linear(4, 4))  # doctest: +SKIP
        >>> isinstance(m, FSDPModule)  # doctest: +SKIP
        True
    """

    def unshard(self, async_op=False):
        """Gather the full parameters now (they stay until ``reshard()``)."""
        self._fsdp_state.unshard(self)

    def reshard(self):
        """Put the local shards back in place of the full parameters."""
        self._fsdp_state.reshard(self)

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse=True):
        """With False, backward keeps full local gradients unsynchronized (accumulation);
        the next synchronized backward reduce-scatters them."""
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse=True):
        """Whether the full parameters are dropped after forward."""
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.reshard_after_forward = reshard_after_forward


class _Gather:
    """The autograd function: shard -> full parameter; backward reduce-scatters."""

    _fn = None

    @classmethod
    def get(cls):
        if cls._fn is None:
            from ...autograd import Function

            class AllGatherShard(Function):
                @staticmethod
                def forward(ctx, shard, info):
                    ctx.info = info
                    return info.gather(shard)

                @staticmethod
                def backward(ctx, grad):
                    return ctx.info.scatter_grad(grad), None

            cls._fn = AllGatherShard
        return cls._fn


# data_ptr of a shard -> (weak reference to the shard, its _ParamInfo): lets the distributed
# checkpoint recognise a state_dict() entry (a detached view of the shard) as a piece of a
# larger tensor (NOTE [ Sharded entries in checkpoints ] in distributed/checkpoint/_shards.py)
_SHARDS: dict = {}


def register_shard_like(tensor, info) -> None:
    """Record ``tensor`` (shaped like this rank's shard of ``info``'s parameter: optimizer
    state, say) as a piece laid out as that shard, so a checkpoint of it is sharded too."""
    lo, hi = info.local_rows(info.rank)
    if hi > lo:
        _SHARDS[tensor.data_ptr()] = (weakref.ref(tensor), info)


def shard_layout(tensor):
    """``(global shape, offsets)`` when ``tensor`` holds a ``fully_shard`` shard (or a
    detached view of one) of a parameter with at least one dimension, else None."""
    entry = _SHARDS.get(tensor.data_ptr())
    if entry is None:
        return None
    shard, info = entry[0](), entry[1]
    if shard is None or not info.shape or tuple(shard.shape) != tuple(tensor.shape):
        return None
    lo, _ = info.local_rows(info.rank)
    return info.shape, (lo,) + (0,) * (len(info.shape) - 1)


class _ParamInfo:
    def __init__(self, owner, name, full, group, rank, size):
        self.owner, self.name, self.group = owner, name, group
        self.rank, self.size = rank, size
        self.shape = tuple(full.shape)
        rows = self.shape[0] if self.shape else 1
        self.chunk = max(1, math.ceil(rows / size))
        self.rows = rows
        self.state = None

    def local_rows(self, r):
        lo = min(r * self.chunk, self.rows)
        return lo, min(lo + self.chunk, self.rows)

    def gather(self, shard):
        from ... import cat, distributed as dist, zeros

        tail = self.shape[1:]
        lo, hi = self.local_rows(self.rank)
        piece = shard.detach().reshape((hi - lo,) + tail)
        if hi - lo < self.chunk:
            piece = cat([piece, zeros((self.chunk - (hi - lo),) + tail, dtype=shard.dtype)])
        out = zeros((self.chunk * self.size,) + tail, dtype=shard.dtype)
        dist.all_gather_into_tensor(out, piece.contiguous(), group=self.group)
        return out[:self.rows].reshape(self.shape).clone()

    def scatter_grad(self, grad):
        from ... import cat, distributed as dist, zeros

        tail = self.shape[1:]
        g = grad.reshape((self.rows,) + tail)
        lo, hi = self.local_rows(self.rank)
        if not self.state.sync:
            return None if hi == lo and False else self._accumulate(g[lo:hi])
        pad = self.chunk * self.size - self.rows
        if pad:
            g = cat([g, zeros((pad,) + tail, dtype=grad.dtype)])
        out = zeros((self.chunk,) + tail, dtype=grad.dtype)
        dist.reduce_scatter_tensor(out, g.contiguous(), op=dist.ReduceOp.AVG, group=self.group)
        local = out[:hi - lo]
        return local if not self.shape else local.reshape((hi - lo,) + tail)

    def _accumulate(self, g):
        # without sync: this rank's rows of its own full gradient, not averaged
        return g.clone()


class _State:
    def __init__(self, module, infos, reshard_after_forward):
        self.infos = infos
        self.sync = True
        self.reshard_after_forward = reshard_after_forward
        self.gathered = False
        for info in infos:
            info.state = self

    def unshard(self, module):
        if self.gathered:
            return
        fn = _Gather.get()
        for info in self.infos:
            shard = info.owner._parameters[info.name]
            info.shard = shard
            info.owner._parameters[info.name] = fn.apply(shard, info)
        self.gathered = True

    def reshard(self, module):
        if not self.gathered:
            return
        for info in self.infos:
            info.owner._parameters[info.name] = info.shard
        self.gathered = False


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=None, offload_policy=None, ignored_params=None, dp_mesh_dims=None):
    """Shard ``module``'s parameters across the ranks (see NOTE [ fully_shard ]).

    Args:
        module: the module (or a list of modules) to shard; already-sharded submodules keep
            their own parameters.
        mesh: a 1-D ``DeviceMesh`` (default: all ranks of the default group).
        reshard_after_forward: drop the full parameters after forward (default True).
        ignored_params: parameters to leave whole and unsynchronized.
        shard_placement_fn, mp_policy, offload_policy, dp_mesh_dims: accepted; ember shards
            on dim 0 in the parameters' dtype.

    Returns:
        the module, now also an ``FSDPModule``.

    Raises:
        ValueError: no process group.

    Example::

        >>> for layer in model.layers:  # doctest: +SKIP
        ...     fully_shard(layer)
        >>> fully_shard(model)  # doctest: +SKIP
    """
    from ... import distributed as dist
    from ...nn import Parameter

    if isinstance(module, (list, tuple)):
        for m in module:
            fully_shard(m, mesh=mesh, reshard_after_forward=reshard_after_forward,
                        ignored_params=ignored_params)
        return module
    if not dist.is_initialized():
        raise ValueError(dist.NOT_INITIALIZED)
    group = mesh.get_group() if mesh is not None else dist.group.WORLD
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    ignored = {id(p) for p in (ignored_params or ())}
    infos = []
    for owner in module.modules():
        for name, p in list(owner._parameters.items()):
            if p is None or id(p) in ignored or getattr(p, "_fsdp_sharded", False):
                continue
            # every rank starts from rank 0's values, as torch's init would be seeded
            full = p.detach().clone()
            dist.broadcast(full, src=dist.get_global_rank(group, 0), group=group)
            info = _ParamInfo(owner, name, full, group, rank, size)
            lo, hi = info.local_rows(rank)
            flat = full.reshape((info.rows,) + info.shape[1:])
            shard = Parameter(flat[lo:hi].clone(), requires_grad=p.requires_grad)
            shard._fsdp_sharded = True
            if hi > lo:
                _SHARDS[shard.data_ptr()] = (weakref.ref(shard), info)
            owner._parameters[name] = shard
            infos.append(info)
    state = _State(module, infos, True if reshard_after_forward is None
                   else bool(reshard_after_forward))
    cls = module.__class__
    if not isinstance(module, FSDPModule):
        module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    module._fsdp_state = state

    def pre(mod, args):
        state.unshard(mod)

    def post(mod, args, out):
        if state.reshard_after_forward:
            state.reshard(mod)

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)
    return module
