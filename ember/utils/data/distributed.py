"""``ember.utils.data.distributed``: where PyTorch keeps ``DistributedSampler`` (and, as there,
the ``Dataset`` and ``Sampler`` base classes it is written against)."""

from .dataset import Dataset  # noqa: F401  (a name of the PyTorch module)
from .sampler import DistributedSampler, Sampler  # noqa: F401

__all__ = ["DistributedSampler"]
