"""``ShardedGradScaler``: a gradient scaler for sharded training (FSDP), where each rank
holds only its shard of the gradients (``torch.distributed.fsdp.sharded_grad_scaler``).

It is :class:`ember.amp.GradScaler` but for one thing: whether any gradient overflowed is
decided over the whole process group (each rank's found-inf flag is all-reduced), so every
rank skips, or takes, the same step and updates the scale the same way. Float16 gradients
may be unscaled (sharded mixed precision keeps them in float16).

Example::

    >>> from ember.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
    >>> scaler = ShardedGradScaler("cpu", init_scale=4.0)
    >>> scaler.get_scale()
    4.0
"""

from __future__ import annotations

from ...amp.grad_scaler import GradScaler

__all__ = ["ShardedGradScaler"]


class ShardedGradScaler(GradScaler):
    """A :class:`ember.amp.GradScaler` whose inf/NaN check spans the process group.

    Args:
        device (str): the gradients' device type. Default: ``"cuda"`` (without a GPU it
            warns and disables itself, as the plain scaler does).
        init_scale (float): the initial scale. Default: 2**16.
        backoff_factor (float): the shrink factor after an overflow. Default: 0.5.
        growth_factor (float): the growth factor after ``growth_interval`` good steps.
            Default: 2.0.
        growth_interval (int): good steps before growing. Default: 2000.
        enabled (bool): False makes every method a pass-through. Default: True.
        process_group (ProcessGroup, optional): the ranks that agree on overflows.
            Default: the world.

    Example::

        >>> p = ember.nn.Parameter(ember.ones(2))
        >>> opt = ember.optim.SGD([p], lr=0.1)
        >>> scaler = ShardedGradScaler("cpu", init_scale=4.0)
        >>> scaler.scale(p.sum()).backward()
        >>> scaler.step(opt); scaler.update()
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, backoff_factor=0.5,
                 growth_factor=2.0, growth_interval=2000, enabled=True, process_group=None):
        super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
        from ... import distributed as dist

        if process_group is None and dist.is_available() and dist.is_initialized():
            process_group = dist.group.WORLD
        self.process_group = process_group

    _allow_fp16 = True

    def _unscale_found_inf(self, optimizer) -> dict:
        """Unscale (float16 gradients too) and agree with the other ranks on overflows: each
        device's found-inf flag is all-reduced (MAX) over the process group."""
        per_device = super()._unscale_found_inf(optimizer)
        if not per_device:
            import ember

            per_device = {self._scale.device: ember.zeros((), device=self._scale.device)}
        if self.process_group is not None:
            from ... import distributed as dist

            for flag in per_device.values():
                dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.process_group)
        return per_device
