"""Auto-wrap policies for ``FullyShardedDataParallel`` (``torch.distributed.fsdp.wrap``).

A policy is called as ``policy(module=m, recurse=..., nonwrapped_numel=n)``: with
``recurse=True`` it answers whether to look inside ``m`` for units, with ``recurse=False``
whether ``m`` itself (``n`` parameters not yet in a unit) becomes a unit.

Example::

    >>> import ember
    >>> from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    >>> policy = ModuleWrapPolicy({ember.nn.Linear})
    >>> policy(module=ember.nn.Linear(2, 2), recurse=False, nonwrapped_numel=6)
    True
"""

from __future__ import annotations

import contextlib

from ... import nn

__all__ = ["CustomPolicy", "ModuleWrapPolicy", "always_wrap_policy", "enable_wrap",
           "lambda_auto_wrap_policy", "size_based_auto_wrap_policy",
           "transformer_auto_wrap_policy", "wrap"]


def always_wrap_policy(module, recurse: bool, nonwrapped_numel: int, *args, **kwargs) -> bool:
    """Make every submodule a unit.

    Args:
        module (Module): the candidate.
        recurse (bool): the question asked (see the module's docstring).
        nonwrapped_numel (int): its parameters not yet in a unit.

    Returns:
        bool: True.

    Example::

        >>> always_wrap_policy(None, recurse=False, nonwrapped_numel=0)
        True
    """
    return True


def lambda_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int, lambda_fn) -> bool:
    """Make a unit of every submodule for which ``lambda_fn(module)`` is true.

    Args:
        module (Module): the candidate.
        recurse (bool): the question asked.
        nonwrapped_numel (int): its parameters not yet in a unit.
        lambda_fn (callable): ``module -> bool``.

    Returns:
        bool: the answer.

    Example::

        >>> lambda_auto_wrap_policy(None, True, 0, lambda m: False)
        True
    """
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls) -> bool:
    """Make a unit of every instance of the given layer classes (PyTorch's transformer
    policy: pass it through ``functools.partial(..., transformer_layer_cls={Block})``).

    Args:
        module (Module): the candidate.
        recurse (bool): the question asked.
        nonwrapped_numel (int): its parameters not yet in a unit.
        transformer_layer_cls (set of type): the layer classes.

    Returns:
        bool: the answer.

    Example::

        >>> import ember
        >>> transformer_auto_wrap_policy(ember.nn.Linear(1, 1), False, 2, {ember.nn.Linear})
        True
    """
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 min_num_params: int = int(1e8), force_leaf_modules=None,
                                 exclude_wrap_modules=None) -> bool:
    """Make a unit of every submodule holding at least ``min_num_params`` parameters not
    yet in a unit.

    Args:
        module (Module): the candidate.
        recurse (bool): the question asked.
        nonwrapped_numel (int): its parameters not yet in a unit.
        min_num_params (int): the threshold (default 1e8).
        force_leaf_modules (set of type): classes not looked into (default
            ``{MultiheadAttention}``).
        exclude_wrap_modules (set of type): classes never made units (default
            ``{ModuleList, ModuleDict}``).

    Returns:
        bool: the answer.

    Example::

        >>> size_based_auto_wrap_policy(None, False, 200, min_num_params=100)
        True
    """
    leaves = tuple(size_based_auto_wrap_policy.FORCE_LEAF_MODULES if force_leaf_modules is None
                   else force_leaf_modules)
    excluded = tuple(size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES
                     if exclude_wrap_modules is None else exclude_wrap_modules)
    # small modules are neither units nor looked into: their parameters join the parent's
    if nonwrapped_numel < min_num_params:
        return False
    return not isinstance(module, leaves if recurse else excluded)


# the defaults, as attributes that scripts extend (PyTorch's spelling)
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}
size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}


class ModuleWrapPolicy:
    """Make a unit of every instance of ``module_classes``.

    Args:
        module_classes (iterable of type): the classes.

    Example::

        >>> import ember
        >>> ModuleWrapPolicy([ember.nn.Linear])(ember.nn.ReLU(), False, 0)
        False
    """

    def __init__(self, module_classes):
        self._module_classes = tuple(set(module_classes))

    def __call__(self, module, recurse: bool, nonwrapped_numel: int = 0, *args, **kwargs):
        return True if recurse else isinstance(module, self._module_classes)

    def __repr__(self):
        return f"{type(self).__name__}({set(self._module_classes)})"


class CustomPolicy:
    """Make a unit of every submodule for which ``lambda_fn(module)`` is true; a dict
    answer also gives that unit's own keyword arguments.

    Args:
        lambda_fn (callable): ``module -> bool | dict``.

    Example::

        >>> CustomPolicy(lambda m: True)(None, False, 0)
        True
    """

    def __init__(self, lambda_fn):
        self._lambda_fn = lambda_fn

    def __call__(self, module, recurse: bool, nonwrapped_numel: int = 0, *args, **kwargs):
        return True if recurse else bool(self._lambda_fn(module))

    def overrides(self, module) -> dict:
        """The keyword arguments ``lambda_fn`` gave ``module`` (empty when it said True).

        Args:
            module (Module): a unit.

        Returns:
            dict: keyword arguments for its ``FullyShardedDataParallel``.

        Example::

            >>> CustomPolicy(lambda m: {"use_orig_params": True}).overrides(None)
            {'use_orig_params': True}
        """
        result = self._lambda_fn(module)
        return dict(result) if isinstance(result, dict) else {}


_WRAP_KWARGS: list = []  # the innermost enable_wrap's arguments last


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls=None, **wrapper_kwargs):
    """Let ``wrap()`` inside this block wrap modules with ``wrapper_cls(module, **kwargs)``.

    Args:
        wrapper_cls (type): the wrapper (default ``FullyShardedDataParallel``).
        **wrapper_kwargs: its keyword arguments.

    Returns:
        a context manager.

    Example::

        >>> with enable_wrap(use_orig_params=True):  # doctest: +SKIP
        ...     layer = wrap(ember.nn.Linear(4, 4))
    """
    if wrapper_cls is None:
        from .fully_sharded_data_parallel import FullyShardedDataParallel as wrapper_cls
    _WRAP_KWARGS.append((wrapper_cls, wrapper_kwargs))
    try:
        yield
    finally:
        _WRAP_KWARGS.pop()


def wrap(module, **wrap_overrides):
    """Wrap ``module`` as the enclosing ``enable_wrap`` says; outside one, return it as is.

    Args:
        module (Module): the module.
        **wrap_overrides: keyword arguments replacing ``enable_wrap``'s.

    Returns:
        Module: the wrapped module (or ``module``).

    Example::

        >>> import ember
        >>> lin = ember.nn.Linear(2, 2)
        >>> wrap(lin) is lin
        True
    """
    if not _WRAP_KWARGS:
        return module
    cls, kwargs = _WRAP_KWARGS[-1]
    return cls(module, **{**kwargs, **wrap_overrides})

