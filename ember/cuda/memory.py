"""``ember.cuda.memory``: how much GPU memory ember's tensors hold, and freeing the cache.

ember's CUDA arrays come from a CuPy memory pool that plays the part of PyTorch's caching
allocator, and ember counts every block it hands out and takes back (NOTE [ Counting CuPy's
pool ] in ember/cuda/_allocator.py): "allocated" bytes are those held by live tensors,
"reserved" bytes those the pool holds from the driver, and the ``max_*`` peaks are exact,
taken at every allocation. ``empty_cache`` returns the unused blocks to the driver,
``set_per_process_memory_fraction`` caps the pool, and running out raises
``ember.cuda.OutOfMemoryError`` with a summary.

Without CuPy, or before CUDA is first used, the counters are 0 and the stats empty, as in
PyTorch; see NOTE [ CUDA without a GPU ] in ember/cuda/_runtime.py for the rest.

Example::

    >>> ember.cuda.memory_allocated()  # doctest: +SKIP
    0
"""

from __future__ import annotations

import collections
import contextlib
import sys
import warnings

from . import _runtime
from ._runtime import NOT_COMPILED, require_gpu

__all__ = [
    "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_disabled",
    "caching_allocator_enable", "device_memory_used", "get_allocator_backend",
    "host_memory_stats_as_nested_dict", "memory_snapshot", "reset_accumulated_host_memory_stats",
    "reset_peak_host_memory_stats", "clock_rate", "empty_cache",
    "get_per_process_memory_fraction", "host_memory_stats",
    "ipc_collect", "list_gpu_processes", "max_memory_allocated", "max_memory_cached",
    "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_cached",
    "memory_reserved", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
    "memory_usage", "power_draw", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_memory_stats",
    "set_per_process_memory_fraction", "temperature", "utilization", "MemPool",
    "use_mem_pool", "CUDAPluggableAllocator", "change_current_allocator",
]

_fractions: dict = {}  # device index -> fraction given to set_per_process_memory_fraction
_allocator = None  # the CachingAllocator once CUDA is used (NOTE [ Counting CuPy's pool ])


def _cuda():
    from .. import cuda

    return cuda


def _install(cp) -> None:
    """Make ember's counting allocator CuPy's allocator (called once, by ``_lazy_init``)."""
    global _allocator
    from . import _allocator as alloc_mod

    base = _cuda().OutOfMemoryError
    cupy_oom = cp.cuda.memory.OutOfMemoryError

    class OutOfMemoryError(base, cupy_oom):
        # ember's (and PyTorch's) RuntimeError subclass, and CuPy's MemoryError subclass,
        # so that CuPy's own handlers and ember's users both catch it.
        def __init__(self, message):
            Exception.__init__(self, message)
            self._size = self._total = self._limit = 0

        def __str__(self):
            return self.args[0]

        def __reduce__(self):
            return base, self.args

    OutOfMemoryError.__module__ = "ember.cuda"
    OutOfMemoryError.__qualname__ = "OutOfMemoryError"
    _allocator = alloc_mod.CachingAllocator(cp, OutOfMemoryError)
    _allocator.cache_enabled = _allocator_enabled
    cp.cuda.set_allocator(_allocator.malloc)


def _stats(device):
    """The counters of ``device`` (None: the current one), or None before CUDA is used."""
    if _allocator is None:
        return None, -1
    index = _runtime.device_index(device, optional=True)
    return _allocator.device_stats(index), index


def memory_stats(device=None) -> dict:
    """The memory counters of a GPU, keyed as PyTorch's (``"allocated_bytes.all.current"``,
    ``"allocated_bytes.all.peak"``, ``"reserved_bytes.all.current"``, ``"num_ooms"``, ...).

    Counts are exact: ember's allocator counts every block as CuPy's pool hands it out and
    takes it back (NOTE [ Counting CuPy's pool ] in ember/cuda/_allocator.py). ``large_pool``
    and ``small_pool`` split the counts at blocks of 1 MiB, as PyTorch's pools do.

    Args:
        device: the device (default: the current one).

    Returns:
        An OrderedDict sorted by key; empty without CuPy or before CUDA is first used.

    Example::

        >>> stats = ember.cuda.memory_stats()
        >>> isinstance(stats, dict)
        True
    """
    st, index = _stats(device)
    if st is None:
        return collections.OrderedDict()
    return collections.OrderedDict(sorted(st.as_dict(_allocator.reserved(index)).items()))


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
    st, _ = _stats(device)
    return 0 if st is None else st.allocated_bytes


def max_memory_allocated(device=None) -> int:
    """The most bytes held by live CUDA tensors at any moment since the last peak reset.

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.max_memory_allocated() >= 0
        True
    """
    st, _ = _stats(device)
    return 0 if st is None else st.peak_allocated_bytes


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
    st, index = _stats(device)
    return 0 if st is None else _allocator.reserved(index)


def max_memory_reserved(device=None) -> int:
    """The most bytes the memory pool held at any moment since the last peak reset.

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Example::

        >>> ember.cuda.max_memory_reserved() >= 0
        True
    """
    st, index = _stats(device)
    return 0 if st is None else max(st.reserved_peak, _allocator.reserved(index))


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
    st, index = _stats(device)
    if st is not None:
        st.reset_peaks(_allocator.reserved(index))


def reset_accumulated_memory_stats(device=None) -> None:
    """Reset the accumulated counters (the ``.allocated``/``.freed`` totals and the event
    counts such as ``num_ooms``); current values and peaks stay.

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
    st, _ = _stats(device)
    if st is not None:
        st.reset_accumulated()


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
        abbreviated: leave out the rows split by pool (large and small blocks).

    Returns:
        str

    Raises:
        KeyError: before CUDA is used (no counters yet), as PyTorch raises.

    Example::

        >>> if ember.cuda.is_initialized():
        ...     print(ember.cuda.memory_summary())  # doctest: +SKIP
    """
    stats = memory_stats(device)
    width = 87
    rows = [("Allocated memory", "allocated_bytes", True), ("Active memory", "active_bytes", True),
            ("Requested memory", "requested_bytes", True),
            ("GPU reserved memory", "reserved_bytes", True),
            ("Allocations", "allocation", False), ("Active allocs", "active", False)]
    index = _runtime.device_index(device, optional=True)
    lines = ["|" + "=" * width + "|",
             "|" + f" ember CUDA memory summary, device ID {index:<d}".ljust(width) + "|",
             "|" + "-" * width + "|",
             "|" + (f"  CUDA OOMs: {stats['num_ooms']:<13d} | "
                    f" cudaMalloc retries: {stats['num_alloc_retries']:<10d}").ljust(width) + "|",
             "|" + "=" * width + "|",
             "|" + "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "
             .ljust(width) + "|",
             "|" + "-" * width + "|"]
    for label, key, in_bytes in rows:
        fmt = _format_bytes if in_bytes else str
        cells = [fmt(stats.get(f"{key}.all.{k}", 0)) for k in ("current", "peak")]
        cells += [fmt(stats[f"{key}.all.{k}"]) if f"{key}.all.{k}" in stats else "-"
                  for k in ("allocated", "freed")]
        lines.append("|" + (f" {label:<22s}|" + "|".join(f" {c:>10s} " for c in cells))
                     .ljust(width) + "|")
        if not abbreviated and key != "reserved_bytes":
            for pool, name in (("large_pool", "from large pool"), ("small_pool",
                                                                     "from small pool")):
                cells = [fmt(stats[f"{key}.{pool}.{k}"]) for k in ("current", "peak",
                                                                     "allocated", "freed")]
                lines.append("|" + (f"       {name:<16s}|"
                                    + "|".join(f" {c:>10s} " for c in cells)).ljust(width)
                             + "|")
        lines.append("|" + "-" * width + "|")
    lines[-1] = "|" + "=" * width + "|"
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
    if _allocator is None:
        return
    cp = _runtime.cupy()
    cudnn = sys.modules.get("ember.cuda._cudnn")
    if cudnn is not None:  # cuDNN's kept scratch buffers go too (a launch makes a new one)
        cudnn._workspaces.clear()
    for index in range(_runtime.gpu_count()):
        with cp.cuda.Device(index):
            _allocator.empty_cache()
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
    """Cap the memory ember's pool may reserve on a device at ``fraction`` of its memory;
    an allocation beyond it raises ``OutOfMemoryError``.

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
    _cuda()._lazy_init()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    index = _runtime.device_index(device, optional=True)
    cp = _runtime.cupy()
    with cp.cuda.Device(index):
        _allocator.pool.set_limit(fraction=fraction)  # checked at every new segment
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


# -- the raw allocator API, host-memory counters, snapshots ------------------------------------

_raw_blocks: dict = {}  # address -> the CuPy memory pointer, for caching_allocator_delete


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """Take ``size`` bytes from ember's allocator and return their address (free them with
    ``caching_allocator_delete``).

    Args:
        size: bytes.
        device: the device (default: the current one).
        stream: the stream the memory is first used on (default: the current one).

    Returns:
        int: the device address.

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ptr = ember.cuda.caching_allocator_alloc(1024)
        ...     ember.cuda.caching_allocator_delete(ptr)
    """
    require_gpu()
    _cuda()._lazy_init()
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError("Invalid type for size argument, must be `int`")
    cp = _runtime.cupy()
    with cp.cuda.Device(_runtime.device_index(device, optional=True)):
        s = cp.cuda.get_current_stream() if stream is None else stream._cupy
        with s:
            mem = _allocator.malloc(size)
    _raw_blocks[mem.ptr] = mem
    return mem.ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Free memory taken by ``caching_allocator_alloc``.

    Args:
        mem_ptr: the address it returned.

    Returns:
        None

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.caching_allocator_delete(ember.cuda.caching_allocator_alloc(8))
    """
    _require_allocator("caching_allocator_delete")
    try:
        del _raw_blocks[int(mem_ptr)]
    except KeyError:
        raise RuntimeError(f"caching_allocator_delete: {mem_ptr:#x} was not allocated by "
                           "caching_allocator_alloc") from None


_allocator_enabled = True


def caching_allocator_enable(value: bool = True) -> None:
    """Turn the caching of freed blocks on or off: off, every freed block goes back to the
    driver at the next allocation (slow; for memory debugging tools).

    Args:
        value: True to cache (the default), False not to.

    Returns:
        None

    Example::

        >>> ember.cuda.caching_allocator_enable(True)
    """
    global _allocator_enabled
    _allocator_enabled = bool(value)
    if _allocator is not None:
        _allocator.cache_enabled = _allocator_enabled


@contextlib.contextmanager
def caching_allocator_disabled():
    """A block in which freed GPU memory is returned to the driver rather than cached.

    Returns:
        A context manager.

    Example::

        >>> with ember.cuda.caching_allocator_disabled():
        ...     pass
    """
    before = _allocator_enabled
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(before)


def get_allocator_backend() -> str:
    """The name of the GPU allocator in use: ``'cupy'`` (CuPy's memory pool, counted by
    ember).

    Returns:
        str

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     assert ember.cuda.get_allocator_backend() == "cupy"
    """
    _require_allocator("get_allocator_backend")
    return "cupy"


def host_memory_stats_as_nested_dict() -> dict:
    """``host_memory_stats`` as nested dicts: empty (ember keeps no pinned-memory counters).

    Returns:
        dict

    Example::

        >>> ember.cuda.host_memory_stats_as_nested_dict()
        {}
    """
    return {}


def reset_accumulated_host_memory_stats() -> None:
    """Reset the pinned host-memory totals (ember keeps none, so nothing changes).

    Returns:
        None

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_accumulated_host_memory_stats()
    """
    _require_allocator("reset_accumulated_host_memory_stats")


def reset_peak_host_memory_stats() -> None:
    """Reset the pinned host-memory peaks (ember keeps none, so nothing changes).

    Returns:
        None

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.reset_peak_host_memory_stats()
    """
    _require_allocator("reset_peak_host_memory_stats")


# NOTE [ Pluggable allocators ]
# A ``CUDAPluggableAllocator`` is a shared library's pair of C functions,
# ``void* alloc(ssize_t size, int device, cudaStream_t stream)`` and
# ``void free(void* ptr, ssize_t size, int device, cudaStream_t stream)``, loaded with
# ctypes. ``change_current_allocator`` makes it CuPy's allocator in place of ember's
# counting one (NOTE [ Counting CuPy's pool ]): each allocation calls ``alloc`` on the
# current device and stream and hands CuPy the pointer as unowned memory whose owner calls
# ``free`` with the same size, device and stream when the last array on it dies. Nothing
# is cached or counted by ember then (``memory_allocated`` stays where it was), as PyTorch's
# statistics belong to its own caching allocator. The swap is refused once ember's
# allocator has handed out a block, as PyTorch refuses it.


class _Freed:
    """The owner of one pluggable allocation: frees it when CuPy drops the memory."""

    __slots__ = ("free", "ptr", "size", "device", "stream")

    def __init__(self, free, ptr, size, device, stream):
        self.free, self.ptr, self.size = free, ptr, size
        self.device, self.stream = device, stream

    def __del__(self):
        self.free(self.ptr, self.size, self.device, self.stream)


class CUDAPluggableAllocator:
    """GPU memory from a shared library's own ``alloc`` and ``free`` functions (NOTE
    [ Pluggable allocators ]); ``change_current_allocator`` puts it to use.

    Args:
        path_to_so_file (str): the shared library.
        alloc_fn_name (str): its function
            ``void* alloc(ssize_t size, int device, cudaStream_t stream)``.
        free_fn_name (str): its function
            ``void free(void* ptr, ssize_t size, int device, cudaStream_t stream)``.

    Returns:
        CUDAPluggableAllocator

    Raises:
        OSError: the library cannot be loaded. AttributeError: a function is missing.

    Example::

        >>> alloc = ember.cuda.CUDAPluggableAllocator(  # doctest: +SKIP
        ...     "./my_alloc.so", "my_malloc", "my_free")
        >>> ember.cuda.change_current_allocator(alloc)  # doctest: +SKIP
    """

    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        import ctypes

        lib = ctypes.CDLL(path_to_so_file)
        alloc = getattr(lib, alloc_fn_name)
        free = getattr(lib, free_fn_name)
        alloc.restype = ctypes.c_void_p
        alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        free.restype = None
        free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self._lib, self._alloc, self._free = lib, alloc, free

    def allocator(self):
        """The allocator object ``change_current_allocator`` installs (this one).

        Returns:
            CUDAPluggableAllocator
        """
        return self

    def malloc(self, size: int):
        """``size`` bytes from the library on the current device and stream, as CuPy's
        allocator API returns them (a ``MemoryPointer``).

        Args:
            size (int): bytes.

        Returns:
            cupy.cuda.MemoryPointer
        """
        cp = _runtime.cupy()
        device = cp.cuda.runtime.getDevice()
        stream = cp.cuda.get_current_stream().ptr
        ptr = self._alloc(size, device, stream)
        if not ptr and size:
            raise _cuda().OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {_format_bytes(size)} with the "
                "pluggable allocator, whose alloc function returned NULL.")
        memory = cp.cuda.memory
        owner = _Freed(self._free, ptr or 0, size, device, stream)
        return memory.MemoryPointer(memory.UnownedMemory(ptr or 0, size, owner, device), 0)


def change_current_allocator(allocator) -> None:
    """Make ``allocator`` (a ``CUDAPluggableAllocator``) the one every later GPU allocation
    goes through (NOTE [ Pluggable allocators ]).

    Args:
        allocator (CUDAPluggableAllocator): the allocator.

    Returns:
        None

    Raises:
        RuntimeError: ember's allocator has already handed out memory, or no GPU.

    Example::

        >>> ember.cuda.change_current_allocator(alloc)  # doctest: +SKIP
    """
    impl = allocator.allocator() if hasattr(allocator, "allocator") else allocator
    if not isinstance(impl, CUDAPluggableAllocator):
        raise TypeError("change_current_allocator expects a CUDAPluggableAllocator, got "
                        f"{type(allocator).__name__}")
    _cuda()._lazy_init()
    if _allocator is not None and any(
            st.rows[0][3] for st in list(_allocator.stats.values())):  # (TOT_N: allocations)
        raise RuntimeError("Can't swap an already initialized allocator")
    _runtime.cupy().cuda.set_allocator(impl.malloc)


_mem_pools: dict = {}  # MemPool id -> weak reference to it


class MemPool:
    """A pool of GPU memory of its own: blocks allocated inside ``use_mem_pool(pool)`` come
    from it and go back to it, apart from the default pool's (NOTE [ Counting CuPy's pool ]).
    Its blocks count in ``memory_allocated`` and its segments in ``memory_reserved`` as the
    default pool's do.

    Args:
        allocator: a pluggable allocator; ember allocates through CuPy, so only None (the
            caching allocator) is accepted.
        use_on_oom (bool): when another allocation finds no memory, serve it from this
            pool's cached blocks before raising ``OutOfMemoryError``. Default: False.
        no_split (bool): accepted for PyTorch's signature (CuPy's pool decides how it
            splits its blocks).

    Returns:
        MemPool

    Raises:
        RuntimeError: without a usable GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     pool = ember.cuda.MemPool()
        ...     with ember.cuda.use_mem_pool(pool):
        ...         x = ember.ones(1024, device="cuda")
    """

    _next = [1]

    def __init__(self, allocator=None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise ValueError("ember.cuda.MemPool: ember allocates through CuPy's pool; "
                             "pluggable allocators are not supported (pass allocator=None)")
        cuda = _cuda()
        cuda._lazy_init()
        import weakref

        self._id = (0, MemPool._next[0])
        MemPool._next[0] += 1
        self._pool = _allocator.new_pool(bool(use_on_oom))
        self._uses = 0
        self.use_on_oom = bool(use_on_oom)
        self.no_split = bool(no_split)
        _mem_pools[self._id] = weakref.ref(self)

    @property
    def id(self) -> tuple:
        """The pool's id, a pair of ints (``memory_snapshot(mempool_id=...)`` takes it)."""
        return self._id

    @property
    def allocator(self):
        """The pluggable allocator behind the pool: always None (CuPy's pool)."""
        return None

    def use_count(self) -> int:
        """How many hold the pool: the pool itself, and each ``use_mem_pool`` open on it.

        Returns:
            int
        """
        return 1 + self._uses

    def snapshot(self) -> list:
        """This pool's segments, as ``memory_snapshot(mempool_id=self.id)`` gives them.

        Returns:
            list of dict
        """
        return memory_snapshot(mempool_id=self._id)


class use_mem_pool:  # noqa: N801 - a context manager, named as PyTorch's
    """Send the allocations of the current thread to ``pool`` inside the context (other
    threads keep their pools); blocks freed later still go back to the pool they came from.

    Args:
        pool (MemPool): the pool.
        device: accepted for PyTorch's signature (a CuPy pool serves every device).

    Returns:
        The context manager.

    Example::

        >>> if ember.cuda.is_available():
        ...     with ember.cuda.use_mem_pool(ember.cuda.MemPool()):
        ...         y = ember.zeros(8, device="cuda")
    """

    def __init__(self, pool, device=None):
        if not isinstance(pool, MemPool):
            raise TypeError(f"use_mem_pool expects a MemPool, got {type(pool).__name__}")
        self.pool = pool
        self._ctx = None

    def __enter__(self):
        self._ctx = _allocator.routed(self.pool._pool)
        self._ctx.__enter__()
        self.pool._uses += 1
        return self.pool

    def __exit__(self, *exc):
        self.pool._uses -= 1
        return self._ctx.__exit__(*exc)


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries=sys.maxsize, device=None, clear_history=False,
                           compile_context=False, global_record_annotations=False,
                           skip_actions=None) -> None:
    """Start (or stop) recording every allocation and free of the CUDA allocator, with the
    Python stack of each, for :func:`_snapshot` and :func:`_dump_snapshot`.

    Args:
        enabled (str or None): ``"all"`` or ``"state"`` to record; None stops recording
            (the events kept so far stay, for a later snapshot). Default: ``"all"``.
        context (str or None): ``"alloc"``, ``"state"`` or ``"all"``: which events keep their
            stacks (None: none). Default: ``"all"``.
        stacks (str): ``"python"`` or ``"all"`` (ember has Python frames only).
        max_entries (int): events kept per device, the oldest dropped first.
        device: accepted for PyTorch's signature (every device is recorded).
        clear_history (bool): forget the events recorded so far. Default: False.
        compile_context, global_record_annotations, skip_actions: accepted for PyTorch's
            signature; ``skip_actions`` lists actions (``"alloc"``, ``"free_requested"``,
            ``"free_completed"``) not to record.

    Returns:
        None.

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.memory._record_memory_history()
        ...     x = ember.ones(1000, device="cuda")
        ...     snapshot = ember.cuda.memory._snapshot()
        ...     ember.cuda.memory._record_memory_history(enabled=None)
    """
    _require_allocator("_record_memory_history")
    if enabled not in (None, "all", "state"):
        raise ValueError(f"_record_memory_history(): enabled must be None, 'state' or 'all', "
                         f"got {enabled!r}")
    if context not in (None, "alloc", "state", "all"):
        raise ValueError(f"_record_memory_history(): context must be None, 'alloc', 'state' "
                         f"or 'all', got {context!r}")
    _cuda()._lazy_init()
    alloc = _allocator
    if alloc is None:
        return
    from ._allocator import History

    with alloc.lock:
        old = alloc.history if alloc.history is not None else _history_kept[0]
        if enabled is None:
            _history_kept[0] = old
            alloc.history = None
            return
        h = History(context, stacks, max_entries)
        if old is not None and not clear_history:
            for d, trace in old.traces.items():
                h.traces[d].extend(trace)
        if skip_actions:
            skip = set(skip_actions)
            record = h.record
            h.record = lambda action, *a, **k: None if action in skip else record(action, *a,
                                                                                   **k)
        alloc.history = h
        _history_kept[0] = None


_history_kept = [None]  # the events of a recording stopped with enabled=None


def _snapshot(device=None, augment_with_fx_traces=False) -> dict:
    """The allocator's state and recorded history, in PyTorch's memory-snapshot shape.

    Args:
        device: accepted for PyTorch's signature (every device is included).
        augment_with_fx_traces (bool): accepted (ember has no compiled graphs to name).

    Returns:
        dict: ``{"segments": [...], "device_traces": [[events of device 0], ...]}``; each
        event has ``action`` (``"alloc"``, ``"free_requested"``, ``"free_completed"``),
        ``addr``, ``size``, ``stream``, ``time_us`` and ``frames``.

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_available():
        ...     sorted(ember.cuda.memory._snapshot())
    """
    _require_allocator("_snapshot")
    alloc = _allocator
    if alloc is None:
        return {"segments": [], "device_traces": []}
    with alloc.lock:
        alloc.drain()
        h = alloc.history if alloc.history is not None else _history_kept[0]
        count = max(_runtime.gpu_count(), 1 + max(h.traces, default=-1) if h else 0)
        traces = [list(h.traces.get(d, ())) if h is not None else [] for d in range(count)]
    return {"segments": memory_snapshot(), "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}}


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False) -> None:
    """Write :func:`_snapshot` to ``filename`` as a pickle (what the memory visualiser at
    pytorch.org/memory_viz opens).

    Args:
        filename (str): the file to write. Default: ``"dump_snapshot.pickle"``.
        augment_with_fx_traces (bool): accepted for PyTorch's signature.

    Returns:
        None.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.memory._dump_snapshot("runs/snapshot.pickle")
    """
    import pickle

    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def memory_snapshot(mempool_id=None) -> list:
    """The memory pool's segments: one dict per device with its reserved and allocated
    bytes (CuPy does not expose its individual blocks).

    Args:
        mempool_id: a ``MemPool``'s id: that pool's segments only (None: the whole
            allocator's).

    Returns:
        list of dict with ``device``, ``total_size``, ``allocated_size``, ``active_size``,
        ``requested_size``, ``segment_type`` and ``blocks`` (empty).

    Raises:
        AttributeError: without CuPy, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.is_initialized():
        ...     segments = ember.cuda.memory_snapshot()
    """
    _require_allocator("memory_snapshot")
    if _allocator is None:
        return []
    out = []
    if mempool_id is not None:
        ref = _mem_pools.get(tuple(mempool_id))
        pool = ref() if ref is not None else None
        if pool is None:
            return out
        cp = _runtime.cupy()
        for index in range(_runtime.gpu_count()):
            _allocator.device_stats(index)  # (blocks freed since the last count go back)
            with cp.cuda.Device(index):
                total, used = int(pool._pool.total_bytes()), int(pool._pool.used_bytes())
            if total:
                out.append({"device": index, "address": 0, "total_size": total,
                            "allocated_size": used, "active_size": used,
                            "requested_size": used, "stream": 0, "segment_type": "large",
                            "segment_pool_id": pool.id, "is_expandable": False,
                            "frames": [], "blocks": []})
        return out
    for index in range(_runtime.gpu_count()):
        d = _allocator.device_stats(index).as_dict(0)
        out.append({"device": index, "address": 0, "total_size": _allocator.reserved(index),
                    "allocated_size": d["allocated_bytes.all.current"],
                    "active_size": d["active_bytes.all.current"],
                    "requested_size": d["requested_bytes.all.current"], "stream": 0,
                    "segment_type": "large",
                    "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                    "blocks": []})
    return out


def device_memory_used(device=None) -> int:
    """Bytes of GPU memory in use by every process, as the driver (NVML) reports.

    Args:
        device: the device (default: the current one).

    Returns:
        int

    Raises:
        ModuleNotFoundError: without ``nvidia-ml-py``, as in PyTorch.

    Example::

        >>> ember.cuda.device_memory_used()  # doctest: +SKIP
        1048576
    """
    nvml, handle = _nvml_handle(device)
    return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
