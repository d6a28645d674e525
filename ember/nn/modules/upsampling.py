"""Upsampling layers at PyTorch's module path (``torch.nn.modules.upsampling``)."""

from .sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
