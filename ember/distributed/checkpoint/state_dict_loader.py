"""``load``: fill a state dict, in place, from a distributed checkpoint."""

from __future__ import annotations

import warnings

from . import _coordinate
from .filesystem import FileSystemReader

__all__ = ["load", "load_state_dict"]


def _reader(checkpoint_id, storage_reader):
    if storage_reader is None:
        if checkpoint_id is None:
            raise RuntimeError(
                "`checkpoint_id` must be specified if storage_reader/storage_writer is None.")
        return FileSystemReader(checkpoint_id)
    if checkpoint_id is not None:
        storage_reader.reset(checkpoint_id)
    return storage_reader


def load(state_dict: dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist: bool = False) -> None:
    """Load a distributed checkpoint into ``state_dict`` in place: tensors are copied into
    (converted to their dtype), other values replaced. Only the keys ``state_dict`` holds
    are read; each must be in the checkpoint. A top-level ``Stateful`` value (a module, an
    optimizer) is filled through its ``state_dict()`` and then ``load_state_dict()``.

    Reads checkpoints written by ``save`` and by ``torch.distributed.checkpoint.save``
    (NOTE [ DCP on disk ]), including tensors PyTorch stored in several shards.

    Args:
        state_dict (dict): the state dict to fill (nested dicts and lists as saved).
        checkpoint_id (str or os.PathLike, optional): the checkpoint directory.
        storage_reader (StorageReader, optional): where to read (default: a
            ``FileSystemReader(checkpoint_id)``; NOTE [ Checkpoint storage layers ]).
        planner (LoadPlanner, optional): decides what is read and where it goes (default:
            ``DefaultLoadPlanner()``; see NOTE [ Checkpoint planners ]).
        process_group (ProcessGroup, optional): the ranks taking part (default: the
            world, or this process alone when no group is initialized).
        no_dist (bool): load in this process alone. Default: False.

    Returns:
        None

    Raises:
        CheckpointException: on every rank when any rank failed (a missing key, a size
            mismatch, an unreadable checkpoint).

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> d = tempfile.mkdtemp(); _ = dcp.save({"w": ember.ones(2)}, checkpoint_id=d)
        >>> sd = {"w": ember.zeros(2)}; dcp.load(sd, checkpoint_id=d); sd["w"]
        tensor([1., 1.])
    """
    from .default_planner import DefaultLoadPlanner
    from .stateful import Stateful

    reader = _reader(checkpoint_id, storage_reader)
    planner = DefaultLoadPlanner() if planner is None else planner
    rank, _, distributed = _coordinate.ranks(process_group, no_dist, "load")
    statefuls = {k: v for k, v in state_dict.items() if isinstance(v, Stateful)}
    target = {k: statefuls[k].state_dict() if k in statefuls else v
              for k, v in state_dict.items()} if statefuls else state_dict

    def local_plan():
        metadata = reader.read_metadata()
        reader.set_up_storage_reader(metadata, rank == 0)
        planner.set_up_planner(target, metadata, rank == 0)
        return reader.prepare_local_plan(planner.create_local_plan())

    plan = _coordinate.step("load: local plan", local_plan, process_group, distributed)
    local_plans = _coordinate.all_gather(plan, process_group, distributed)
    plans = _coordinate.on_coordinator(
        "load: global plan",
        lambda: reader.prepare_global_plan(planner.create_global_plan(local_plans)), rank,
        process_group, distributed)

    def read():
        reader.read_data(planner.finish_plan(plans[rank]), planner).wait()
        for key, obj in statefuls.items():
            obj.load_state_dict(target[key])

    _coordinate.step("load", read, process_group, distributed)


def load_state_dict(state_dict: dict, storage_reader, process_group=None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner=None) -> None:
    """The deprecated spelling of ``load`` (warns, as PyTorch does).

    Args:
        state_dict (dict): as for ``load``.
        storage_reader (FileSystemReader): where to read.
        process_group, coordinator_rank, no_dist, planner: as for ``load``.

    Returns:
        None

    Example::

        >>> dcp.load_state_dict(sd, dcp.FileSystemReader(d))  # doctest: +SKIP
    """
    warnings.warn("'load_state_dict' is deprecated and will be removed in future versions. "
                  "Please use 'load' instead.", FutureWarning, stacklevel=2)
    load(state_dict, storage_reader=storage_reader, process_group=process_group,
         no_dist=no_dist, planner=planner)
