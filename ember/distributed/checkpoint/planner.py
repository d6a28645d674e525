"""The planner protocol of a distributed checkpoint: what to write and read, item by item.

NOTE [ Checkpoint planners ]
``save`` and ``load`` do not walk the state dict themselves; a planner does, in the order
PyTorch's checkpoint calls it, so a planner written for PyTorch runs unchanged:

- save: every rank ``set_up_planner(state_dict, storage_meta, is_coordinator)`` then
  ``create_local_plan()`` (a ``SavePlan`` of ``WriteItem``); rank 0 takes every rank's
  plan to ``create_global_plan(plans)`` -> ``(plans, Metadata)``; each rank takes its own
  plan back through ``finish_plan(plan)`` and the writer asks ``resolve_data(item)`` for
  each item's value (a tensor, or a ``BytesIO`` holding the pickled object).
- load: every rank ``set_up_planner(state_dict, metadata, is_coordinator)`` then
  ``create_local_plan()`` (a ``LoadPlan`` of ``ReadItem``); rank 0
  ``create_global_plan(plans)``; each rank ``finish_plan(plan)``; the reader hands each
  non-tensor to ``load_bytes(item, BytesIO)`` and copies each stored tensor piece into
  ``resolve_tensor(item)``, then calls ``commit_tensor(item, tensor)``.

The default planners live in ``default_planner.py``. A failure in any step, on any rank,
raises ``CheckpointException`` on every rank (``_coordinate.step``).
"""

from __future__ import annotations

import abc
import io
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from .metadata import ChunkStorageMetadata, Metadata, MetadataIndex, StorageMeta, TensorProperties

__all__ = ["BytesIOWriteData", "LoadItemType", "LoadPlan", "LoadPlanner", "ReadItem",
           "SavePlan", "SavePlanner", "TensorWriteData", "WriteItem", "WriteItemType"]


class WriteItemType(Enum):
    """What a ``WriteItem`` stores: a whole tensor, a piece of one, or a pickled object.

    Example::

        >>> from ember.distributed.checkpoint.planner import WriteItemType
        >>> WriteItemType.BYTE_IO.value
        3
    """

    TENSOR = auto()
    SHARD = auto()
    BYTE_IO = auto()


class LoadItemType(Enum):
    """What a ``ReadItem`` reads: (part of) a tensor or a pickled object.

    Example::

        >>> from ember.distributed.checkpoint.planner import LoadItemType
        >>> LoadItemType.TENSOR.value
        1
    """

    TENSOR = auto()
    BYTE_IO = auto()


@dataclass(frozen=True)
class BytesIOWriteData:
    """The size of a pickled object to write.

    Args:
        nbytes (int): its length in bytes.

    Example::

        >>> from ember.distributed.checkpoint.planner import BytesIOWriteData
        >>> BytesIOWriteData(8).nbytes
        8
    """

    nbytes: int


@dataclass(frozen=True)
class TensorWriteData:
    """What a tensor item writes: its chunk of the whole tensor, properties and global size.

    Args:
        chunk (ChunkStorageMetadata): offsets and sizes of the piece written.
        properties (TensorProperties): dtype and the rest (a planner may change the dtype
            it records, as long as ``resolve_data`` returns that dtype).
        size (ember.Size): the whole tensor's size.

    Example::

        >>> from ember.distributed.checkpoint.planner import TensorWriteData
        >>> from ember.distributed.checkpoint.metadata import *
        >>> d = TensorWriteData(ChunkStorageMetadata(ember.Size([0]), ember.Size([2])),
        ...                     TensorProperties(), ember.Size([2]))
        >>> d.size
        ember.Size([2])
    """

    chunk: ChunkStorageMetadata
    properties: TensorProperties
    size: Any


@dataclass(frozen=True)
class WriteItem:
    """One thing a rank writes.

    Args:
        index (MetadataIndex): its key (and chunk offsets for a tensor).
        type (WriteItemType): tensor, shard or pickled object.
        bytes_io_data (BytesIOWriteData, optional): for a pickled object.
        tensor_data (TensorWriteData, optional): for a tensor or shard.

    Example::

        >>> from ember.distributed.checkpoint.planner import WriteItem, WriteItemType
        >>> from ember.distributed.checkpoint.metadata import MetadataIndex
        >>> WriteItem(MetadataIndex("epoch"), WriteItemType.BYTE_IO).tensor_storage_size()
    """

    index: MetadataIndex
    type: WriteItemType
    bytes_io_data: BytesIOWriteData | None = None
    tensor_data: TensorWriteData | None = None

    def tensor_storage_size(self) -> int | None:
        """Bytes the tensor item's chunk takes, or None for a non-tensor item.

        Returns:
            int or None
        """
        if self.tensor_data is None:
            return None
        numel = 1
        for n in self.tensor_data.chunk.sizes:
            numel *= n
        return numel * self.tensor_data.properties.dtype.itemsize


@dataclass(frozen=True)
class ReadItem:
    """One piece a rank reads: ``lengths`` elements from ``storage_offsets`` of a stored
    chunk into ``dest_offsets`` of a state-dict entry.

    Args:
        type (LoadItemType): tensor or pickled object.
        dest_index (MetadataIndex): the state-dict entry filled.
        dest_offsets (ember.Size): where in that entry the piece goes.
        storage_index (MetadataIndex): the stored chunk read.
        storage_offsets (ember.Size): where in the chunk the piece starts.
        lengths (ember.Size): the piece's size.

    Example::

        >>> from ember.distributed.checkpoint.planner import ReadItem, LoadItemType
        >>> from ember.distributed.checkpoint.metadata import MetadataIndex
        >>> i = MetadataIndex("w", [0])
        >>> ReadItem(LoadItemType.TENSOR, i, ember.Size([0]), i, ember.Size([0]),
        ...          ember.Size([4])).lengths
        ember.Size([4])
    """

    type: LoadItemType
    dest_index: MetadataIndex
    dest_offsets: Any
    storage_index: MetadataIndex
    storage_offsets: Any
    lengths: Any


@dataclass(frozen=True)
class SavePlan:
    """What one rank writes.

    Args:
        items (list of WriteItem): the items.
        storage_data: data for the storage writer.
        planner_data: data for the planner (the default planner keeps the flattened keys'
            paths here).
        usable (bool): False marks a plan a caching planner must not reuse. Default: True.

    Example::

        >>> from ember.distributed.checkpoint import SavePlan
        >>> SavePlan([]).usable
        True
    """

    items: list
    storage_data: Any = None
    planner_data: Any = None
    usable: bool = True


@dataclass
class LoadPlan:
    """What one rank reads.

    Args:
        items (list of ReadItem): the items.
        storage_data: data for the storage reader.
        planner_data: data for the planner.

    Example::

        >>> from ember.distributed.checkpoint import LoadPlan
        >>> LoadPlan([]).items
        []
    """

    items: list
    storage_data: Any = None
    planner_data: Any = None


class SavePlanner:
    """The interface ``save`` plans through (see NOTE [ Checkpoint planners ]); subclass
    ``DefaultSavePlanner`` to change one step.

    Example::

        >>> from ember.distributed.checkpoint import DefaultSavePlanner, SavePlanner
        >>> issubclass(DefaultSavePlanner, SavePlanner)
        True
    """

    @abc.abstractmethod
    def set_up_planner(self, state_dict: dict, storage_meta: StorageMeta | None = None,
                       is_coordinator: bool = False) -> None:
        """Start a save of ``state_dict``; called on every rank.

        Args:
            state_dict (dict): what this rank saves.
            storage_meta (StorageMeta, optional): the writer's checkpoint id and save id.
            is_coordinator (bool): whether this rank makes the global plan.
        """

    @abc.abstractmethod
    def create_local_plan(self) -> SavePlan:
        """This rank's items.

        Returns:
            SavePlan
        """

    @abc.abstractmethod
    def create_global_plan(self, all_plans: list) -> tuple[list, Metadata]:
        """On the coordinator: every rank's plan -> the final plans and the metadata.

        Args:
            all_plans (list of SavePlan): one per rank.

        Returns:
            (list of SavePlan, Metadata)
        """

    @abc.abstractmethod
    def finish_plan(self, new_plan: SavePlan) -> SavePlan:
        """This rank's final plan, as the coordinator decided it.

        Args:
            new_plan (SavePlan): the coordinator's plan for this rank.

        Returns:
            SavePlan
        """

    @abc.abstractmethod
    def resolve_data(self, write_item: WriteItem) -> Any:
        """The value to write for ``write_item``: a tensor, or a ``BytesIO``.

        Args:
            write_item (WriteItem): an item of the final plan.

        Returns:
            Tensor or io.BytesIO
        """


class LoadPlanner:
    """The interface ``load`` plans through (see NOTE [ Checkpoint planners ]); subclass
    ``DefaultLoadPlanner`` to change one step.

    Example::

        >>> from ember.distributed.checkpoint import DefaultLoadPlanner, LoadPlanner
        >>> issubclass(DefaultLoadPlanner, LoadPlanner)
        True
    """

    @abc.abstractmethod
    def set_up_planner(self, state_dict: dict, metadata: Metadata | None = None,
                       is_coordinator: bool = False) -> None:
        """Start a load into ``state_dict``; called on every rank.

        Args:
            state_dict (dict): what this rank fills.
            metadata (Metadata, optional): the checkpoint's metadata.
            is_coordinator (bool): whether this rank makes the global plan.
        """

    @abc.abstractmethod
    def create_local_plan(self) -> LoadPlan:
        """This rank's reads.

        Returns:
            LoadPlan
        """

    @abc.abstractmethod
    def create_global_plan(self, global_plan: list) -> list:
        """On the coordinator: every rank's plan -> the final plans.

        Args:
            global_plan (list of LoadPlan): one per rank.

        Returns:
            list of LoadPlan
        """

    @abc.abstractmethod
    def finish_plan(self, central_plan: LoadPlan) -> LoadPlan:
        """This rank's final plan.

        Args:
            central_plan (LoadPlan): the coordinator's plan for this rank.

        Returns:
            LoadPlan
        """

    @abc.abstractmethod
    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        """Take a stored non-tensor value (``ember.load(value)`` unpickles it).

        Args:
            read_item (ReadItem): which entry.
            value (io.BytesIO): the stored bytes.
        """

    def resolve_bytes(self, read_item: ReadItem) -> io.BytesIO:
        """A buffer for a reader that writes bytes in place (unused by ember's reader).

        Args:
            read_item (ReadItem): which entry.

        Returns:
            io.BytesIO

        Raises:
            NotImplementedError: unless a subclass provides it.
        """
        raise NotImplementedError("LoadPlanner.resolve_bytes is not implemented")

    @abc.abstractmethod
    def resolve_tensor(self, read_item: ReadItem):
        """The tensor (of ``read_item.lengths``) the stored piece is copied into.

        Args:
            read_item (ReadItem): which piece.

        Returns:
            Tensor
        """

    @abc.abstractmethod
    def commit_tensor(self, read_item: ReadItem, tensor) -> None:
        """Called after the piece was copied into ``tensor`` (``resolve_tensor``'s result).

        Args:
            read_item (ReadItem): which piece.
            tensor (Tensor): the filled tensor.
        """
