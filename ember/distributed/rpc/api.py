"""``torch.distributed.rpc.api``'s names: the calls and the remote reference (defined in
the package; this module is where PyTorch programs sometimes import them from).

Example::

    >>> from ember.distributed.rpc.api import rpc_sync, RRef
    >>> rpc_sync.__module__
    'ember.distributed.rpc'
"""

import functools

from . import RRef, _current_agent, get_worker_info, remote, rpc_async, rpc_sync, shutdown

__all__ = ["RRef", "get_worker_info", "remote", "rpc_async", "rpc_sync", "shutdown"]


def _require_initialized(func):
    """Wrap ``func`` so that calling it before ``init_rpc`` raises (PyTorch's private
    decorator, which torch_geometric's distributed helpers use).

    Args:
        func (callable): the function.

    Returns:
        callable: ``func``, raising RuntimeError while RPC is not initialized.

    Example::

        >>> f = _require_initialized(lambda: 1)
        >>> try:
        ...     f()
        ... except RuntimeError as e:
        ...     print(str(e)[:30])
        RPC has not been initialized.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _current_agent()  # raises when RPC is not initialized
        return func(*args, **kwargs)

    return wrapper
