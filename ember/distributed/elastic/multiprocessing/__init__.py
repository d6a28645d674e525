"""``ember.distributed.elastic.multiprocessing``: starting local worker processes, their
logs and their failures (``torch.distributed.elastic.multiprocessing``).

:func:`start_processes` runs a program or a Python function once per local rank (see
:mod:`.api`); ``errors`` records a worker's exception for the launcher's report.

Example::

    >>> import sys
    >>> from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, start_processes
    >>> pc = start_processes("demo", sys.executable, {0: ("-c", "pass"), 1: ("-c", "pass")},
    ...                      {0: {}, 1: {}}, DefaultLogsSpecs(log_dir="/dev/null"))
    >>> pc.wait(period=0.05).return_values
    {0: None, 1: None}
"""

from . import errors  # noqa: F401
from .api import (  # noqa: F401
    DefaultLogsSpecs,
    LogsDest,
    LogsSpecs,
    MultiprocessContext,
    PContext,
    RunProcsResult,
    SignalException,
    Std,
    SubprocessContext,
    start_processes,
    to_map,
)
from .errors import ProcessFailure, record  # noqa: F401
from ..utils.logging import get_logger  # noqa: F401

__all__ = ["start_processes", "MultiprocessContext", "PContext", "ProcessFailure",
           "RunProcsResult", "SignalException", "Std", "LogsDest", "LogsSpecs",
           "DefaultLogsSpecs", "SubprocessContext", "to_map"]
