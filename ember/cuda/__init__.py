"""``ember.cuda``: NVIDIA GPUs through CuPy, and PyTorch's answers on machines without one.

CuPy is imported lazily, on the first use of a CUDA device, so ember imports and runs on
machines without a GPU. ``_lazy_init`` registers the 'cuda' backend with the dispatcher:
from then on every op whose kernel is written against ``xp`` runs on the GPU unchanged.
Without CuPy or a GPU each function answers as a CPU-only PyTorch does: see NOTE [ CUDA
without a GPU ] in ember/cuda/_runtime.py.

Example::

    >>> ember.cuda.is_available() in (True, False)
    True
    >>> ember.cuda.manual_seed_all(0)  # quietly does nothing without a GPU
"""

from __future__ import annotations

from . import _runtime
from ._runtime import NOT_COMPILED, require_gpu
from . import memory, nvtx, random, streams  # noqa: E402
from .memory import (  # noqa: F401
    empty_cache, host_memory_stats, ipc_collect, max_memory_allocated, max_memory_cached,
    max_memory_reserved, mem_get_info, memory_allocated, memory_cached, memory_reserved,
    memory_stats, memory_stats_as_nested_dict, memory_summary, reset_accumulated_memory_stats,
    reset_max_memory_allocated, reset_max_memory_cached, reset_peak_memory_stats,
    get_per_process_memory_fraction, set_per_process_memory_fraction,
    list_gpu_processes, utilization, temperature, power_draw, clock_rate, memory_usage,
)
from .random import (  # noqa: F401
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed,
    seed_all, set_rng_state, set_rng_state_all,
)
from .streams import (  # noqa: F401
    Event, ExternalStream, Stream, StreamContext, current_stream, default_stream,
    get_stream_from_external, set_stream, stream,
)
from .memory import (  # noqa: F401  (the raw allocator API and snapshots)
    caching_allocator_alloc, caching_allocator_delete, caching_allocator_disabled,
    caching_allocator_enable, device_memory_used, get_allocator_backend,
    host_memory_stats_as_nested_dict, memory_snapshot, reset_accumulated_host_memory_stats,
    reset_peak_host_memory_stats, MemPool, use_mem_pool, CUDAPluggableAllocator,
    change_current_allocator,
)
from . import gds, graphs, green_contexts, jiterator, nccl, profiler, sparse, tunable  # noqa: E402,F401,E501
from .green_contexts import GreenContext  # noqa: F401
from .graphs import (  # noqa: F401  (NOTE [ CUDA graphs on CuPy ])
    CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables,
)
from ._device_api import (  # noqa: F401
    AcceleratorError, CudaError, DeferredCudaCallError, Device, can_device_access_peer,
    check_error, classproperty, cudaStatus, cudart, current_blas_handle, current_solver_handle,
    get_gencode_flags, get_sync_debug_mode, set_sync_debug_mode,
)
from ._device_api import cuda_storage_classes as _storages  # noqa: E402

globals().update(_storages)  # torch.cuda.FloatStorage and its siblings

_initialized = False
default_generators: tuple = ()


class OutOfMemoryError(RuntimeError):
    """Raised when a CUDA allocation fails (PyTorch's ``torch.cuda.OutOfMemoryError``).

    Args:
        *args: the message (and any other arguments, as for ``RuntimeError``).

    Example::

        >>> issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
        True
    """


def _is_compiled() -> bool:
    """Whether ember can use CUDA at all: True when CuPy can be imported.

    Returns:
        bool

    Example::

        >>> isinstance(ember.cuda._is_compiled(), bool)
        True
    """
    return _runtime.is_compiled()


def is_available() -> bool:
    """True when CuPy is installed and at least one CUDA device is visible.

    Returns:
        bool

    Example::

        >>> isinstance(ember.cuda.is_available(), bool)
        True
    """
    return _runtime.gpu_count() > 0


def device_count() -> int:
    """The number of visible CUDA devices (0 without CuPy or a GPU).

    Returns:
        int

    Example::

        >>> ember.cuda.device_count() >= 0
        True
    """
    return _runtime.gpu_count()


def is_initialized() -> bool:
    """Whether ember's CUDA backend has been set up (by ``init`` or a first CUDA tensor).

    Returns:
        bool

    Example::

        >>> isinstance(ember.cuda.is_initialized(), bool)
        True
    """
    return _initialized


def _lazy_init():
    """Register the CUDA backend (once); RuntimeError when CUDA cannot be used."""
    global _initialized, default_generators
    if _initialized:
        return
    if not is_available():
        raise RuntimeError(
            "ember: CUDA is not available: CuPy is not installed or no NVIDIA GPU is visible")
    cp = _runtime.cupy()
    from .. import _dispatch
    from .._core.device import device as device_cls
    from .._core.generator import Generator

    def device_of(a):
        return device_cls("cuda", a.device.id)

    def to_device(a):
        return cp.asarray(a)

    memory._install(cp)  # NOTE [ Counting CuPy's pool ]
    from .._core import checks

    checks.deferring_types.add(cp.ndarray)  # NOTE [ Deferred device checks ]
    _dispatch.register_backend(_dispatch.Backend("cuda", cp, cp.ndarray, device_of, to_device))
    from . import _kernels

    _kernels.register()  # NOTE [ CUDA kernels ]
    default_generators = tuple(Generator(f"cuda:{i}") for i in range(device_count()))
    _initialized = True


def init() -> None:
    """Set up ember's CUDA backend now rather than at the first CUDA tensor.

    Returns:
        None

    Raises:
        AssertionError: without CuPy ("Torch not compiled with CUDA enabled").
        RuntimeError: with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.init()
    """
    require_gpu()
    _lazy_init()


def current_device() -> int:
    """The index of the current CUDA device.

    Returns:
        int

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.current_device()
    """
    require_gpu()
    _lazy_init()
    return _runtime.cupy().cuda.runtime.getDevice()


def set_device(device) -> None:
    """Make ``device`` the current CUDA device; a negative index does nothing.

    Args:
        device: an int, 'cuda:N' or an ember.device of type 'cuda'.

    Returns:
        None

    Raises:
        ValueError: for a non-CUDA device. AttributeError: without CuPy, as PyTorch's
        CPU build raises (it lacks the CUDA binding).

    Example::

        >>> ember.cuda.set_device(-1)  # no-op
    """
    index = _runtime.device_index(device)
    if index < 0:
        return
    if not _runtime.is_compiled():
        raise AttributeError(f"ember.cuda.set_device: {NOT_COMPILED}")
    require_gpu()
    _lazy_init()
    _runtime.cupy().cuda.runtime.setDevice(index)


class device:
    """A block in which ``device`` is the current CUDA device (the old one comes back).

    A negative index or None makes the block do nothing (so it runs on CPU-only machines).

    Args:
        device: an int, 'cuda:N', an ember.device or None.

    Example::

        >>> with ember.cuda.device(None):
        ...     pass
    """

    def __init__(self, device):
        self.idx = _runtime.device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return None
        if not _runtime.is_compiled():
            raise RuntimeError("ember was built without CUDA support (CuPy is not installed)")
        require_gpu()
        _lazy_init()
        rt = _runtime.cupy().cuda.runtime
        self.prev_idx = rt.getDevice()
        if self.prev_idx != self.idx:
            rt.setDevice(self.idx)
        return None

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx >= 0 and self.prev_idx != self.idx:
            _runtime.cupy().cuda.runtime.setDevice(self.prev_idx)
        return False


class device_of(device):
    """A block in which the device of tensor ``obj`` is current (nothing for CPU tensors).

    Args:
        obj: a tensor.

    Example::

        >>> with ember.cuda.device_of(ember.zeros(1)):
        ...     pass
    """

    def __init__(self, obj):
        dev = obj.device
        super().__init__(dev.index if dev.type == "cuda" and dev.index is not None
                         else (0 if dev.type == "cuda" else -1))


def synchronize(device=None) -> None:
    """Wait for all work queued on a CUDA device to finish.

    Args:
        device: the device (default: the current one).

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.synchronize()
    """
    require_gpu()
    _lazy_init()
    with globals()["device"](device):
        _runtime.cupy().cuda.runtime.deviceSynchronize()
    from .._core.checks import raise_pending

    raise_pending()  # NOTE [ Deferred device checks ]


class _CudaDeviceProperties:
    """The properties of one GPU, as ``get_device_properties`` returns them."""

    def __init__(self, raw: dict, total_memory: int):
        def text(v):
            return v.decode() if isinstance(v, bytes) else str(v)

        self.name = text(raw.get("name", b""))
        self.major = int(raw.get("major", 0))
        self.minor = int(raw.get("minor", 0))
        self.total_memory = int(total_memory)
        self.multi_processor_count = int(raw.get("multiProcessorCount", 0))
        self.is_integrated = int(raw.get("integrated", 0))
        self.is_multi_gpu_board = int(raw.get("isMultiGpuBoard", 0))
        self.max_threads_per_multi_processor = int(raw.get("maxThreadsPerMultiProcessor", 0))
        self.warp_size = int(raw.get("warpSize", 32))
        self.L2_cache_size = int(raw.get("l2CacheSize", 0))
        self.regs_per_multiprocessor = int(raw.get("regsPerMultiprocessor", 0))
        uuid = raw.get("uuid", b"")
        self.uuid = uuid.hex() if isinstance(uuid, bytes) else str(uuid)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The properties of a GPU: ``name``, ``major``, ``minor``, ``total_memory``,
    ``multi_processor_count``, ...

    Args:
        device: the device (default: the current one).

    Returns:
        A properties object.

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU; AssertionError for
        an index out of range.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.get_device_properties(0).total_memory
    """
    require_gpu()
    _lazy_init()
    index = _runtime.device_index(device, optional=True)
    if not 0 <= index < device_count():
        raise AssertionError("Invalid device id")
    cp = _runtime.cupy()
    raw = cp.cuda.runtime.getDeviceProperties(index)
    return _CudaDeviceProperties(raw, raw.get("totalGlobalMem", 0))


def get_device_name(device=None) -> str:
    """The name of a GPU, e.g. 'NVIDIA H100 80GB HBM3'.

    Args:
        device: the device (default: the current one).

    Returns:
        str

    Raises:
        AssertionError: without CuPy ("Torch not compiled with CUDA enabled"), as PyTorch's
        CPU build; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.get_device_name(0)
    """
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    """The compute capability ``(major, minor)`` of a GPU, e.g. (9, 0) for an H100.

    Args:
        device: the device (default: the current one).

    Returns:
        tuple of two ints

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     major, minor = ember.cuda.get_device_capability()
    """
    props = get_device_properties(device)
    return props.major, props.minor


def get_arch_list() -> list:
    """The GPU architectures ember's CUDA build targets: [] without CUDA.

    CuPy compiles kernels for the GPU it finds, so with a GPU this is that GPU's
    architecture, e.g. ['sm_90'].

    Returns:
        list of str

    Example::

        >>> isinstance(ember.cuda.get_arch_list(), list)
        True
    """
    if not is_available():
        return []
    return sorted({"sm_{}{}".format(*get_device_capability(i)) for i in range(device_count())})


# NOTE [ Which GPUs run code built for which ]
# NVIDIA's binary compatibility rule: machine code built for compute capability X.Y runs on
# devices X.Z with Z >= Y of the same major version, except on the Tegra/integrated parts
# (5.3, 6.2, 7.2, 8.7 and 10.1, now called 11.0), which run only code built for themselves.
# ``DEVICE_REQUIREMENT`` maps a build target ``XY`` to the device capabilities that run it
# (``dev in DEVICE_REQUIREMENT[code]``); ``PYTORCH_RELEASES_CODE_CC`` lists the targets of
# PyTorch's release wheels per CUDA version and CPU architecture, for the messages that
# compare a GPU with a build. ember's own kernels are compiled by CuPy for the GPU it finds.


class _SameMajorFrom:
    """Capabilities ``X.Z`` with ``Z >= Y`` (of ``start = XY``), minus ``exclude``."""

    def __init__(self, start, exclude=()):
        self.major, self.minor = divmod(start, 10)
        self.exclude = set(exclude)

    def __contains__(self, cc):
        return cc not in self.exclude and cc // 10 == self.major and cc % 10 >= self.minor

    def __str__(self):
        text = f">={self.major}.{self.minor},<{self.major + 1}.0"
        if self.exclude:
            text += " except {" + ", ".join(f"{c // 10}.{c % 10}" for c in
                                            sorted(self.exclude)) + "}"
        return text


class _Exactly:
    """Exactly the listed capabilities."""

    def __init__(self, values):
        self.values = set(values)

    def __contains__(self, cc):
        return cc in self.values

    def __str__(self):
        return "{" + ", ".join(f"{c // 10}.{c % 10}" for c in sorted(self.values)) + "}"


_TEGRA = {53: {53}, 62: {62}, 72: {72}, 87: {87}, 101: {101, 110}}  # (10.1 is now 11.0)
DEVICE_REQUIREMENT: dict = {
    code: _Exactly(_TEGRA[code]) if code in _TEGRA else
    _SameMajorFrom(code, {c for c in _TEGRA if c // 10 == code // 10 and c > code})
    for code in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110,
                 120, 121)
}
PYTORCH_RELEASES_CODE_CC: dict = {
    "12.6": {"x86_64": {50, 60, 70, 75, 80, 86, 90}, "aarch64": {80, 90}},
    "12.9": {"x86_64": {75, 80, 86, 90, 100, 120}, "aarch64": {80, 90, 100, 120}},
    "13.0": {"x86_64": {75, 80, 86, 90, 100, 120}, "aarch64": {80, 90, 100, 110, 120}},
    "13.2": {"x86_64": {75, 80, 86, 90, 100, 120}, "aarch64": {80, 90, 100, 110, 120}},
}


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU supports bfloat16 (compute capability 8.0 or newer).

    Args:
        including_emulation: accepted for PyTorch's signature.

    Returns:
        bool: False without a GPU.

    Example::

        >>> isinstance(ember.cuda.is_bf16_supported(), bool)
        True
    """
    if not is_available():
        return False
    return get_device_capability()[0] >= 8


def is_tf32_supported() -> bool:
    """Whether the current GPU supports TF32 (compute capability 8.0 or newer).

    Returns:
        bool: False without a GPU.

    Example::

        >>> isinstance(ember.cuda.is_tf32_supported(), bool)
        True
    """
    return is_bf16_supported()


has_half = True
has_magma = False


# the legacy types torch.cuda.FloatTensor, ... (NOTE [ Legacy tensor types ])
from .._ops._legacy_types import cuda_types as _legacy_types  # noqa: E402

globals().update(_legacy_types)
from . import amp  # noqa: E402,F401  (torch.cuda.amp, deprecated spellings of ember.amp)
