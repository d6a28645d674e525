"""Quantized modules (``torch.ao.nn.quantized``): layers that take and return quantized
tensors, made by ``ember.ao.quantization.convert``; ``dynamic`` holds the dynamically
quantized ones that take and return floats."""

import importlib as _importlib

from .modules import (
    Conv2d, DeQuantize, FloatFunctional, Linear, LinearPackedParams, QFunctional, Quantize,
)

__all__ = ["Conv2d", "DeQuantize", "FloatFunctional", "Linear", "LinearPackedParams",
           "QFunctional", "Quantize"]


def __getattr__(name):
    if name == "dynamic":
        return _importlib.import_module(f"{__name__}.dynamic")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
