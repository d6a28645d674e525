"""The schedule IR: a pipeline schedule written as a table of actions, one list per rank.

NOTE [ Pipeline actions ]
An action is ``(stage_index, computation_type, microbatch_index)`` and reads as a short
string: ``2F0`` is stage 2's forward of microbatch 0, ``1I3`` stage 1's input-gradient
backward of microbatch 3, ``1W3`` its weight-gradient backward, ``0B1`` a full backward
(both at once), ``3SEND_F1``/``4RECV_F1`` the activation message between stages 3 and 4,
``(0F3;3B1)OVERLAP_F_B`` two actions a rank may overlap. A schedule generates a
*compute-only* table (``None`` marks an idle step, kept only for display);
``_add_send_recv`` lowers it by putting each message's send right after the action that
produces it and its receive into the receiving rank's list at the same moment, so that no
rank ever waits on a receive whose send comes later in the peer's list. The runtime
(``_PipelineSchedule._run_actions`` in _runtime.py) then runs one rank's lowered list.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NamedTuple

__all__: list = []


class _ComputationType(str, Enum):
    """What an action does; its value is the letter or word used in action strings."""

    FORWARD = "F"
    BACKWARD_INPUT = "I"
    BACKWARD_WEIGHT = "W"
    UNSHARD = "UNSHARD"
    RESHARD = "RESHARD"
    SEND_F = "SEND_F"
    RECV_F = "RECV_F"
    SEND_B = "SEND_B"
    RECV_B = "RECV_B"
    FULL_BACKWARD = "B"
    OVERLAP_F_B = "OVERLAP_F_B"
    REDUCE_GRAD = "REDUCE_GRAD"

    @staticmethod
    def from_str(action: str) -> _ComputationType:
        """The computation type written ``action`` (``"F"``, ``"SEND_B"``, ...).

        Args:
            action (str): the letter or word.

        Returns:
            _ComputationType

        Example::

            >>> _ComputationType.from_str("W")
            <_ComputationType.BACKWARD_WEIGHT: 'W'>
        """
        try:
            return _ComputationType(action)
        except ValueError:
            raise RuntimeError(f"Invalid computation type {action}") from None


FORWARD = F = _ComputationType.FORWARD
BACKWARD_INPUT = I = _ComputationType.BACKWARD_INPUT  # noqa: E741  (the IR's own letters)
BACKWARD_WEIGHT = W = _ComputationType.BACKWARD_WEIGHT
FULL_BACKWARD = B = _ComputationType.FULL_BACKWARD
UNSHARD = _ComputationType.UNSHARD
RESHARD = _ComputationType.RESHARD
SEND_F = _ComputationType.SEND_F
RECV_F = _ComputationType.RECV_F
SEND_B = _ComputationType.SEND_B
RECV_B = _ComputationType.RECV_B
OVERLAP_F_B = _ComputationType.OVERLAP_F_B
REDUCE_GRAD = _ComputationType.REDUCE_GRAD

_COMPUTE = (FORWARD, FULL_BACKWARD, BACKWARD_INPUT, BACKWARD_WEIGHT, OVERLAP_F_B)

_action_regex = re.compile(
    r"(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)")


class _Action(NamedTuple):
    """One step of a rank's schedule (NOTE [ Pipeline actions ]).

    Args:
        stage_index (int): the stage it runs on (-1 for an ``OVERLAP_F_B`` pair).
        computation_type (_ComputationType): what it does.
        microbatch_index (int, optional): the microbatch (None for UNSHARD and the like).
        sub_actions (tuple, optional): the actions an ``OVERLAP_F_B`` pair holds.

    Example::

        >>> a = _Action(2, F, 0)
        >>> str(a), _Action.from_str("2F0") == a
        ('2F0', True)
    """

    stage_index: int
    computation_type: _ComputationType
    microbatch_index: int | None = None
    sub_actions: tuple | None = None

    def __repr__(self) -> str:
        kind = self.computation_type.value
        if self.sub_actions is not None:
            return f"({';'.join(map(repr, self.sub_actions))}){kind}"
        mb = "" if self.microbatch_index is None else str(self.microbatch_index)
        return f"{self.stage_index}{kind}{mb}"

    __str__ = __repr__

    @property
    def is_compute_op(self) -> bool:
        """Whether the action computes (F, B, I, W or an overlapped pair), not communicates."""
        return self.computation_type in _COMPUTE

    @staticmethod
    def from_str(action_string: str) -> _Action | None:
        """Parse an action string (``"2F0"``, ``"1UNSHARD"``, ``"(0F3;3B1)OVERLAP_F_B"``);
        an empty string is an idle step, None.

        Args:
            action_string (str): the action as ``str`` writes it.

        Returns:
            _Action or None

        Example::

            >>> _Action.from_str("3SEND_F1")
            3SEND_F1
        """
        text = action_string.strip()
        if not text:
            return None
        if text.startswith("(") and ")" in text:
            end = text.index(")")
            subs = tuple(a for a in (_Action.from_str(s) for s in text[1:end].split(";"))
                         if a is not None)
            return _Action(-1, _ComputationType.from_str(text[end + 1:]), None, subs or None)
        match = _action_regex.match(text)
        if match is None:
            raise RuntimeError(f"Invalid action string: {action_string}, should be formatted "
                               "as [stage][action type][(microbatch)] e.g. 2F0")
        stage, kind, mb = match.groups()
        return _Action(int(stage), _ComputationType.from_str(kind), int(mb) if mb else None)


def _format_pipeline_order(pipeline_order: dict, error_step_number: int | None = None) -> str:
    """The schedule as a table: one row per step, one column per rank, idle steps blank.

    Args:
        pipeline_order (dict): rank -> list of actions (None for idle).
        error_step_number (int, optional): a step to mark ``<-- ERROR HERE``.

    Returns:
        str

    Example::

        >>> table = _format_pipeline_order({0: [_Action(0, F, 0)], 1: [None]})
        >>> print(table, end="")  # doctest: +NORMALIZE_WHITESPACE
                Rank 0 Rank 1
        Step 0: 0F0
    """
    ranks = sorted(pipeline_order)
    columns = [["" if a is None else str(a) for a in pipeline_order[r]] for r in ranks]
    n_steps = max(len(c) for c in columns)
    labels = ["Step " + str(i).zfill(len(str(n_steps - 1))) for i in range(n_steps)]
    widths = [max([len(labels[0])] + [len(a) for a in c]) for c in columns]
    header = " " * (len(labels[0]) + 2) + " ".join(
        f"{'Rank ' + str(i):<{w}}" for i, w in enumerate(widths))
    rows = []
    for step, label in enumerate(labels):
        cells = (c[step] if step < len(c) else "" for c in columns)
        row = f"{label}: " + " ".join(f"{a:<{w}}" for a, w in zip(cells, widths))
        rows.append(row + (" <-- ERROR HERE" if step == error_step_number else ""))
    return header + "\n" + "\n".join(rows) + "\n"


# -- checking a table ------------------------------------------------------------------------------

_KIND_NAMES = {B: "Full Backward", I: "Backward Input", W: "Backward Weight"}


def _validate_schedule(actions: dict, pp_group_size: int, num_stages: int,
                       num_microbatches: int) -> dict:
    """Check a compute-only table: every rank present, each stage on one rank, and for each
    stage and microbatch a forward before its backward (B, or I before W), all microbatches
    covered once. Returns the stage -> rank mapping the table implies.

    Args:
        actions (dict): rank -> list of actions (None for idle).
        pp_group_size (int): the number of ranks.
        num_stages (int): the number of stages.
        num_microbatches (int): the number of microbatches.

    Returns:
        dict: stage index -> rank.

    Example::

        >>> t = {0: [_Action.from_str(s) for s in ("0F0", "0B0")]}
        >>> _validate_schedule(t, 1, 1, 1)
        {0: 0}
    """
    if len(actions) != pp_group_size:
        raise AssertionError(f"Schedule has incorrect number of ranks - expected "
                             f"{pp_group_size}, actual {len(actions)}")
    for rank in range(pp_group_size):
        if rank not in actions:
            raise AssertionError(f"Schedule is missing actions for rank {rank}")
    done = {s: {F: set(), B: set(), I: set(), W: set()} for s in range(num_stages)}
    stage_to_rank: dict = {}
    needs = {B: F, I: F, W: I}  # what must have run on the same microbatch first

    def check(a, rank, step):
        s, kind, mb = a.stage_index, a.computation_type, a.microbatch_index
        if kind in needs and mb not in done[s][needs[kind]]:
            before = "Forward" if needs[kind] is F else "Backward Input"
            raise AssertionError(
                f"Rank {rank}, step {step}: Running {_KIND_NAMES[kind]} for stage {s}, "
                f"microbatch {mb} without first running {before}\n\nFull pipeline "
                f"schedule:\n{_format_pipeline_order(actions, error_step_number=step)}")
        if kind in done[s]:
            done[s][kind].add(mb)
        owner = stage_to_rank.setdefault(s, rank)
        if owner != rank:
            raise AssertionError(f"Rank {rank}, step {step}: Stage {s} is assigned to both "
                                 f"rank {rank} and rank {owner}")

    for rank in actions:
        for step, a in enumerate(actions[rank]):
            if a is None:
                continue
            if not isinstance(a, _Action):
                raise AssertionError(f"Rank {rank}, step {step}: Got an invalid action: {a}, "
                                     "expected instance of _Action")
            for sub in a.sub_actions or (a,):
                check(sub, rank, step)
    for s, kinds in done.items():
        nf, nb, ni, nw = (len(kinds[k]) for k in (F, B, I, W))
        if nf != num_microbatches:
            raise AssertionError(f"Got {nf} {F} microbatches for stage {s}, expected "
                                 f"{num_microbatches}")
        if ni != nw:
            # (the run of spaces is PyTorch's message, kept for scripts that match it)
            raise AssertionError(f"Invalid backward microbatches for stage {s}: I and W must "
                                 f"have equal counts, {' ' * 12}but got I={ni}, W={nw}")
        if nb + (ni + nw) // 2 != num_microbatches:
            raise AssertionError(f"Invalid backward microbatches for stage {s}: expected "
                                 f"{num_microbatches} total backwards, {' ' * 12}but got "
                                 f"B={nb}, I={ni}, W={nw}")
    return stage_to_rank


# -- lowering: what a rank does around its compute -----------------------------------------------

def _stages_of(a: _Action) -> tuple:
    return tuple(p.stage_index for p in (a.sub_actions or (a,)))


def _add_unshard_reshard(compute_actions: list, max_active_stages: int = 3) -> list:
    """One rank's compute list with UNSHARD before a stage is next used and RESHARD when it
    drops out of the next ``max_active_stages`` stages to be used (what a sharded stage
    module needs gathered; a plain module ignores both).

    Args:
        compute_actions (list): one rank's compute actions (None entries are dropped).
        max_active_stages (int): how many stages may be gathered at once.

    Returns:
        list: the actions with UNSHARD/RESHARD.

    Example::

        >>> _add_unshard_reshard([_Action(0, F, 0), _Action(0, B, 0)])
        [0UNSHARD, 0F0, 0B0, 0RESHARD]
    """
    todo = [a for a in compute_actions if a is not None]
    active: list = []
    out: list = []
    for i, a in enumerate(todo):
        upcoming: list = []
        for later in todo[i:]:
            upcoming += [s for s in _stages_of(later) if s not in upcoming]
            if len(upcoming) >= max_active_stages:
                break
        for s in sorted(s for s in active if s not in upcoming):
            active.remove(s)
            out.append(_Action(s, RESHARD))
        for s in upcoming:
            if s not in active:
                active.append(s)
                out.append(_Action(s, UNSHARD))
        out.append(a)
    out += [_Action(s, RESHARD) for s in sorted(active)]
    return out


def _add_reduce_grad(actions: list, n_microbatches: int) -> list:
    """One rank's list with a REDUCE_GRAD right after each stage's last weight-gradient
    action (its ``n_microbatches``-th B or W): where its gradients are complete, scaled and
    reduced over data-parallel replicas.

    Args:
        actions (list): one rank's actions (None entries are dropped).
        n_microbatches (int): the number of microbatches.

    Returns:
        list: the actions with REDUCE_GRAD.

    Example::

        >>> _add_reduce_grad([_Action(0, F, 0), _Action(0, B, 0)], 1)
        [0F0, 0B0, 0REDUCE_GRAD]
    """
    done: dict = {}
    out: list = []
    for a in actions:
        if a is None:
            continue
        out.append(a)
        for p in a.sub_actions or (a,):
            if p.computation_type in (W, B):
                done[p.stage_index] = done.get(p.stage_index, 0) + 1
                if done[p.stage_index] == n_microbatches:
                    out.append(_Action(p.stage_index, REDUCE_GRAD))
    return out


# -- lowering: messages between ranks ------------------------------------------------------------

def _merge_bw(compute_actions: list) -> list:
    """One rank's compute list with each I followed (idle steps aside) by the W of the
    same stage and microbatch made one B: a full backward, one walk instead of two.

    Args:
        compute_actions (list): ``_Action`` or None (idle); left as it was (PyTorch's
            empties the list it is given).

    Returns:
        list: the actions, without the idle steps.

    Example::

        >>> _merge_bw([_Action.from_str(a) for a in ["0F0", "0I0", "0W0", "0I1", "0F1"]])
        [0F0, 0B0, 0I1, 0F1]
    """
    actions = [a for a in compute_actions if a is not None]
    out, k = [], 0
    while k < len(actions):
        a = actions[k]
        nxt = actions[k + 1] if k + 1 < len(actions) else None
        if (a.computation_type is I and nxt is not None and nxt.computation_type is W
                and (a.stage_index, a.microbatch_index)
                == (nxt.stage_index, nxt.microbatch_index)):
            out.append(_Action(a.stage_index, B, a.microbatch_index))
            k += 2
        else:
            out.append(a)
            k += 1
    return out


def _dump_chrometrace(schedule: dict, filename: str) -> None:
    """Write a table (rank -> actions) as a Chrome trace (``chrome://tracing``, Perfetto):
    one event per action, one row per rank, each step one time unit long.

    NOTE [ Chrome trace categories ]
    Events are named by their action string and placed at their step (idle steps take
    theirs); F, B and W are "computation", every other kind "communication" -- I and the
    FSDP actions included, as PyTorch 2.13 labels them, so that one table gives the same
    file either way.

    Args:
        schedule (dict): rank -> list of ``_Action`` or None.
        filename (str): the JSON file to write.

    Example::

        >>> _dump_chrometrace(sched.pipeline_order_with_comms, "pp.json")  # doctest: +SKIP
    """
    import json

    events = []
    for rank in sorted(schedule):
        for step, a in enumerate(schedule[rank]):
            if a is None:
                continue
            events.append({"name": str(a),
                           "cat": "computation" if a.computation_type in (F, B, W)
                           else "communication",
                           "ph": "X", "pid": rank, "tid": rank, "ts": step, "dur": 1})
    with open(filename, "w") as f:
        json.dump({"traceEvents": events}, f)


def _message(a: _Action, stage_to_rank, num_stages: int):
    """The (send, recv) pair a compute action's result travels as, or None when the
    neighbouring stage is on the same rank (or there is none)."""
    s, kind, mb = a.stage_index, a.computation_type, a.microbatch_index
    if kind is F and s != num_stages - 1 and stage_to_rank(s + 1) != stage_to_rank(s):
        return _Action(s, SEND_F, mb), _Action(s + 1, RECV_F, mb)
    if kind in (I, B) and s != 0 and stage_to_rank(s - 1) != stage_to_rank(s):
        return _Action(s, SEND_B, mb), _Action(s - 1, RECV_B, mb)
    return None


def _inputs_ready(a: _Action, seen: set, num_stages: int) -> bool:
    """Whether what ``a`` consumes is on its rank: received, or produced there earlier."""
    s, kind, mb = a.stage_index, a.computation_type, a.microbatch_index
    if kind is F and s != 0:
        return _Action(s, RECV_F, mb) in seen or _Action(s - 1, F, mb) in seen
    if kind in (I, B) and s != num_stages - 1:
        return (_Action(s, RECV_B, mb) in seen or _Action(s + 1, I, mb) in seen
                or _Action(s + 1, B, mb) in seen)
    return True


def _add_send_recv(compute_actions: dict, stage_to_rank, num_stages: int) -> dict:
    """Lower a compute-only table to one with its messages (NOTE [ Pipeline actions ]).

    The ranks take turns, one action each per round (an idle ``None`` uses its rank's
    turn); a rank whose next action still lacks its input waits for a later round. A
    placed action's send follows it on its rank and the matching receive is appended to
    the receiving rank's list at once.

    Args:
        compute_actions (dict): rank -> compute actions (None for an idle step).
        stage_to_rank (callable): stage index -> rank.
        num_stages (int): the number of stages.

    Returns:
        dict: rank -> actions including SEND_F/RECV_F/SEND_B/RECV_B.

    Example::

        >>> t = {0: [_Action(0, F, 0), _Action(0, B, 0)], 1: [_Action(1, F, 0), _Action(1, B, 0)]}
        >>> _add_send_recv(t, lambda s: s, 2)
        {0: [0F0, 0SEND_F0, 0RECV_B0, 0B0], 1: [1RECV_F0, 1F0, 1B0, 1SEND_B0]}
    """
    todo = {r: list(compute_actions[r]) for r in sorted(compute_actions)}
    out: dict = {r: [] for r in compute_actions}
    seen: dict = {r: set() for r in compute_actions}
    while any(todo.values()):
        progress = False
        for rank, queue in todo.items():
            if not queue:
                continue
            a = queue[0]
            parts = () if a is None else a.sub_actions or (a,)
            if not all(_inputs_ready(p, seen[rank], num_stages) for p in parts):
                continue
            queue.pop(0)
            progress = True
            if a is None:  # an idle step still takes the rank's turn
                continue
            out[rank].append(a)
            for p in parts:
                seen[rank].add(p)
                msg = _message(p, stage_to_rank, num_stages)
                if msg is not None:
                    send, recv = msg
                    out[rank].append(send)
                    seen[rank].add(send)
                    peer = stage_to_rank(recv.stage_index)
                    out[peer].append(recv)
                    seen[peer].add(recv)
        if not progress:
            raise AssertionError("Malformed compute schedule, can't schedule sends/recvs")
    return out


def _defer_recv_ops(actions: dict, stage_to_rank) -> dict:
    """Move each receive of a lowered table from where the sender placed it to just before
    the action that consumes it, except that a rank still posts its pending receives from
    a higher-numbered peer before sending to that peer (the lower rank of a pair receives
    first, so two ranks never both wait in a send).

    Args:
        actions (dict): rank -> lowered actions.
        stage_to_rank (callable): stage index -> rank.

    Returns:
        dict: rank -> the actions with receives moved.

    Example::

        >>> t = {0: [_Action.from_str(s) for s in ("1RECV_F0", "0F0", "1F0")]}
        >>> _defer_recv_ops(t, lambda s: 0)
        {0: [0F0, 1RECV_F0, 1F0]}
    """
    def peer_of(a):
        kind, s = a.computation_type, a.stage_index
        return stage_to_rank(s - 1 if kind in (RECV_F, SEND_B) else s + 1)

    out: dict = {}
    for rank, acts in actions.items():
        held: dict = {}  # (stage, kind, mb) -> the receive not yet placed
        new: list = []
        for a in acts:
            kind = a.computation_type
            if kind in (RECV_F, RECV_B):
                held[a.stage_index, kind, a.microbatch_index] = a
                continue
            if kind in (SEND_F, SEND_B) and rank < peer_of(a):
                for key in [k for k, r in held.items() if peer_of(r) == peer_of(a)]:
                    new.append(held.pop(key))
            for p in a.sub_actions or (a,):
                needs = {F: RECV_F, B: RECV_B, I: RECV_B}.get(p.computation_type)
                if (p.stage_index, needs, p.microbatch_index) in held:
                    new.append(held.pop((p.stage_index, needs, p.microbatch_index)))
            new.append(a)
        if held:
            raise AssertionError(f"Malformed input schedule on rank {rank}: leftover RECV ops "
                                 f"with no consumer found: {list(held.values())}. Every RECV "
                                 "must be consumed by a downstream compute op.")
        out[rank] = new
    return out


def _simulate_comms_compute(pipeline_order: dict, stage_to_rank, num_stages: int) -> dict:
    """Dry-run a lowered table step by step on all ranks: each step a rank runs its next
    action if what it needs has run (a receive needs its send, a compute its input),
    else idles (None). Raises ValueError when no rank can go on (a deadlock).

    Args:
        pipeline_order (dict): rank -> actions with messages (None entries are dropped).
        stage_to_rank (callable): stage index -> rank.
        num_stages (int): the number of stages.

    Returns:
        dict: rank -> the actions as run, None where the rank waited.

    Example::

        >>> t = _add_send_recv({0: [_Action(0, F, 0)], 1: [_Action(1, F, 0)]}, lambda s: s, 2)
        >>> _simulate_comms_compute(t, lambda s: s, 2)
        {0: [0F0, 0SEND_F0], 1: [None, 1RECV_F0, 1F0]}
    """
    todo = {r: [a for a in pipeline_order[r] if a is not None] for r in sorted(pipeline_order)}
    out: dict = {r: [] for r in todo}
    done: dict = {r: set() for r in todo}

    def ready(a):
        s, kind, mb = a.stage_index, a.computation_type, a.microbatch_index
        here = done[stage_to_rank(s)]
        if kind in (F, I, B):
            return _inputs_ready(a, here, num_stages)
        if kind is SEND_F:
            return _Action(s, F, mb) in here
        if kind is SEND_B:
            return _Action(s, I, mb) in here or _Action(s, B, mb) in here
        if kind is RECV_F:
            return _Action(s - 1, SEND_F, mb) in done[stage_to_rank(s - 1)]
        if kind is RECV_B:
            return _Action(s + 1, SEND_B, mb) in done[stage_to_rank(s + 1)]
        if kind in (W, UNSHARD, RESHARD, REDUCE_GRAD):
            return True
        raise ValueError(f"Unsupported action type {a}")

    while any(todo.values()):
        progress = False
        for rank, queue in todo.items():
            if queue and ready(queue[0]):
                done[rank].add(queue[0])
                out[rank].append(queue.pop(0))
                progress = True
            elif queue:
                out[rank].append(None)
        # a rank idled this step may still go if a later rank's action just unblocked it
        for rank, queue in todo.items():
            if queue and out[rank][-1] is None and ready(queue[0]):
                done[rank].add(queue[0])
                out[rank][-1] = queue.pop(0)
        if not progress:
            raise ValueError("Schedule is not progressing")
    return out
