"""A ``DistributedSampler`` that starts at ``start_index``: after a restart, the ranks of
the new group share out only the samples not yet seen.

Example::

    >>> from ember.distributed.elastic.utils.data import ElasticDistributedSampler
    >>> s = ElasticDistributedSampler(range(10), num_replicas=2, rank=0, start_index=6)
    >>> len(s), all(6 <= i < 10 for i in s)
    (2, True)
"""

from __future__ import annotations

import math
from collections.abc import Sized

from .....utils.data import Dataset
from .....utils.data.distributed import DistributedSampler

__all__ = ["Dataset", "DistributedSampler", "ElasticDistributedSampler"]


class ElasticDistributedSampler(DistributedSampler):
    """Each of ``num_replicas`` ranks takes every ``num_replicas``-th sample of a shuffled
    order (seeded by the epoch, see ``set_epoch``) of indices ``start_index`` ..
    ``len(dataset) - 1``, the order padded by its own start to divide evenly.

    Args:
        dataset: a sized dataset.
        num_replicas (int, optional): the number of ranks (default: the group's size).
        rank (int, optional): this rank (default: the group rank).
        start_index (int): the first index to sample.

    Raises:
        TypeError: the dataset has no length.
        ValueError: ``start_index`` is not below the dataset's length.

    Example::

        >>> sorted(ElasticDistributedSampler(range(4), num_replicas=1, rank=0, start_index=2))
        [2, 3]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 start_index: int = 0):
        super().__init__(dataset=dataset, num_replicas=num_replicas, rank=rank)
        if not isinstance(dataset, Sized):
            raise TypeError("Dataset must be an instance of collections.abc.Sized")
        if start_index >= len(dataset):
            raise ValueError(f"Start index {start_index} should be less than dataset size "
                             f"{len(dataset)}")
        self.start_index = start_index
        self.num_samples = math.ceil(float(len(dataset) - start_index) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        from ..... import Generator, randperm

        g = Generator()
        g.manual_seed(self.epoch)
        indices = randperm(len(self.dataset) - self.start_index, generator=g) \
            .add(self.start_index).tolist()
        indices += indices[: self.total_size - len(indices)]
        if len(indices) != self.total_size:
            raise AssertionError
        indices = indices[self.rank: self.total_size: self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples
