"""``torch.distributed._composable``: where older scripts import ``fully_shard`` from.

Example::

    >>> from ember.distributed._composable.fsdp import fully_shard
    >>> fully_shard is ember.distributed.fsdp.fully_shard
    True
"""

from . import fsdp

__all__ = ["fsdp"]
