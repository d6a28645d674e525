"""``ember.nn.intrinsic.quantized``: the old path of :mod:`ember.ao.nn.intrinsic.quantized`;
the same classes."""

from ember.ao.nn.intrinsic.quantized import *  # noqa: F403
from ember.ao.nn.intrinsic.quantized import __all__  # noqa: F401
