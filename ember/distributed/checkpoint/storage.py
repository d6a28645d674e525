"""The storage layer of a distributed checkpoint: ``StorageWriter`` and ``StorageReader``.

NOTE [ Checkpoint storage layers ]
Where a planner decides *what* is written and read (NOTE [ Checkpoint planners ]), a
storage layer decides *where*. ``save`` calls, on every rank, ``set_up_storage_writer
(is_coordinator, rank=...)`` and ``prepare_local_plan(plan)``; on rank 0
``prepare_global_plan(plans)``; on every rank ``write_data(plan, planner)``, a future of
``WriteResult`` (each item's index, size and where it went: ``storage_data``); and on rank
0 ``finish(metadata, results)`` with every rank's results. ``load`` calls
``read_metadata()``, ``set_up_storage_reader(metadata, is_coordinator)``,
``prepare_local_plan``/``prepare_global_plan`` and ``read_data(plan, planner)``, which
hands each item to the planner (``load_bytes`` / ``resolve_tensor`` + ``commit_tensor``).
``FileSystemWriter``/``FileSystemReader`` are the directory layout of NOTE [ DCP on disk ];
any subclass of these interfaces works with ``save``/``load`` the same way.
"""

from __future__ import annotations

import abc
import os
from dataclasses import dataclass
from typing import Any

from .metadata import Metadata, MetadataIndex, StorageMeta

__all__ = ["StorageReader", "StorageWriter", "WriteResult"]


@dataclass(frozen=True)
class WriteResult:
    """What writing one item produced.

    Args:
        index (MetadataIndex): the item.
        size_in_bytes (int): how many bytes it took.
        storage_data: where it went (recorded in ``Metadata.storage_data``).

    Example::

        >>> from ember.distributed.checkpoint.storage import WriteResult
        >>> from ember.distributed.checkpoint.metadata import MetadataIndex
        >>> WriteResult(MetadataIndex("w"), 8, None).size_in_bytes
        8
    """

    index: MetadataIndex
    size_in_bytes: int
    storage_data: Any


class StorageWriter(abc.ABC):
    """Where ``save`` writes (see NOTE [ Checkpoint storage layers ]).

    Example::

        >>> from ember.distributed.checkpoint import FileSystemWriter, StorageWriter
        >>> issubclass(FileSystemWriter, StorageWriter)
        True
    """

    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Start a new save (into ``checkpoint_id`` when given).

        Args:
            checkpoint_id (str or os.PathLike, optional): where the next save goes.
        """

    @abc.abstractmethod
    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        """Called on every rank before planning (``rank=`` is passed as a keyword).

        Args:
            is_coordinator (bool): whether this rank writes the metadata.
        """

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        """Adjust this rank's ``SavePlan``.

        Args:
            plan (SavePlan): the planner's local plan.

        Returns:
            SavePlan
        """

    @abc.abstractmethod
    def prepare_global_plan(self, plans: list) -> list:
        """On the coordinator: adjust every rank's plan (file names, say).

        Args:
            plans (list of SavePlan): one per rank.

        Returns:
            list of SavePlan
        """

    @abc.abstractmethod
    def write_data(self, plan, planner):
        """Write this rank's items, each value from ``planner.resolve_data(item)``.

        Args:
            plan (SavePlan): this rank's final plan.
            planner (SavePlanner): resolves each item's value.

        Returns:
            ember.futures.Future: of a list of ``WriteResult``.
        """

    @abc.abstractmethod
    def finish(self, metadata: Metadata, results: list) -> None:
        """On the coordinator, after every rank wrote: record the metadata.

        Args:
            metadata (Metadata): the global plan's metadata.
            results (list of list of WriteResult): every rank's results.
        """

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """Whether this storage can take ``checkpoint_id``.

        Args:
            checkpoint_id (str or os.PathLike): the candidate.

        Returns:
            bool
        """

    def storage_meta(self) -> StorageMeta | None:
        """What the planner records about this storage (None: nothing).

        Returns:
            StorageMeta or None
        """
        return None


class StorageReader(abc.ABC):
    """Where ``load`` reads from (see NOTE [ Checkpoint storage layers ]).

    Example::

        >>> from ember.distributed.checkpoint import FileSystemReader, StorageReader
        >>> issubclass(FileSystemReader, StorageReader)
        True
    """

    @abc.abstractmethod
    def reset(self, checkpoint_id: str | os.PathLike | None = None) -> None:
        """Start a new load (from ``checkpoint_id`` when given).

        Args:
            checkpoint_id (str or os.PathLike, optional): where the next load reads.
        """

    @abc.abstractmethod
    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        """The checkpoint's metadata.

        Returns:
            Metadata
        """

    @abc.abstractmethod
    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any,
                              **kwargs: Any) -> None:
        """Called on every rank before planning.

        Args:
            metadata (Metadata): as ``read_metadata`` returned it.
            is_coordinator (bool): whether this rank makes the global plan.
        """

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        """Adjust this rank's ``LoadPlan``.

        Args:
            plan (LoadPlan): the planner's local plan.

        Returns:
            LoadPlan
        """

    @abc.abstractmethod
    def prepare_global_plan(self, plans: list) -> list:
        """On the coordinator: adjust every rank's plan.

        Args:
            plans (list of LoadPlan): one per rank.

        Returns:
            list of LoadPlan
        """

    @abc.abstractmethod
    def read_data(self, plan, planner):
        """Read this rank's items into the planner.

        Args:
            plan (LoadPlan): this rank's final plan.
            planner (LoadPlanner): takes each item.

        Returns:
            ember.futures.Future: completes (with None) when everything was read.
        """

    @classmethod
    @abc.abstractmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike) -> bool:
        """Whether this storage can read ``checkpoint_id``.

        Args:
            checkpoint_id (str or os.PathLike): the candidate.

        Returns:
            bool
        """
