"""Instance normalization layers, at the module path PyTorch keeps them under
(``torch.nn.modules.instancenorm``); ember defines them in ``normalization`` and ``lazy``."""

from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401
from .normalization import (  # noqa: F401
    InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
