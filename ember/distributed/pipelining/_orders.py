"""The compute-only action lists of each schedule, one function per schedule and rank.

Each function returns what one rank runs, as ``_Action``s (NOTE [ Pipeline actions ] in
_schedule_ir.py), with ``None`` where the rank idles so that the table lines up in time
as PyTorch's ``pipeline_order`` does; the runtime drops the ``None``s. The orders are
those of PyTorch 2.13 (tests/distributed/test_pipelining_schedules.py compares them).
"""

from __future__ import annotations

from collections import defaultdict

from ._schedule_ir import _Action, B, F, I, OVERLAP_F_B, W

__all__: list = []


def generate_stage_to_rank_mapping(pp_size: int, num_stages: int, style: str = "loop") -> dict:
    """Which rank holds each stage: ``"loop"`` puts stage ``s`` on rank ``s % pp_size``;
    ``"v"`` runs down the ranks and back up, so rank ``r`` holds stages ``r`` and
    ``2 * pp_size - 1 - r`` (and so on for more stages).

    Args:
        pp_size (int): the number of ranks.
        num_stages (int): the number of stages.
        style (str): ``"loop"`` or ``"v"``.

    Returns:
        dict: stage index -> rank.

    Example::

        >>> generate_stage_to_rank_mapping(2, 4, style="v")
        {0: 0, 1: 1, 2: 1, 3: 0}
    """
    if style == "loop":
        return {s: s % pp_size for s in range(num_stages)}
    if style == "v":
        down_and_up = list(range(pp_size)) + list(reversed(range(pp_size)))
        return {s: down_and_up[s % (2 * pp_size)] for s in range(num_stages)}
    raise ValueError(f"Style {style} is not supported.")


def generate_rank_to_stage_mapping(pp_size: int, num_stages: int, style: str = "loop") -> dict:
    """The stages of each rank, in order (the inverse of ``generate_stage_to_rank_mapping``).

    Args:
        pp_size (int): the number of ranks.
        num_stages (int): the number of stages.
        style (str): ``"loop"`` or ``"v"``.

    Returns:
        dict: rank -> list of stage indices.

    Example::

        >>> generate_rank_to_stage_mapping(2, 4, style="v")
        {0: [0, 3], 1: [1, 2]}
    """
    out: dict = {r: [] for r in range(pp_size)}
    for s, r in generate_stage_to_rank_mapping(pp_size, num_stages, style).items():
        out[r].append(s)
    return out


class _Counter:
    """Hands out the next microbatch of each (stage, kind)."""

    def __init__(self):
        self._next: dict = defaultdict(int)

    def __call__(self, stage: int, kind) -> _Action:
        mb = self._next[stage, kind]
        self._next[stage, kind] += 1
        return _Action(stage, kind, mb)

    def count(self, stage: int, kind) -> int:
        """How many have been handed out."""
        return self._next[stage, kind]


# -- one stage per rank ---------------------------------------------------------------------------

def gpipe(rank: int, n: int) -> list:
    """GPipe: all forwards, then all backwards."""
    return [_Action(rank, F, mb) for mb in range(n)] + [_Action(rank, B, mb) for mb in range(n)]


def one_f_one_b(rank: int, num_stages: int, n: int) -> list:
    """1F1B: a warm-up of forwards, then one forward and one backward in turn."""
    warmup = min(n, num_stages - rank - 1)
    acts = [_Action(rank, F, mb) for mb in range(warmup)]
    for k in range(n - warmup):
        acts += [_Action(rank, F, warmup + k), _Action(rank, B, k)]
    return acts + [_Action(rank, B, mb) for mb in range(n - warmup, n)]


def forward_only(rank: int, n: int) -> list:
    """Every microbatch's forward."""
    return [_Action(rank, F, mb) for mb in range(n)]


# -- several stages per rank, looped (stage s on rank s % pp) --------------------------------------

def looped_bfs(rank: int, pp: int, n_local: int, n: int) -> list:
    """Breadth first: each local stage runs all its forwards before the next one; backwards
    go through the stages and microbatches in reverse."""
    stages = range(rank, pp * n_local, pp)
    acts: list = [None] * rank
    acts += [_Action(s, F, mb) for s in stages for mb in range(n)]
    acts += [None] * (2 * (pp - 1 - rank))  # the first backward is two steps per hop away
    acts += [_Action(s, B, mb) for s in reversed(stages) for mb in reversed(range(n))]
    return acts


def interleaved(rank: int, pp: int, n_local: int, n: int, per_round: int,
                zero_bubble: bool = False) -> list:
    """Interleaved 1F1B, or its zero-bubble form (ZB1P), for one rank.

    Microbatches go through the local stages in rounds of ``per_round``: forward on local
    stage 0 for a round, then stage 1, ...; backwards likewise from the last local stage.
    After a warm-up of forwards each step is one forward and one backward. The zero-bubble
    form splits each backward into its input part (I) and weight part (W): a rank sends
    the input gradient on at once and runs the weight part later, one W after each step
    once ``rank`` steps have passed, the rest at the end.
    """
    total = n_local * n
    hops = pp - 1 - rank
    warmup = min(total, (n_local - 1) * per_round + (1 if zero_bubble else 2) * hops)

    def fwd_stage(step):
        return (step // per_round) % n_local * pp + rank

    def bwd_stage(step):
        return (n_local - 1 - (step - warmup) // per_round % n_local) * pp + rank

    take = _Counter()
    bwd = I if zero_bubble else B
    weights: list = []  # I actions whose W is still to run, oldest first
    acts: list = [None] * rank
    for step in range(warmup):
        acts.append(take(fwd_stage(step), F))
    if warmup:
        # wait until the first backward reaches this rank
        idle = hops if zero_bubble else n_local * pp + 2 * hops - warmup - rank
        acts += [None] * idle
    for step in range(warmup, total + warmup):
        if step < total:
            acts.append(take(fwd_stage(step), F))
        elif not zero_bubble:
            acts.append(None)  # keeps the cool-down in step with the other ranks
        acts.append(take(bwd_stage(step), bwd))
        if zero_bubble:
            weights.append(acts[-1])
            if step - warmup >= rank:
                a = weights.pop(0)
                acts.append(_Action(a.stage_index, W, a.microbatch_index))
    acts += [_Action(a.stage_index, W, a.microbatch_index) for a in weights]
    return acts


def add_forward_bubbles(order: dict) -> dict:
    """Delay, step by step over all ranks, each forward whose input (the previous stage's
    forward of that microbatch) has not run in an earlier step; the zero-bubble table
    needs this when there are fewer microbatches than a round."""
    todo = {r: list(order[r]) for r in sorted(order)}
    out: dict = {r: [] for r in todo}
    seen: set = set()
    while any(todo.values()):
        now = set()
        for rank, queue in todo.items():
            if not queue:
                continue
            a = queue[0]
            if (a is not None and a.computation_type is F and a.stage_index != 0
                    and (a.stage_index - 1, a.microbatch_index) not in seen):
                out[rank].append(None)
                continue
            out[rank].append(queue.pop(0))
            if a is not None and a.computation_type is F:
                now.add((a.stage_index, a.microbatch_index))
        seen |= now
    return out


# -- two stages per rank in a V (rank r holds r and 2 * pp - 1 - r) --------------------------------

def zbv(rank: int, pp: int, n: int) -> list:
    """ZB-V (zero bubble, V placement) for one rank: the down stage ``rank`` and the up stage
    ``2 * pp - 1 - rank`` take turns, backwards split into I and W; as if there were at
    least ``2 * pp - 1`` microbatches, the extra ones left idle."""
    n_micro = max(2 * pp - 1, n)
    down, up = rank, 2 * pp - 1 - rank
    take = _Counter()
    acts: list = [None] * rank
    acts += [take(down, F) for _ in range(2 * (pp - rank) - 1)]
    for _ in range(rank):
        acts += [take(up, F), take(down, F)]
    for _ in range(pp - rank):
        acts += [take(up, F), take(up, I), take(up, W)]
    while take.count(up, F) < take.count(down, F) or take.count(down, F) < n_micro:
        if take.count(down, F) < n_micro:
            acts.append(take(down, F))
        acts += [take(down, I), take(down, W), take(up, F), take(up, I), take(up, W)]
    # cool-down: the up stage's last inputs first, its weight parts after
    for _ in range(rank):
        acts += [take(down, I), take(up, I)]
    for _ in range(pp - rank):
        acts += [take(down, I), take(down, W)]
    for stage in (up, down):
        acts += [take(stage, W) for _ in range(take.count(stage, I) - take.count(stage, W))]
    return [a if a is not None and a.microbatch_index < n else None for a in acts]


def dualpipe_v(rank: int, pp: int, n: int) -> list:
    """DualPipeV for one rank (DeepSeek's DualPipe folded into a V): forwards of both
    stages fill the pipe, then a forward of one stage is paired with a full backward of the
    other (``OVERLAP_F_B``); the first and last backwards are split into I and W."""
    down, up = rank, 2 * pp - 1 - rank
    fwd = _Counter()
    bwd = _Counter()  # I and B share their microbatch count
    weights: list = []
    acts: list = []

    def backward(stage, kind):
        mb = bwd(stage, B).microbatch_index
        if kind is I:
            weights.append((stage, mb))
        return _Action(stage, kind, mb)

    def pending_weight():
        if weights:
            stage, mb = weights.pop(0)
            acts.append(_Action(stage, W, mb))

    def overlap(f_stage, b_stage):
        pair = (fwd(f_stage, F), backward(b_stage, B))
        acts.append(_Action(-1, OVERLAP_F_B, None, pair))

    acts += [fwd(down, F) for _ in range(2 * (pp - rank - 1))]
    for _ in range(rank + 1):
        acts += [fwd(down, F), fwd(up, F)]
    for _ in range(pp - rank - 1):
        acts.append(backward(up, I))
        pending_weight()
        acts.append(fwd(up, F))
    for i in range(n - 2 * pp + rank + 1):
        if i == 0 and rank == pp - 1:  # the turn of the V: not overlapped, a smaller bubble
            acts += [fwd(down, F), backward(up, B)]
        else:
            overlap(down, up)
        overlap(up, down)
    for _ in range(pp - rank - 1):
        acts.append(backward(up, B))
        overlap(up, down)
    split = False
    for i in range(rank + 1):
        split = split or (i == (rank + 1) // 2 and rank % 2 == 1)
        acts.append(backward(up, I if split else B))
        split = split or (i == (rank + 1) // 2 and rank % 2 == 0)
        acts.append(backward(down, I if split else B))
    for _ in range(pp - rank - 1):
        pending_weight()
        acts.append(backward(down, I if split else B))
    for _ in range(rank + 1):
        pending_weight()
    return acts
