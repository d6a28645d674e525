"""``torch.distributed.rpc.api``'s names: the calls and the remote reference (defined in
the package; this module is where PyTorch programs sometimes import them from).

Example::

    >>> from ember.distributed.rpc.api import rpc_sync, RRef
    >>> rpc_sync.__module__
    'ember.distributed.rpc'
"""

from . import RRef, get_worker_info, remote, rpc_async, rpc_sync, shutdown

__all__ = ["RRef", "get_worker_info", "remote", "rpc_async", "rpc_sync", "shutdown"]
