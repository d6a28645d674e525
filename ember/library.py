"""``ember.library``: extending ember with new devices and new kernels.

A new device is an array library: ``register_backend("mydev", xp, ArrayType, to_device)``
makes ``ember.device("mydev")`` usable, and every op whose kernel is written against
``xp`` runs on it at once (autograd sits above the backends, so gradients come for free).
``impl(op, "mydev")`` gives an op a kernel of its own on that device, e.g. a faster one; an
op with neither raises NotImplementedError naming the op and the device.
"""

from __future__ import annotations

from . import _dispatch
from ._core.device import device, known_types
from ._ops._registry import ops

__all__ = ["register_backend", "impl", "backends", "registered_ops"]


def register_backend(name, xp, array_type, to_device, device_of=None):
    """Add device type ``name`` whose arrays are ``array_type`` instances from library
    ``xp``; ``to_device(array)`` converts an array of any backend to this one."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_backend: device type must be an identifier, got {name!r}")
    if name in _dispatch.backends_by_name:
        raise RuntimeError(f"register_backend: device type '{name}' is already registered")
    known_types.add(name)
    dev = device(name)

    def default_device_of(a):
        return dev

    _dispatch.register_backend(_dispatch.Backend(name, xp, array_type,
                                                 device_of or default_device_of, to_device))


def impl(op_name, device_type):
    """Decorator: ``fn(*arrays, **params)`` becomes ``op_name``'s kernel on ``device_type``."""
    if op_name not in ops:
        raise ValueError(f"impl: no op named '{op_name}' (see ember.list_ops())")

    def register(fn):
        ops[op_name].register_kernel(device_type, fn)
        return fn

    return register


def backends():
    """The registered device types."""
    return sorted(_dispatch.backends_by_name)


def registered_ops():
    """Every op, with its signature, backends and differentiability (``ember.list_ops``)."""
    from ._ops import list_ops

    return list_ops()
