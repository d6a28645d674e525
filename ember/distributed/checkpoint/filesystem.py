"""Checkpoints in a directory: ``FileSystemWriter`` and ``FileSystemReader``.

NOTE [ DCP on disk ]
A checkpoint is a directory, laid out as PyTorch's ``torch.distributed.checkpoint`` lays it
out so that either framework reads what the other wrote:

- ``__<rank>_<n>.distcp``: the items one rank wrote, one after another. A tensor item is a
  whole ``ember.save`` archive of the (contiguous) tensor, a non-tensor item the archive of
  the value; ``ember.save`` writes PyTorch's zip format, so ``torch.load`` reads each one.
- ``.metadata``: a pickled ``Metadata`` naming every flattened key (``"opt.state.0.exp_avg"``),
  its dtype and size, and for every item the file, offset and length of its bytes
  (``_StorageInfo``). The pickle names the classes by PyTorch's paths
  (``torch.distributed.checkpoint.metadata.Metadata``, ``torch.float32``, ``torch.Size``),
  written by name without importing torch; reading maps those paths back to ember's classes
  (``ember.serialization``'s PyTorch-name unpickler).

Only rank 0 writes ``.metadata``, after every rank has written its file; readers need only
the directory.
"""

from __future__ import annotations

import io
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from .metadata import Metadata
from .storage import StorageReader, StorageWriter

__all__ = ["FileSystemReader", "FileSystemWriter"]

_METADATA_FILE = ".metadata"
_SUFFIX = ".distcp"


@dataclass
class _StorageInfo:
    """Where one item's bytes are: a file of the checkpoint, an offset and a length."""

    relative_path: str
    offset: int
    length: int
    transform_descriptors: object = None

    def __getstate__(self):  # as PyTorch: unset fields are left out of the pickle
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def __setstate__(self, state):
        self.__dict__.update({"transform_descriptors": None, **state})


@dataclass
class _StoragePrefix:
    """The file-name prefix of one rank's items (``__<rank>_``)."""

    prefix: str


# -- the metadata pickle under PyTorch's names ------------------------------------------------

def _torch_path(cls) -> tuple[str, str] | None:
    module = getattr(cls, "__module__", "")
    # (already torch's under the alias: NOTE [ Class names under the alias ])
    if module.startswith(("ember.distributed.checkpoint", "torch.distributed.checkpoint")):
        return "torch" + module[len("ember"):], cls.__qualname__
    return None


def _dump_metadata(metadata: Metadata, f) -> None:
    from ...serialization._save import _Global, _Pickler

    class MetadataPickler(_Pickler):
        def save_global(self, obj, name=None):
            path = _torch_path(obj)
            if path is None:
                return super().save_global(obj, name)
            self._write_global(_Global(*path))

    MetadataPickler(f, storages={}, protocol=2).dump(metadata)


def _load_metadata(f) -> Metadata:
    from ...serialization._unpickle import FullUnpickler

    return FullUnpickler(f).load()


def _dumps(value) -> bytes:
    from ... import save

    buf = io.BytesIO()
    save(value, buf)
    return buf.getvalue()


def _item_bytes(value) -> bytes:
    """What one planned item's value is stored as: a planner's ``BytesIO`` as it is, a
    tensor's own elements only (not the rest of a storage it views), anything else pickled."""
    from ... import Tensor

    if isinstance(value, io.BytesIO):
        return value.getvalue()
    if isinstance(value, Tensor):
        value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        value = value.contiguous().clone()
    return _dumps(value)


def _loads(data: bytes):
    from ... import load

    return load(io.BytesIO(data), map_location="cpu", weights_only=False)


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint into a directory (see NOTE [ DCP on disk ]).

    Args:
        path (str or os.PathLike): the checkpoint directory (created when missing).
        single_file_per_rank (bool): one ``.distcp`` file per rank (the only layout ember
            writes; False is accepted and writes the same). Default: True.
        sync_files (bool): ``fsync`` each file after writing it. Default: True.
        thread_count (int): accepted for compatibility (ember writes from one thread).
        per_thread_copy_ahead (int): accepted for compatibility.
        cache_staged_state_dict (bool): accepted for compatibility.
        overwrite (bool): allow writing into a directory that holds a checkpoint.
            Default: True.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> w = dcp.FileSystemWriter(tempfile.mkdtemp())
        >>> _ = dcp.save({"w": ember.ones(2)}, storage_writer=w)
    """

    def __init__(self, path, single_file_per_rank: bool = True, sync_files: bool = True,
                 thread_count: int = 1, per_thread_copy_ahead: int = 10_000_000,
                 cache_staged_state_dict: bool = False, overwrite: bool = True,
                 _extensions=None, serialization_format=None):
        self.path = Path(os.fspath(path))
        self.single_file_per_rank = single_file_per_rank
        self.sync_files = sync_files
        self.thread_count = thread_count
        self.per_thread_copy_ahead = per_thread_copy_ahead
        self.cache_staged_state_dict = cache_staged_state_dict
        self.overwrite = overwrite
        self.save_id = str(uuid.uuid4())

    def reset(self, checkpoint_id=None) -> None:
        """Point the writer at ``checkpoint_id`` (when given) and start a new save id.

        Args:
            checkpoint_id (str or os.PathLike, optional): a new directory.
        """
        if checkpoint_id:
            self.path = Path(os.fspath(checkpoint_id))
        self.save_id = str(uuid.uuid4())

    def set_up_storage_writer(self, is_coordinator: bool, *args, **kwargs) -> None:
        """Create the directory (the coordinator first refuses an existing checkpoint when
        ``overwrite=False``).

        Args:
            is_coordinator (bool): whether this rank writes ``.metadata``.
            rank (int, keyword): this rank (names its file).
        """
        self.rank = kwargs.get("rank", 0 if is_coordinator else getattr(self, "rank", 0))
        if is_coordinator and not self.overwrite and (self.path / _METADATA_FILE).exists():
            raise RuntimeError(f"Checkpoint already exists at {self.path} and overwrite=False")
        self.path.mkdir(parents=True, exist_ok=True)

    def prepare_local_plan(self, plan):
        """This rank's plan, unchanged.

        Args:
            plan (SavePlan): the local plan.

        Returns:
            SavePlan
        """
        return plan

    def prepare_global_plan(self, plans: list) -> list:
        """Give each rank's plan its file prefix (``__<rank>_``).

        Args:
            plans (list of SavePlan): one per rank.

        Returns:
            list of SavePlan
        """
        import dataclasses

        return [dataclasses.replace(p, storage_data=_StoragePrefix(f"__{i}_"))
                for i, p in enumerate(plans)]

    def write_data(self, plan, planner):
        """Write this rank's items into its ``.distcp`` file (see NOTE [ DCP on disk ]).

        Args:
            plan (SavePlan): this rank's final plan.
            planner (SavePlanner): resolves each item's value.

        Returns:
            ember.futures.Future: completed, holding a list of ``WriteResult``.
        """
        from ...futures import Future
        from .storage import WriteResult

        prefix = plan.storage_data.prefix if isinstance(plan.storage_data, _StoragePrefix) \
            else f"__{getattr(self, 'rank', 0)}_"
        where = self._write_items(prefix, [(item.index, planner.resolve_data(item))
                                           for item in plan.items])
        fut = Future()
        fut.set_result([WriteResult(index, info.length, info) for index, info in where.items()])
        return fut

    def finish(self, metadata: Metadata, results: list) -> None:
        """Record where every item went and write ``.metadata``.

        Args:
            metadata (Metadata): the global plan's metadata.
            results (list of list of WriteResult): every rank's results.
        """
        metadata.storage_data = {r.index: r.storage_data for rank in results for r in rank}
        self._write_metadata(metadata)

    def storage_meta(self):
        """The directory and this save's id.

        Returns:
            StorageMeta
        """
        from .metadata import StorageMeta

        return StorageMeta(self.path, self.save_id)

    def _write_items(self, prefix: str, items) -> dict:
        """Write ``[(MetadataIndex, value)]`` into this rank's file; index -> _StorageInfo."""
        name = f"{prefix}0{_SUFFIX}"
        where = {}
        tmp = self.path / (name + ".tmp")
        with open(tmp, "wb") as f:
            for index, value in items:
                data = _item_bytes(value)
                where[index] = _StorageInfo(name, f.tell(), len(data))
                f.write(data)
            f.flush()
            if self.sync_files:
                os.fsync(f.fileno())
        os.replace(tmp, self.path / name)
        return where

    def _write_metadata(self, metadata: Metadata) -> None:
        tmp = self.path / (_METADATA_FILE + ".tmp")
        with open(tmp, "wb") as f:
            _dump_metadata(metadata, f)
            f.flush()
            if self.sync_files:
                os.fsync(f.fileno())
        os.replace(tmp, self.path / _METADATA_FILE)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        """Whether ``checkpoint_id`` can name a directory on this file system.

        Args:
            checkpoint_id (str or os.PathLike): the candidate.

        Returns:
            bool
        """
        return isinstance(checkpoint_id, (str, os.PathLike)) and "://" not in str(checkpoint_id)


def _chunk_sizes(metadata: Metadata, item) -> tuple:
    index = item.storage_index
    chunks = metadata.state_dict_metadata[index.fqn].chunks
    if index.index is not None and index.index < len(chunks):
        chunk = chunks[index.index]
        if tuple(chunk.offsets) == tuple(index.offset or ()):
            return tuple(chunk.sizes)
    return next(tuple(c.sizes) for c in chunks if tuple(c.offsets) == tuple(index.offset or ()))


class FileSystemReader(StorageReader):
    """Reads a checkpoint from a directory written by ``FileSystemWriter`` (ember's or
    PyTorch's).

    Args:
        path (str or os.PathLike): the checkpoint directory.

    Example::

        >>> import tempfile, ember.distributed.checkpoint as dcp
        >>> d = tempfile.mkdtemp(); _ = dcp.save({"w": ember.ones(2)}, checkpoint_id=d)
        >>> sorted(dcp.FileSystemReader(d).read_metadata().state_dict_metadata)
        ['w']
    """

    def __init__(self, path, _extension_registry=None):
        self.path = Path(os.fspath(path))
        self.load_id = str(uuid.uuid4())

    def reset(self, checkpoint_id=None) -> None:
        """Point the reader at ``checkpoint_id`` (when given) and start a new load id.

        Args:
            checkpoint_id (str or os.PathLike, optional): a new directory.
        """
        if checkpoint_id:
            self.path = Path(os.fspath(checkpoint_id))
        self.load_id = str(uuid.uuid4())

    def read_metadata(self, *args, **kwargs) -> Metadata:
        """The checkpoint's ``Metadata``.

        Returns:
            Metadata

        Raises:
            FileNotFoundError: the directory holds no ``.metadata``.
        """
        rank = kwargs.get("rank")
        name = _METADATA_FILE if rank is None else f"__{rank}{_METADATA_FILE}"
        with open(self.path / name, "rb") as f:
            return _load_metadata(f)

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args,
                              **kwargs) -> None:
        """Keep the metadata (where each item's bytes are).

        Args:
            metadata (Metadata): the checkpoint's metadata.
            is_coordinator (bool): whether this rank makes the global plan.
        """
        self.metadata = metadata

    def prepare_local_plan(self, plan):
        """This rank's plan, unchanged.

        Args:
            plan (LoadPlan): the local plan.

        Returns:
            LoadPlan
        """
        return plan

    def prepare_global_plan(self, plans: list) -> list:
        """Every rank's plan, unchanged.

        Args:
            plans (list of LoadPlan): one per rank.

        Returns:
            list of LoadPlan
        """
        return plans

    def read_data(self, plan, planner):
        """Read this rank's items into the planner (NOTE [ Checkpoint planners ]).

        Args:
            plan (LoadPlan): this rank's final plan.
            planner (LoadPlanner): takes each item.

        Returns:
            ember.futures.Future: completed (with None).
        """
        from ...futures import Future

        metadata = getattr(self, "metadata", None) or self.read_metadata()
        self._read_data(plan, planner, metadata)
        fut = Future()
        fut.set_result(None)
        return fut

    def _read_bytes(self, info: _StorageInfo) -> bytes:
        with open(self.path / info.relative_path, "rb") as f:
            f.seek(info.offset)
            return f.read(info.length)

    def _read_item(self, info: _StorageInfo):
        return _loads(self._read_bytes(info))

    def _read_data(self, plan, planner, metadata: Metadata) -> None:
        """Carry out a ``LoadPlan``: each non-tensor to ``planner.load_bytes``, each tensor
        piece copied into ``planner.resolve_tensor`` (NOTE [ Checkpoint planners ])."""
        from ... import no_grad
        from .default_planner import narrow_tensor_by_index
        from .planner import LoadItemType

        def info_of(index):
            info = metadata.storage_data.get(index)
            if info is None:
                raise RuntimeError(f"the checkpoint has no data for {index.fqn} at "
                                   f"offsets {list(index.offset or [])}")
            return info

        stored = {}
        for item in plan.items:
            info = info_of(item.storage_index)
            if item.type == LoadItemType.BYTE_IO:
                planner.load_bytes(item, io.BytesIO(self._read_bytes(info)))
                continue
            key = (info.relative_path, info.offset)
            if key not in stored:  # consecutive pieces often come from one chunk
                stored = {key: self._read_item(info).reshape(_chunk_sizes(metadata, item))}
            piece = narrow_tensor_by_index(stored[key], item.storage_offsets, item.lengths)
            target = planner.resolve_tensor(item).detach()
            if tuple(target.shape) != tuple(piece.shape):
                raise RuntimeError(f"req {item.storage_index} mismatch sizes "
                                   f"{list(target.shape)} vs {list(piece.shape)}")
            with no_grad():
                target.copy_(piece)
            planner.commit_tensor(item, target)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        """Whether ``checkpoint_id`` can name a directory on this file system.

        Args:
            checkpoint_id (str or os.PathLike): the candidate.

        Returns:
            bool
        """
        return isinstance(checkpoint_id, (str, os.PathLike)) and "://" not in str(checkpoint_id)


