"""``ember._C``: the few names of PyTorch's ``torch._C`` that Python programs use directly
(Tensor subclasses opt out of ``__torch_function__`` with ``_disabled_torch_function_impl``
and run code without it under ``DisableTorchFunctionSubclass``)."""

from ._core.generator import Generator  # noqa: F401  (torch._C.Generator, its printed home)
from ._overrides import (  # noqa: F401  (re-exported)
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
)
from . import _C_functorch as _functorch  # noqa: F401  (torch._C._functorch)

# ``from torch._C._functorch import is_batchedtensor`` (tensordict) imports torch._C's
# submodule, which the import system looks for only under a package: an empty search path
# makes this module one, and the alias's finder maps the name to ember._C_functorch
__path__: list = []

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


# the metaclass of Tensor and its subclasses (``torch._C._TensorMeta``, named in type hints):
# ember's Tensor is a plain class
_TensorMeta = type


class ScriptModule:
    """The compiled-module type behind a scripted module (``torch.ScriptModule``, which is
    ``torch._C.ScriptModule``, not ``torch.jit.ScriptModule``). Ember's scripted modules run
    their Python code and have no such compiled half, so nothing is an instance of this
    class; programs name it in type hints.

    Args:
        none: it cannot be made.

    Returns:
        no instances.

    Example::

        >>> isinstance(ember.jit.script(ember.nn.Linear(2, 2)), ember.ScriptModule)
        False
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("ember has no compiled ScriptModule; use ember.jit.script")


def _log_api_usage_once(event):
    """Note that an API was used (``torch._C._log_api_usage_once``). PyTorch hands the event
    name to a usage logger that is off unless a process installs one; ember keeps no such log,
    and libraries (torchmetrics, lightning) call this only to be counted.

    Args:
        event (str): the name of the API used, such as ``"torchmetrics.metric.Accuracy"``.

    Returns:
        None

    Example::

        >>> ember._C._log_api_usage_once("my_library.MyModel")
    """
    return None


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


def _parse_to(*args, **kwargs):
    """Read the arguments of ``Module.to`` / ``Tensor.to`` (``torch._C._nn._parse_to``), as
    libraries that override ``to`` (Lightning's device mixin) do.

    Args:
        *args: a device, a dtype, a tensor (its device and dtype), or a device and a dtype.
        **kwargs: ``device``, ``dtype``, ``non_blocking``, ``memory_format``, ``copy``.

    Returns:
        tuple: ``(device or None, dtype or None, non_blocking, memory_format or None)``.

    Example::

        >>> ember._C._nn._parse_to("cpu", ember.float64)
        (device(type='cpu'), ember.float64, False, None)
    """
    from ._ops.conversion import _parse_to as parse

    non_blocking = bool(kwargs.get("non_blocking", False))
    dev, dtype, _, memory_format = parse(args, dict(kwargs))
    return dev, dtype, non_blocking, memory_format


def _nn_module():
    import sys
    import types

    mod = types.ModuleType(__name__ + "._nn", "The argument parsers torch._C._nn offers.")
    mod._parse_to = _parse_to
    sys.modules[mod.__name__] = mod
    return mod


# -- TorchScript's executor switches (timm's utils/jit.py sets them) ---------------------------
# ember scripts run as Python (NOTE in ember/jit), so these only keep the values a program set
_jit_state = {"profiling_mode": True, "profiling_executor": True, "texpr_fuser": True,
              "fuse_cpu": False, "fuse_gpu": False}


def _jit_set(key, value):
    old = _jit_state[key]
    _jit_state[key] = bool(value)
    return old


def _jit_set_profiling_mode(flag: bool) -> bool:
    """Set TorchScript's profiling mode; returns the previous setting.

    Args:
        flag (bool): the new setting.

    Returns:
        bool: the previous one.

    Example::

        >>> old = ember._C._jit_set_profiling_mode(False)
        >>> ember._C._jit_set_profiling_mode(old)
        False
    """
    return _jit_set("profiling_mode", flag)


def _jit_set_profiling_executor(flag: bool) -> bool:
    """Set TorchScript's profiling executor; returns the previous setting.

    Args:
        flag (bool): the new setting.

    Returns:
        bool: the previous one.

    Example::

        >>> old = ember._C._jit_set_profiling_executor(False)
        >>> ember._C._jit_set_profiling_executor(old)
        False
    """
    return _jit_set("profiling_executor", flag)


def _jit_set_texpr_fuser_enabled(flag: bool) -> None:
    """Turn TorchScript's tensor-expression fuser on or off (kept as a setting).

    Args:
        flag (bool): the new setting.

    Returns:
        None.

    Example::

        >>> ember._C._jit_set_texpr_fuser_enabled(True)
    """
    _jit_set("texpr_fuser", flag)


def _jit_texpr_fuser_enabled() -> bool:
    """Whether TorchScript's tensor-expression fuser is on (the setting).

    Returns:
        bool.

    Example::

        >>> isinstance(ember._C._jit_texpr_fuser_enabled(), bool)
        True
    """
    return _jit_state["texpr_fuser"]


def _jit_override_can_fuse_on_cpu(flag: bool) -> None:
    """Allow or forbid TorchScript fusion on the CPU (kept as a setting).

    Args:
        flag (bool): the new setting.

    Returns:
        None.

    Example::

        >>> ember._C._jit_override_can_fuse_on_cpu(False)
    """
    _jit_set("fuse_cpu", flag)


def _jit_override_can_fuse_on_gpu(flag: bool) -> None:
    """Allow or forbid TorchScript fusion on the GPU (kept as a setting).

    Args:
        flag (bool): the new setting.

    Returns:
        None.

    Example::

        >>> ember._C._jit_override_can_fuse_on_gpu(False)
    """
    _jit_set("fuse_gpu", flag)


def _jit_can_fuse_on_cpu() -> bool:
    """Whether TorchScript may fuse on the CPU (the setting). Default: False.

    Returns:
        bool.

    Example::

        >>> ember._C._jit_can_fuse_on_cpu()
        False
    """
    return _jit_state["fuse_cpu"]


def _jit_can_fuse_on_gpu() -> bool:
    """Whether TorchScript may fuse on the GPU (the setting). Default: False.

    Returns:
        bool.

    Example::

        >>> ember._C._jit_can_fuse_on_gpu()
        False
    """
    return _jit_state["fuse_gpu"]


def _jit_set_nvfuser_enabled(flag: bool) -> None:
    """A no-op that warns: TorchScript no longer has nvFuser (as in PyTorch).

    Args:
        flag (bool): ignored.

    Returns:
        None.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember._C._jit_set_nvfuser_enabled(False)
    """
    import warnings

    warnings.warn("nvfuser is no longer supported in torch script, use "
                  "_jit_set_nvfuser_enabled is deprecated and a no-op", stacklevel=2)


def _jit_set_nvfuser_guard_mode(flag: bool) -> None:
    """A no-op that warns: TorchScript no longer has nvFuser (as in PyTorch).

    Args:
        flag (bool): ignored.

    Returns:
        None.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember._C._jit_set_nvfuser_guard_mode(False)
    """
    import warnings

    warnings.warn("nvfuser is no longer supported in torch script, use "
                  "_jit_set_nvfuser_guard_mode is deprecated and a no-op", stacklevel=2)


def _get_privateuse1_backend_name() -> str:
    """The name of the out-of-tree device backend slot (``"privateuseone"`` until a
    backend renames it with ``ember.utils.rename_privateuse1_backend``).

    Returns:
        str.

    Example::

        >>> ember._C._get_privateuse1_backend_name()
        'privateuseone'
    """
    try:
        from .utils import _privateuse1_name

        return _privateuse1_name()
    except ImportError:
        return "privateuseone"


def _get_accelerator(check=False):
    """The accelerator device type in use (``cuda`` with a GPU), else the CPU device.

    Args:
        check (bool): accepted for PyTorch's signature.

    Returns:
        ember.device.

    Example::

        >>> ember._C._get_accelerator().type in ("cpu", "cuda")
        True
    """
    from . import accelerator, device

    acc = accelerator.current_accelerator()
    return acc if acc is not None else device("cpu")


def _set_grad_enabled(mode: bool) -> None:
    """Turn gradient recording on or off for this thread (``ember.set_grad_enabled``'s
    switch without the context manager).

    Args:
        mode (bool): record (True) or not.

    Returns:
        None.

    Example::

        >>> ember._C._set_grad_enabled(True)
    """
    from .autograd import grad_mode

    grad_mode.set_grad_enabled(bool(mode))


def _are_functorch_transforms_active() -> bool:
    """Whether an ``ember.func`` transform (``vmap``, ``grad``, ``vjp``, ``jvp``, ``jacrev``,
    ``jacfwd``, ``functionalize``, ...) is running on this thread: libraries choose code the
    transforms can follow by it (NOTE [ Transform layers ] in ember/_C_functorch.py).

    Returns:
        bool: True inside a transformed function, False outside.

    Example::

        >>> import ember
        >>> from ember.func import grad
        >>> ember._C._are_functorch_transforms_active()
        False
        >>> seen = []
        >>> _ = grad(lambda x: seen.append(ember._C._are_functorch_transforms_active())
        ...          or x.sum())(ember.ones(2))
        >>> seen
        [True]
    """
    return _functorch.transforms_active()


def _get_tracing_state():
    """The active TorchScript tracer's state: None (ember's tracing records through the
    dispatcher, with no tracer object for programs to query).

    Returns:
        None.

    Example::

        >>> ember._C._get_tracing_state() is None
        True
    """
    return None


def __getattr__(name):
    # ``_C._profiler`` needs the profiler's types: made on first use
    if name == "_profiler":
        mod = _profiler_module()
        globals()["_profiler"] = mod
        return mod
    if name == "_nn":
        mod = globals()["_nn"] = _nn_module()
        return mod
    if name == "_LinAlgError":  # torch.linalg.LinAlgError's own home and name
        from ._ops.linalg_decomp import LinAlgError

        return LinAlgError
    if name in ("DispatchKey", "DispatchKeySet", "_ExcludeDispatchKeyGuard",
                "_IncludeDispatchKeyGuard"):  # torchvision builds its autocast key set
        from ._library import dispatch_keys

        return getattr(dispatch_keys, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
