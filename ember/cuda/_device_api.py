"""The rest of ``torch.cuda``'s device API: error types, library handles, peer access, the
synchronization debug mode, and the legacy CUDA storage classes.

Each answers as PyTorch's CPU build does on machines without CuPy or a GPU (NOTE [ CUDA
without a GPU ] in ember/cuda/_runtime.py).
"""

from __future__ import annotations

from .._core.device import device as _device
from .._core.stream import AcceleratorError
from .._core.storage import _init_typed, _LEGACY_NAMES, _LegacyStorage, _LegacyStorageMeta
from . import _runtime
from ._runtime import require_gpu

__all__ = ["AcceleratorError", "CudaError", "DeferredCudaCallError", "Device", "check_error",
           "classproperty",
           "cudaStatus", "cudart", "can_device_access_peer", "current_blas_handle",
           "current_solver_handle", "get_gencode_flags", "get_sync_debug_mode",
           "set_sync_debug_mode", "cuda_storage_classes"]

#: what ``torch.cuda`` functions accept as a device
Device = _device | str | int | None


class CudaError(RuntimeError):
    """An error code from the CUDA runtime, with CUDA's description as the message.

    Args:
        code: the ``cudaError_t`` value.

    Example::

        >>> isinstance(ember.cuda.CudaError(2), RuntimeError)
        True
    """

    def __init__(self, code: int) -> None:
        msg = f"CUDA error {code}"
        if _runtime.is_compiled():
            try:
                rt = _runtime.cupy().cuda.runtime
                msg = f"{rt.CUDARuntimeError(code)} ({code})"
            except Exception:  # an unknown code: keep the number
                pass
        super().__init__(msg)


class DeferredCudaCallError(Exception):
    """Raised when a CUDA call queued before initialization fails during ``init``.

    Example::

        >>> issubclass(ember.cuda.DeferredCudaCallError, Exception)
        True
    """


class cudaStatus:
    """CUDA runtime status codes used by ``check_error``.

    Example::

        >>> ember.cuda.cudaStatus.SUCCESS
        0
    """

    SUCCESS: int = 0
    ERROR_NOT_READY: int = 34


def check_error(res: int) -> None:
    """Raise ``CudaError`` when a CUDA runtime call returned a code other than success.

    Args:
        res: the returned ``cudaError_t``.

    Returns:
        None

    Raises:
        CudaError: for a failure code. AttributeError without CuPy, as PyTorch's CPU
        build raises (it has no CUDA runtime bindings).

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.check_error(0)
    """
    if not _runtime.is_compiled():
        raise AttributeError("'NoneType' object has no attribute 'cudaError' (ember reaches "
                             "CUDA through CuPy, which is not installed)")
    if res != cudaStatus.SUCCESS:
        raise CudaError(res)


def cudart():
    """The CUDA runtime bindings (CuPy's ``cupy.cuda.runtime`` module).

    Returns:
        module

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     version = ember.cuda.cudart().runtimeGetVersion()
    """
    require_gpu()
    return _runtime.cupy().cuda.runtime


def can_device_access_peer(device, peer_device) -> bool:
    """Whether GPU ``device`` can read and write the memory of GPU ``peer_device`` directly.

    Args:
        device: a device (int, 'cuda:N' or ember.device).
        peer_device: another device.

    Returns:
        bool

    Raises:
        AssertionError: without CuPy (or for an index out of range, as PyTorch).

    Example::

        >>> if ember.cuda.device_count() > 1:
        ...     _ = ember.cuda.can_device_access_peer(0, 1)
    """
    require_gpu()
    a = _runtime.device_index(device, optional=True)
    b = _runtime.device_index(peer_device, optional=True)
    n = _runtime.gpu_count()
    if not 0 <= a < n:
        raise AssertionError("Invalid device id")
    if not 0 <= b < n:
        raise AssertionError("Invalid peer device id")
    if a == b:
        return False
    return bool(_runtime.cupy().cuda.runtime.deviceCanAccessPeer(a, b))


def current_blas_handle() -> int:
    """The address of the cuBLAS handle ember's matrix products use on the current device.

    Returns:
        int

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.current_blas_handle()
    """
    require_gpu()
    return int(_runtime.cupy().cuda.device.get_cublas_handle())


def current_solver_handle() -> int:
    """The address of the cuSOLVER dense handle of the current device.

    Returns:
        int

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.current_solver_handle()
    """
    require_gpu()
    return int(_runtime.cupy().cuda.device.get_cusolver_handle())


def get_gencode_flags() -> str:
    """The ``-gencode`` compiler flags of the architectures ember's CUDA build targets.

    CuPy compiles kernels for the GPU it finds, so these are the present GPUs'
    architectures; '' without CUDA, as PyTorch's CPU build answers.

    Returns:
        str

    Example::

        >>> isinstance(ember.cuda.get_gencode_flags(), str)
        True
    """
    from . import get_arch_list

    return " ".join(f"-gencode compute=compute_{a[3:]},code={a}" for a in get_arch_list())


_sync_debug_mode = 0
_SYNC_MODES = {"default": 0, "warn": 1, "error": 2}


def set_sync_debug_mode(debug_mode) -> None:
    """Set how ember reacts to operations that synchronize the GPU with the host.

    CuPy gives ember no hook into its synchronizing calls, so the mode is stored and
    reported (``get_sync_debug_mode``) but does not warn or raise.

    Args:
        debug_mode: 0 or "default", 1 or "warn", 2 or "error".

    Returns:
        None

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU; RuntimeError for an
        unknown mode.

    Example::

        >>> if ember.cuda.is_available():
        ...     ember.cuda.set_sync_debug_mode("default")
    """
    global _sync_debug_mode
    require_gpu()
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               "`warn`, `error`")
        debug_mode = _SYNC_MODES[debug_mode]
    _sync_debug_mode = int(debug_mode)


def get_sync_debug_mode() -> int:
    """The synchronization debug mode set by ``set_sync_debug_mode`` (0, 1 or 2).

    Returns:
        int

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     mode = ember.cuda.get_sync_debug_mode()
    """
    require_gpu()
    return _sync_debug_mode


# -- legacy CUDA storages: torch.cuda.FloatStorage and its siblings -------------------------


class _CudaLegacyStorageMeta(_LegacyStorageMeta):
    def __instancecheck__(cls, instance):
        from .._core.storage import TypedStorage

        if type(instance) is TypedStorage:
            return instance.dtype is cls.dtype and instance.device.type == "cuda"
        return type.__instancecheck__(cls, instance)


class _CudaLegacyStorage(_LegacyStorage, metaclass=_CudaLegacyStorageMeta):
    __slots__ = ()

    def __init__(self, *args, wrap_storage=None, **kwargs):
        require_gpu()
        from . import _lazy_init

        _lazy_init()
        if kwargs:
            raise RuntimeError(f"{type(self).__name__}(): keyword argument "
                               f"'{next(iter(kwargs))}' cannot be specified")
        _init_typed(self, type(self).__name__, args, wrap_storage, type(self)._dtype, "cuda")


def _make(d, name):
    doc = (f"The legacy typed storage of {d} elements on the GPU.\n\nArgs:\n"
           f"    *args: a size, or a sequence of values.\n"
           f"    wrap_storage (UntypedStorage, optional): the bytes to view instead.\n\n"
           f"Raises:\n    AssertionError: without CuPy, as PyTorch's CPU build.\n\n"
           f"Example::\n\n    >>> if ember.cuda.is_available():\n"
           f"    ...     s = ember.cuda.{name}(3)\n")
    return _CudaLegacyStorageMeta(name, (_CudaLegacyStorage,), {
        "__slots__": (), "_dtype": d, "__module__": "ember.cuda", "__doc__": doc})


#: name -> class, for ``ember.cuda.FloatStorage`` and its siblings
cuda_storage_classes = {name: _make(d, name) for d, name in _LEGACY_NAMES.items()}


class _ClassProperty:
    """A read-only property looked up on the class (``Cls.name``) as well as on instances."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, instance, owner=None):
        if owner is None:
            owner = type(instance)
        return self.fget.__get__(instance, owner)()


def classproperty(func):
    """Make ``func`` a property of the class itself (``Cls.attr`` calls ``func(Cls)``).

    Args:
        func: a function of the class (or a classmethod/staticmethod).

    Returns:
        A descriptor.

    Example::

        >>> class Box:
        ...     @ember.cuda.classproperty
        ...     def kind(cls):
        ...         return cls.__name__.lower()
        >>> Box.kind
        'box'
    """
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassProperty(func)
