"""Datasets: map-style (``__getitem__``/``__len__``) and iterable, and their combinators."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, TypeVar

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "StackDataset", "Subset", "random_split"]


# as torch's, the datasets are generic in their items (``Dataset[int]``, subclassed as
# ``class D(Dataset[Tensor])``)
T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``dataset[i]`` gives the i-th sample. Subclass it and define
    ``__getitem__`` (and ``__len__`` for samplers that need the size); ``a + b`` concatenates.

    Example:
        >>> class Squares(ember.utils.data.Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         return ember.tensor(float(i * i))
        >>> ds = Squares()
        >>> len(ds), ds[3]
        (4, tensor(9.))
        >>> len(ds + ds)
        8
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset read as a stream (``__iter__``). With worker processes, each worker
    iterates its own copy: shard with ``ember.utils.data.get_worker_info()``.

    Example:
        >>> class Count(ember.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(3))
        >>> list(ember.utils.data.DataLoader(Count(), batch_size=2))
        [tensor([0, 1]), tensor([2])]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the i-th rows of the given tensors (all of the same first size).

    Args:
        *tensors (Tensor): the tensors, indexed along their first dimension.

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(3.0), ember.tensor([0, 1, 0]))
        >>> len(ds), ds[1]
        (3, (tensor(1.), tensor(1)))
    """

    def __init__(self, *tensors):
        if tensors and any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (or dicts) of the samples of several equal-length datasets.

    Args:
        *args (Dataset): datasets whose samples are combined into tuples.
        **kwargs (Dataset): datasets whose samples are combined into dicts, by keyword (give
            either ``args`` or ``kwargs``).

    Example:
        >>> from ember.utils.data import StackDataset, TensorDataset
        >>> images, labels = TensorDataset(ember.zeros(2, 3)), TensorDataset(ember.tensor([7, 8]))
        >>> StackDataset(image=images, label=labels)[1]["label"]
        (tensor(8),)
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given.")
        datasets = list(args) if args else list(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset[T_co]):
    """The datasets one after another (map-style datasets only).

    Args:
        datasets (iterable of Dataset): the datasets, in order.

    Example:
        >>> from ember.utils.data import ConcatDataset, TensorDataset
        >>> ds = ConcatDataset([TensorDataset(ember.arange(2)),
        ...                     TensorDataset(ember.arange(10, 13))])
        >>> len(ds), ds[3], ds[-1]
        (5, (tensor(11),), (tensor(12),))
    """

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        offset = idx - (self.cumulative_sizes[which - 1] if which else 0)
        return self.datasets[which][offset]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after another (lazily: each is iterated in turn).

    Args:
        datasets (iterable of IterableDataset): the datasets, in order.

    Example:
        >>> class Count(ember.utils.data.IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(self.n))
        >>> list(ember.utils.data.ChainDataset([Count(2), Count(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``.

    Args:
        dataset (Dataset): the whole dataset.
        indices (sequence of ints): the indices kept, in order.

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10, 15))
        >>> sub = ember.utils.data.Subset(ds, [4, 0])
        >>> len(sub), sub[0]
        (2, (tensor(14),))
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or
    fractions summing to 1, rounded as PyTorch rounds them).

    Args:
        dataset (Dataset): the dataset to split.
        lengths (sequence of ints or floats): the size of each subset, or its fraction.
        generator (ember.Generator, optional): the source of the permutation. Default: the
            global generator.

    Returns:
        list of Subset: one subset per length.

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(10))
        >>> train, val = ember.utils.data.random_split(ds, [0.8, 0.2],
        ...                                            generator=ember.Generator().manual_seed(0))
        >>> len(train), len(val)
        (8, 2)
    """
    from ... import default_generator, randperm

    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = [int(math.floor(len(dataset) * frac)) for frac in lengths]
        for frac in lengths:
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {lengths.index(frac)} is not between 0 "
                                 "and 1")
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, n in enumerate(lengths):
            if n == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator or default_generator).tolist()
    return [Subset(dataset, indices[offset - n:offset])
            for offset, n in zip(itertools.accumulate(lengths), lengths)]
