"""``save`` (and ``async_save``): write a state dict as a distributed checkpoint."""

from __future__ import annotations

import concurrent.futures
import warnings

from . import _coordinate
from ._flatten import flatten
from .filesystem import FileSystemWriter
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       StorageMeta, TensorProperties, TensorStorageMetadata)

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


def _entry(key, value, layout):
    """``(metadata, MetadataIndex, value to store)`` for one flattened item; ``layout`` is
    ``(global shape, offsets)`` for a shard (NOTE [ Sharded entries in checkpoints ])."""
    from ... import Size, Tensor

    if isinstance(value, Tensor):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous().clone()  # only the item's own elements go into the file
        size, offsets = layout if layout is not None else (t.shape, [0] * t.dim())
        offsets = Size(offsets)
        md = TensorStorageMetadata(TensorProperties.create_from_tensor(value), Size(size),
                                   [ChunkStorageMetadata(offsets, Size(t.shape))])
        return md, MetadataIndex(key, offsets, 0), t
    return BytesStorageMetadata(), MetadataIndex(key), value


def _merge(gathered):
    """Every rank's entries as one ``Metadata``'s tables: a sharded tensor's chunks are
    listed in rank order, each stored item indexed by its chunk's position."""
    md_all, planner_data, storage = {}, {}, {}
    for mds, pths, wh in gathered:
        planner_data.update(pths)
        for idx, info in wh.items():
            md = mds[idx.fqn]
            have = md_all.get(idx.fqn)
            if isinstance(md, TensorStorageMetadata) and have is not None:
                have.chunks.append(md.chunks[0])
                idx = MetadataIndex(idx.fqn, idx.offset, len(have.chunks) - 1)
            else:
                md_all[idx.fqn] = md
            storage[idx] = info
    return md_all, planner_data, storage


def save(state_dict: dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist: bool = False, use_collectives: bool = True) -> Metadata:
    """Save ``state_dict`` as a distributed checkpoint: every rank calls it with its state
    dict; an entry several ranks hold is written once, by the lowest of them.

    The directory is PyTorch's layout (NOTE [ DCP on disk ]): ``torch.distributed.checkpoint
    .load`` reads what this writes, and ``load`` reads PyTorch's checkpoints. Nested dicts
    and lists are stored under flattened keys (``"optim.state.0.step"``).

    Args:
        state_dict (dict): tensors and other picklable values, nested in dicts and lists.
        checkpoint_id (str or os.PathLike, optional): the checkpoint directory.
        storage_writer (FileSystemWriter, optional): writes the files (default: a
            ``FileSystemWriter(checkpoint_id)``).
        planner: not supported (must be None; ember plans as PyTorch's default planner).
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
    if planner is not None:
        raise ValueError("ember.distributed.checkpoint.save: custom planners are not "
                         "supported; pass planner=None")
    writer = _writer(checkpoint_id, storage_writer)
    rank, _, distributed = _coordinate.ranks(process_group, no_dist)
    from ._shards import layout_of

    flat, paths = flatten(state_dict)
    layouts = {k: layout_of(v) for k, v in flat.items()}
    owners = _coordinate.all_gather(sorted(k for k in flat if layouts[k] is None),
                                    process_group, distributed)
    # a shard is written by its own rank; anything else once, by the lowest rank holding it
    mine = [k for k in flat if layouts[k] is not None
            or next(r for r, keys in enumerate(owners) if k in keys) == rank]

    def write():
        if rank == 0:
            writer._prepare()
        entries = {k: _entry(k, flat[k], layouts[k]) for k in mine}
        return entries, paths

    def write_files():
        if rank != 0:
            writer.path.mkdir(parents=True, exist_ok=True)
        return writer._write_items(rank, [(idx, v) for _, idx, v in entries.values()])

    entries, _ = _coordinate.step("save: prepare", write, process_group, distributed)
    where = _coordinate.step("save: write", write_files, process_group, distributed)
    gathered = _coordinate.all_gather(({k: md for k, (md, _, _) in entries.items()},
                                       {k: paths[k] for k in entries}, where),
                                      process_group, distributed)
    md_all, planner_data, storage = _merge(gathered)
    metadata = Metadata(md_all, planner_data, storage,
                        StorageMeta(writer.path, writer.save_id), "1.0.0")

    def finish():
        if rank == 0:
            writer._write_metadata(metadata)

    _coordinate.step("save: metadata", finish, process_group, distributed)
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

    staged = tree_map(lambda v: v.detach().clone() if isinstance(v, Tensor) else v, state_dict)
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


