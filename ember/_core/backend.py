"""The backend registry: which array library holds a tensor's data, and on which device.

A backend is a device type's array library (NumPy for 'cpu', CuPy for 'cuda', others through
``ember.library.register_backend``). Tensors, storages and the printer ask it for a tensor's
device and array namespace, and the dispatcher keys its kernel tables by the same array
type, so the registry sits here in the core, below all of them.
"""

from __future__ import annotations

import numpy as np

from .device import device


class Backend:
    """A device type's array library: ``xp`` is NumPy for 'cpu', CuPy for 'cuda'."""

    __slots__ = ("name", "xp", "array_type", "device_of", "to_device")

    def __init__(self, name, xp, array_type, device_of, to_device):
        self.name = name
        self.xp = xp
        self.array_type = array_type
        self.device_of = device_of  # array -> ember.device
        self.to_device = to_device  # array of any backend -> array of this backend


_cpu_device = device("cpu")
backends_by_type: dict = {}
backends_by_name: dict = {}


def register_backend(backend: Backend) -> None:
    backends_by_type[backend.array_type] = backend
    backends_by_name[backend.name] = backend


def _to_cpu(a):
    if type(a) is np.ndarray:
        return a
    # CuPy arrays copy to the host with .get(); other backends through the array protocol
    return a.get() if hasattr(a, "get") else np.array(a)


register_backend(Backend("cpu", np, np.ndarray, lambda a: _cpu_device, _to_cpu))


def backend_of(array) -> Backend:
    try:
        return backends_by_type[type(array)]
    except KeyError:
        raise TypeError(f"ember: no backend holds arrays of type {type(array).__name__}") from None


def xp_of(array):
    return backends_by_type[type(array)].xp
