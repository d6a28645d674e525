"""``ember.quantization``: the old path of :mod:`ember.ao.quantization` (as
``torch.quantization`` is of ``torch.ao.quantization``); the same objects."""

from ..ao.quantization import *  # noqa: F403
from ..ao.quantization import __all__  # noqa: F401
