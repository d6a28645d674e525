from .conv import Conv1d, Conv2d, Conv3d
from .linear import Linear

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]
