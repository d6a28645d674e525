"""``functional_call``: run a module with some parameters and buffers replaced."""

from __future__ import annotations

import contextlib

__all__ = ["functional_call"]


def _get(module, path):
    """The module owning ``path``'s last name, and that name; a missing or non-module step
    on the way raises PyTorch's member-accessor errors."""
    from ..modules.module import Module

    *mods, name = path.split(".")
    for i, m in enumerate(mods):
        try:
            sub = getattr(module, m)
        except AttributeError as e:
            raise AttributeError(f"{module._get_name()} has no attribute `{m}`") from e
        if not isinstance(sub, Module):
            raise TypeError(f"submodule `{'.'.join(mods[:i + 1])}`: {sub} is not an instance "
                            "of torch.nn.Module")
        module = sub
    return module, name


@contextlib.contextmanager
def _reparametrize(module, tensors, tie_weights=True, strict=False):
    from ..._core.tensor import Tensor

    if tie_weights:
        # tied parameters (one tensor under several names) are replaced together
        by_id = {}
        for name, t in list(module.named_parameters(remove_duplicate=False)) + list(
                module.named_buffers(remove_duplicate=False)):
            by_id.setdefault(id(t), []).append(name)
        extra = {}
        for names in by_id.values():
            given = [n for n in names if n in tensors]
            if given:
                for n in names:
                    if n not in tensors:
                        extra[n] = tensors[given[0]]
        tensors = {**tensors, **extra}
    if strict:
        keys = {n for n, _ in module.named_parameters(remove_duplicate=False)} | {
            n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(keys - set(tensors))
        unexpected = sorted(set(tensors) - keys)
        if missing or unexpected:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                + (f"Unexpected key(s): {', '.join(repr(k) for k in unexpected)}.\n\t"
                   if unexpected else "")
                + (f"Missing key(s): {', '.join(repr(k) for k in missing)}." if missing
                   else ""))
    saved = []
    try:
        for path, t in tensors.items():
            owner, name = _get(module, path)
            if name in owner._parameters:
                saved.append((owner, name, "_parameters", owner._parameters[name]))
                owner._parameters[name] = t
            elif name in owner._buffers:
                saved.append((owner, name, "_buffers", owner._buffers[name]))
                owner._buffers[name] = t
            else:
                had = name in owner.__dict__
                saved.append((owner, name, "__dict__", owner.__dict__.get(name) if had
                              else _MISSING))
                if not isinstance(t, Tensor):
                    raise TypeError(f"functional_call: value for {path!r} is not a Tensor")
                object.__setattr__(owner, name, t)
        yield
    finally:
        for owner, name, where, old in reversed(saved):
            if where == "__dict__":
                if old is _MISSING:
                    del owner.__dict__[name]
                else:
                    owner.__dict__[name] = old
            else:
                getattr(owner, where)[name] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module(*args, **kwargs)`` with the given tensors standing in for its
    parameters and buffers (dotted names); the module is unchanged afterwards.

    Args:
        module (Module): the module to call.
        parameter_and_buffer_dicts (dict or sequence of dict): name -> tensor.
        args (tuple or value, optional): positional arguments.
        kwargs (dict, optional): keyword arguments.
        tie_weights (bool): a replacement for one of tied tensors replaces all. Default: True.
        strict (bool): require a replacement for every parameter and buffer. Default: False.

    Returns:
        The module's output.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(2, 1)
        >>> params = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
        >>> functional_call(layer, params, (ember.ones(1, 2),))
        tensor([[2.]])
    """
    if isinstance(parameter_and_buffer_dicts, (list, tuple)):
        merged = {}
        for d in parameter_and_buffer_dicts:
            overlap = set(merged) & set(d)
            if overlap:
                raise ValueError(f"{sorted(overlap)} appeared in multiple dictionaries; "
                                 "behavior of functional call is ambiguous")
            merged.update(d)
        parameter_and_buffer_dicts = merged
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, dict(parameter_and_buffer_dicts), tie_weights, strict):
        return module(*args, **(kwargs or {}))
