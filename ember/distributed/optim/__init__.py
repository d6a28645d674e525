"""``ember.distributed.optim``: ``ZeroRedundancyOptimizer`` (optimizer state sharded across
ranks), as ``torch.distributed.optim``.

Example::

    >>> from ember.distributed.optim import ZeroRedundancyOptimizer
    >>> ZeroRedundancyOptimizer.__name__
    'ZeroRedundancyOptimizer'
"""

from . import zero_redundancy_optimizer
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer", "zero_redundancy_optimizer"]
