"""DDP communication hooks that run ``ZeroRedundancyOptimizer``'s step during backward
(``torch.distributed.algorithms.ddp_comm_hooks.ddp_zero_hook``); see NOTE [ ZeRO overlapped
with DDP ] in ``ember/distributed/optim/zero_redundancy_optimizer.py``.
"""

from __future__ import annotations

import weakref

__all__ = ["hook_with_zero_step", "hook_with_zero_step_interleaved"]


def _status():
    from ...optim.zero_redundancy_optimizer import _OverlapStatus

    return _OverlapStatus


def _perform_local_step(bucket, zero):
    """Step ``zero``'s functional optimizer with the (averaged) gradients of the part of
    ``bucket`` assigned to this rank."""
    info = zero._overlap_info
    if len(zero.optim.param_groups) != 1:
        raise AssertionError("Overlapping DDP with ZeRO only supports a single parameter group")
    index = bucket.index()
    if index not in info.offsets:
        raise AssertionError(f"Bucket index {index} was not assigned to rank {zero.rank}")
    gradients = [None] * len(zero.optim.param_groups[0]["params"])
    assignment = zero._bucket_assignments_per_rank[zero.rank][index]
    grads = bucket.gradients()[assignment.offset:assignment.offset + len(assignment.parameters)]
    start = info.offsets[index]
    gradients[start:start + len(grads)] = grads
    zero._local_step(gradients)


def _broadcast_bucket(index, zero):
    """Start the broadcasts of bucket ``index``'s parameters from the ranks that own them."""
    from .... import distributed as dist

    info = zero._overlap_info
    for rank in sorted(info.assigned_ranks_per_bucket[index]):
        assignment = zero._bucket_assignments_per_rank[rank].get(index)
        if assignment is not None:
            info.broadcast_handles.append(dist.broadcast(
                assignment.tensor, src=dist.get_global_rank(zero.process_group, rank),
                group=zero.process_group, async_op=True))


def _has_rebuilt_buckets(ddp) -> bool:
    return bool(getattr(ddp, "_has_rebuilt_buckets", getattr(ddp, "_rebuilt", False)))


def _setup(ddp_ref, zero, bucket) -> None:
    """Before the optimizer exists: record DDP's final buckets, then make it."""
    status = _status()
    if not _has_rebuilt_buckets(ddp_ref()):
        return
    info = zero._overlap_info
    if info.status == status.UNINITIALIZED:
        info.status = status.DDP_HAS_REBUILT_BUCKETS
    if info.status == status.DDP_HAS_REBUILT_BUCKETS:
        if bucket.index() == 0 and info.params_per_bucket:
            zero._init_zero_for_overlap()
        else:
            params = bucket.parameters()
            info.params_per_bucket.append(params)
            if info.shard_buckets:
                info.total_size += sum(p.numel() for p in params)


def _checked(hook, ddp, zero, shard_buckets):
    from .... import distributed as dist

    if not zero._overlap_with_ddp:
        raise ValueError("ZeroRedundancyOptimizer must be constructed with "
                         "`overlap_with_ddp=True` to use this hook properly")
    if dist.get_backend(ddp.process_group) == dist.Backend.GLOO:
        raise RuntimeError("Gloo backend using Overlapping DDP with ZeRO may meet hangs")
    if shard_buckets:
        zero._overlap_info.shard_buckets = True
        zero._overlap_info.total_size = 0
    return weakref.ref(ddp)


def hook_with_zero_step(hook, ddp, zero, shard_buckets=False):
    """Wrap ``hook`` so that, once the last bucket is launched, each rank steps its share
    of the parameters with the averaged gradients and broadcasts it.

    Args:
        hook: the communication hook to wrap, ``(state, GradBucket) -> Future``.
        ddp: the ``DistributedDataParallel`` model.
        zero: a ``ZeroRedundancyOptimizer`` made with ``overlap_with_ddp=True`` over
            ``ddp``'s parameters.
        shard_buckets (bool): split each bucket across ranks for an even load (True) or
            give each bucket to one rank (False).

    Returns:
        The wrapped hook, to pass to ``ddp.register_comm_hook``.

    Raises:
        ValueError: ``zero`` was made with ``overlap_with_ddp=False``.
        RuntimeError: the group's backend is "gloo" (refused, as PyTorch refuses it; use
            "mpi" or "nccl").

    Example::

        >>> zero = ZeroRedundancyOptimizer(ddp.parameters(), ember.optim.Adam,
        ...                                overlap_with_ddp=True, lr=0.01)  # doctest: +SKIP
        >>> ddp.register_comm_hook(None, hook_with_zero_step(allreduce_hook, ddp,
        ...                                                  zero))  # doctest: +SKIP
    """
    ddp_ref = _checked(hook, ddp, zero, shard_buckets)
    status = _status()

    def hook_with_zero_fn(state, bucket):
        fut = hook(state, bucket)
        _setup(ddp_ref, zero, bucket)
        info = zero._overlap_info
        if info.status != status.INITIALIZED:
            return fut
        index = bucket.index()
        if zero.rank in info.assigned_ranks_per_bucket[index]:
            info.bucket_index_to_bucket[index] = bucket
            info.bucket_index_to_future[index] = fut
        seen = info.bucket_indices_seen
        if (seen and seen[-1] != index - 1) or (not seen and index != 0):
            raise AssertionError("Bucket indices are not in incremental order")
        seen.append(index)
        if index != len(info.params_per_bucket) - 1:
            return fut
        for i in range(len(info.params_per_bucket)):
            if zero.rank in info.assigned_ranks_per_bucket[i]:
                info.bucket_index_to_future[i].wait()
                _perform_local_step(info.bucket_index_to_bucket[i], zero)
            _broadcast_bucket(i, zero)
        info.wait_for_broadcasts()
        info.clear_per_iter_info()
        return fut

    return hook_with_zero_fn


def hook_with_zero_step_interleaved(hook, ddp, zero, shard_buckets=False):
    """Wrap ``hook`` so that each bucket, once its all-reduce completes, is stepped by the
    rank(s) owning it and broadcast, interleaving the optimizer with backward.

    Args:
        hook: the communication hook to wrap, ``(state, GradBucket) -> Future``.
        ddp: the ``DistributedDataParallel`` model.
        zero: a ``ZeroRedundancyOptimizer`` made with ``overlap_with_ddp=True``.
        shard_buckets (bool): split each bucket across ranks (True) or not (False).

    Returns:
        The wrapped hook.

    Raises:
        ValueError: ``zero`` was made with ``overlap_with_ddp=False``.
        RuntimeError: the group's backend is "gloo" (as PyTorch).

    Example::

        >>> ddp.register_comm_hook(None, hook_with_zero_step_interleaved(
        ...     allreduce_hook, ddp, zero))  # doctest: +SKIP
    """
    from ..._future import when_waited

    ddp_ref = _checked(hook, ddp, zero, shard_buckets)
    status = _status()

    def hook_with_zero_interleaved_fn(state, bucket):
        fut = hook(state, bucket)
        _setup(ddp_ref, zero, bucket)
        if zero._overlap_info.status != status.INITIALIZED:
            return fut

        def zero_step(done):
            info = zero._overlap_info
            index = bucket.index()
            info.bucket_indices_seen.append(index)
            if zero.rank in info.assigned_ranks_per_bucket[index]:
                _perform_local_step(bucket, zero)
            _broadcast_bucket(index, zero)
            if len(info.bucket_indices_seen) == len(info.params_per_bucket):
                info.wait_for_broadcasts()
                info.clear_per_iter_info()
            return bucket.buffer()

        # the step broadcasts: it runs where DDP waits, bucket after bucket, so every
        # rank starts the broadcasts in one order (not on the progress thread)
        return when_waited(fut, zero_step)

    return hook_with_zero_interleaved_fn
