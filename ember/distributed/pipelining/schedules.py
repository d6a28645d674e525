"""Pipeline schedules: in which order each rank runs its stages' microbatches.

Every schedule is a table of actions, one list per rank (NOTE [ Pipeline actions ] in
_schedule_ir.py): the schedule class generates its compute-only ``pipeline_order`` (the
functions of _orders.py), the lowering adds the messages, and one runtime,
``_PipelineSchedule._run_actions`` (_runtime.py), runs this rank's list. A table can also
be loaded (``_PipelineScheduleRuntime._load_actions``, ``_load_csv``).
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable

from . import _orders
# the IR's names are importable from here too, as from PyTorch's schedules module
from ._orders import generate_rank_to_stage_mapping, generate_stage_to_rank_mapping  # noqa: F401
from ._schedule_ir import (_Action, _action_regex, _add_reduce_grad,  # noqa: F401
                           _add_send_recv, _add_unshard_reshard, _ComputationType,
                           _defer_recv_ops, _dump_chrometrace, _format_pipeline_order,
                           _merge_bw, _simulate_comms_compute,
                           _validate_schedule, B, BACKWARD_INPUT, BACKWARD_WEIGHT, F,
                           FORWARD, FULL_BACKWARD, I, OVERLAP_F_B, RECV_B, RECV_F, REDUCE_GRAD,
                           RESHARD, SEND_B, SEND_F, UNSHARD, W)
from ._runtime import _PipelineContext, _PipelineSchedule  # noqa: F401

__all__ = ["PipelineScheduleSingle", "PipelineScheduleMulti", "ScheduleGPipe", "Schedule1F1B",
           "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble",
           "ScheduleZBVZeroBubble", "ScheduleDualPipeV", "get_schedule_class"]


class PipelineScheduleSingle(_PipelineSchedule):
    """A schedule for one stage per rank, stage ``i`` on rank ``i``.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        loss_fn (callable, optional): ``loss_fn(output, target)`` per microbatch; without
            it the schedule runs forward only.
        args_chunk_spec, kwargs_chunk_spec: how the inputs are cut (dimension 0 by default).
        output_merge_spec: how the outputs are joined (dimension 0 by default).
        scale_grads (bool): divide the gradients by ``n_microbatches``.

    Example::

        >>> issubclass(ScheduleGPipe, PipelineScheduleSingle)
        True
    """

    def __init__(self, stage, n_microbatches: int, loss_fn: Callable | None = None,
                 args_chunk_spec: tuple | None = None, kwargs_chunk_spec: dict | None = None,
                 output_merge_spec=None, scale_grads: bool = True):
        if type(self)._rank_order is PipelineScheduleSingle._rank_order:
            raise TypeError(f"Can't instantiate abstract class {type(self).__name__}: it has "
                            "no order of its own (use ScheduleGPipe, Schedule1F1B, ...)")
        super().__init__([stage], n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)
        self._stage = stage
        if stage.group_size != stage.num_stages:
            raise ValueError(f"{type(self).__name__}: one stage per rank needs as many ranks "
                             f"({stage.group_size}) as stages ({stage.num_stages})")
        self._check_microbatches()
        self._set_order({r: self._rank_order(r) for r in range(self.pp_group_size)},
                        {i: i for i in range(self._num_stages)})

    def _check_microbatches(self) -> None:
        pass

    def _rank_order(self, rank: int) -> list:
        return []  # each schedule's own (the constructor refuses a class without one)


class _ScheduleForwardOnly(PipelineScheduleSingle):
    """Forward only: every microbatch's forward, no loss and no backward.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        *args, **kwargs: the chunk specs, as for ``PipelineScheduleSingle``.

    Returns:
        A schedule; ``step`` runs one batch forward.

    Example::

        >>> out = _ScheduleForwardOnly(stage, 4).step(x)  # doctest: +SKIP
    """

    def _rank_order(self, rank: int) -> list:
        return _orders.forward_only(rank, self._n_microbatches)

    def step(self, *args, target=None, losses: list | None = None, **kwargs):
        """Run one batch forward (``target`` and ``losses`` are refused: no loss here).

        Args:
            *args, **kwargs: the whole batch's inputs (first stage).

        Returns:
            The merged output on the last stage's rank, None elsewhere.
        """
        if target is not None or losses is not None:
            raise RuntimeError("Forward-only schedule does not support loss computation")
        return super().step(*args, **kwargs)


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

    def _rank_order(self, rank: int) -> list:
        return _orders.gpipe(rank, self._n_microbatches)


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: after a warm-up of forwards, each stage alternates one forward and one
    backward, so at most ``num_stages`` microbatches' activations are held at once.

    Args:
        stage: this rank's stage.
        n_microbatches (int): how many microbatches a step cuts the batch into (at least the
            number of stages).
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleSingle``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=loss_fn)  # doctest: +SKIP
    """

    def _check_microbatches(self) -> None:
        if self._n_microbatches < self._num_stages:
            raise ValueError(f"Number of microbatches ({self._n_microbatches}) must be greater "
                             f"than or equal to the number of stages ({self._num_stages}).")

    def _rank_order(self, rank: int) -> list:
        return _orders.one_f_one_b(rank, self._num_stages, self._n_microbatches)


class PipelineScheduleMulti(_PipelineSchedule):
    """A schedule for several stages per rank, run from a table of actions per rank
    (``pipeline_order``); stage ``s`` is on rank ``s % world_size`` unless the schedule
    or its table places it otherwise.

    Args:
        stages (list): this rank's stages.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        loss_fn, args_chunk_spec, kwargs_chunk_spec, output_merge_spec, scale_grads: as in
            ``PipelineScheduleSingle``.
        use_full_backward, backward_requires_autograd: accepted for torch's signature.

    Example::

        >>> sched = PipelineScheduleMulti([s0, s2], 4, loss_fn=f)  # doctest: +SKIP
        >>> sched._load_csv("order.csv")  # doctest: +SKIP
    """

    _placement = "loop"

    def __init__(self, stages: list, n_microbatches: int, loss_fn: Callable | None = None,
                 args_chunk_spec: tuple | None = None, kwargs_chunk_spec: dict | None = None,
                 output_merge_spec=None, use_full_backward: bool | None = None,
                 scale_grads: bool = True, backward_requires_autograd: bool = True):
        if not stages:
            raise ValueError(f"{type(self).__name__}: needs at least one stage")
        super().__init__(list(stages), n_microbatches, loss_fn, args_chunk_spec,
                         kwargs_chunk_spec, output_merge_spec, scale_grads)
        self._stages.sort(key=lambda s: s.stage_index)
        self.n_local_stages = len(self._stages)
        placement = generate_stage_to_rank_mapping(self.pp_group_size, self._num_stages,
                                                   style=self._placement)
        self._check_microbatches()
        order = {r: self._rank_order(r) for r in range(self.pp_group_size)}
        if order[self.rank] is not None:
            self._set_order(self._finish_order(order), placement)
        else:  # a loaded table will say where the stages are
            self.stage_index_to_group_rank = placement

    def _check_microbatches(self) -> None:
        pass

    def _rank_order(self, rank: int) -> list | None:
        return None  # a plain PipelineScheduleMulti waits for a loaded table

    def _finish_order(self, order: dict) -> dict:
        return order

    def step(self, *args, **kwargs):
        """Run one batch (see ``_PipelineSchedule.step``); the table must be set.

        Args:
            *args, **kwargs: as ``_PipelineSchedule.step``.

        Returns:
            The merged output on the last stage's rank, None elsewhere.
        """
        if not self.pipeline_order_with_comms:
            raise RuntimeError(f"{type(self).__name__}: no schedule to run; load one with "
                               "_load_csv or _load_actions")
        return super().step(*args, **kwargs)

    def _dump_csv(self, filename, format: str = "compute_only") -> None:
        """Write the table to a CSV file, one row per rank (``compute_only``: the generated
        order; ``compute_comms``: with its messages).

        Args:
            filename (str): the file.
            format (str): ``"compute_only"`` or ``"compute_comms"``.
        """
        table = self._table(format)
        with open(filename, "w", newline="") as f:
            writer = csv.writer(f)
            for rank in sorted(table):
                writer.writerow(["" if a is None else str(a) for a in table[rank]])

    def _table(self, format: str) -> dict:
        if format == "compute_only":
            return self.pipeline_order
        if format == "compute_comms":
            return self.pipeline_order_with_comms
        raise NotImplementedError(f"format={format!r} is not implemented")

    def _load_csv(self, filename, format: str = "compute_only") -> None:
        """Read a table written by ``_dump_csv`` (one row of action strings per rank) and
        make it this schedule's.

        Args:
            filename (str): the file.
            format (str): ``"compute_only"`` (messages are added) or, for
                ``_PipelineScheduleRuntime``, ``"compute_comms"`` (taken as written).
        """
        with open(filename, newline="") as f:
            rows = list(csv.reader(f))
        self._load_actions({r: row for r, row in enumerate(rows)}, format)

    def _load_actions(self, actions: dict, format: str = "compute_only") -> None:
        """Make a table (rank -> list of actions or action strings) this schedule's: a
        compute-only one is checked and lowered with its messages.

        Args:
            actions (dict): rank -> actions (``_Action``, string, or None for idle).
            format (str): ``"compute_only"``.

        Example::

            >>> sched._load_actions({0: ["0F0", "0B0"], 1: ["1F0", "1B0"]})  # doctest: +SKIP
        """
        if format != "compute_only":
            raise AssertionError(f'format must be "compute_only", got {format}')
        table = {r: [_Action.from_str(a) if isinstance(a, str) else a for a in row]
                 for r, row in actions.items()}
        for r, row in table.items():
            for i, a in enumerate(row):
                if a is not None and not a.is_compute_op:
                    raise ValueError(f"Expected compute-only schedule but found communication "
                                     f"action '{a}' at rank {r}, position {i}. Communication "
                                     "actions (e.g. SEND_F, RECV_F, etc.) should not be "
                                     "present when format='compute_only'.")
        self._set_order(table)


class _PipelineScheduleRuntime(PipelineScheduleMulti):
    """The generic runtime: runs any table of actions, given compute-only (messages are
    added) or with its messages (``format="compute_comms"``, taken as written).

    Args:
        stages (list): this rank's stages.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        *args, **kwargs: as for ``PipelineScheduleMulti``.
        defer_pp_recv (bool): post each receive just before its use rather than as soon as
            the sender has sent (``_defer_recv_ops``).

    Example::

        >>> rt = _PipelineScheduleRuntime([s0, s2], 2, loss_fn=f)  # doctest: +SKIP
        >>> rt._load_csv("order.csv")  # doctest: +SKIP
        >>> rt.step(x)  # doctest: +SKIP
    """

    def __init__(self, *args, defer_pp_recv: bool = False, **kwargs):
        self._defer_pp_recv = defer_pp_recv
        super().__init__(*args, **kwargs)

    def _load_actions(self, actions: dict, format: str = "compute_only") -> None:
        """Make a table (rank -> list of actions or action strings) this schedule's:
        ``"compute_only"`` is checked and lowered with its messages, ``"compute_comms"``
        (messages written out, no idle entries) is run as written.

        Args:
            actions (dict): rank -> actions.
            format (str): ``"compute_only"`` or ``"compute_comms"``.
        """
        if format == "compute_only":
            return super()._load_actions(actions, format)
        if format != "compute_comms":
            raise NotImplementedError(f"format={format!r} is not implemented")
        table = {r: [_Action.from_str(a) if isinstance(a, str) else a for a in row]
                 for r, row in actions.items()}
        for row in table.values():
            if any(a is None for a in row):
                raise AssertionError(f"Expected action to be not None, got {type(None)}")
        compute = {r: [a for a in row if a.is_compute_op] for r, row in table.items()}
        self._set_stage_mapping(_validate_schedule(compute, self.pp_group_size,
                                                   self._num_stages, self._n_microbatches))
        self.pipeline_order = compute
        self.pipeline_order_with_comms = table


    def _dump_csv(self, filename, format: str = "compute_comms") -> None:
        """Write the table to a CSV file, one row per rank, with its messages by default.

        Args:
            filename (str): the file.
            format (str): ``"compute_comms"`` or ``"compute_only"``.
        """
        super()._dump_csv(filename, format)


    def register_custom_function(self, computation_type, custom_function) -> None:
        """Run actions of ``computation_type`` with ``custom_function(action, ctx)`` instead
        of the built-in step (``ctx`` is a ``_PipelineContext``); for ``OVERLAP_F_B`` it
        gets the whole pair, to overlap its two halves as it can.

        Args:
            computation_type (_ComputationType): F, B, I, W, OVERLAP_F_B, UNSHARD, RESHARD
                or REDUCE_GRAD.
            custom_function (callable): ``(action, ctx) -> None``.

        Example::

            >>> rt.register_custom_function(OVERLAP_F_B, run_pair)  # doctest: +SKIP
        """
        allowed = (FORWARD, FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, OVERLAP_F_B,
                   UNSHARD, RESHARD, REDUCE_GRAD)
        if computation_type not in allowed:
            # (the run of spaces is PyTorch's message, kept for scripts that match it)
            raise ValueError(f"Invalid computation type {computation_type}. Only FORWARD, "
                             f"FULL_BACKWARD, {' ' * 16}BACKWARD_INPUT, BACKWARD_WEIGHT, "
                             "OVERLAP_F_B, UNSHARD, RESHARD and REDUCE_GRAD are supported.")
        if computation_type in self._custom_functions:
            warnings.warn(f"Computation type {computation_type} is already registered. "
                          "Overwriting the existing custom function.", stacklevel=2)
        self._custom_functions[computation_type] = custom_function

    def _simulate(self) -> dict:
        """Dry-run this table on all ranks (``_simulate_comms_compute``).

        Returns:
            dict: rank -> the actions step by step, None where a rank waits.
        """
        return _simulate_comms_compute(self.pipeline_order_with_comms,
                                       lambda s: self.stage_index_to_group_rank[s],
                                       self._num_stages)


class ScheduleLoopedBFS(_PipelineScheduleRuntime):
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

    def _rank_order(self, rank: int) -> list:
        return _orders.looped_bfs(rank, self.pp_group_size, self.n_local_stages,
                                  self._n_microbatches)


class _RoundsSchedule(_PipelineScheduleRuntime):
    """Interleaved schedules: microbatches go through the local stages in rounds of
    ``microbatches_per_round``."""

    _what = ""

    def _check_microbatches(self) -> None:
        n = self._n_microbatches
        self.number_of_rounds = max(1, n // self.pp_group_size)
        self.microbatches_per_round = n // self.number_of_rounds
        if n % self.number_of_rounds != 0:
            raise ValueError(f"{self._what} requires the number of microbatches to be a "
                             f"multiple of the number of rounds ({self.number_of_rounds}), "
                             f"but got {n}.")


class ScheduleInterleaved1F1B(_RoundsSchedule):
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

    _what = "Interleaved 1F1B"

    def _rank_order(self, rank: int) -> list:
        return _orders.interleaved(rank, self.pp_group_size, self.n_local_stages,
                                   self._n_microbatches, self.microbatches_per_round)


class ScheduleInterleavedZeroBubble(_RoundsSchedule):
    """Interleaved zero bubble (ZB1P): interleaved 1F1B with each backward split into its
    input part, sent on at once, and its weight part, run later where the rank would
    otherwise wait (NOTE [ Split backward ] in stage.py).

    Args:
        stages (list): this rank's stages (stage ``s`` on rank ``s % world_size``).
        n_microbatches (int): how many microbatches a step cuts the batch into (a multiple of
            the rounds).
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleMulti``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> ScheduleInterleavedZeroBubble([s0, s2], n_microbatches=4, loss_fn=f)  # doctest: +SKIP
    """

    _what = "Zero bubble"

    def _rank_order(self, rank: int) -> list:
        return _orders.interleaved(rank, self.pp_group_size, self.n_local_stages,
                                   self._n_microbatches, self.microbatches_per_round,
                                   zero_bubble=True)

    def _finish_order(self, order: dict) -> dict:
        return _orders.add_forward_bubbles(order)


class _VSchedule(_PipelineScheduleRuntime):
    """Two stages per rank placed in a V: rank ``r`` holds stages ``r`` and
    ``2 * world_size - 1 - r``, so the first and last stage share rank 0."""

    _placement = "v"

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        if stages and len(stages) != 2:
            raise ValueError(f"ZBV requires exactly 2 stages per rank, but got {len(stages)}.")
        super().__init__(stages, n_microbatches, *args, **kwargs)


class ScheduleZBVZeroBubble(_VSchedule):
    """ZB-V: zero bubble with the V placement; each rank alternates its down and up stage,
    backwards split into input and weight parts (NOTE [ Split backward ] in stage.py).

    Args:
        stages (list): this rank's two stages, ``r`` and ``2 * world_size - 1 - r``.
        n_microbatches (int): how many microbatches a step cuts the batch into.
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleMulti``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> ScheduleZBVZeroBubble([s_r, s_back], n_microbatches=4, loss_fn=f)  # doctest: +SKIP
    """

    def _rank_order(self, rank: int) -> list:
        return _orders.zbv(rank, self.pp_group_size, self._n_microbatches)


class ScheduleDualPipeV(_VSchedule):
    """DualPipeV: DeepSeek's DualPipe on the V placement; in the steady state a rank pairs
    one stage's forward with the other's backward (``OVERLAP_F_B``, run one after the
    other here), the first and last backwards split into input and weight parts.

    Args:
        stages (list): this rank's two stages, ``r`` and ``2 * world_size - 1 - r``.
        n_microbatches (int): how many microbatches a step cuts the batch into (at least the
            number of stages).
        *args, **kwargs: ``loss_fn``, the chunk specs and ``scale_grads``, as for
            ``PipelineScheduleMulti``.

    Returns:
        A schedule; ``step`` runs one batch.

    Example::

        >>> ScheduleDualPipeV([s_r, s_back], n_microbatches=4, loss_fn=f)  # doctest: +SKIP
    """

    def _check_microbatches(self) -> None:
        if self._n_microbatches < self._num_stages:
            raise ValueError(f"DualPipeV requires at least as many microbatches as stages, but "
                             f"got {self._n_microbatches} microbatches and {self._num_stages} "
                             "stages.")

    def _rank_order(self, rank: int) -> list:
        return _orders.dualpipe_v(rank, self.pp_group_size, self._n_microbatches)


_SCHEDULES = {"1F1B": Schedule1F1B, "Interleaved1F1B": ScheduleInterleaved1F1B,
              "GPipe": ScheduleGPipe, "LoopedBFS": ScheduleLoopedBFS,
              "InterleavedZeroBubble": ScheduleInterleavedZeroBubble,
              "PipelineScheduleSingle": PipelineScheduleSingle,
              "PipelineScheduleMulti": PipelineScheduleMulti,
              "ZBVZeroBubble": ScheduleZBVZeroBubble, "DualPipeV": ScheduleDualPipeV}


def get_schedule_class(schedule_name: str):
    """The schedule class of a name, case-insensitive: ``"GPipe"``, ``"1F1B"``,
    ``"Interleaved1F1B"``, ``"LoopedBFS"``, ``"InterleavedZeroBubble"``,
    ``"ZBVZeroBubble"``, ``"DualPipeV"``, ``"PipelineScheduleSingle"``,
    ``"PipelineScheduleMulti"``.

    Args:
        schedule_name (str): the name.

    Returns:
        type

    Example::

        >>> from ember.distributed.pipelining.schedules import get_schedule_class
        >>> get_schedule_class("zbvzerobubble").__name__
        'ScheduleZBVZeroBubble'
    """
    for name, cls in _SCHEDULES.items():
        if name.lower() == schedule_name.lower():
            return cls
    raise ValueError(f"Unknown schedule name '{schedule_name}'. The valid options are "
                     f"{list(_SCHEDULES)}")
