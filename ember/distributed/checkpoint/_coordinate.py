"""Who writes what, and how every rank learns that some rank failed."""

from __future__ import annotations

import warnings

from .api import CheckpointException


def ranks(process_group, no_dist: bool, what: str | None = None) -> tuple[int, int, bool]:
    """``(rank, world_size, distributed)`` for a save or load (``what``: "save" or "load",
    named in PyTorch's warning when no process group exists)."""
    from .. import get_rank, get_world_size, is_initialized

    if not is_initialized():
        if what is not None:
            # PyTorch says so on every save/load without a group, no_dist or not
            warnings.warn("torch.distributed is disabled, unavailable or uninitialized, "
                          f"assuming the intent is to {what} in a single process.",
                          stacklevel=3)
        return 0, 1, False
    if no_dist:
        return 0, 1, False
    return get_rank(process_group), get_world_size(process_group), True


def all_gather(value, process_group, distributed: bool) -> list:
    """Every rank's ``value`` (just ``[value]`` without a group)."""
    if not distributed:
        return [value]
    from .. import all_gather_object, get_world_size

    out = [None] * get_world_size(process_group)
    all_gather_object(out, value, group=process_group)
    return out


def step(what: str, fn, process_group, distributed: bool):
    """Run ``fn`` on every rank; if any rank raised, raise ``CheckpointException`` naming
    the failing ranks on all of them (none is left waiting in a later collective)."""
    try:
        result, error = fn(), None
    except Exception as e:  # noqa: BLE001 -- reported to every rank below
        result, error = None, e
    errors = all_gather(error, process_group, distributed)
    failures = {r: e for r, e in enumerate(errors) if e is not None}
    if failures:
        raise CheckpointException(what, failures)
    return result


def on_coordinator(what: str, fn, rank: int, process_group, distributed: bool):
    """Run ``fn`` on rank 0 only and hand its result to every rank (a failure there raises
    ``CheckpointException`` everywhere)."""
    try:
        result, error = (fn() if rank == 0 else None), None
    except Exception as e:  # noqa: BLE001 -- reported to every rank below
        result, error = None, e
    result, error = all_gather((result, error), process_group, distributed)[0]
    if error is not None:
        raise CheckpointException(what, {0: error})
    return result
