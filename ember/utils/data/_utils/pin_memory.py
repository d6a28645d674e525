"""``ember.utils.data._utils.pin_memory``: page-locking a batch for fast GPU copies."""

from __future__ import annotations

import collections.abc

__all__ = ["pin_memory"]


def pin_memory(data, device=None):
    """``data`` with every tensor pinned (page-locked); containers are recursed.

    Without an accelerator there is nothing to pin for, and tensors come back as they are.

    Args:
        data: a batch.
        device: the accelerator the memory is pinned for (unused on the CPU).

    Returns:
        The batch, same structure.

    Example:
        >>> import ember
        >>> pin_memory({"x": ember.ones(2)})["x"]
        tensor([1., 1.])
    """
    from ...._core.tensor import Tensor

    if isinstance(data, Tensor):
        pin = getattr(data, "pin_memory", None)
        from .... import cuda

        return pin() if pin is not None and cuda.is_available() else data
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: pin_memory(v, device) for k, v in data.items()})
        except TypeError:
            return {k: pin_memory(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(d, device) for d in data))
    if isinstance(data, tuple):
        return [pin_memory(d, device) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([pin_memory(d, device) for d in data])
        except TypeError:
            return [pin_memory(d, device) for d in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
