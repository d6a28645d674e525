"""ember.ao: architecture optimisation, as ``torch.ao`` — quantization (``ember.ao.quantization``)
and the modules it swaps in (``ember.ao.nn``). Submodules load on first use.
"""

import importlib as _importlib

_SUBMODULES = frozenset({"quantization", "nn"})


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
