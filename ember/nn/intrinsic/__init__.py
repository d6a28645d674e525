"""``ember.nn.intrinsic``: the old path of :mod:`ember.ao.nn.intrinsic` (fused modules, as
``torch.nn.intrinsic``); ``qat`` and ``quantized`` follow their ``ember.ao.nn.intrinsic``
namesakes. The same classes."""

from ember.ao.nn.intrinsic import *  # noqa: F403
from ember.ao.nn.intrinsic import __all__  # noqa: F401

from . import qat, quantized  # noqa: F401,E402
