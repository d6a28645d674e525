"""``ember.nn``: modules, parameters, functional ops, initialisers and utilities."""

from . import attention, common_types, functional, grad, init, utils  # noqa: F401
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .modules.utils import factory_kwargs
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402

__all__ = list(_modules_all) + ["Parameter", "Buffer", "UninitializedParameter",
                                "UninitializedBuffer", "factory_kwargs", "DataParallel"]
