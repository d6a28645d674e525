"""Model averagers (``torch.distributed.algorithms.model_averaging.averagers``):
``ModelAverager``, the base, and ``PeriodicModelAverager``, which averages the replicas'
parameters every ``period`` steps once ``warmup_steps`` have passed (post-local SGD).
"""

from __future__ import annotations

import abc
import warnings

from . import utils

__all__ = ["ModelAverager", "PeriodicModelAverager"]


def _default_group(process_group):
    from .... import distributed as dist

    group = process_group if process_group is not None else dist.group.WORLD
    if group is None:
        raise TypeError("model averaging needs a process group: call "
                        "init_process_group first or pass process_group")
    return group


class ModelAverager(abc.ABC):
    """Base of the model averagers: holds the process group and the step counter; a
    subclass decides in ``average_parameters`` when to average.

    Args:
        process_group: the group to average over (None: the default group).

    Raises:
        TypeError: no process group was given and the default one is not initialized.

    Example::

        >>> class Always(ModelAverager):
        ...     def average_parameters(self, params):
        ...         utils.average_parameters_or_parameter_groups(params, self.process_group)
        ...         self.step += 1
    """

    def __init__(self, process_group=None):
        self.process_group = _default_group(process_group)
        self.step = 0

    @abc.abstractmethod
    def average_parameters(self, params):
        """Average ``params`` if this step calls for it, and count the step.

        Args:
            params: parameters of a model, or parameter groups of an optimizer.
        """


class PeriodicModelAverager(ModelAverager):
    """Average the parameters over the group every ``period`` steps after
    ``warmup_steps`` steps: with ``post_localSGD_hook`` (whose ``start_localSGD_iter``
    should equal ``warmup_steps``) this is post-local SGD.

    Call ``average_parameters`` once per training step, after ``optimizer.step()``; it
    averages at steps ``warmup_steps``, ``warmup_steps + period``, ... (counting from 0).

    Args:
        period (int): steps between two averagings (1 warns: plain DDP is cheaper).
        warmup_steps (int): steps without averaging at the start. Default: 0.
        process_group: the group to average over (None: the default group).

    Raises:
        ValueError: ``warmup_steps`` is negative or ``period`` is not positive.
        TypeError: no process group and the default one is not initialized.

    Example::

        >>> averager = PeriodicModelAverager(period=4, warmup_steps=100)  # doctest: +SKIP
        >>> opt.step(); averager.average_parameters(model.parameters())  # doctest: +SKIP
    """

    def __init__(self, period, warmup_steps=0, process_group=None):
        super().__init__(process_group)
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        if period < 1:
            raise ValueError("Arg ``period`` must be a positive value.")
        if period == 1:
            warnings.warn(
                "When period is 1, no need to use model averaging because the communication "
                "cost of all-reducing parameters will be no less than the cost of all-reducing "
                "gradients by DistributedDataParallel in the backward pass. Therefore, only "
                "DistributedDataParallel should be used for this case.", stacklevel=2)
        self.warmup_steps = warmup_steps
        self.period = period

    def average_parameters(self, params):
        """Average ``params`` over the group if this step is due (see the class), then
        count the step.

        Args:
            params: parameters of a model, or parameter groups of an optimizer; only those
                with a gradient are averaged.

        Example::

            >>> averager.average_parameters(opt.param_groups)  # doctest: +SKIP
        """
        if self.step >= self.warmup_steps and \
                (self.step - self.warmup_steps) % self.period == 0:
            utils.average_parameters_or_parameter_groups(params, self.process_group)
        self.step += 1
