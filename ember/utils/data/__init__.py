"""``ember.utils.data``: datasets, samplers, collation and the DataLoader."""

from . import _utils, datapipes, distributed, graph, graph_settings
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from .datapipes._decorator import (
    argument_validation, functional_datapipe, guaranteed_datapipes_determinism,
    non_deterministic, runtime_validation, runtime_validation_disabled,
)
from .datapipes.datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe
from .sampler import (
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
    SubsetRandomSampler, WeightedRandomSampler,
)

__all__ = [
    "DataLoader", "get_worker_info", "default_collate", "default_convert", "Dataset",
    "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset",
    "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
    "IterDataPipe", "MapDataPipe", "DFIterDataPipe", "DataChunk", "functional_datapipe",
    "guaranteed_datapipes_determinism", "non_deterministic", "argument_validation",
    "runtime_validation", "runtime_validation_disabled",
]
