"""FSDP1's built-in gradient reductions as communication hooks: plain sums and the fp16 /
bf16 compressed ones, each averaging in two divisions around the sum (NOTE [ FSDP1
communication hooks ] in ``fsdp/fully_sharded_data_parallel.py``)."""

from __future__ import annotations

import functools

import ember

from .... import distributed as dist

__all__ = ["DefaultState", "LowPrecisionState", "allreduce_hook", "reduce_scatter_hook",
           "fp16_compress_hook", "bf16_compress_hook"]


class DefaultState:
    """What the default hooks need: the group and how to split the division by its size.

    The average divides by ``gradient_predivide_factor`` before the sum and by
    ``gradient_postdivide_factor`` after it (their product is the world size), which keeps
    low-precision sums from overflowing.

    Args:
        process_group (ProcessGroup): the group the gradients are reduced over.

    Example::

        >>> from ember.distributed.algorithms._comm_hooks import DefaultState
        >>> DefaultState._get_gradient_predivide_factor(8)
        4.0
    """

    __slots__ = ["process_group", "world_size", "gradient_predivide_factor",
                 "gradient_postdivide_factor"]

    def __init__(self, process_group):
        if process_group is None:
            raise ValueError(f"Expected to pass in an explicit ProcessGroup to {self}.")
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.gradient_predivide_factor = self._get_gradient_predivide_factor(self.world_size)
        self.gradient_postdivide_factor = self.world_size / self.gradient_predivide_factor

    @staticmethod
    def _get_gradient_predivide_factor(world_size: int) -> float:
        # doubled while it divides world_size and stays under world_size / factor, so the
        # two divisions are about the square root each: 2 -> 2, 4 -> 2, 8 -> 4, 6 -> 4
        factor = 1
        while world_size % factor == 0 and world_size / factor > factor:
            factor *= 2
        return float(factor)


class LowPrecisionState(DefaultState):
    """``DefaultState`` plus the dtype gradients return to after a compressed reduction.

    Args:
        process_group (ProcessGroup): the group.
        parameter_type (dtype): the parameters' dtype. Default: float32.

    Example::

        >>> state = LowPrecisionState(group)  # doctest: +SKIP
    """

    __slots__ = ["parameter_type"]

    def __init__(self, process_group, parameter_type=ember.float32):
        super().__init__(process_group)
        self.parameter_type = parameter_type


def allreduce_hook(state: DefaultState, grad) -> None:
    """Average ``grad`` over the group in place (the ``NO_SHARD`` reduction).

    Args:
        state (DefaultState): the group and divisions.
        grad (Tensor): this rank's whole gradient; holds the average afterwards.

    Example::

        >>> model.register_comm_hook(DefaultState(group), allreduce_hook)  # doctest: +SKIP
    """
    if state.gradient_predivide_factor > 1:
        grad.div_(state.gradient_predivide_factor)
    dist.all_reduce(grad, group=state.process_group)
    if state.gradient_postdivide_factor > 1:
        grad.div_(state.gradient_postdivide_factor)


def reduce_scatter_hook(state: DefaultState, grad, output) -> None:
    """Average ``grad`` over the group, leaving this rank's rows in ``output`` (the sharded
    reduction).

    Args:
        state (DefaultState): the group and divisions.
        grad (Tensor): this rank's whole flat gradient (a multiple of the world size long).
        output (Tensor): receives this rank's piece of the average.

    Example::

        >>> model.register_comm_hook(DefaultState(group), reduce_scatter_hook)  # doctest: +SKIP
    """
    if state.gradient_predivide_factor > 1:
        grad.div_(state.gradient_predivide_factor)
    dist.reduce_scatter_single(output, grad, group=state.process_group)
    if state.gradient_postdivide_factor > 1:
        output.div_(state.gradient_postdivide_factor)


def _low_precision_hook(prec, state: LowPrecisionState, grad, output) -> None:
    if grad.dtype != prec:
        grad.data = grad.data.to(prec)
    if output is not None:
        if output.dtype != prec:
            output.data = output.data.to(prec)
        reduce_scatter_hook(state, grad, output)
        output.data = output.data.to(state.parameter_type)
    else:
        allreduce_hook(state, grad)
        grad.data = grad.data.to(state.parameter_type)


def fp16_compress_hook(state: LowPrecisionState, grad, output=None) -> None:
    """Average the gradient in float16 (half the bytes on the wire), then return it to
    ``state.parameter_type``.

    Args:
        state (LowPrecisionState): the group, divisions and parameter dtype.
        grad (Tensor): this rank's whole gradient.
        output (Tensor, optional): this rank's piece of the average (sharded strategies);
            without it ``grad`` holds the average.

    Example::

        >>> model.register_comm_hook(LowPrecisionState(group), fp16_compress_hook)  # doctest: +SKIP
    """
    return functools.partial(_low_precision_hook, ember.float16)(state, grad, output)


def bf16_compress_hook(state: LowPrecisionState, grad, output=None) -> None:
    """Average the gradient in bfloat16, then return it to ``state.parameter_type``.

    Args:
        state (LowPrecisionState): the group, divisions and parameter dtype.
        grad (Tensor): this rank's whole gradient.
        output (Tensor, optional): this rank's piece of the average (sharded strategies).

    Example::

        >>> model.register_comm_hook(LowPrecisionState(group), bf16_compress_hook)  # doctest: +SKIP
    """
    return functools.partial(_low_precision_hook, ember.bfloat16)(state, grad, output)
