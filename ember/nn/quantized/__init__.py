"""``ember.nn.quantized``: the old path of :mod:`ember.ao.nn.quantized` (as
``torch.nn.quantized`` is of ``torch.ao.nn.quantized``); the same classes, so a model built
through either path converts, saves and loads the same way. ``dynamic`` holds the dynamically
quantized modules."""

from ember.ao.nn.quantized import *  # noqa: F403
from ember.ao.nn.quantized import __all__  # noqa: F401

from . import dynamic  # noqa: F401,E402
