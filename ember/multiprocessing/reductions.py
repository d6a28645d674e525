"""Pickling tensors for multiprocessing: storages travel by shared-memory handle.

Registered with ``multiprocessing.reduction.ForkingPickler`` (what Queue, Pipe, Pool and
Process arguments use), so a tensor sent to another process is moved to shared memory and
received as a view of the same memory: writes on either side are visible on the other.
The standard ``pickle`` module is unaffected and still copies.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.reduction import ForkingPickler

import numpy as np

from .._core import dtype as _dt
from .._core.storage import _root
from .._core.tensor import Tensor, wrap
from . import _shared


def _rebuild_tensor(buffer_args, dtype_name, offset, shape, strides, requires_grad,
                    is_param):
    token, nbytes, fd_holder, path = buffer_args
    fd = fd_holder.detach() if fd_holder is not None else None
    buf = _shared.rebuild_buffer(token, nbytes, fd=fd, path=path)
    d = _dt.lookup(dtype_name)
    arr = np.ndarray(shape, dtype=d.np, buffer=buf, offset=offset, strides=strides)
    if is_param:
        from ..nn.parameter import Parameter

        return Parameter(wrap(arr), requires_grad)
    t = wrap(arr)
    t._rg = requires_grad
    return t


def _rebuild_copy(array, requires_grad):
    t = wrap(array)
    t._rg = requires_grad
    return t


def reduce_tensor(t):
    if t._rg and t._grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    from ..nn.parameter import Parameter

    if type(t._data) is not np.ndarray:
        raise RuntimeError("ember.multiprocessing: sharing CUDA tensors between processes is "
                           "not supported yet; move them to the CPU first")
    _shared.share_storage(t)   # (no local of t's data here: NOTE [ A heap scan beside ...
    a = t._data
    root = _root(a)
    info = _shared.shared_info(root)
    if info is None:  # an empty storage: nothing to share, send by copy
        return (_rebuild_copy, (a.copy(), t._rg))
    info.sent = True
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if info.fd is not None:
        fd_holder = multiprocessing.reduction.DupFd(info.fd)
    else:
        fd_holder = None
    return (_rebuild_tensor, ((info.token, info.nbytes, fd_holder, info.path), t.dtype.name,
                              offset, a.shape, a.strides, t._rg, isinstance(t, Parameter)))


def init_reductions():
    """Register how tensors and parameters are pickled between processes (through shared
    memory). ``import ember.multiprocessing`` calls it; calling it again is harmless.

    Returns:
        None

    Example:
        >>> import ember.multiprocessing as mp
        >>> mp.init_reductions()
    """
    ForkingPickler.register(Tensor, reduce_tensor)
    from ..nn.parameter import Parameter

    ForkingPickler.register(Parameter, reduce_tensor)
