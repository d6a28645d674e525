"""``save`` (and ``async_save``): write a state dict as a distributed checkpoint."""

from __future__ import annotations

import concurrent.futures
import warnings

from . import _coordinate
from .filesystem import FileSystemWriter
from .metadata import Metadata

__all__ = ["async_save", "save", "save_state_dict"]


def _writer(checkpoint_id, storage_writer):
    if storage_writer is None:
        if checkpoint_id is None:
            raise RuntimeError(
                "`checkpoint_id` must be specified if storage_reader/storage_writer is None.")
        return FileSystemWriter(checkpoint_id)
    if checkpoint_id is not None:
        storage_writer.reset(checkpoint_id)
    return storage_writer


def _state_dicts_of_statefuls(state_dict: dict) -> dict:
    """``state_dict`` with each top-level ``Stateful`` value replaced by its
    ``state_dict()`` (a shallow copy; the caller's dict is not changed)."""
    from .stateful import Stateful

    return {k: v.state_dict() if isinstance(v, Stateful) else v for k, v in state_dict.items()}


def save(state_dict: dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist: bool = False, use_collectives: bool = True) -> Metadata:
    """Save ``state_dict`` as a distributed checkpoint: every rank calls it with its state
    dict; an entry several ranks hold is written once, by the lowest of them. A top-level
    value with ``state_dict()``/``load_state_dict()`` (a module, an optimizer: ``Stateful``)
    is saved as its ``state_dict()``.

    The directory is PyTorch's layout (NOTE [ DCP on disk ]): ``torch.distributed.checkpoint
    .load`` reads what this writes, and ``load`` reads PyTorch's checkpoints. Nested dicts
    and lists are stored under flattened keys (``"optim.state.0.step"``).

    Args:
        state_dict (dict): tensors and other picklable values, nested in dicts and lists.
        checkpoint_id (str or os.PathLike, optional): the checkpoint directory.
        storage_writer (StorageWriter, optional): where to write (default: a
            ``FileSystemWriter(checkpoint_id)``; NOTE [ Checkpoint storage layers ]).
        planner (SavePlanner, optional): decides what is written (default:
            ``DefaultSavePlanner()``; see NOTE [ Checkpoint planners ]).
        process_group (ProcessGroup, optional): the ranks taking part (default: the
            world, or this process alone when no group is initialized).
        no_dist (bool): save from this process alone. Default: False.
        use_collectives (bool): accepted for compatibility.

    Returns:
        Metadata: what was written.

    Raises:
        CheckpointException: on every rank when any rank failed.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> d = tempfile.mkdtemp()
        >>> md = dcp.save({"w": ember.arange(3.0), "step": 7}, checkpoint_id=d)
        >>> sd = {"w": ember.zeros(3), "step": 0}; dcp.load(sd, checkpoint_id=d); sd
        {'w': tensor([0., 1., 2.]), 'step': 7}
    """
    from .default_planner import DefaultSavePlanner

    writer = _writer(checkpoint_id, storage_writer)
    planner = DefaultSavePlanner() if planner is None else planner
    rank, _, distributed = _coordinate.ranks(process_group, no_dist, "save")
    state_dict = _state_dicts_of_statefuls(state_dict)

    def local_plan():
        writer.set_up_storage_writer(rank == 0, rank=rank, use_collectives=use_collectives)
        meta = writer.storage_meta() if hasattr(writer, "storage_meta") else None
        planner.set_up_planner(state_dict, meta, rank == 0)
        return writer.prepare_local_plan(planner.create_local_plan())

    def global_plan():
        plans, metadata = planner.create_global_plan(local_plans)
        return writer.prepare_global_plan(plans), metadata

    plan = _coordinate.step("save: local plan", local_plan, process_group, distributed)
    local_plans = _coordinate.all_gather(plan, process_group, distributed)
    plans, metadata = _coordinate.on_coordinator("save: global plan", global_plan, rank,
                                                 process_group, distributed)

    def write():
        return writer.write_data(planner.finish_plan(plans[rank]), planner).wait()

    results = _coordinate.step("save: write", write, process_group, distributed)
    results = _coordinate.all_gather(results, process_group, distributed)
    if metadata.version is None:
        metadata.version = "1.0.0"

    def finish():
        if rank == 0:
            writer.finish(metadata, results)

    _coordinate.step("save: metadata", finish, process_group, distributed)
    metadata.storage_data = {r.index: r.storage_data for rank_results in results
                             for r in rank_results}
    return metadata


def async_save(state_dict: dict, *, checkpoint_id=None, storage_writer=None, planner=None,
               process_group=None, async_checkpointer_type=None, async_stager=None,
               no_dist: bool = False, use_collectives: bool = True):
    """``save`` in a background thread, after copying the tensors (training may change
    them right after the call).

    Args:
        state_dict (dict): as for ``save``.
        checkpoint_id, storage_writer, planner, process_group, no_dist, use_collectives:
            as for ``save``.
        async_checkpointer_type, async_stager: accepted for compatibility (ember uses one
            thread).

    Returns:
        concurrent.futures.Future: its result is the ``Metadata``.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> fut = dcp.async_save({"w": ember.ones(2)}, checkpoint_id=tempfile.mkdtemp())
        >>> sorted(fut.result().state_dict_metadata)
        ['w']
    """
    from ... import Tensor
    from ...utils._pytree import tree_map

    staged = tree_map(lambda v: v.detach().clone() if isinstance(v, Tensor) else v,
                      _state_dicts_of_statefuls(state_dict))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    fut = pool.submit(save, staged, checkpoint_id=checkpoint_id, storage_writer=storage_writer,
                      planner=planner, process_group=process_group, no_dist=no_dist)
    pool.shutdown(wait=False)
    return fut


def save_state_dict(state_dict: dict, storage_writer, process_group=None,
                    coordinator_rank: int = 0, no_dist: bool = False, planner=None) -> Metadata:
    """The deprecated spelling of ``save`` (warns, as PyTorch does).

    Args:
        state_dict (dict): as for ``save``.
        storage_writer (FileSystemWriter): where to write.
        process_group, coordinator_rank, no_dist, planner: as for ``save``.

    Returns:
        Metadata

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> w = dcp.FileSystemWriter(tempfile.mkdtemp())
        >>> _ = dcp.save_state_dict({"w": ember.ones(2)}, w)  # doctest: +SKIP
    """
    warnings.warn("'save_state_dict' is deprecated and will be removed in future versions. "
                  "Please use 'save' instead.", FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group,
                no_dist=no_dist, planner=planner)


