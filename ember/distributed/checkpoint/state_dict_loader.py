"""``load``: fill a state dict, in place, from a distributed checkpoint."""

from __future__ import annotations

import warnings

from . import _coordinate
from ._flatten import flatten, set_at
from .filesystem import FileSystemReader
from .metadata import BytesStorageMetadata, MetadataIndex, TensorStorageMetadata

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


def _find(storage, key, chunk, i):
    info = storage.get(MetadataIndex(key, chunk.offsets, i))
    if info is None:
        raise RuntimeError(f"the checkpoint has no data for chunk {i} of {key}")
    return info


def _read_tensor(reader, metadata, key, md, target):
    """Fill ``target`` from the stored chunks of ``key``: the whole tensor, or for a shard
    (NOTE [ Sharded entries in checkpoints ]) the rows it covers, taking from each chunk
    the part that overlaps them."""
    from ... import no_grad
    from ._shards import layout_of

    layout = layout_of(target)
    size, start = layout if layout is not None else (tuple(target.shape),
                                                     (0,) * target.dim())
    if tuple(md.size) != tuple(size):
        shown = target.shape if layout is None else size
        raise ValueError(f"Size mismatch between saved {md.size} and current: "
                         f"{shown} for {key}")
    region = [(b, b + n) for b, n in zip(start, target.shape)]
    with no_grad():
        if not region:  # a 0-d tensor: one chunk
            target.copy_(reader._read_item(_find(metadata.storage_data, key, md.chunks[0], 0)))
            return
        for i, chunk in enumerate(md.chunks):
            lo = [max(a, o) for (a, _), o in zip(region, chunk.offsets)]
            hi = [min(b, o + n) for (_, b), o, n in zip(region, chunk.offsets, chunk.sizes)]
            if any(h <= l for l, h in zip(lo, hi)):
                continue
            piece = reader._read_item(_find(metadata.storage_data, key, chunk, i))
            piece = piece.reshape(tuple(chunk.sizes))
            src = tuple(slice(l - o, h - o) for l, h, o in zip(lo, hi, chunk.offsets))
            dst = tuple(slice(l - a, h - a) for l, h, (a, _) in zip(lo, hi, region))
            target[dst].copy_(piece[src])


def load(state_dict: dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist: bool = False) -> None:
    """Load a distributed checkpoint into ``state_dict`` in place: tensors are copied into
    (converted to their dtype), other values replaced. Only the keys ``state_dict`` holds
    are read; each must be in the checkpoint.

    Reads checkpoints written by ``save`` and by ``torch.distributed.checkpoint.save``
    (NOTE [ DCP on disk ]), including tensors PyTorch stored in several shards.

    Args:
        state_dict (dict): the state dict to fill (nested dicts and lists as saved).
        checkpoint_id (str or os.PathLike, optional): the checkpoint directory.
        storage_reader (FileSystemReader, optional): reads the files (default: a
            ``FileSystemReader(checkpoint_id)``).
        planner: not supported (must be None).
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
    from ... import Tensor

    if planner is not None:
        raise ValueError("ember.distributed.checkpoint.load: custom planners are not "
                         "supported; pass planner=None")
    reader = _reader(checkpoint_id, storage_reader)
    _, _, distributed = _coordinate.ranks(process_group, no_dist)
    flat, paths = flatten(state_dict)

    def read():
        metadata = reader.read_metadata()
        for key in flat:
            if key not in metadata.state_dict_metadata:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {key}.")
        for key, target in flat.items():
            md = metadata.state_dict_metadata[key]
            if isinstance(target, Tensor) and isinstance(md, TensorStorageMetadata):
                _read_tensor(reader, metadata, key, md, target)
            elif isinstance(md, BytesStorageMetadata):
                set_at(state_dict, paths[key],
                       reader._read_item(metadata.storage_data[MetadataIndex(key)]))
            else:
                raise RuntimeError(f"Invalid checkpoint metadata for {key}, expected "
                                   f"BytesStorageMetadata but found {type(md)}")

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
