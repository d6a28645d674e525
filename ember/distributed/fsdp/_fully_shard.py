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
the parameters no unit took. Between forwards each parameter is a ``DTensor`` laid out
``Shard(0)`` over the mesh (its piece is the leaf that autograd and the optimizer update),
so ``state_dict()`` holds DTensors, as PyTorch's (``full_state_dict`` in
``ember.distributed.fsdp`` gathers them whole); 0-d parameters stay plain.

2-D (FSDP + TP): a parameter that ``parallelize_module`` made a DTensor on ``mesh["tp"]``
is sharded over ``mesh["dp"]`` by its TP piece: the piece's rows are cut as above, and the
parameter between forwards is a DTensor on the mesh both were cut from, placed
``(Shard(0) or _StridedShard(0, sf), <its TP placements>)`` as PyTorch places it (NOTE
[ Strided shards ] in tensor/_redistribute.py). The gather rebuilds the TP piece, wrapped
as the TP DTensor the module's forward expects; its gradient (reduced over ``tp`` by the
DTensor ops where the layout asks for it) is reduce-scattered over ``dp``.
"""

from __future__ import annotations

import math
import weakref

__all__ = ["FSDPModule", "UnshardHandle", "fully_shard", "register_fsdp_forward_method",
           "share_comm_ctx"]


class FSDPModule:
    """The class ``fully_shard`` mixes into a module (``isinstance(m, FSDPModule)``).

    Example::

        >>> m = fully_shard(ember.nn.Linear(4, 4))  # doctest: +SKIP
        >>> isinstance(m, FSDPModule)  # doctest: +SKIP
        True
    """

    def unshard(self, async_op=False):
        """Gather the full parameters now (they stay until ``reshard()``).

        Args:
            async_op (bool): return a handle (whose ``wait()`` returns at once: ember
                gathers synchronously).

        Returns:
            the handle with ``async_op``, else None.

        Example::

            >>> model.unshard()  # doctest: +SKIP
        """
        self._fsdp_state.unshard(self)
        return UnshardHandle() if async_op else None

    def set_modules_to_forward_prefetch(self, modules):
        """Gather ``modules``' parameters as soon as this module's forward starts (ahead of
        their own forwards).

        Args:
            modules (list of FSDPModule): the modules to gather early.

        Returns:
            None

        Raises:
            ValueError: an entry is not an ``FSDPModule``.

        Example::

            >>> model.layers[0].set_modules_to_forward_prefetch([model.layers[1]])  # doctest: +SKIP
        """
        for m in modules:
            if not isinstance(m, FSDPModule):
                raise ValueError(f"expected FSDPModule, got {type(m).__name__}")
        self._fsdp_state.forward_prefetch = list(modules)

    def set_modules_to_backward_prefetch(self, modules):
        """Recorded for PyTorch's API: ember's backward reads the gathered parameters the
        forward saved, so there is nothing to gather ahead in backward.

        Args:
            modules (list of FSDPModule): the modules PyTorch would gather early.

        Returns:
            None

        Raises:
            ValueError: an entry is not an ``FSDPModule``.

        Example::

            >>> layers = model.layers  # doctest: +SKIP
            >>> layers[1].set_modules_to_backward_prefetch([layers[0]])  # doctest: +SKIP
        """
        for m in modules:
            if not isinstance(m, FSDPModule):
                raise ValueError(f"expected FSDPModule, got {type(m).__name__}")
        self._fsdp_state.backward_prefetch = list(modules)

    def set_gradient_divide_factor(self, factor: float):
        """Divide the summed gradients by ``factor`` instead of the number of ranks.

        Args:
            factor (float): the divisor.

        Returns:
            None

        Example::

            >>> model.set_gradient_divide_factor(1.0)  # summed, not averaged  # doctest: +SKIP
        """
        for m in self.modules():
            if isinstance(m, FSDPModule):
                m._fsdp_state.divide_factor = float(factor)

    def set_is_last_backward(self, is_last_backward: bool):
        """Recorded for PyTorch's API (ember's reduction needs no end-of-backward step).

        Args:
            is_last_backward (bool): whether the next backward ends the step.

        Returns:
            None

        Example::

            >>> model.set_is_last_backward(False)  # doctest: +SKIP
        """
        self._fsdp_state.is_last_backward = bool(is_last_backward)

    def set_reshard_after_backward(self, reshard_after_backward: bool, *, recurse=True):
        """Recorded for PyTorch's API (ember keeps no gathered parameters after backward).

        Args:
            reshard_after_backward (bool): PyTorch's flag.
            recurse (bool): also for the FSDP submodules. Keyword-only.

        Returns:
            None

        Example::

            >>> model.set_reshard_after_backward(False)  # doctest: +SKIP
        """
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.reshard_after_backward = bool(reshard_after_backward)

    def reshard(self):
        """Put the local shards (DTensors) back in place of the full parameters.

        Returns:
            None

        Example::

            >>> model.reshard()  # doctest: +SKIP
        """
        self._fsdp_state.reshard(self)

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse=True):
        """With False, backward keeps full local gradients unsynchronized (accumulation);
        the next synchronized backward reduce-scatters them.

        Args:
            requires_gradient_sync (bool): whether backward reduces the gradients.
            recurse (bool): also for the FSDP submodules. Keyword-only.

        Returns:
            None

        Example::

            >>> model.set_requires_gradient_sync(False)  # doctest: +SKIP
        """
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse=True):
        """Whether the full parameters are dropped after forward.

        Args:
            reshard_after_forward (bool): drop them (True) or keep them until ``reshard()``.
            recurse (bool): also for the FSDP submodules.

        Returns:
            None

        Example::

            >>> model.set_reshard_after_forward(False)  # doctest: +SKIP
        """
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.reshard_after_forward = reshard_after_forward


class UnshardHandle:
    """What ``unshard(async_op=True)`` returns: the gather is already done.

    Example::

        >>> UnshardHandle().wait() is None
        True
    """

    def wait(self):
        """Return at once (the parameters are gathered).

        Returns:
            None

        Example::

            >>> UnshardHandle().wait()
        """
        return None



def register_fsdp_forward_method(module, method_name: str) -> None:
    """Make ``module.<method_name>`` gather the parameters around its call as ``forward``
    does (``generate`` of a model sharded with ``fully_shard``, say).

    Args:
        module (Module): a module sharded with ``fully_shard`` (others are left as they are).
        method_name (str): the method.

    Returns:
        None

    Example::

        >>> register_fsdp_forward_method(model, "generate")  # doctest: +SKIP
    """
    if not isinstance(module, FSDPModule):
        return
    method = getattr(module, method_name)

    def gathered(*args, **kwargs):
        state = module._fsdp_state
        was = state.gathered
        state.unshard(module)
        try:
            return method(*args, **kwargs)
        finally:
            if not was and state.reshard_after_forward:
                state.reshard(module)

    setattr(module, method_name, gathered)


def share_comm_ctx(modules) -> None:
    """Let ``modules`` share communication streams (accepted: ember gathers synchronously,
    on no stream of its own).

    Args:
        modules (list of FSDPModule): the modules.

    Returns:
        None

    Raises:
        ValueError: an entry is not an ``FSDPModule``.

    Example::

        >>> share_comm_ctx([model.layers[0], model.layers[1]])  # doctest: +SKIP
    """
    for m in modules:
        if not isinstance(m, FSDPModule):
            raise ValueError(f"share_comm_ctx: expected FSDPModule, got {type(m).__name__}")


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
                    return info.gather(shard, for_forward=True)

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
    if getattr(info, "tp", None) is not None:
        return  # a 2-D parameter's state is a DTensor: its layout says where it lies
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
        self.dtype = full.dtype
        rows = self.shape[0] if self.shape else 1
        self.chunk = max(1, math.ceil(rows / size))
        self.rows = rows
        self.state = None
        self.pending = None  # the full local gradient of unsynchronized backwards
        self.tp = None  # a _TPLayout for a tensor-parallel parameter (2-D)

    def local_rows(self, r):
        lo = min(r * self.chunk, self.rows)
        return lo, min(lo + self.chunk, self.rows)

    def gather(self, shard, for_forward=False):
        from ... import cat, distributed as dist, zeros

        tail = self.shape[1:]
        lo, hi = self.local_rows(self.rank)
        shard = getattr(shard, "_local_tensor", shard)  # a DTensor: its piece
        piece = shard.detach().reshape((hi - lo,) + tail)
        if hi - lo < self.chunk:
            piece = cat([piece, zeros((self.chunk - (hi - lo),) + tail, dtype=shard.dtype)])
        out = zeros((self.chunk * self.size,) + tail, dtype=shard.dtype)
        dist.all_gather_single(out, piece.contiguous(), group=self.group)
        full = out[:self.rows].reshape(self.shape).clone()
        mp = self.state.mp_policy
        if for_forward and mp is not None and mp.param_dtype is not None and \
                full.is_floating_point():
            full = full.to(mp.param_dtype)
        return full

    def scatter_grad(self, grad):
        mp = self.state.mp_policy
        if mp is not None and mp.param_dtype is not None:
            grad = grad.to(mp.reduce_dtype or mp.param_dtype)  # PyTorch's default
        g = grad.reshape((self.rows,) + self.shape[1:])
        # without sync the full local gradient waits; the next synchronized backward reduces
        # the sum, so accumulation over k steps averages as one step on k times the data
        if self.pending is not None:
            g = g + self.pending
            self.pending = None
        if not self.state.sync:
            self.pending = g.detach().clone()
            return None
        return self._reduce_scatter(g)

    def flush_pending(self) -> None:
        """Reduce-scatter the gradient that unsynchronized backwards left (``pending``)
        into the shard's ``.grad``, as a synchronized backward would have."""
        if self.pending is None:
            return
        g, self.pending = self.pending, None
        local = self._reduce_scatter(g)
        shard = getattr(self, "shard", None)  # the shard put aside while gathered
        if shard is None:
            shard = self.owner._parameters[self.name]
        leaf = getattr(shard, "_local_tensor", shard)
        if leaf.grad is None:
            leaf.grad = local.detach()
        else:
            leaf.grad = leaf.grad + local.detach()

    def _reduce_scatter(self, g):
        from ... import cat, distributed as dist, zeros

        tail = self.shape[1:]
        lo, hi = self.local_rows(self.rank)
        pad = self.chunk * self.size - self.rows
        if pad:
            g = cat([g, zeros((pad,) + tail, dtype=g.dtype)])
        out = zeros((self.chunk,) + tail, dtype=g.dtype)
        factor = self.state.divide_factor
        hook = getattr(self.state, "comm_hook", None)
        if hook is not None:  # NOTE [ FSDP1 communication hooks ] (fully_sharded_data_parallel)
            flat_out = out.reshape(-1)
            hook(self.state.comm_hook_state, g.contiguous().reshape(-1).clone(), flat_out)
            out = flat_out.reshape((self.chunk,) + tail)
        elif factor is None:
            dist.reduce_scatter_single(out, g.contiguous(), op=dist.ReduceOp.AVG,
                                       group=self.group)
        else:
            dist.reduce_scatter_single(out, g.contiguous(), group=self.group)
            out = out / factor
        local = out[:hi - lo].to(self.dtype)
        return local if not self.shape else local.reshape((hi - lo,) + tail)


class _TPLayout:
    """A tensor-parallel parameter under ``fully_shard`` over a 2-D mesh: its TP ``mesh``,
    ``tp_placements`` and global ``shape``; the ``root`` mesh both meshes were cut from and
    the sharded parameter's ``placements`` on it."""

    def __init__(self, mesh, tp_placements, shape, root, placements):
        self.mesh, self.tp_placements, self.shape = mesh, tp_placements, shape
        self.root, self.placements = root, placements


def _tp_layout(name, p, dp_mesh):
    """The layout of DTensor parameter ``p`` (laid out by tensor parallelism) once
    ``fully_shard`` over ``dp_mesh`` cuts its pieces along dimension 0 (NOTE [ fully_shard ])."""
    from ..tensor.placement_types import Replicate, Shard, _StridedShard

    tp_mesh = p._spec.mesh
    dp_root = getattr(dp_mesh, "_root", None)
    tp_root = getattr(tp_mesh, "_root", None)
    if dp_root is None or tp_root is None or dp_root[0] is not tp_root[0] or \
            len(dp_root[1]) != 1 or set(dp_root[1]) & set(tp_root[1]):
        raise ValueError(
            f"fully_shard: parameter '{name}' is a DTensor on {tp_mesh}; fully_shard combines "
            "with tensor parallelism when both meshes come from one DeviceMesh, as "
            'mesh["dp"] and mesh["tp"] of init_device_mesh(..., mesh_dim_names=("dp", "tp"))')
    root = dp_root[0]
    placements = [Replicate()] * root.ndim
    split = 1
    for m, q in zip(tp_root[1], p._spec.placements):
        placements[m] = q
        if isinstance(q, Shard) and q.dim == 0:
            split *= root.size(m)
    dp = dp_root[1][0]
    # a TP cut of one piece leaves the rows in order: a plain Shard(0), as PyTorch labels it
    placements[dp] = _StridedShard(0, split_factor=split) if split > 1 else Shard(0)
    return _TPLayout(tp_mesh, tuple(p._spec.placements), tuple(p._spec.shape), root,
                     tuple(placements))


class _State:
    def __init__(self, module, infos, reshard_after_forward, mp_policy=None):
        self.infos = infos
        self.sync = True
        self.mp_policy = mp_policy
        self.forward_prefetch = []
        self.backward_prefetch = []
        self.divide_factor = None
        self.is_last_backward = True
        self.reshard_after_backward = True
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
            local = getattr(shard, "_local_tensor", shard)  # a DTensor's piece is the leaf
            full = fn.apply(local, info)
            if info.tp is not None:  # the tensor-parallel parameter (NOTE [ fully_shard ])
                from ..tensor._api import DTensor

                full = DTensor._make(full, info.tp.mesh, info.tp.tp_placements, info.tp.shape)
            info.owner._parameters[info.name] = full
        self.gathered = True

    def post_backward(self):
        """Reduce the gradients that backwards without sync accumulated (a pipeline
        schedule's REDUCE_GRAD: NOTE [ Pipeline stages with data parallelism ] in
        pipelining/stage.py)."""
        for info in self.infos:
            info.flush_pending()

    def reshard(self, module):
        if not self.gathered:
            return
        for info in self.infos:
            info.owner._parameters[info.name] = info.shard
        self.gathered = False


def _refuse_deepcopy(self, memo):
    # a copy would share the original's hooks and unsharded buffers (PyTorch refuses too)
    raise AssertionError("FSDP does not support deepcopy. Please use state dict for "
                         "serialization.")


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=None, offload_policy=None, ignored_params=None, dp_mesh_dims=None):
    """Shard ``module``'s parameters across the ranks (see NOTE [ fully_shard ]).

    Args:
        module: the module (or a list of modules) to shard; already-sharded submodules keep
            their own parameters.
        mesh: a 1-D ``DeviceMesh`` (default: all ranks of the default group).
        reshard_after_forward: drop the full parameters after forward (default True).
        ignored_params: parameters to leave whole and unsynchronized.
        mp_policy (MixedPrecisionPolicy, optional): gather the parameters in
            ``param_dtype`` (and cast floating-point inputs to it), reduce gradients in
            ``reduce_dtype`` (default ``param_dtype``), cast outputs to ``output_dtype``; the
            shards and their gradients keep the parameters' dtype.
        shard_placement_fn, offload_policy, dp_mesh_dims: accepted; ember shards on dim 0.

    Returns:
        the module, now also an ``FSDPModule``.

    Raises:
        ValueError: no process group, or a DTensor parameter whose mesh is not cut from
        the same mesh as ``mesh`` (2-D FSDP + TP: ``mesh["dp"]`` and ``mesh["tp"]``).

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
                        mp_policy=mp_policy, ignored_params=ignored_params)
        return module
    if not dist.is_initialized():
        raise ValueError(dist.NOT_INITIALIZED)
    group = mesh.get_group() if mesh is not None else dist.group.WORLD
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    if mesh is None:
        from ..tensor._api import _default_mesh

        dt_mesh = _default_mesh(None)
    else:
        dt_mesh = mesh
    ignored = {id(p) for p in (ignored_params or ())}
    layouts = {}  # checked before anything changes: a refusal leaves the module as it was
    for owner in module.modules():
        for name, p in owner._parameters.items():
            if p is not None and id(p) not in ignored and not getattr(p, "_fsdp_sharded",
                                                                      False) and \
                    hasattr(type(p), "_local_tensor"):
                layouts[id(p)] = _tp_layout(name, p, mesh)
    infos = []
    for owner in module.modules():
        for name, p in list(owner._parameters.items()):
            if p is None or id(p) in ignored or getattr(p, "_fsdp_sharded", False):
                continue
            tp = layouts.get(id(p))
            # every rank starts from rank 0's values, as torch's init would be seeded
            full = (p if tp is None else p._local_tensor).detach().clone()
            if full.device.type != "meta":  # a meta model gets its values after to_empty
                dist.broadcast(full, src=dist.get_global_rank(group, 0), group=group)
            info = _ParamInfo(owner, name, full, group, rank, size)
            info.mesh = dt_mesh
            info.tp = tp
            lo, hi = info.local_rows(rank)
            flat = full.reshape((info.rows,) + info.shape[1:])
            piece = flat[lo:hi].clone()
            if info.shape:  # a DTensor, Shard(0) over the mesh, as PyTorch's parameters are
                from ..tensor._api import DTensor
                from ..tensor.placement_types import Shard

                spec = ((dt_mesh, (Shard(0),), info.shape) if tp is None
                        else (tp.root, tp.placements, tp.shape))
                shard = Parameter(DTensor._make(piece, *spec), requires_grad=p.requires_grad)
            else:
                shard = Parameter(piece, requires_grad=p.requires_grad)
            shard._fsdp_sharded = True
            if hi > lo and tp is None:
                _SHARDS[shard.data_ptr()] = (weakref.ref(shard), info)
            owner._parameters[name] = shard
            infos.append(info)
    state = _State(module, infos, True if reshard_after_forward is None
                   else bool(reshard_after_forward), mp_policy)
    cls = module.__class__
    if not isinstance(module, FSDPModule):
        module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls),
                                {"__deepcopy__": _refuse_deepcopy})
    module._fsdp_state = state

    def pre(mod, args):
        state.unshard(mod)
        for other in state.forward_prefetch:
            other._fsdp_state.unshard(other)
        mp = state.mp_policy
        if mp is not None and mp.param_dtype is not None and mp.cast_forward_inputs:
            from ... import Tensor

            return tuple(a.to(mp.param_dtype) if isinstance(a, Tensor) and a.is_floating_point()
                         else a for a in args)
        return None

    def post(mod, args, out):
        if state.reshard_after_forward:
            state.reshard(mod)
        mp = state.mp_policy
        if mp is not None and mp.output_dtype is not None:
            from ... import Tensor

            if isinstance(out, Tensor) and out.is_floating_point():
                return out.to(mp.output_dtype)
        return None

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)
    return module
