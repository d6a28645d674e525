"""``ember.nn.quantized.dynamic``: the old path of :mod:`ember.ao.nn.quantized.dynamic`
(as ``torch.nn.quantized.dynamic``); the same classes."""

from ember.ao.nn.quantized.dynamic import *  # noqa: F403
from ember.ao.nn.quantized.dynamic import __all__  # noqa: F401
