"""``ember.nn.qat``: the old path of :mod:`ember.ao.nn.qat` (quantization-aware-training
modules, as ``torch.nn.qat``); the same classes."""

from ember.ao.nn.qat import *  # noqa: F403
from ember.ao.nn.qat import __all__  # noqa: F401
