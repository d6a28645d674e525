"""Which DataLoader worker this process is: ``get_worker_info()``.

A worker process records it as it starts (``_worker_loop`` in ``dataloader.py``), and
collation reads it to build a worker's batches straight in shared memory; it sits below
both, so that neither imports the other for it.
"""

from __future__ import annotations

__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: id, num_workers, seed, dataset.

    Its attributes are fixed once made: assigning one raises ``RuntimeError``.

    Args:
        **kwargs: the attributes: ``id`` (this worker's index), ``num_workers``, ``seed``
            (the worker's base seed) and ``dataset`` (the worker's copy of the dataset).

    Returns:
        A read-only record of the worker.

    Example:
        >>> from ember.utils.data.dataloader import WorkerInfo
        >>> info = WorkerInfo(id=0, num_workers=2, seed=7, dataset=None)
        >>> info
        WorkerInfo(id=0, num_workers=2, seed=7, dataset=None)
        >>> info.id = 1
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot assign attributes to WorkerInfo objects
    """

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
        self._frozen = True

    def __setattr__(self, key, value):
        if getattr(self, "_frozen", False):
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, value)

    def __repr__(self):
        fields = ", ".join(f"{k}={self.__dict__[k]}" for k in
                           ("id", "num_workers", "seed", "dataset"))
        return f"WorkerInfo({fields})"


_worker_info = None


def get_worker_info():
    """In a DataLoader worker process: its ``WorkerInfo`` (``id``, ``num_workers``, ``seed``,
    ``dataset``). In the main process: None.

    Returns:
        WorkerInfo or None.

    Example:
        >>> ember.utils.data.get_worker_info() is None
        True
    """
    return _worker_info


def _set_worker_info(info):
    """Record this process's WorkerInfo (once, as a worker process starts)."""
    global _worker_info
    _worker_info = info
