"""``ember.distributed.algorithms``: ``Join`` for uneven inputs, and DDP communication hooks
(``ddp_comm_hooks``), as ``torch.distributed.algorithms``.

Example::

    >>> from ember.distributed.algorithms import Join, Joinable, JoinHook
    >>> issubclass(ember.nn.parallel.DistributedDataParallel, Joinable)
    True
"""

from . import ddp_comm_hooks, join
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks", "join"]
