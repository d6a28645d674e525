"""``ember.cuda.memory``: how much GPU memory ember's tensors hold, and freeing the cache.

ember's CUDA arrays come from CuPy's memory pool, which plays the part of PyTorch's caching
allocator: "allocated" bytes are those held by live arrays (``used_bytes``), "reserved" bytes
those the pool holds from the driver (``total_bytes``), and ``empty_cache`` returns the
unused blocks. CuPy keeps no peaks, so the ``max_*`` values are the highest ember has seen
at calls to these functions since the last ``reset_peak_memory_stats``.

Without CuPy, or before CUDA is first used, the counters are 0 and the stats empty, as in
PyTorch; see NOTE [ CUDA without a GPU ] in ember/cuda/_runtime.py for the rest.

Example::

    >>> ember.cuda.memory_allocated()  # doctest: +SKIP
    0
"""

from __future__ import annotations

import collections
import warnings

from . import _runtime
from ._runtime import NOT_COMPILED, require_gpu

__all__ = [
    "clock_rate", "empty_cache", "get_per_process_memory_fraction", "host_memory_stats",
    "ipc_collect", "list_gpu_processes", "max_memory_allocated", "max_memory_cached",
    "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_cached",
    "memory_reserved", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
    "memory_usage", "power_draw", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_memory_stats",
    "set_per_process_memory_fraction", "temperature", "utilization",
]

_peaks: dict = {}  # device index -> {"allocated": bytes, "reserved": bytes}
_fractions: dict = {}  # device index -> fraction given to set_per_process_memory_fraction


def _cuda():
    from .. import cuda

    return cuda


def _pool_bytes(index: int) -> tuple:
    cp = _runtime.cupy()
    with cp.cuda.Device(index):
        pool = cp.get_default_memory_pool()
        return pool.used_bytes(), pool.total_bytes()


def memory_stats(device=None) -> dict:
    """The memory counters of a GPU, keyed as PyTorch's (``"allocated_bytes.all.current"``,
    ``"allocated_bytes.all.peak"``, ``"reserved_bytes.all.current"``, ...).

    Args:
        device: the device (default: the current one).

    Returns:
        An OrderedDict; empty without CuPy or before CUDA is first used.

    Example::

        >>> stats = ember.cuda.memory_stats()
        >>> isinstance(stats, dict)
        True
    """
    if not _cuda().is_initialized():
        return collections.OrderedDict()
    index = _runtime.device_index(device, optional=True)
    allocated, reserved = _pool_bytes(index)
    peak = _peaks.setdefault(index, {"allocated": 0, "reserved": 0})
    peak["allocated"] = max(peak["allocated"], allocated)
    peak["reserved"] = max(peak["reserved"], reserved)
    stats = {}
    for key, current, top in (("allocated_bytes", allocated, peak["allocated"]),
                              ("reserved_bytes", reserved, peak["reserved"]),
                              ("active_bytes", allocated, peak["allocated"])):
        for pool in ("all", "large_pool", "small_pool"):
            stats[f"{key}.{pool}.current"] = current if pool == "all" else 0
            stats[f"{key}.{pool}.peak"] = top if pool == "all" else 0
    stats["num_alloc_retries"] = 0
    stats["num_ooms"] = 0
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` as nested dicts (``{"allocated_bytes": {"all": {"current": ...}}}``).

    Args:
        device: the device (default: the current one).

    Returns:
        dict; empty without CuPy or before CUDA is first used.

    Example::

        >>> isinstance(ember.cuda.memory_stats_as_nested_dict(), dict)
        True
    """
    nested: dict = {}
    for key, value in memory_stats(device).items():
        node = nested
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def memory_allocated(device=None) -> int:
    """Bytes held by live CUDA tensors on a device (0 without CuPy or before first use).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.memory_allocated() >= 0
        True
    """
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    """The most bytes seen held by live CUDA tensors since the last peak reset.

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.max_memory_allocated() >= 0
        True
    """
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes CuPy's memory pool holds from the driver on a device (allocated plus cached).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.memory_reserved() >= 0
        True
    """
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    """The most bytes seen reserved by the memory pool since the last peak reset.

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.max_memory_reserved() >= 0
        True
    """
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved`` (warns FutureWarning).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.cuda.memory_cached() >= 0
        True
    """
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved`` (warns FutureWarning).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.cuda.max_memory_cached() >= 0
        True
    """
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def _require_allocator(fn: str) -> None:
    # PyTorch's CPU build lacks the allocator bindings and raises AttributeError here.
    if not _runtime.is_compiled():
        raise AttributeError(f"ember.cuda.{fn}: {NOT_COMPILED}")


def reset_peak_memory_stats(device=None) -> None:
    """Start the ``max_memory_*`` peaks afresh from the current values.

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_peak_memory_stats()
    """
    _require_allocator("reset_peak_memory_stats")
    if not _cuda().is_initialized():
        return
    index = _runtime.device_index(device, optional=True)
    _peaks.pop(index, None)


def reset_accumulated_memory_stats(device=None) -> None:
    """Reset the accumulated counters (CuPy keeps none beyond the peaks, which stay).

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_accumulated_memory_stats()
    """
    _require_allocator("reset_accumulated_memory_stats")


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated: warns FutureWarning and calls ``reset_peak_memory_stats`` (all peaks).

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_max_memory_allocated()  # doctest: +SKIP
    """
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated: warns FutureWarning and calls ``reset_peak_memory_stats`` (all peaks).

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_max_memory_cached()  # doctest: +SKIP
    """
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device)


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A printable table of a GPU's memory counters.

    Args:
        device: the device (default: the current one).
        abbreviated: accepted for PyTorch's signature (the table is short already).

    Returns:
        str

    Raises:
        KeyError: before CUDA is used (no counters yet), as PyTorch raises.

    Example::

        >>> if ember.cuda.is_initialized():
        ...     print(ember.cuda.memory_summary())  # doctest: +SKIP
    """
    stats = memory_stats(device)
    rows = [("Allocated memory", "allocated_bytes"), ("Active memory", "active_bytes"),
            ("GPU reserved memory", "reserved_bytes")]
    lines = ["|" + "=" * 60 + "|",
             "|" + " ember CUDA memory summary (CuPy memory pool)".ljust(60) + "|",
             "|" + "-" * 60 + "|",
             "|" + " Metric".ljust(30) + "Cur Usage".rjust(15) + "Peak Usage".rjust(15) + "|",
             "|" + "-" * 60 + "|"]
    for label, key in rows:
        cur, peak = stats[f"{key}.all.current"], stats[f"{key}.all.peak"]
        lines.append("|" + f" {label}".ljust(30) + _format_bytes(cur).rjust(15)
                     + _format_bytes(peak).rjust(15) + "|")
    lines.append("|" + "=" * 60 + "|")
    return "\n".join(lines) + "\n"


def _format_bytes(n: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B  " else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def host_memory_stats() -> dict:
    """The pinned host-memory counters: empty (ember allocates no pinned host memory).

    Returns:
        An empty OrderedDict.

    Example::

        >>> ember.cuda.host_memory_stats()
        OrderedDict()
    """
    return collections.OrderedDict()


def empty_cache() -> None:
    """Return CuPy's unused cached GPU blocks to the driver; does nothing without CUDA.

    Returns:
        None

    Example::

        >>> ember.cuda.empty_cache()
    """
    if not _cuda().is_initialized():
        return
    cp = _runtime.cupy()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of a GPU's memory, as the driver reports them.

    Args:
        device: the device (default: the current one).

    Returns:
        tuple of two ints

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     free, total = ember.cuda.mem_get_info()
    """
    require_gpu()
    cp = _runtime.cupy()
    with cp.cuda.Device(_runtime.device_index(device, optional=True)):
        free, total = cp.cuda.runtime.memGetInfo()
    return int(free), int(total)


def ipc_collect() -> None:
    """Free GPU memory held for other processes' IPC handles (CuPy keeps none).

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.ipc_collect()
    """
    require_gpu()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap this process's CuPy memory pool on a device at ``fraction`` of its memory.

    Args:
        fraction: between 0 and 1.
        device: the device (default: the current one).

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU; ValueError for a
        fraction outside [0, 1].

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.set_per_process_memory_fraction(1.0)
    """
    require_gpu()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    index = _runtime.device_index(device, optional=True)
    cp = _runtime.cupy()
    with cp.cuda.Device(index):
        cp.get_default_memory_pool().set_limit(fraction=fraction)
    _fractions[index] = fraction


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction last given to ``set_per_process_memory_fraction`` (default 1.0).

    Args:
        device: the device (default: the current one).

    Returns:
        float

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.get_per_process_memory_fraction()
    """
    require_gpu()
    return _fractions.get(_runtime.device_index(device, optional=True), 1.0)


# -- NVML queries (need the nvidia-ml-py package, as in PyTorch) ------------------------------

_NO_PYNVML = "nvidia-ml-py does not seem to be installed or it can't be imported."


def _nvml_handle(device):
    try:
        import pynvml
    except ImportError as e:
        raise ModuleNotFoundError(_NO_PYNVML) from e
    pynvml.nvmlInit()
    index = _runtime.device_index(device, optional=True)
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(max(index, 0))


def list_gpu_processes(device=None) -> str:
    """The processes using a GPU and their memory, as text (needs ``nvidia-ml-py``).

    Args:
        device: the device (default: the current one).

    Returns:
        str: the listing, or a line saying that pynvml is missing.

    Example::

        >>> isinstance(ember.cuda.list_gpu_processes(), str)
        True
    """
    try:
        import pynvml  # noqa: F401
    except ImportError:
        return "pynvml module not found, please install nvidia-ml-py"
    nvml, handle = _nvml_handle(device)
    procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    lines = [f"GPU:{_runtime.device_index(device, optional=True)}"]
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / (1024 * 1024):>12.3f} MB "
                     "GPU memory")
    return "\n".join(lines)


def utilization(device=None) -> int:
    """Percent of time a kernel ran on the GPU over the last sample period (NVML).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``, as in PyTorch.

    Example::

        >>> ember.cuda.utilization()  # doctest: +SKIP
        0
    """
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).gpu


def memory_usage(device=None) -> int:
    """Percent of time GPU memory was read or written over the last sample period (NVML).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``.

    Example::

        >>> ember.cuda.memory_usage()  # doctest: +SKIP
        0
    """
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetUtilizationRates(handle).memory


def temperature(device=None) -> int:
    """The GPU's temperature in degrees Celsius (NVML).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``.

    Example::

        >>> ember.cuda.temperature()  # doctest: +SKIP
        40
    """
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetTemperature(handle, 0)  # NVML_TEMPERATURE_GPU


def power_draw(device=None) -> int:
    """The GPU's power draw in milliwatts (NVML).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``.

    Example::

        >>> ember.cuda.power_draw()  # doctest: +SKIP
        70000
    """
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetPowerUsage(handle)


def clock_rate(device=None) -> int:
    """The GPU's streaming-multiprocessor clock in MHz (NVML).

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``.

    Example::

        >>> ember.cuda.clock_rate()  # doctest: +SKIP
        1980
    """
    nvml, handle = _nvml_handle(device)
    return nvml.nvmlDeviceGetClockInfo(handle, 1)  # NVML_CLOCK_SM
