"""``ember.utils.hooks``: hook handles and helpers (``torch.utils.hooks``).

:class:`RemovableHandle` is the handle every ``Module.register_*_hook`` returns, the same
class, so ``isinstance`` checks and code that builds handles for its own hook dictionaries
behave as under PyTorch.
"""

from __future__ import annotations

import warnings

from ..nn.modules.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark ``f`` as a tensor hook that is not meant to be saved with its tensor.

    :func:`warn_if_has_hooks` (called when a tensor with hooks is pickled) stays silent about
    hooks marked this way.

    Args:
        f (callable): the hook.

    Returns:
        callable: ``f`` itself, marked.

    Example:
        >>> from ember.utils.hooks import unserializable_hook
        >>> @unserializable_hook
        ... def hook(grad):
        ...     return grad
        >>> hook.__torch_unserializable__
        True
    """
    f.__torch_unserializable__ = True
    return f


def _tensor_hooks(tensor):
    """The backward hooks registered on ``tensor``: a leaf keeps them itself, a non-leaf in
    its ``grad_fn`` under its output number."""
    fn = getattr(tensor, "_grad_fn", None)
    if fn is None:
        return dict(getattr(tensor, "_hooks", None) or {})
    return dict((fn._tpre or {}).get(tensor._out_nr) or {})


def warn_if_has_hooks(tensor) -> None:
    """Warn about each backward hook on ``tensor`` that will not be saved with it.

    Hooks are never serialized; a hook decorated with :func:`unserializable_hook` says that
    is expected and is not reported.

    Args:
        tensor (Tensor): the tensor about to be serialized.

    Returns:
        None

    Example:
        >>> import warnings, ember
        >>> from ember.utils.hooks import warn_if_has_hooks
        >>> x = ember.ones(2, requires_grad=True)
        >>> _ = x.register_hook(lambda g: g)
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     warn_if_has_hooks(x)
        >>> len(w)
        1
    """
    for hook in _tensor_hooks(tensor).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(
                f"backward hook {hook!r} on tensor will not be serialized.  If this is "
                "expected, you can decorate the function with "
                "@torch.utils.hooks.unserializable_hook to suppress this warning",
                stacklevel=2)
