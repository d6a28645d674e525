"""Batch normalization layers, at the module path PyTorch keeps them under
(``torch.nn.modules.batchnorm``); ember defines them in ``normalization`` and ``lazy``."""

from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .normalization import (  # noqa: F401
    BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm, _NormBase,
)

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d",
           "LazyBatchNorm3d", "SyncBatchNorm"]
