"""The default device: ``with ember.device("meta"):``, ``ember.set_default_device`` and
``ember.get_default_device`` (PyTorch's ``torch/utils/_device.py``).

NOTE [ Default device ]
A default device is a mode on the dispatcher's stack (NOTE [ Dispatch ] in
ember/_dispatch.py), as PyTorch's ``DeviceContext`` is a function mode: while it is pushed,
a call of a factory function (``empty``, ``zeros``, ``randn``, ``arange``, ``tensor``, ...;
``_FACTORIES`` below, PyTorch's list) that names no ``device`` gets this one. Every other
call, ``*_like`` and ``Tensor.new_*`` included, keeps its inputs' device. So a whole model
built under ``with ember.device("meta"):`` has its parameters on meta, and nothing in the
modules knows. Like PyTorch's, the mode is per thread, and while one is pushed every op pays
the (small) cost of passing through it.
"""

from __future__ import annotations

import inspect
import threading

from .. import _dispatch
from .._core import device as _device_mod
from .._core.device import device as _device

__all__ = ["DeviceContext", "set_default_device", "get_default_device"]

#: the factories that take a default device (PyTorch's ``_device_constructors``)
_FACTORIES = frozenset({
    "empty", "empty_strided", "ones", "zeros", "full", "arange", "range", "eye", "linspace",
    "logspace", "rand", "randn", "randint", "randperm", "tril_indices", "triu_indices",
    "tensor", "as_tensor", "asarray", "scalar_tensor",
})


_signatures: dict = {}


def _signature(handle):
    """The signature of a factory's entrance (its ``device`` may come positionally)."""
    sig = _signatures.get(handle)
    if sig is None:
        sig = _signatures[handle] = inspect.signature(handle._run)
    return sig


class DeviceContext(_dispatch.Mode):
    """A mode giving factory calls without ``device=`` the device ``device``.

    Used through ``with ember.device(...):`` and ``ember.set_default_device``.

    Args:
        device: the default device (anything ``ember.device`` accepts).

    Example::

        >>> with DeviceContext("meta"):
        ...     ember.zeros(2).device
        device(type='meta')
    """

    level = 0

    def __init__(self, device):
        self.device = _device(device)

    def dispatch(self, handle, args, kwargs):
        if handle.overloadpacket.__name__ in _FACTORIES:
            bound = _signature(handle).bind_partial(*args, **kwargs)
            if bound.arguments.get("device") is None:
                bound.arguments["device"] = self.device
                return handle(*bound.args, **bound.kwargs)
        return handle(*args, **kwargs)

    def __enter__(self):
        _dispatch.push_mode(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        _dispatch.pop_mode(self)
        return False


class _Entered(threading.local):
    #: contexts entered by ``with ember.device(...)`` on this thread, innermost last
    stack = ()
    #: the context ``set_default_device`` pushed on this thread, if any
    default = None


_entered = _Entered()


def _enter(dev):
    ctx = DeviceContext(dev)
    ctx.__enter__()
    _entered.stack = _entered.stack + (ctx,)


def _exit(dev):
    stack = _entered.stack
    ctx = stack[-1]
    _entered.stack = stack[:-1]
    ctx.__exit__(None, None, None)


# ``with ember.device(...):`` lands here (the core knows nothing of the dispatcher)
_device_mod._context_hooks = (_enter, _exit)


def set_default_device(device) -> None:
    """Make ``device`` the device of factory calls that name none, on this thread (None
    restores the CPU). A ``with ember.device(...):`` block overrides it while it lasts.

    Args:
        device: a device, a string such as ``"meta"`` or ``"cuda:0"``, or None.

    Returns:
        None.

    Example::

        >>> ember.set_default_device("meta")
        >>> ember.zeros(2).device
        device(type='meta')
        >>> ember.set_default_device(None)
    """
    old = _entered.default
    if old is not None:
        old.__exit__(None, None, None)
        _entered.default = None
    if device is not None:
        ctx = DeviceContext(device)
        ctx.__enter__()
        _entered.default = ctx


def get_default_device():
    """The device factory calls without ``device=`` use on this thread: the innermost
    ``with ember.device(...)`` or ``set_default_device`` in force, else the CPU.

    Returns:
        ember.device: the default device.

    Example::

        >>> with ember.device("meta"):
        ...     ember.get_default_device()
        device(type='meta')
    """
    for mode in reversed(_dispatch.state.modes):
        if isinstance(mode, DeviceContext):
            return mode.device
    return _device("cpu")
