"""``ember.distributed.algorithms``: ``Join`` for uneven inputs, DDP communication hooks
(``ddp_comm_hooks``) and model averaging (``model_averaging``), as
``torch.distributed.algorithms``.

Example::

    >>> from ember.distributed.algorithms import Join, Joinable, JoinHook
    >>> issubclass(ember.nn.parallel.DistributedDataParallel, Joinable)
    True
"""

from . import ddp_comm_hooks, join, model_averaging
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks", "join", "model_averaging"]
