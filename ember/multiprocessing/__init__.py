"""``ember.multiprocessing``: Python's multiprocessing, with tensors shared, not copied.

Everything in :mod:`multiprocessing` is available here. Tensors sent through a Queue or
Pipe, or passed to a Pool or Process, are moved to shared memory and received as views of
it (see NOTE [ Sharing storages ] in _shared.py). ``spawn`` starts processes and joins
them, re-raising the first failure.
"""

from __future__ import annotations

import multiprocessing as _mp

from multiprocessing import *  # noqa: F403

from ._shared import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, spawn,
                    start_processes)

__all__ = list(_mp.__all__) + ["spawn", "start_processes", "ProcessContext",
                               "ProcessRaisedException", "ProcessExitedException",
                               "get_sharing_strategy", "set_sharing_strategy",
                               "get_all_sharing_strategies"]

init_reductions()

