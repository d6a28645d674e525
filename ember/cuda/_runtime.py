"""CuPy, found lazily, and the checks every ``ember.cuda`` function starts with.

NOTE [ CUDA without a GPU ]
ember reaches NVIDIA GPUs through CuPy. "Built with CUDA" means here that the ``cupy``
package can be imported; "available" that it also sees a GPU. Without CuPy ember answers as
a CPU-only PyTorch does: queries that need no device (``is_available``, ``device_count``,
the memory counters, ``manual_seed``, ``empty_cache``) return quietly, and functions that
need one raise AssertionError "Torch not compiled with CUDA enabled". With CuPy but no GPU
they raise RuntimeError, as a CUDA build of PyTorch without a driver does. CuPy is imported
only when one of these functions is called, never when ember is imported.
"""

from __future__ import annotations

NOT_COMPILED = ("Torch not compiled with CUDA enabled (ember reaches CUDA through CuPy, which "
                "is not installed: pip install ember[cuda] on a machine with an NVIDIA GPU)")

_cupy_module = None
_cupy_missing = False


def cupy():
    """The ``cupy`` module; ImportError when it is not installed (the failure is cached)."""
    global _cupy_module, _cupy_missing
    if _cupy_module is None:
        if _cupy_missing:
            raise ImportError("No module named 'cupy'")
        try:
            import cupy as cp
        except ImportError:
            _cupy_missing = True
            raise
        _cupy_module = cp
    return _cupy_module


def is_compiled() -> bool:
    """True when CuPy can be imported (ember's "CUDA build")."""
    try:
        cupy()
    except ImportError:
        return False
    return True


def gpu_count() -> int:
    """Visible GPUs through CuPy; 0 without CuPy, without a driver or without a GPU."""
    try:
        return cupy().cuda.runtime.getDeviceCount()
    except Exception:  # ImportError, or CUDA driver errors on machines without a GPU
        return 0


def require_gpu() -> None:
    """Raise as PyTorch does when a function needs a GPU and there is none (see NOTE [ CUDA
    without a GPU ]).

    Example::

        >>> try:
        ...     ember.cuda.require_gpu()
        ... except (AssertionError, RuntimeError):
        ...     print("no GPU here")
        ... else:
        ...     print("a GPU is available")
        no GPU here
    """
    if not is_compiled():
        raise AssertionError(NOT_COMPILED)
    if gpu_count() == 0:
        raise RuntimeError("No CUDA GPUs are available")


def device_index(device, optional: bool = False) -> int:
    """The CUDA device index of ``device`` (an int, 'cuda:N', an ember.device or None).

    None (and 'cuda' without an index) mean the current device when ``optional``; a non-CUDA
    device raises ValueError, as in PyTorch.
    """
    from .._core.device import device as device_cls

    if isinstance(device, str):
        device = device_cls(device)
    if isinstance(device, device_cls):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        device = device.index
    if device is None:
        if not optional:
            raise ValueError("Expected a torch.device with a specified index or an integer, "
                             "but got: None")
        return current_index()
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected a cuda device, but got: {device!r}")
    return device


def current_index() -> int:
    """The current CUDA device index, or -1 when no GPU is usable (never raises)."""
    if gpu_count() == 0:
        return -1
    return cupy().cuda.runtime.getDevice()
