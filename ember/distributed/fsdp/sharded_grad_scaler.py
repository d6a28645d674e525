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

from ...amp.grad_scaler import GradScaler, OptState

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

    def unscale_(self, optimizer) -> None:
        """Unscale ``optimizer``'s gradients (float16 ones too) and agree with the other
        ranks on whether any overflowed.

        Args:
            optimizer: the optimizer whose gradients are unscaled.

        Returns:
            None.

        Example::

            >>> p = ember.nn.Parameter(ember.ones(2))
            >>> opt = ember.optim.SGD([p], lr=0.1)
            >>> s = ShardedGradScaler("cpu", init_scale=4.0)
            >>> s.scale(p.sum()).backward()
            >>> s.unscale_(opt)
            >>> p.grad
            tensor([1., 1.])
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        import ember

        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ember.full((), 0.0, dtype=ember.float32, device=self._scale.device)
        per_device = self._unscale_grads_(optimizer, inv_scale, found_inf, True)
        if not per_device:
            per_device = {self._scale.device: found_inf}
        if self.process_group is not None:
            from ... import distributed as dist

            for flag in per_device.values():
                dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.process_group)
        state["found_inf_per_device"] = per_device
        state["stage"] = OptState.UNSCALED
