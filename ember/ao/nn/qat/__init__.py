"""Quantization-aware-training modules (``torch.ao.nn.qat``): float layers whose weight passes
through a fake-quantize module on every forward."""

from .modules import Conv1d, Conv2d, Conv3d, Linear

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]
