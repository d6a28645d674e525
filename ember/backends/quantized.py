"""``ember.backends.quantized``: the quantized-kernel engine; ember has none yet.

``supported_engines`` lists the engines this build can run: only "none", since quantized
kernels come with the quantization work. Assigning another ``engine`` raises RuntimeError,
as PyTorch does for an engine it was built without.

Example::

    >>> ember.backends.quantized.engine, ember.backends.quantized.supported_engines
    ('none', ['none'])
"""

from __future__ import annotations

from ._flags import settings_module, value_setting

__all__: list = []

_state = {"engine": "none", "supported_engines": ["none"]}


def _check_engine(value):
    if value not in _state["supported_engines"]:
        raise RuntimeError(f"{value} is not a valid value for quantized engine (ember has no "
                           "quantized kernels yet)")


settings_module(__name__, {
    "engine": value_setting("engine", _state, _check_engine),
    "supported_engines": property(lambda _m: list(_state["supported_engines"])),
})
