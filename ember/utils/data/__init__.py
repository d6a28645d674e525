"""``ember.utils.data``: datasets, samplers, collation and the DataLoader."""

from ._collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
    SubsetRandomSampler, WeightedRandomSampler,
)

__all__ = [
    "DataLoader", "get_worker_info", "default_collate", "default_convert", "Dataset",
    "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset",
    "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
]
