"""Gradient communication hooks for FSDP1 (``FullyShardedDataParallel.register_comm_hook``)."""

from . import default_hooks
from .default_hooks import DefaultState, LowPrecisionState

__all__ = ["default_hooks", "DefaultState", "LowPrecisionState"]
