"""Samplers: which indices a DataLoader draws, in which order."""

from __future__ import annotations

import math
from typing import Generic, TypeVar

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]


# generic in the indices they give, as torch's (``Sampler[int]``)
T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: an iterable of indices (or of lists of indices, for batch samplers).
    Subclasses define ``__iter__`` (and ``__len__`` when the count is known).

    Args:
        data_source (Dataset, optional): accepted for PyTorch compatibility; unused.

    Example:
        >>> class Evens(ember.utils.data.Sampler):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(0, self.n, 2))
        >>> list(Evens(5))
        [0, 2, 4]
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices 0, 1, ..., ``len(data_source) - 1``, in order.

    Args:
        data_source (Sized): the dataset (only its length is used).

    Example:
        >>> list(ember.utils.data.SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _seed_generator(generator):
    from ... import Generator, empty, int64

    if generator is not None:
        return generator
    seed = int(empty((), dtype=int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A random permutation of the indices (or ``num_samples`` draws with replacement).

    Args:
        data_source (Sized): the dataset (only its length is used).
        replacement (bool): draw with replacement. Default: False.
        num_samples (int, optional): how many indices to draw. Default: ``len(data_source)``.
        generator (ember.Generator, optional): the source of randomness. Default: a seed drawn
            from the global generator.

    Example:
        >>> s = ember.utils.data.RandomSampler(range(5), generator=ember.Generator().manual_seed(0))
        >>> sorted(s)
        [0, 1, 2, 3, 4]
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ... import randint, randperm

        n = len(self.data_source)
        g = _seed_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=g).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), generator=g).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=g).tolist()
            yield from randperm(n, generator=g).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order.

    Args:
        indices (sequence of ints): the indices to draw from.
        generator (ember.Generator, optional): the source of randomness.

    Example:
        >>> s = ember.utils.data.SubsetRandomSampler([10, 11, 12])
        >>> sorted(s), len(s)
        ([10, 11, 12], 3)
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from ... import randperm

        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Args:
        weights (sequence of floats): one non-negative weight per index.
        num_samples (int): how many indices to draw.
        replacement (bool): draw with replacement. Default: True.
        generator (ember.Generator, optional): the source of randomness.

    Example:
        >>> s = ember.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=4)
        >>> list(s)
        [1, 1, 1, 1]
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        from ... import as_tensor, float64

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=float64)
        if w.dim() != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape "
                f"{tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ... import multinomial

        idx = multinomial(self.weights, self.num_samples, self.replacement,
                          generator=self.generator)
        yield from idx.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Args:
        sampler (Sampler or iterable): the indices to group.
        batch_size (int): the size of each batch.
        drop_last (bool): drop the last batch when it is smaller than ``batch_size``.

    Example:
        >>> from ember.utils.data import BatchSampler, SequentialSampler
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got "
                f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


def _process_group_shape(num_replicas, rank):
    """World size and rank from the default process group, for what was not given."""
    try:
        from ... import distributed as dist
    except ImportError:
        dist = None
    if dist is None or not getattr(dist, "is_initialized", lambda: False)():
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return (dist.get_world_size() if num_replicas is None else num_replicas,
            dist.get_rank() if rank is None else rank)


class DistributedSampler(Sampler[T_co]):
    """The share of a dataset for replica ``rank`` of ``num_replicas`` (padded or dropped
    to equal sizes), shuffled by ``seed + epoch`` (call ``set_epoch`` each epoch).

    Args:
        dataset (Dataset): the dataset (its length is used).
        num_replicas (int, optional): the number of processes. Default: the default process
            group's world size.
        rank (int, optional): this process's rank. Default: the default process group's.
        shuffle (bool): shuffle the indices each epoch. Default: True.
        seed (int): the shuffling seed, the same on every rank. Default: 0.
        drop_last (bool): drop the tail instead of padding to equal shares. Default: False.

    Example:
        >>> s = ember.utils.data.DistributedSampler(range(5), num_replicas=2, rank=1,
        ...                                         shuffle=False)
        >>> list(s)
        [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            num_replicas, rank = _process_group_shape(num_replicas, rank)
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        from ... import Generator, randperm

        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
