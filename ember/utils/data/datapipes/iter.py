"""Iterable DataPipes, each registered as a method of ``IterDataPipe`` under the name in
its ``functional_datapipe`` decorator."""

from __future__ import annotations

import random

from ._decorator import functional_datapipe
from .datapipe import DataChunk, IterDataPipe

__all__ = ["Batcher", "Collator", "Concater", "Enumerator", "Filter", "Header",
           "IterableWrapper", "Mapper", "ShardingFilter", "Shuffler", "UnBatcher", "Zipper"]


class IterableWrapper(IterDataPipe):
    """Wrap any iterable as the start of a pipeline.

    Args:
        iterable: the source.
        deepcopy: accepted for PyTorch compatibility (the source is not copied).

    Example:
        >>> list(IterableWrapper([1, 2]))
        [1, 2]
    """

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __len__(self):
        return len(self.iterable)


@functional_datapipe("map")
class Mapper(IterDataPipe):
    """Apply ``fn`` to each element. Example: ``IterableWrapper([1]).map(str)`` gives '1'."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe, self.fn = datapipe, fn
        self.input_col, self.output_col = input_col, output_col

    def _apply(self, x):
        if self.input_col is None:
            return self.fn(x)
        x = list(x) if isinstance(x, tuple) else x
        x[self.output_col if self.output_col is not None else self.input_col] = \
            self.fn(x[self.input_col])
        return x

    def __iter__(self):
        for x in self.datapipe:
            yield self._apply(x)

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("filter")
class Filter(IterDataPipe):
    """Keep the elements for which ``filter_fn`` is true."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def __iter__(self):
        for x in self.datapipe:
            if self.filter_fn(x if self.input_col is None else x[self.input_col]):
                yield x


@functional_datapipe("batch")
class Batcher(IterDataPipe):
    """Group elements into ``DataChunk`` lists of ``batch_size``."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size = datapipe, batch_size
        self.drop_last, self.wrapper_class = drop_last, wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcher(IterDataPipe):
    """Flatten batches ``unbatch_level`` levels deep (-1: all the way)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def _flatten(self, x, level):
        if level == 0 or not isinstance(x, list):
            yield x
            return
        for item in x:
            yield from self._flatten(item, level - 1)

    def __iter__(self):
        for batch in self.datapipe:
            yield from self._flatten(batch, self.unbatch_level)


@functional_datapipe("collate")
class Collator(Mapper):
    """Collate each batch (``default_collate`` unless ``collate_fn`` is given)."""

    def __init__(self, datapipe, conversion=None, collate_fn=None):
        from .._collate import default_collate

        super().__init__(datapipe, collate_fn or conversion or default_collate)


@functional_datapipe("shuffle")
class Shuffler(IterDataPipe):
    """Shuffle within a buffer of ``buffer_size`` elements; ``set_shuffle(False)`` turns it
    off and ``set_seed`` makes the next pass reproducible.

    Each pass seeds its Python ``random.Random`` from the seed given by ``set_seed`` (which
    one pass uses up) or, without one, from a seed drawn from ember's global generator; once
    the buffer is full each new element swaps with a uniformly chosen buffered one, and the
    rest leave in random order at the end, as in PyTorch, so a seeded pass yields its order.
    """

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else UnBatcher(datapipe, unbatch_level)
        self.buffer_size = buffer_size
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed):
        self._seed = seed
        return self

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        if self._seed is None:
            from .... import empty, int64

            self._seed = int(empty((), dtype=int64).random_().item())
        self._rng.seed(self._seed)
        self._seed = None
        buffer = []
        for x in self.datapipe:
            if len(buffer) == self.buffer_size:
                i = self._rng.randint(0, len(buffer) - 1)
                buffer[i], x = x, buffer[i]
                yield x
            else:
                buffer.append(x)
        while buffer:
            yield buffer.pop(self._rng.randint(0, len(buffer) - 1))

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("concat")
class Concater(IterDataPipe):
    """The given pipes one after another."""

    def __init__(self, *datapipes):
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class Zipper(IterDataPipe):
    """Tuples of one element from each pipe, stopping at the shortest."""

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for `ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


@functional_datapipe("enumerate")
class Enumerator(IterDataPipe):
    """``(index, element)`` pairs, counting from ``starting_index``."""

    def __init__(self, source_datapipe, starting_index=0):
        self.source_datapipe, self.starting_index = source_datapipe, starting_index

    def __iter__(self):
        yield from enumerate(self.source_datapipe, self.starting_index)

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("header")
class Header(IterDataPipe):
    """The first ``limit`` elements."""

    def __init__(self, source_datapipe, limit=10):
        self.source_datapipe, self.limit = source_datapipe, limit

    def __iter__(self):
        for i, x in enumerate(self.source_datapipe):
            if self.limit is not None and i >= self.limit:
                return
            yield x


@functional_datapipe("sharding_filter")
class ShardingFilter(IterDataPipe):
    """Keep every ``num_of_instances``-th element from ``instance_id``: the DataLoader sets
    these in each worker so the workers split the stream instead of repeating it."""

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.num_of_instances, self.instance_id = 1, 0

    def is_shardable(self):
        return True

    def apply_sharding(self, num_of_instances, instance_id, sharding_group=None):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        self.num_of_instances, self.instance_id = num_of_instances, instance_id

    def __iter__(self):
        for i, x in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield x
