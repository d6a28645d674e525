"""Fused float modules (``torch.ao.nn.intrinsic``): a conv or linear with the batch norm and
ReLU after it, kept together so quantization treats them as one op."""

from .modules import *  # noqa: F403
from .modules import __all__  # noqa: F401
from .modules.fused import _FusedModule  # noqa: F401
