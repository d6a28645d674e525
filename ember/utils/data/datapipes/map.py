"""Map-style DataPipes, registered as methods of ``MapDataPipe``."""

from __future__ import annotations

from ._decorator import functional_datapipe
from .datapipe import DataChunk, MapDataPipe

__all__ = ["Batcher", "Mapper", "SequenceWrapper"]


class SequenceWrapper(MapDataPipe):
    """Wrap a sequence (or mapping) as the start of a map-style pipeline.

    Example:
        >>> SequenceWrapper("abc")[1]
        'b'
    """

    def __init__(self, sequence, deepcopy=True):
        self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


@functional_datapipe("map")
class Mapper(MapDataPipe):
    """Apply ``fn`` to the element at each index."""

    def __init__(self, datapipe, fn):
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class Batcher(MapDataPipe):
    """Index ``i`` gives the ``i``-th ``DataChunk`` of ``batch_size`` elements."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size = datapipe, batch_size
        self.drop_last, self.wrapper_class = drop_last, wrapper_class

    def __getitem__(self, index):
        start = index * self.batch_size
        stop = min(start + self.batch_size, len(self.datapipe))
        if index < 0 or index >= len(self):
            raise IndexError(f"Index {index} is out of bound.")
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
