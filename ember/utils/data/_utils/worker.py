"""``ember.utils.data._utils.worker``: PyTorch's import path for ``get_worker_info``."""

from .._worker_info import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]
