"""``ember.backends.quantized``: which quantized engine quantization recipes are written for.

``supported_engines`` lists the engines PyTorch's x86 CPU build lists, and ``engine`` starts
at "x86" as there. ember runs its quantized tensors and modules with one set of NumPy
kernels whatever the engine, so the setting only picks what recipes key on (for example
``get_default_qat_qconfig(torch.backends.quantized.engine)`` chooses its observers by it).
Assigning an engine not in the list raises RuntimeError, as PyTorch does.

Example::

    >>> ember.backends.quantized.engine
    'x86'
    >>> ember.backends.quantized.engine = "qnnpack"
"""

from __future__ import annotations

from ._flags import settings_module, value_setting

__all__: list = []

# NOTE [ Quantized engines ]
# Scripts commonly do `torch.backends.quantized.engine = "qnnpack"` (or pick one out of
# supported_engines) before building a qconfig; an engine list of ["none"] broke every one of
# them. ember's quantized ops are engine-independent NumPy code, so it accepts the names the
# x86 CPU build of PyTorch accepts, in its order. "none" is refused with PyTorch's message
# (its NoQEngine cannot be selected by name either).
_state = {"engine": "x86", "supported_engines": ["qnnpack", "onednn", "x86", "fbgemm"]}


def _check_engine(value):
    if value == "none":
        raise RuntimeError("quantized engine NoQEngine is not supported")
    if value not in _state["supported_engines"]:
        raise RuntimeError(f"{value} is not a valid value for quantized engine")


settings_module(__name__, {
    "engine": value_setting("engine", _state, _check_engine),
    "supported_engines": property(lambda _m: list(_state["supported_engines"])),
})
