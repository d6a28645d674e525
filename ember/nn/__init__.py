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


def __getattr__(name):
    # the old quantization paths (nn.quantized, nn.intrinsic, nn.qat) load on first use
    if name in ("quantized", "intrinsic", "qat"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
