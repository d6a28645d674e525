"""The post-local SGD communication hook (``torch.distributed.algorithms.ddp_comm_hooks.
post_localSGD_hook``): ordinary DDP gradient averaging for a warm-up, then averaging only
within a subgroup (or none at all) while a model averager (``PeriodicModelAverager``)
averages the parameters every few steps after the optimizer step.
"""

from __future__ import annotations

import logging

from .default_hooks import _allreduce_fut

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]

logger = logging.getLogger(__name__)


class PostLocalSGDState:
    """What ``post_localSGD_hook`` needs: the groups, the iteration to switch at, and the
    iteration count.

    Args:
        process_group: the group gradients are averaged over during the warm-up (None:
            the default group).
        subgroup: the group gradients are averaged over afterwards (None: made by
            ``new_subgroups()`` at the switch, one per machine; that needs CUDA).
        start_localSGD_iter (int): the iteration at which local SGD starts.
        post_local_gradient_allreduce (bool): after the switch, average gradients within
            ``subgroup`` (True) or not at all (False). Default: True.

    Example::

        >>> state = PostLocalSGDState(process_group=None, subgroup=None,
        ...                           start_localSGD_iter=10)
        >>> state.iter
        0
    """

    __slots__ = ["process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter"]

    def __init__(self, process_group, subgroup, start_localSGD_iter,
                 post_local_gradient_allreduce=True):
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket) -> None:
        """Count an iteration when ``bucket`` is the iteration's last one.

        Args:
            bucket: the ``GradBucket`` being reduced.
        """
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state, bucket):
    """Average the bucket over ``state.process_group`` for the first
    ``state.start_localSGD_iter`` iterations, then over ``state.subgroup`` (or not at all
    when ``post_local_gradient_allreduce`` is False).

    Args:
        state (PostLocalSGDState): the hook's state.
        bucket: the ``GradBucket``.

    Returns:
        Future holding the flat gradient buffer (averaged in place).

    Example::

        >>> state = PostLocalSGDState(None, subgroup, start_localSGD_iter=10)  # doctest: +SKIP
        >>> ddp.register_comm_hook(state, post_localSGD_hook)  # doctest: +SKIP
    """
    from .... import distributed as dist
    from ..._future import Future

    buffer = bucket.buffer()
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        group = state.process_group if state.process_group is not None else dist.group.WORLD
        return _allreduce_fut(group, buffer)
    if not state.post_local_gradient_allreduce:
        fut = Future()
        fut.set_result(buffer)
        return fut
    if state.subgroup is None:
        state.subgroup, _ = dist.new_subgroups()
    return _allreduce_fut(state.subgroup, buffer)
