"""``torch.distributed.tensor.experimental``: DTensor features PyTorch still calls
experimental. ember has ``implicit_replication``.

Example::

    >>> from ember.distributed.tensor.experimental import implicit_replication
    >>> with implicit_replication():
    ...     pass
"""

import contextlib

from . import _ops

__all__ = ["implicit_replication"]


@contextlib.contextmanager
def implicit_replication():
    """Within it, a plain tensor that meets a DTensor in an operation is taken as a
    ``Replicate()`` DTensor on the other argument's mesh, instead of raising "got mixed
    torch.Tensor and DTensor".

    Each rank's plain tensor is used as its copy of the whole value: the result is only
    right when the plain tensor really holds the same values on every rank. Libraries that
    step sharded parameters with per-step tensors they build locally (opacus' clipping
    factors, optimizer constants) rely on it.

    Args:
        (none)

    Returns:
        a context manager; the previous setting comes back on exit, also after an exception.

    Example::

        >>> from ember.distributed.tensor.experimental import implicit_replication
        >>> with implicit_replication():  # doctest: +SKIP
        ...     y = dtensor * ember.ones(4)  # a DTensor with y's placements
    """
    prev = _ops._implicit_replication[0]
    _ops._implicit_replication[0] = True
    try:
        yield
    finally:
        _ops._implicit_replication[0] = prev
