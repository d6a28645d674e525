from .conv import Conv2d
from .functional_modules import FloatFunctional, QFunctional
from .linear import Linear, LinearPackedParams
from .stubs import DeQuantize, Quantize

__all__ = ["Conv2d", "DeQuantize", "FloatFunctional", "Linear", "LinearPackedParams",
           "QFunctional", "Quantize"]
