"""ember.ao.nn: the modules quantization swaps in (``torch.ao.nn``): fused float modules
(``intrinsic``), quantization-aware-training modules (``qat``, ``intrinsic.qat``).
Submodules load on first use.
"""

import importlib as _importlib

_SUBMODULES = frozenset({"intrinsic", "qat", "quantized"})


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
