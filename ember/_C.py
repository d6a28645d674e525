"""``ember._C``: the few names of PyTorch's ``torch._C`` that Python programs use directly
(Tensor subclasses opt out of ``__torch_function__`` with ``_disabled_torch_function_impl``
and run code without it under ``DisableTorchFunctionSubclass``)."""

from ._core.generator import Generator  # noqa: F401  (torch._C.Generator, its printed home)
from ._overrides import (  # noqa: F401  (re-exported)
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "Generator",
           "_disabled_torch_function_impl"]


class _ExperimentalConfig:
    """Extra profiler settings (``torch._C._profiler._ExperimentalConfig``): hardware
    counters, per-kernel metrics and verbose stacks. Ember's profiler records the same events
    whatever they say, but for ``verbose``: with ``with_stack=True``, events list the
    Python calls around them as their ``stack``, as PyTorch's do only then.

    Args:
        profiler_metrics: hardware counter names (CUPTI; recorded only on GPUs).
        profiler_measure_per_kernel: measure the counters per kernel.
        verbose: fill events' ``stack`` (under ``with_stack``).
        performance_events: CPU performance counter names.
        enable_cuda_sync_events: record CUDA synchronisations.
        **options: PyTorch's further settings, kept as attributes.

    Returns:
        _ExperimentalConfig: the settings.

    Example::

        >>> cfg = ember._C._profiler._ExperimentalConfig(verbose=True)
        >>> cfg.verbose
        True
    """

    def __init__(self, profiler_metrics=(), profiler_measure_per_kernel=False, verbose=False,
                 performance_events=(), enable_cuda_sync_events=False, **options):
        self.profiler_metrics = list(profiler_metrics)
        self.profiler_measure_per_kernel = bool(profiler_measure_per_kernel)
        self.verbose = bool(verbose)
        self.performance_events = list(performance_events)
        self.enable_cuda_sync_events = bool(enable_cuda_sync_events)
        for k, v in options.items():
            setattr(self, k, v)

    def __repr__(self):
        return f"_ExperimentalConfig(verbose={self.verbose})"


def _profiler_module():
    import sys
    import types

    from .autograd.profiler_util import ProfilerActivity

    mod = types.ModuleType(__name__ + "._profiler",
                           "The profiler's settings types, as torch._C._profiler names them.")
    mod._ExperimentalConfig = _ExperimentalConfig
    mod.ProfilerActivity = ProfilerActivity
    sys.modules[mod.__name__] = mod
    return mod


def __getattr__(name):
    # ``_C._profiler`` needs the profiler's types: made on first use
    if name == "_profiler":
        mod = _profiler_module()
        globals()["_profiler"] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
