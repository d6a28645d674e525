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


# -- the metadata pickle under PyTorch's names ------------------------------------------------

def _torch_path(cls) -> tuple[str, str] | None:
    module = getattr(cls, "__module__", "")
    if module.startswith("ember.distributed.checkpoint"):
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


def _loads(data: bytes):
    from ... import load

    return load(io.BytesIO(data), map_location="cpu", weights_only=False)


class FileSystemWriter:
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

    def _prepare(self) -> None:
        if not self.overwrite and (self.path / _METADATA_FILE).exists():
            raise RuntimeError(f"Checkpoint already exists at {self.path} and overwrite=False")
        self.path.mkdir(parents=True, exist_ok=True)

    def _write_items(self, rank: int, items) -> dict:
        """Write ``[(MetadataIndex, value)]`` into this rank's file; index -> _StorageInfo."""
        name = f"__{rank}_0{_SUFFIX}"
        where = {}
        tmp = self.path / (name + ".tmp")
        with open(tmp, "wb") as f:
            for index, value in items:
                data = _dumps(value)
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


class FileSystemReader:
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

    def _read_item(self, info: _StorageInfo):
        with open(self.path / info.relative_path, "rb") as f:
            f.seek(info.offset)
            return _loads(f.read(info.length))

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        """Whether ``checkpoint_id`` can name a directory on this file system.

        Args:
            checkpoint_id (str or os.PathLike): the candidate.

        Returns:
            bool
        """
        return isinstance(checkpoint_id, (str, os.PathLike)) and "://" not in str(checkpoint_id)


