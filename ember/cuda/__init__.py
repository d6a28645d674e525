"""``ember.cuda``: NVIDIA GPUs through CuPy.

CuPy is imported lazily, on the first use of a CUDA device, so ember imports and runs on
machines without a GPU. ``_lazy_init`` registers the 'cuda' backend with the dispatcher:
from then on every op whose kernel is written against ``xp`` runs on the GPU unchanged.
"""

from __future__ import annotations

_initialized = False


def _cupy():
    import cupy

    return cupy


def is_available() -> bool:
    """True when CuPy is installed and at least one CUDA device is visible."""
    try:
        return _cupy().cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or CUDA driver errors on machines without a GPU
        return False


def device_count() -> int:
    try:
        return _cupy().cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def _lazy_init():
    """Register the CUDA backend (once); a clear error when CUDA cannot be used."""
    global _initialized
    if _initialized:
        return
    if not is_available():
        raise RuntimeError(
            "ember: CUDA is not available: CuPy is not installed or no NVIDIA GPU is visible")
    cp = _cupy()
    from .. import _dispatch
    from .._core.device import device

    def device_of(a):
        return device("cuda", a.device.id)

    def to_device(a):
        return cp.asarray(a)

    _dispatch.register_backend(_dispatch.Backend("cuda", cp, cp.ndarray, device_of, to_device))
    _initialized = True


def current_device() -> int:
    _lazy_init()
    return _cupy().cuda.runtime.getDevice()


def set_device(index) -> None:
    _lazy_init()
    _cupy().cuda.runtime.setDevice(int(getattr(index, "index", index) or 0))


def synchronize(device=None) -> None:
    _lazy_init()
    _cupy().cuda.runtime.deviceSynchronize()


def get_device_name(device=None) -> str:
    _lazy_init()
    idx = 0 if device is None else int(getattr(device, "index", device) or 0)
    return _cupy().cuda.runtime.getDeviceProperties(idx)["name"].decode()
