"""``ember.utils.benchmark``: timing code and printing comparisons (``torch.utils.benchmark``).

:class:`Timer` runs a statement in blocks and returns a :class:`Measurement` (median, IQR,
replicates, printed as PyTorch prints it); :class:`Compare` lays many measurements out as
tables. Times are wall-clock seconds of ember's (NumPy) execution.
"""

from .utils.common import (  # noqa: F401
    Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads, trim_sigfig,
    unit_to_english,
)
from .utils.compare import Colorize, Compare  # noqa: F401
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias  # noqa: F401
from .utils.sparse_fuzzer import FuzzedSparseTensor  # noqa: F401
from .utils.timer import Language, Timer, timer  # noqa: F401

__all__ = ["Colorize", "Compare", "FuzzedParameter", "FuzzedSparseTensor", "FuzzedTensor",
           "Fuzzer", "Language", "Measurement", "ParameterAlias", "TaskSpec", "Timer",
           "ordered_unique", "select_unit", "set_torch_threads", "timer", "trim_sigfig",
           "unit_to_english"]
