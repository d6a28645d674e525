"""``ember.nn``: modules, parameters, functional ops, initialisers and utilities."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = list(_modules_all) + ["Parameter", "Buffer", "UninitializedParameter",
                                "UninitializedBuffer"]
