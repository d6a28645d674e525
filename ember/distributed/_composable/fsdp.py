"""``fully_shard`` under its older path (``torch.distributed._composable.fsdp``).

Example::

    >>> from ember.distributed._composable.fsdp import FSDPModule
    >>> FSDPModule.__name__
    'FSDPModule'
"""

from ..fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                    fully_shard)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "fully_shard"]
