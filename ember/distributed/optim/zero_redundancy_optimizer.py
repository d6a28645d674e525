"""``ZeroRedundancyOptimizer``: optimizer state sharded across ranks (ZeRO stage 1).

NOTE [ ZeRO partition ]
Each rank keeps the optimizer state (momentum, Adam moments...) of only its share of the
parameters. The share is made as PyTorch makes it, so checkpoints and per-rank memory
agree: within each parameter group, parameters sorted by size (largest first) go one by
one to the rank with the fewest elements so far (ties to the lowest rank; the counts carry
over from group to group). ``step()`` runs a local optimizer of ``optimizer_class`` over
this rank's share (after copying hyper-parameters such as ``lr`` from ``param_groups``,
where schedulers change them), then every rank broadcasts its updated parameters, flattened
per dtype, so all replicas hold the same model again. ``consolidate_state_dict(to)``
gathers the shards' state on one rank, whose ``state_dict()`` is then the state of a
plain optimizer over all parameters (global indices).

NOTE [ ZeRO overlapped with DDP ]
With ``overlap_with_ddp=True`` the shares follow DDP's gradient buckets instead, and the
step runs inside DDP's communication hook (``ddp_zero_hook.hook_with_zero_step``), so
``step()`` in the training loop does nothing. The hook needs DDP's final buckets: in the
first iteration DDP has not rebuilt them yet (nothing happens), in the second the hook
records each bucket's parameters, and at the start of the third the optimizer is made
(``_init_zero_for_overlap``). So, as in PyTorch, the first two iterations update nothing.
From then on, once the last bucket is launched, each rank waits for the all-reduce of the
buckets assigned to it, steps a *functional* optimizer (``functional_optim_map``) with
those buckets' averaged gradients, and broadcasts the parameters of each bucket from its
rank. Bucket ``i`` goes to rank ``i % world_size``; with ``shard_buckets=True`` buckets are
cut into pieces of about a ``1/world_size`` share and dealt to the least-loaded rank. The
parameters of each assignment are moved into one flat tensor (their ``.data`` become
views of it) so one broadcast per assignment suffices.
"""

from __future__ import annotations

import copy
import enum
import logging

import numpy as np

from ...optim.optimizer import Optimizer
from ..algorithms.join import JoinHook, Joinable

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


class _OverlapStatus(enum.IntEnum):
    """How far the overlapped ZeRO has come (NOTE [ ZeRO overlapped with DDP ])."""

    UNINITIALIZED = 0
    DDP_HAS_REBUILT_BUCKETS = 1
    INITIALIZED = 2


class _DDPBucketAssignment:
    """The parameters of DDP bucket ``bucket_index`` from position ``offset`` on that one
    rank updates; ``tensor`` is their flat storage once the optimizer exists."""

    def __init__(self, bucket_index, parameters, offset):
        self.bucket_index = bucket_index
        self.parameters = parameters
        self.offset = offset
        if not parameters:
            raise ValueError("Empty bucket assignment")
        self.device = parameters[0].device
        self.tensor = None


class _OverlapInfo:
    """What the overlapped ZeRO learns of DDP's buckets, and its per-iteration records."""

    def __init__(self, world_size):
        self.status = _OverlapStatus.UNINITIALIZED
        self.shard_buckets = False
        self.params_per_bucket = []
        self.params_per_rank = [[] for _ in range(world_size)]
        self.offsets = {}  # bucket index -> first position in this rank's parameters
        self.assigned_ranks_per_bucket = []
        self.num_bucket_assignments = 0
        self.total_size = None
        self.broadcast_handles = []
        self.bucket_indices_seen = []
        self.bucket_index_to_future = {}
        self.bucket_index_to_bucket = {}

    def wait_for_broadcasts(self) -> None:
        """Wait for this iteration's parameter broadcasts."""
        for work in self.broadcast_handles:
            work.wait()
        self.broadcast_handles.clear()

    def clear_per_iter_info(self) -> None:
        """Forget this iteration's buckets and futures."""
        self.bucket_index_to_future.clear()
        self.bucket_index_to_bucket.clear()
        self.bucket_indices_seen.clear()


class _ZeROJoinHook(JoinHook):
    def __init__(self, zero):
        self.zero = zero

    def main_hook(self):
        # a joined rank still owns a share: it takes part in the parameter broadcasts
        self.zero._sync_params()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """Wrap an optimizer so each rank stores the state of only its share of the
    parameters (see NOTE [ ZeRO partition ]); use it with DistributedDataParallel.

    Args:
        params: the parameters (an iterable of tensors or of parameter-group dicts).
        optimizer_class: the local optimizer's class (e.g. ``ember.optim.Adam``).
        process_group: the group to shard over (default: the default group).
        parameters_as_bucket_view: accepted; parameters are broadcast flattened per rank
            and dtype either way.
        overlap_with_ddp: run the step inside DDP's communication hook (register one made
            by ``ddp_zero_hook.hook_with_zero_step``), a functional optimizer per rank;
            the first two iterations update nothing (NOTE [ ZeRO overlapped with DDP ]).
        **defaults: the local optimizer's arguments (``lr=...``).

    Raises:
        ValueError: no process group; ``overlap_with_ddp=True`` with an optimizer that has
            no functional counterpart; a functional optimizer without it.

    Example::

        >>> opt = ZeroRedundancyOptimizer(ddp.parameters(), ember.optim.Adam,
        ...                               lr=1e-3)  # doctest: +SKIP
        >>> opt.step()  # doctest: +SKIP
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        from ... import distributed as dist

        if process_group is None and not dist.is_initialized():
            raise ValueError(dist.NOT_INITIALIZED)
        self._overlap_with_ddp = bool(overlap_with_ddp)
        self._optim_constructor = self._get_optimizer_constructor(optimizer_class)
        self._initialized = False
        Optimizer.__init__(self, params, defaults)
        Joinable.__init__(self)
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self.optimizer_class = optimizer_class
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_defaults = defaults
        self._all_state_dicts = []
        self._partition_cache = []
        self._assignments_cache = []
        self._initialized = True
        if self._overlap_with_ddp:  # the optimizer waits for DDP's buckets
            self._overlap_info = _OverlapInfo(self.world_size)
            if parameters_as_bucket_view:
                logger.warning("`parameters_as_bucket_view=True` will be ignored since "
                               "`overlap_with_ddp=True`; DDP's buckets are used instead")
        else:
            self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
            self._sync_param_groups(self.optim.param_groups, self.param_groups)

    def _get_optimizer_constructor(self, optimizer_class):
        """The class the local optimizer is made of: ``optimizer_class``, or its functional
        counterpart when overlapping with DDP."""
        from .utils import functional_optim_map

        functional = set(functional_optim_map.values())
        if not self._overlap_with_ddp:
            if optimizer_class in functional:
                raise ValueError(f"Passing in a functional optimizer {optimizer_class} when "
                                 "`overlap_with_ddp=False`")
            return optimizer_class
        if optimizer_class in functional:
            return optimizer_class
        if optimizer_class in functional_optim_map:
            return functional_optim_map[optimizer_class]
        raise ValueError("Using `ddp_with_overlap=True` requires using a functional optimizer, "
                         "but there is no supported functional optimizer equivalent for "
                         f"{optimizer_class}")

    # -- overlap with DDP (NOTE [ ZeRO overlapped with DDP ]) -----------------------------------

    def _check_overlap_initialized(self):
        if self._overlap_with_ddp and self._overlap_info.status != _OverlapStatus.INITIALIZED:
            raise RuntimeError("This method should not be called until this "
                               "ZeroRedundancyOptimizer instance has been fully initialized")

    def _get_assigned_rank(self, bucket_index: int) -> int:
        return bucket_index % self.world_size

    @property
    def _bucket_assignments_per_rank(self):
        """Per rank, ``{bucket index: _DDPBucketAssignment}``: who updates what."""
        if self._assignments_cache:
            return self._assignments_cache
        info = self._overlap_info
        per_rank = [{} for _ in range(self.world_size)]
        info.assigned_ranks_per_bucket = [set() for _ in info.params_per_bucket]
        info.params_per_rank = [[] for _ in range(self.world_size)]
        info.offsets = {}
        info.num_bucket_assignments = 0

        def assign(index, params, offset, rank):
            per_rank[rank][index] = _DDPBucketAssignment(index, params, offset)
            if rank == self.rank:
                info.offsets[index] = len(info.params_per_rank[rank])
            info.params_per_rank[rank].extend(params)
            info.assigned_ranks_per_bucket[index].add(rank)
            info.num_bucket_assignments += 1

        if not info.shard_buckets:
            for index, params in enumerate(info.params_per_bucket):
                assign(index, params, 0, self._get_assigned_rank(index))
        else:
            threshold = info.total_size / self.world_size
            load = [0] * self.world_size

            def least_loaded(taken):  # a bucket gives each rank at most one piece
                free = [r for r in range(self.world_size) if r not in taken]
                if not free:
                    raise AssertionError("All indices are disallowed")
                return min(free, key=lambda r: (load[r], r))

            by_size = sorted(enumerate(info.params_per_bucket),
                             key=lambda e: sum(p.numel() for p in e[1]))
            for index, params in by_size:
                start, size = 0, 0
                for k, p in enumerate(params):
                    if size + p.numel() >= threshold and k > start:
                        r = least_loaded(info.assigned_ranks_per_bucket[index])
                        assign(index, params[start:k], start, r)
                        load[r] += size
                        start, size = k, 0
                    size += p.numel()
                r = least_loaded(info.assigned_ranks_per_bucket[index])
                assign(index, params[start:], start, r)
                load[r] += size
        self._assignments_cache = per_rank
        return per_rank

    def _build_ddp_param_buckets(self):
        """Move each assignment's parameters into one flat tensor (``.data`` become views)."""
        from ... import empty, no_grad

        with no_grad():
            for assignments in self._bucket_assignments_per_rank:
                for a in assignments.values():
                    total = sum(p.numel() for p in a.parameters)
                    flat = empty(total, dtype=a.parameters[0].dtype)
                    at = 0
                    for p in a.parameters:
                        n = p.numel()
                        flat[at:at + n].copy_(p.data.reshape(-1))
                        p.data = flat[at:at + n].view_as(p.data)
                        at += n
                    a.tensor = flat

    def _init_zero_for_overlap(self) -> None:
        """Make the shares from DDP's buckets and the local functional optimizer."""
        info = self._overlap_info
        info.status = _OverlapStatus.INITIALIZED
        self._assignments_cache = []
        self._bucket_assignments_per_rank  # noqa: B018  (fills params_per_rank)
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        self._partition_cache = [[{**group, "params": list(ps)}] for ps in info.params_per_rank]
        self._build_ddp_param_buckets()
        self.optim = self._optim_constructor(info.params_per_rank[self.rank],
                                             **self._optim_defaults,
                                             _allow_empty_param_list=True)
        if not hasattr(self.optim, "param_groups"):
            self.optim.param_groups = [self.optim.param_group]
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    def _local_step(self, gradients=None, closure=None, **kwargs):
        """Step this rank's share without broadcasting; ``gradients`` (overlap only): one
        per local parameter, None to leave one alone."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        if gradients is None:
            loss = self.optim.step(closure=closure, **kwargs) if closure is not None or kwargs \
                else self.optim.step()
        else:
            if not self._overlap_with_ddp:
                raise AssertionError("Specifying `gradients` should not be used when "
                                     "`overlap_with_ddp=False`")
            loss = self.optim.step(gradients)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    # -- partition ------------------------------------------------------------------------------

    def _partition_parameters(self):
        """Per rank, its parameter groups (dicts with this rank's share of ``params``)."""
        if not self._partition_cache:
            per_rank = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                shares = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    shares[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    g = {k: v for k, v in group.items() if k != "params"}
                    g["params"] = shares[r]
                    per_rank[r].append(g)
            self._partition_cache = per_rank
        return self._partition_cache

    @property
    def _param_to_rank(self):
        return {id(p): r for r, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}

    def _all_params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def add_param_group(self, param_group) -> None:
        """Add a parameter group; the new group is partitioned across the ranks too.

        Args:
            param_group: a dict with ``params`` and optional hyper-parameters.
        """
        if getattr(self, "_initialized", False) and self._overlap_with_ddp:
            raise RuntimeError("ZeroRedundancyOptimizer with `overlap_with_ddp=True` only "
                               "supports a single parameter group")
        super().add_param_group(param_group)
        if getattr(self, "_initialized", False):
            self._partition_cache = []
            self.optim.add_param_group(self._partition_parameters()[self.rank][-1])
            self._sync_param_groups(self.optim.param_groups, self.param_groups)

    @staticmethod
    def _sync_param_groups(src, dst):
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k != "params":
                    d[k] = v

    # -- step -----------------------------------------------------------------------------------

    def step(self, closure=None, **kwargs):
        """Update this rank's share of the parameters with the local optimizer, then
        broadcast every share to every rank.

        Args:
            closure: re-evaluates the model and returns the loss (optional).

        Returns:
            the closure's loss, or None. With ``overlap_with_ddp=True`` the step runs in
            DDP's hook instead: this logs a warning and returns None.
        """
        if self._overlap_with_ddp:
            logger.warning("`step()` should not be included in the training loop when "
                           "`overlap_with_ddp=True`")
            return None
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def _sync_params(self):
        """Every rank broadcasts its share (flattened per dtype), in rank order."""
        from ... import cat, distributed as dist, no_grad

        if self.world_size == 1:
            return
        with no_grad():
            for r, groups in enumerate(self._partition_parameters()):
                by_dtype = {}
                for g in groups:
                    for p in g["params"]:
                        by_dtype.setdefault(str(p.dtype), []).append(p)
                for key in sorted(by_dtype):
                    ps = by_dtype[key]
                    flat = cat([p.detach().reshape(-1) for p in ps])
                    dist.broadcast(flat, src=dist.get_global_rank(self.process_group, r),
                                   group=self.process_group)
                    if r == self.rank:
                        continue
                    at = 0
                    for p in ps:
                        n = p.numel()
                        np.copyto(p._data, flat._data[at:at + n].reshape(p._data.shape))
                        p._bump()
                        at += n

    # -- state ----------------------------------------------------------------------------------

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's optimizer state on rank ``to`` (call it on all ranks); then
        ``state_dict()`` on ``to`` returns the whole state.

        Args:
            to: the rank that receives the state.
        """
        from ... import distributed as dist

        self._check_overlap_initialized()
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        local = copy.deepcopy(self.optim.state_dict())
        gathered = [None] * self.world_size
        if self.world_size == 1:
            gathered = [local]
        else:
            dist.gather_object(local, gathered if self.rank == to else None,
                               dst=dist.get_global_rank(self.process_group, to),
                               group=self.process_group)
        self._all_state_dicts = gathered if self.rank == to else []

    def state_dict(self) -> dict:
        """The whole optimizer state, as a plain optimizer over all the parameters would
        have it (only after ``consolidate_state_dict`` on this rank).

        Returns:
            dict with "state" (by global parameter index) and "param_groups".

        Raises:
            RuntimeError: the state has not been consolidated on this rank.
        """
        self._check_overlap_initialized()
        if not self._all_state_dicts:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call "
                f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you "
                "meant to save the global state.")
        sd = Optimizer.state_dict(self)
        index = {id(p): k for k, p in enumerate(self._all_params())}
        for r, local in enumerate(self._all_state_dicts):
            for lgroup, ggroup in zip(local["param_groups"], self._partition_parameters()[r]):
                for li, p in zip(lgroup["params"], ggroup["params"]):
                    if li in local["state"]:
                        sd["state"][index[id(p)]] = local["state"][li]
        sd["state"] = dict(sorted(sd["state"].items()))
        return sd

    def load_state_dict(self, state_dict) -> None:
        """Load a whole state (from ``state_dict()``): each rank keeps its share.

        Args:
            state_dict: the consolidated state.
        """
        self._check_overlap_initialized()
        params = self._all_params()
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            for k, v in saved.items():
                if k != "params":
                    group[k] = v
        index = {id(p): k for k, p in enumerate(params)}
        local_groups, local_state, at = [], {}, 0
        for g in self._partition_parameters()[self.rank]:
            ids = []
            for p in g["params"]:
                k = index[id(p)]
                if k in state_dict["state"]:
                    local_state[at] = state_dict["state"][k]
                ids.append(at)
                at += 1
            local_groups.append({**{k: v for k, v in g.items() if k != "params"},
                                 "params": ids})
        self._sync_param_groups(self.param_groups, local_groups)
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})

    # -- Join -----------------------------------------------------------------------------------

    def join_hook(self, **kwargs):
        """The hook a joined rank runs: it keeps taking part in the parameter broadcasts.

        Returns:
            JoinHook
        """
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        """The device of the join collectives."""
        return self._all_params()[0].device

    @property
    def join_process_group(self):
        """The process group of the join collectives."""
        return self.process_group
