"""A DDP communication hook for debugging (``torch.distributed.algorithms.ddp_comm_hooks.
debugging_hooks``): ``noop_hook`` skips the gradient reduction, to measure what DDP costs
without its communication."""

from __future__ import annotations

__all__ = ["noop_hook"]


def noop_hook(_, bucket):
    """Return the bucket's local gradients unreduced (each rank keeps its own).

    Args:
        _: the hook state (ignored).
        bucket: the ``GradBucket``.

    Returns:
        A completed Future holding the bucket's flat buffer.

    Example::

        >>> b = ember.distributed.GradBucket(0, ember.ones(2), [], [], True)
        >>> noop_hook(None, b).wait()
        tensor([1., 1.])
    """
    from ..._future import Future

    fut = Future()
    fut.set_result(bucket.buffer())
    return fut
