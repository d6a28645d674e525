"""Build a module without running its parameter initialisation."""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Instantiate ``module_cls`` with uninitialised parameters and buffers (their memory is
    allocated but never filled), for when they will be overwritten anyway.

    The module is built on the ``meta`` device, so its initialisers cost nothing, then moved
    to the requested device with ``to_empty``. The class must accept a ``device`` argument.

    Args:
        module_cls (type): a ``Module`` subclass.
        *args: its constructor arguments (``device`` included, if any).
        **kwargs: the keyword arguments, likewise.

    Returns:
        The module, its tensors uninitialised.

    Example:
        >>> import ember
        >>> m = skip_init(ember.nn.Linear, 3, 4)
        >>> tuple(m.weight.shape), m.weight.device.type
        ((4, 3), 'cpu')
    """
    from ..modules.module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
