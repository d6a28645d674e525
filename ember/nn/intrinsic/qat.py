"""``ember.nn.intrinsic.qat``: the old path of :mod:`ember.ao.nn.intrinsic.qat`; the same
classes and functions."""

from ember.ao.nn.intrinsic.qat import *  # noqa: F403
from ember.ao.nn.intrinsic.qat import __all__  # noqa: F401
