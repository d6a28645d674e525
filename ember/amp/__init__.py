"""``ember.amp``: automatic mixed precision -- ``autocast`` (NOTE [ Autocast ] in
``autocast_mode.py``) and ``GradScaler`` (loss scaling)."""

from .autocast_mode import (  # noqa: F401
    _enter_autocast, _exit_autocast, autocast, custom_bwd, custom_fwd, is_autocast_available,
)
from .grad_scaler import GradScaler  # noqa: F401
from . import autocast_mode, grad_scaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
