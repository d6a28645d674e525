"""``PixelShuffle`` and ``PixelUnshuffle`` at PyTorch's module path
(``torch.nn.modules.pixelshuffle``)."""

from .sampling import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]
