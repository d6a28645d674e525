"""``ember.utils.data.distributed``: where PyTorch keeps ``DistributedSampler``."""

from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
