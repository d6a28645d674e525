"""``DistributedDataParallel``: one process per device, gradients averaged between them.

It needs a process group (``ember.distributed.init_process_group``), which ember does not
have yet; constructing one raises ValueError as PyTorch does without a process group, so
the class can be imported at the top of any script.
"""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism across processes (needs a process group; see the module docstring).

    Args:
        module: the module to replicate.
        device_ids, output_device, dim, broadcast_buffers, process_group, bucket_cap_mb,
        find_unused_parameters, gradient_as_bucket_view, static_graph, ...: as in PyTorch.

    Raises:
        ValueError: no process group has been initialized (always, in ember today).

    Example::

        >>> ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(1, 1))
        Traceback (most recent call last):
        ...
        ValueError: Default process group has not been initialized, please make sure to call init_process_group.
    """  # noqa: E501

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        from ... import distributed

        if process_group is None and not distributed.is_initialized():
            raise ValueError(distributed.NOT_INITIALIZED)
        raise NotImplementedError("DistributedDataParallel: ember has no process groups yet")
