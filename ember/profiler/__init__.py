"""``ember.profiler``: see where time and memory go, with PyTorch's profiler API.

``profile`` records every op call (as a layer of the mode stack, NOTE [ Dispatch ] in
ember/_dispatch.py -- nothing is pushed, and nothing costs, outside a profile),
``record_function`` blocks and backward nodes; ``key_averages().table()`` prints PyTorch's
table and ``export_chrome_trace`` writes a trace Perfetto and chrome://tracing open.
See NOTE [ Profiler recording ] in ``_recorder.py``.

Example::

    >>> import ember
    >>> from ember.profiler import profile, record_function, ProfilerActivity
    >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
    ...     with record_function("forward"):
    ...         y = ember.ones(8, 8) @ ember.ones(8, 8)
    >>> "forward" in prof.key_averages().table()
    True
"""

from __future__ import annotations

from ..autograd.profiler_util import DeviceType, ProfilerActivity
from . import itt, profiler
from .profiler import (
    ExecutionTraceObserver, KinetoStepTracker, ProfilerAction, RecordScope, _KinetoProfile,
    is_fbcode, kineto_available, profile, schedule, supported_activities,
    tensorboard_trace_handler,
)
from .record_function import record_function


def __getattr__(name):
    # PyTorch re-exports these from torch.optim; import lazily (optim imports much)
    if name == "Optimizer":
        from ..optim.optimizer import Optimizer
        return Optimizer
    if name == "register_optimizer_step_post_hook":
        from ..optim.optimizer import register_optimizer_step_post_hook
        return register_optimizer_step_post_hook
    raise AttributeError(f"module 'ember.profiler' has no attribute '{name}'")


__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function", "ExecutionTraceObserver"]
