"""Data helpers for elastic training: cycling over epochs, and a distributed sampler that
resumes part-way through its dataset.

Example::

    >>> from ember.distributed.elastic.utils.data import CyclingIterator
    >>> list(CyclingIterator(2, lambda epoch: iter([epoch])))
    [0, 1]
"""

from .cycling_iterator import CyclingIterator
from .elastic_distributed_sampler import ElasticDistributedSampler

__all__ = ["CyclingIterator", "ElasticDistributedSampler"]
