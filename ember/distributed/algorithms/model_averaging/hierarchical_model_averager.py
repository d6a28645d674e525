"""``HierarchicalModelAverager`` (``torch.distributed.algorithms.model_averaging.
hierarchical_model_averager``): hierarchical SGD, averaging over small groups often and
over the whole group rarely.

NOTE [ Averaging hierarchy ]
``period_group_size_dict`` maps periods to group sizes, smallest period first; the last
size is the whole group's. Each size below the whole group's becomes a set of consecutive
subgroups (``new_subgroups``), made collectively at construction. At a step past the
warm-up, the averager picks the *largest* period that divides the step (counted from 0,
not from the end of the warm-up) and averages over that period's group only: a larger
group contains the smaller ones, so averaging over both would be redundant.
"""

from __future__ import annotations

import collections
import logging
import warnings

from . import averagers, utils

__all__ = ["HierarchicalModelAverager"]

logger = logging.getLogger(__name__)


class HierarchicalModelAverager(averagers.ModelAverager):
    """Average parameters with several periods over groups of growing size (see NOTE
    [ Averaging hierarchy ]).

    Args:
        period_group_size_dict: an ordered dict ``{period: group size}``, periods
            increasing; the last size must equal the size of ``process_group``.
        warmup_steps (int): steps without averaging at the start. Default: 0.
        process_group: the whole group (None: the default group).

    Raises:
        ValueError: the dict is empty, its first period is not positive, its last size is
            not the group's size, or ``warmup_steps`` is negative.

    Example::

        >>> averager = HierarchicalModelAverager(
        ...     collections.OrderedDict([(2, 4), (8, 16)]), warmup_steps=100)  # doctest: +SKIP
        >>> averager.average_parameters(model.parameters())  # doctest: +SKIP
    """

    def __init__(self, period_group_size_dict=None, warmup_steps=0, process_group=None):
        from .... import distributed as dist

        super().__init__(process_group)
        if not period_group_size_dict:
            raise ValueError("Arg ``period_group_size_dict`` must not be empty.")
        self._periods = list(period_group_size_dict.keys())
        if self._periods[0] <= 0:
            raise ValueError("The minimum period in arg ``period_group_size_dict`` must be a "
                             "positive value.")
        if self._periods[-1] == 1:
            warnings.warn(
                "When the maximum period in arg ``period_group_size_dict`` is 1, no need to use "
                "model averaging because the communication cost of all-reducing parameters "
                "will be no less than the cost of all-reducing gradients by "
                "DistributedDataParallel in the backward pass. Therefore, only "
                "DistributedDataParallel should be used for this case.", stacklevel=2)
        whole = dist.get_world_size(group=self.process_group)
        last = list(period_group_size_dict.values())[-1]
        if last != whole:
            raise ValueError(f"The last value in arg ``period_group_size_dict`` {last} must be "
                             f"equal to the size of arg ``process_group`` {whole}.")
        self.period_process_group_dict = collections.OrderedDict()
        for period, size in period_group_size_dict.items():
            logger.info("groups of %s processes average parameters every %s iterations",
                        size, period)
            if size != whole:
                self.period_process_group_dict[period], _ = dist.new_subgroups(
                    group_size=size, group=self.process_group)
            else:
                self.period_process_group_dict[period] = self.process_group
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        self.warmup_steps = warmup_steps

    def _find_process_group(self):
        """The group of the largest period dividing ``step``; None if no period does."""
        for period in reversed(self._periods):
            if self.step % period == 0:
                return self.period_process_group_dict[period]
        return None

    def average_parameters(self, params):
        """Average ``params`` over the group this step calls for (if any), then count the
        step.

        Args:
            params: parameters of a model, or parameter groups of an optimizer; only those
                with a gradient are averaged.

        Example::

            >>> averager.average_parameters(opt.param_groups)  # doctest: +SKIP
        """
        if self.step >= self.warmup_steps:
            group = self._find_process_group()
            if group is not None:
                utils.average_parameters_or_parameter_groups(params, group)
        self.step += 1
