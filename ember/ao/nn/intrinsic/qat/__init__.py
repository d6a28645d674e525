"""Fused quantization-aware-training modules (``torch.ao.nn.intrinsic.qat``)."""

from .modules import *  # noqa: F403
from .modules import __all__  # noqa: F401
