"""Pipeline schedules: in which order each rank runs its stages' microbatches.

A schedule is a list of actions per rank (forward or backward of one stage on one
microbatch); one executor runs every schedule (NOTE [ Pipeline messages ] in stage.py says
why any valid order is free of deadlock as long as the ranks' lists agree on dependencies).
"""

from __future__ import annotations

from collections.abc import Callable

import ember

from .microbatch import TensorChunkSpec, merge_chunks, split_args_kwargs_into_chunks
from .stage import _PipelineStageBase

__all__ = ["PipelineScheduleSingle", "PipelineScheduleMulti", "ScheduleGPipe", "Schedule1F1B",
           "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "get_schedule_class"]

F, B = "F", "B"


class _PipelineSchedule:
    """What all schedules share: cutting the batch, running the actions, merging."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn: Callable | None = None,
                 args_chunk_spec: tuple | None = None, kwargs_chunk_spec: dict | None = None,
                 output_merge_spec=None, scale_grads: bool = True):
        if n_microbatches < 1:
            raise ValueError(f"{type(self).__name__}: n_microbatches must be at least 1, got "
                             f"{n_microbatches}")
        for s in stages:
            if not isinstance(s, _PipelineStageBase):
                raise TypeError(f"{type(self).__name__}: expected PipelineStage, got "
                                f"{type(s).__name__}")
        self._stages = stages
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self.scale_grads = scale_grads
        self._has_backward = loss_fn is not None
        self._internal_losses: dict = {}
        for s in stages:
            s.has_backward = self._has_backward
        self._num_stages = stages[0].num_stages

    # -- the step -----------------------------------------------------------------------------

    def step(self, *args, target=None, losses: list | None = None, return_outputs: bool = True,
             loss_kwargs: dict | None = None, **kwargs):
        """Run one batch through the pipeline: forward, and backward when the schedule has a
        ``loss_fn``. The first stage's rank passes the inputs; the last stage's rank passes
        ``target`` and gets the merged output; gradients accumulate in each stage's module.

        Args:
            *args: the whole batch's positional inputs (first stage).
            target (Tensor, optional): the whole batch's target (last stage).
            losses (list, optional): filled with each microbatch's loss (last stage).
            return_outputs (bool): whether the last stage merges and returns the outputs.
            loss_kwargs (dict, optional): accepted for torch's signature.
            **kwargs: the whole batch's keyword inputs (first stage).

        Returns:
            The merged output on the last stage's rank, None elsewhere.
        """
        for s in self._stages:
            s.clear_runtime_states()
        args_split, kwargs_split = self._split_inputs(args, kwargs)
        targets_split = None
        if target is not None:
            targets_split = split_args_kwargs_into_chunks(
                (target,), None, self._n_microbatches, (TensorChunkSpec(0),))[0]
            targets_split = [t[0] for t in targets_split]
        self._step_microbatches(args_split, kwargs_split, targets_split, losses)
        for s in self._stages:
            if s.is_last and return_outputs:
                return merge_chunks(s.output_chunks, self._output_merge_spec)
        return None

    def eval(self, *args, target=None, losses: list | None = None, **kwargs):
        """Run one batch forward only: the merged output, and each microbatch's loss in
        ``losses`` when the last stage is given ``target``.

        Args:
            *args, **kwargs: the whole batch's inputs (first stage).
            target (Tensor, optional): the whole batch's target (last stage).
            losses (list, optional): filled with each microbatch's loss.

        Returns:
            The merged output on the last stage's rank, None elsewhere.

        Example::

            >>> out = schedule.eval(x)  # doctest: +SKIP
        """
        keep = self._has_backward
        self._has_backward = False
        try:
            return self.step(*args, target=target, losses=losses, **kwargs)
        finally:
            self._has_backward = keep

    def _split_inputs(self, args: tuple, kwargs: dict):
        if not args and not kwargs:
            return [()] * self._n_microbatches, [{}] * self._n_microbatches
        args_split, kwargs_split = split_args_kwargs_into_chunks(
            args, kwargs, self._n_microbatches, self._args_chunk_spec, self._kwargs_chunk_spec)
        if len(args_split) != self._n_microbatches:
            raise ValueError(f"{type(self).__name__}: the batch gives only {len(args_split)} "
                             f"microbatches, {self._n_microbatches} were asked for")
        return args_split, kwargs_split

    def _actions(self) -> list:
        raise NotImplementedError

    def _step_microbatches(self, arg_mbs, kwarg_mbs, target_mbs, losses) -> None:
        by_index = {s.stage_index: s for s in self._stages}
        for s in sorted(self._stages, key=lambda s: s.stage_index):
            s._prepare_forward_infra(self._n_microbatches, arg_mbs[0], kwarg_mbs[0])
        self._internal_losses = {}
        n = self._n_microbatches
        grad_ctx = ember.enable_grad if self._has_backward else ember.no_grad
        try:
            for kind, index, mb in self._actions():
                stage = by_index[index]
                if kind == F:
                    with grad_ctx():
                        out = stage.forward_one_chunk(mb, arg_mbs[mb], kwarg_mbs[mb])
                        if stage.is_last and self._loss_fn is not None and (
                                self._has_backward or target_mbs is not None):
                            if target_mbs is None:
                                raise RuntimeError(f"{type(self).__name__}.step: the last "
                                                   "stage needs target= to compute the loss")
                            self._internal_losses[mb] = self._loss_fn(out, target_mbs[mb])
                elif self._has_backward:
                    stage.backward_one_chunk(mb, loss=self._internal_losses.get(mb),
                                             last_backward=stage._backward_done == n - 1)
                    if stage._backward_done == n and self.scale_grads:
                        stage.scale_grads(n)
        finally:
            for s in self._stages:
                s._wait_sends()
        if losses is not None and self._internal_losses:
            losses.clear()
            losses.extend(self._internal_losses[i] for i in range(n))


class PipelineScheduleSingle(_PipelineSchedule):
    """A schedule for one stage per rank.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        loss_fn (callable, optional): ``loss_fn(output, target)`` per microbatch; without
            it the schedule runs forward only.
        args_chunk_spec, kwargs_chunk_spec: how the inputs are cut (dimension 0 by default).
        output_merge_spec: how the outputs are joined (dimension 0 by default).
        scale_grads (bool): divide the gradients by ``n_microbatches``.
    """

    def __init__(self, stage, n_microbatches: int, loss_fn: Callable | None = None,
                 args_chunk_spec: tuple | None = None, kwargs_chunk_spec: dict | None = None,
                 output_merge_spec=None, scale_grads: bool = True):
        super().__init__([stage], n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)
        self._stage = stage
        stage.stage_index_to_group_rank = {i: i for i in range(stage.num_stages)}
        if stage.group_size != stage.num_stages:
            raise ValueError(f"{type(self).__name__}: one stage per rank needs as many ranks "
                             f"({stage.group_size}) as stages ({stage.num_stages})")


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: every microbatch's forward, then every microbatch's backward.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleSingle``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)  # doctest: +SKIP
        >>> schedule.step(x) if rank == 0 else schedule.step(target=y)  # doctest: +SKIP
    """

    def _actions(self) -> list:
        i, n = self._stage.stage_index, self._n_microbatches
        return [(F, i, mb) for mb in range(n)] + [(B, i, mb) for mb in range(n)]


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: after a warm-up of forwards, each stage alternates one forward and one
    backward, so at most ``num_stages`` microbatches' activations are held at once.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into (at least the number
            of stages).
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleSingle``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=loss_fn)  # doctest: +SKIP
    """

    def __init__(self, stage, n_microbatches: int, *args, **kwargs):
        super().__init__(stage, n_microbatches, *args, **kwargs)
        if n_microbatches < stage.num_stages:
            raise ValueError(f"Schedule1F1B: n_microbatches ({n_microbatches}) must be at least "
                             f"the number of stages ({stage.num_stages})")

    def _actions(self) -> list:
        i, n = self._stage.stage_index, self._n_microbatches
        if not self._has_backward:
            return [(F, i, mb) for mb in range(n)]
        warmup = min(n, self._num_stages - i - 1)
        acts = [(F, i, mb) for mb in range(warmup)]
        for k in range(n - warmup):
            acts += [(F, i, warmup + k), (B, i, k)]
        return acts + [(B, i, mb) for mb in range(n - warmup, n)]


class PipelineScheduleMulti(_PipelineSchedule):
    """A schedule for several stages per rank, stage ``s`` on rank ``s % world_size``.

    Args:
        stages (list): this rank's stages.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        loss_fn, args_chunk_spec, kwargs_chunk_spec, output_merge_spec, scale_grads: as in
            ``PipelineScheduleSingle``.
        use_full_backward, backward_requires_autograd: accepted for torch's signature.
    """

    def __init__(self, stages: list, n_microbatches: int, loss_fn: Callable | None = None,
                 args_chunk_spec: tuple | None = None, kwargs_chunk_spec: dict | None = None,
                 output_merge_spec=None, use_full_backward: bool | None = None,
                 scale_grads: bool = True, backward_requires_autograd: bool = True):
        if not stages:
            raise ValueError(f"{type(self).__name__}: needs at least one stage")
        super().__init__(list(stages), n_microbatches, loss_fn, args_chunk_spec,
                         kwargs_chunk_spec, output_merge_spec, scale_grads)
        self.pp_group_size = stages[0].group_size
        self.rank = stages[0].group_rank
        for s in stages:
            if s.stage_index % self.pp_group_size != self.rank:
                raise ValueError(f"{type(self).__name__}: stage {s.stage_index} belongs on rank "
                                 f"{s.stage_index % self.pp_group_size}, not {self.rank} "
                                 "(stages are looped over the ranks)")
        self._stages.sort(key=lambda s: s.stage_index)


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Looped breadth-first: each local stage runs every microbatch's forward before the
    next stage; backward goes through the local stages in reverse the same way.

    Args:
        stages (list): this rank's stages (stage ``s`` on rank ``s % world_size``).
        n_microbatches (int): how many microbatches a step cuts the batch into.
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleMulti``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> ScheduleLoopedBFS([s0, s2], n_microbatches=4, loss_fn=f)  # doctest: +SKIP
    """

    def _actions(self) -> list:
        n, idx = self._n_microbatches, [s.stage_index for s in self._stages]
        acts = [(F, i, mb) for i in idx for mb in range(n)]
        if self._has_backward:
            acts += [(B, i, mb) for i in reversed(idx) for mb in range(n)]
        return acts


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """Interleaved 1F1B: 1F1B over several stages per rank, microbatches taken in rounds
    of ``world_size`` so that a rank switches stage every round.

    Args:
        stages (list): this rank's stages (stage ``s`` on rank ``s % world_size``).
        n_microbatches (int): how many microbatches a step cuts the batch into (a multiple of
            the rounds).
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleMulti``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> ScheduleInterleaved1F1B([s0, s2], n_microbatches=4, loss_fn=f)  # doctest: +SKIP
    """

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        super().__init__(stages, n_microbatches, *args, **kwargs)
        self.number_of_rounds = max(1, n_microbatches // self.pp_group_size)
        self.microbatches_per_round = n_microbatches // self.number_of_rounds
        if n_microbatches % self.number_of_rounds != 0:
            raise ValueError(f"ScheduleInterleaved1F1B: n_microbatches ({n_microbatches}) must "
                             f"be a multiple of the number of rounds ({self.number_of_rounds})")

    def _actions(self) -> list:
        n_local, pp, rank = len(self._stages), self.pp_group_size, self.rank
        per_round, n = self.microbatches_per_round, self._n_microbatches
        total = n * n_local
        warmup = min(total, (n_local - 1) * per_round + 2 * (pp - 1 - rank))

        def fwd_stage(step):
            return ((step // per_round) % n_local) * pp + rank

        def bwd_stage(step):
            return (n_local - 1 - ((step - warmup) // per_round) % n_local) * pp + rank

        fwd_mb: dict = {}
        bwd_mb: dict = {}

        def nxt(counter, stage):
            counter[stage] = counter.get(stage, -1) + 1
            return counter[stage]

        acts = []
        for step in range(warmup):
            s = fwd_stage(step)
            acts.append((F, s, nxt(fwd_mb, s)))
        for step in range(warmup, total):
            s = fwd_stage(step)
            acts.append((F, s, nxt(fwd_mb, s)))
            if self._has_backward:
                s = bwd_stage(step)
                acts.append((B, s, nxt(bwd_mb, s)))
        if self._has_backward:
            for step in range(total, total + warmup):
                s = bwd_stage(step)
                acts.append((B, s, nxt(bwd_mb, s)))
        return acts


_SCHEDULES = {"GPipe": ScheduleGPipe, "1F1B": Schedule1F1B,
              "Interleaved1F1B": ScheduleInterleaved1F1B, "LoopedBFS": ScheduleLoopedBFS}


def get_schedule_class(schedule_name: str):
    """The schedule class of a name (``"GPipe"``, ``"1F1B"``, ``"Interleaved1F1B"``,
    ``"LoopedBFS"``), case-insensitive.

    Args:
        schedule_name (str): the name.

    Returns:
        type

    Example::

        >>> from ember.distributed.pipelining.schedules import get_schedule_class
        >>> get_schedule_class("gpipe").__name__
        'ScheduleGPipe'
    """
    for name, cls in _SCHEDULES.items():
        if name.lower() == schedule_name.lower():
            return cls
    raise ValueError(f"get_schedule_class: unknown schedule {schedule_name!r}; known: "
                     f"{', '.join(_SCHEDULES)}")
