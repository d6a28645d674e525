"""The parts of ``ember.utils.benchmark``, at the paths PyTorch gives them."""

from .common import *  # noqa: F401,F403
from .compare import *  # noqa: F401,F403
from .fuzzer import *  # noqa: F401,F403
from .timer import *  # noqa: F401,F403
