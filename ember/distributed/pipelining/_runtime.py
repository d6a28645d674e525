"""The runtime every pipeline schedule shares: cut the batch into microbatches, run this
rank's table of actions (NOTE [ Pipeline actions ] in _schedule_ir.py) on its stages,
merge the outputs. The schedule classes (schedules.py) only generate their tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ember

from ._schedule_ir import (_Action, _add_reduce_grad, _add_send_recv, _add_unshard_reshard,
                           _defer_recv_ops, _format_pipeline_order, _validate_schedule, B, F,
                           I, RECV_B, RECV_F, REDUCE_GRAD, RESHARD, SEND_B, SEND_F, UNSHARD, W)
from .microbatch import TensorChunkSpec, merge_chunks, split_args_kwargs_into_chunks
from .stage import _fsdp_modules, _is_fsdp, _PipelineStageBase

__all__: list = []


@dataclass
class _PipelineContext:
    """What a custom action function (``register_custom_function``) gets besides the
    action: the schedule and this step's microbatches.

    Args:
        schedule_ref: the schedule running the step.
        arg_mbs, kwarg_mbs (list, optional): each microbatch's inputs.
        target_mbs (list, optional): each microbatch's target.
        losses (list, optional): the ``losses`` list given to ``step``.
    """

    schedule_ref: Any
    arg_mbs: list | None = None
    kwarg_mbs: list | None = None
    target_mbs: list | None = None
    losses: list | None = None


class _PipelineSchedule:
    """What all schedules share: cutting the batch, running the actions, merging."""

    _defer_pp_recv = False  # (a _PipelineScheduleRuntime option)

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
        self.pp_group_size = stages[0].group_size
        self.rank = stages[0].group_rank
        self.pipeline_order: dict = {}
        self.pipeline_order_with_comms: dict = {}
        self._custom_functions: dict = {}

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

    # -- the table ------------------------------------------------------------------------------

    def _set_order(self, order: dict, stage_to_rank: dict | None = None) -> None:
        """Take a compute-only table (rank -> actions): check it (a table of forwards only
        needs no backwards), learn from it which rank holds each stage (unless given), and
        lower it as PyTorch does: UNSHARD/RESHARD around each stage's use, REDUCE_GRAD
        after its last backward, the messages, and with ``defer_pp_recv`` each receive
        moved to just before its use."""
        implied = None
        if stage_to_rank is None or self._has_backward:
            implied = _validate_schedule(order, self.pp_group_size, self._num_stages,
                                         self._n_microbatches)
        self._set_stage_mapping(stage_to_rank or implied)
        self.pipeline_order = order
        to_rank = self.stage_index_to_group_rank.__getitem__
        lowered = {r: _add_reduce_grad(_add_unshard_reshard(acts), self._n_microbatches)
                   for r, acts in order.items()}
        lowered = _add_send_recv(lowered, to_rank, self._num_stages)
        if self._defer_pp_recv:
            lowered = _defer_recv_ops(lowered, to_rank)
        self.pipeline_order_with_comms = lowered

    def _set_stage_mapping(self, stage_to_rank: dict) -> None:
        for s in self._stages:
            if stage_to_rank.get(s.stage_index) != self.rank:
                raise ValueError(f"{type(self).__name__}: stage {s.stage_index} belongs on "
                                 f"rank {stage_to_rank.get(s.stage_index)}, not {self.rank}")
        self.stage_index_to_group_rank = dict(stage_to_rank)
        for s in self._stages:
            s.stage_index_to_group_rank = self.stage_index_to_group_rank

    # -- the runtime ----------------------------------------------------------------------------

    def _step_microbatches(self, arg_mbs, kwarg_mbs, target_mbs, losses) -> None:
        by_index = {s.stage_index: s for s in self._stages}
        for s in sorted(self._stages, key=lambda s: s.stage_index):
            s._prepare_forward_infra(self._n_microbatches, arg_mbs[0], kwarg_mbs[0],
                                     prev_stage=by_index.get(s.stage_index - 1),
                                     next_is_local=s.stage_index + 1 in by_index)
        self._internal_losses = {}
        self._unsharded: set = set()  # FSDP stages whose parameters are gathered
        self._backward_count: dict = {}  # stage -> B and W actions run (the last one reduces)
        ctx = _PipelineContext(self, arg_mbs, kwarg_mbs, target_mbs, losses)
        try:
            self._run_actions(self.pipeline_order_with_comms[self.rank], ctx)
        finally:
            for s in self._stages:
                s._wait_sends()
        if losses is not None and self._internal_losses:
            losses.clear()
            losses.extend(self._internal_losses[i] for i in range(self._n_microbatches))

    def _run_actions(self, actions: list, ctx: _PipelineContext) -> None:
        """Run one rank's lowered action list (NOTE [ Pipeline actions ]): each action by
        the function registered for its kind (``register_custom_function``), else by
        ``_perform_action``, an ``OVERLAP_F_B`` pair one action after the other. An error
        gets the table, with the failing step marked, as a note."""
        for step, action in enumerate(actions):
            try:
                custom = self._custom_functions.get(action.computation_type)
                if custom is not None:
                    custom(action, ctx)
                    continue
                for a in action.sub_actions or (action,):
                    self._perform_action(a, ctx)
            except Exception as e:
                table = {**self.pipeline_order_with_comms, self.rank: actions}
                e.add_note(f"{type(self).__name__}: rank {self.rank} failed running {action} "
                           f"at step {step} of its schedule:\n"
                           + _format_pipeline_order(table, error_step_number=step))
                raise

    def _perform_action(self, a: _Action, ctx: _PipelineContext) -> None:
        """Run one action on this rank's stage. Without a ``loss_fn`` (or in ``eval``) the
        backward actions and their messages are skipped. UNSHARD and RESHARD gather and
        put back a ``fully_shard`` stage module's parameters (other modules have none to
        gather); REDUCE_GRAD reduces a data-parallel stage's gradients and divides them by
        the number of microbatches (``scale_grads``): NOTE [ Pipeline stages with data
        parallelism ] in stage.py."""
        kind, mb = a.computation_type, a.microbatch_index
        if kind in (B, I, W, SEND_B, RECV_B, REDUCE_GRAD) and not self._has_backward:
            return
        local = {s.stage_index: s for s in self._stages}
        stage = local[a.stage_index]
        if kind in (UNSHARD, RESHARD):
            self._shard_action(stage, kind)
            return
        if kind in (F, B, I, W):
            self._check_unsharded(stage)
        if kind in (B, W):
            n = self._backward_count[a.stage_index] = \
                self._backward_count.get(a.stage_index, 0) + 1
            last_backward = n == self._n_microbatches
        if kind is REDUCE_GRAD:  # the stage's gradients are complete
            stage.perform_reduce_grad(self._n_microbatches if self.scale_grads else 1)
        elif kind is F:
            prev = local.get(a.stage_index - 1)
            if prev is not None:  # a neighbour on this rank hands its outputs over
                stage.set_local_fwd_input(prev.fwd_cache[mb][0], mb)
            with ember.enable_grad() if self._has_backward else ember.no_grad():
                out = stage.forward_one_chunk(mb, ctx.arg_mbs[mb], ctx.kwarg_mbs[mb])
                self._maybe_compute_loss(stage, out, ctx.target_mbs, mb)
        elif kind in (B, I):
            nxt = local.get(a.stage_index + 1)
            if nxt is not None:
                stage.set_local_bwd_input(nxt.get_local_bwd_output(mb), mb)
            stage.backward_one_chunk(mb, loss=self._internal_losses.get(mb),
                                     full_backward=kind is B,
                                     last_backward=kind is B and last_backward)
        elif kind is W:
            stage.backward_weight_one_chunk(mb, last_backward=last_backward)
        elif kind is SEND_F:
            stage._send_activations(mb)
        elif kind is SEND_B:
            stage._send_input_grads(mb)
        elif kind in (RECV_F, RECV_B):
            stage._post_recv(0 if kind is RECV_F else 1, mb)
        else:
            raise ValueError(f"{type(self).__name__}: cannot run action {a}")

    def _shard_action(self, stage, kind) -> None:
        """UNSHARD or RESHARD of a ``fully_shard`` stage module, checked as PyTorch's
        runtime checks them (ember gathers at once: the handles need no wait)."""
        if not _is_fsdp(stage.submod):
            return
        i = stage.stage_index
        units = _fsdp_modules(stage.submod)
        if kind is UNSHARD:
            if i in self._unsharded:
                raise AssertionError(f"Unsharding the same stage_idx={i} twice")
            with ember.enable_grad() if self._has_backward else ember.no_grad():
                for m in units:
                    m.unshard(async_op=True).wait()
            self._unsharded.add(i)
        else:
            if i not in self._unsharded:
                raise AssertionError(f"Resharding stage_idx={i} without unsharding")
            for m in units:
                m.reshard()
            self._unsharded.discard(i)

    def _check_unsharded(self, stage) -> None:
        if _is_fsdp(stage.submod) and stage.stage_index not in self._unsharded:
            raise AssertionError(f"Attempted to compute on sharded "
                                 f"stage_idx={stage.stage_index}")

    def _maybe_compute_loss(self, stage, out, target_mbs, mb) -> None:
        if not stage.is_last or self._loss_fn is None:
            return
        if not self._has_backward and target_mbs is None:
            return
        if target_mbs is None:
            raise RuntimeError(f"{type(self).__name__}.step: the last stage needs target= to "
                               "compute the loss")
        self._internal_losses[mb] = self._loss_fn(out, target_mbs[mb])
