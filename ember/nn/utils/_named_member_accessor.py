"""``torch.nn.utils._named_member_accessor``: put a tensor in a module's slot and get back
the one that was there (tensordict swaps parameters in and out of modules with it)."""

from __future__ import annotations

__all__ = ["swap_tensor"]

#: the value ``swap_tensor`` returns for a slot that did not exist, and takes to empty one
_MISSING = object()


def swap_tensor(module, name: str, tensor, allow_missing: bool = False):
    """Store ``tensor`` under ``name`` directly on ``module`` (its parameters, its buffers,
    else a plain attribute) and return what was there before.

    A parameter slot stays a parameter slot and a buffer slot a buffer slot, whatever
    ``tensor`` is; ``None`` empties a parameter or buffer slot; ``_MISSING`` removes the slot.

    Args:
        module (Module): the module that owns the slot (no dotted paths).
        name (str): the slot's name.
        tensor (Tensor or None or _MISSING): the new value.
        allow_missing (bool): create the slot when ``module`` has nothing under ``name``
            (``_MISSING`` is then returned) instead of raising AttributeError.

    Returns:
        Tensor: the previous value (or None, or ``_MISSING``).

    Example::

        >>> lin = ember.nn.Linear(2, 2)
        >>> old = swap_tensor(lin, "bias", ember.zeros(2))
        >>> type(old).__name__, lin.bias.tolist()
        ('Parameter', [0.0, 0.0])
    """
    from ..._core.tensor import Tensor
    from ..modules.module import Module

    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if not name:
        raise KeyError('tensor name can\'t be empty string ""')
    for slots in (module._parameters, module._buffers):
        if name in slots:
            old = slots[name]
            if tensor is _MISSING:
                del slots[name]
            else:
                slots[name] = tensor
            return old
    if hasattr(module, name):
        old = getattr(module, name)
        if old is not None and not isinstance(old, Tensor):
            raise TypeError(f"attribute `{name}`: {old} is not an instance of torch.Tensor")
    elif allow_missing:
        old = _MISSING
    else:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    if tensor is _MISSING:
        if old is not _MISSING:
            delattr(module, name)
    else:
        setattr(module, name, tensor)
    return old
