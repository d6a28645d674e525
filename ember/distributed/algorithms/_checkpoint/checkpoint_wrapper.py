"""Activation checkpointing as a module wrapper (``torch.distributed.algorithms._checkpoint.
checkpoint_wrapper``), the way FSDP and Lightning/accelerate training scripts apply it.

``checkpoint_wrapper(block)`` returns a module whose forward runs ``block`` under
``ember.utils.checkpoint.checkpoint`` (its activations are recomputed in backward instead
of kept); ``apply_activation_checkpointing(model, check_fn=...)`` wraps every submodule a
predicate (or an FSDP auto-wrap policy) picks, in place. The wrapped module sits under the
attribute ``_checkpoint_wrapped_module``, but parameter names and state-dict keys are the
unwrapped module's, so checkpoints load into the model with or without the wrappers.

Example::

    >>> import ember
    >>> from ember.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    ...     apply_activation_checkpointing)
    >>> model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.ReLU())
    >>> apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, ember.nn.Linear))
    >>> list(model.state_dict())
    ['0.weight', '0.bias']
"""

from __future__ import annotations

import functools
from enum import Enum, auto

from .... import nn
from ....utils.checkpoint import checkpoint as _checkpoint

__all__ = ["ActivationWrapper", "CheckpointImpl", "CheckpointWrapper", "OffloadWrapper",
           "apply_activation_checkpointing", "checkpoint_wrapper", "offload_wrapper"]

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(Enum):
    """How the wrapped forward is checkpointed: ``REENTRANT`` (the older autograd-Function
    implementation) or ``NO_REENTRANT`` (saved-tensor hooks; the default)."""

    REENTRANT = auto()
    NO_REENTRANT = auto()


def _replace_prefix(state_dict, old, new):
    for key in list(state_dict):
        if key.startswith(old):
            state_dict[new + key[len(old):]] = state_dict.pop(key)


class ActivationWrapper(nn.Module):
    """The base of the wrappers: holds ``module`` as ``_checkpoint_wrapped_module`` and
    hides that attribute from parameter names and state-dict keys.

    Args:
        module (Module): the wrapped module.

    Example::

        >>> w = CheckpointWrapper(ember.nn.Linear(2, 2))
        >>> [name for name, _ in w.named_parameters()]
        ['weight', 'bias']
    """

    def __init__(self, module):
        super().__init__()
        self._checkpoint_wrapped_module = module
        self._register_state_dict_hook(self._post_state_dict_hook)
        self._register_load_state_dict_pre_hook(self._pre_load_state_dict_hook,
                                                with_module=True)

    def forward(self, *args, **kwargs):
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._checkpoint_wrapped_module, name)

    def __getitem__(self, key):
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs):
        """The wrapped module's parameters under their own names (no wrapper prefix).

        Args:
            *args, **kwargs: as ``Module.named_parameters``.

        Returns:
            iterator of ``(name, Parameter)``.

        Example::

            >>> next(CheckpointWrapper(ember.nn.Linear(2, 2)).named_parameters())[0]
            'weight'
        """
        for name, p in super().named_parameters(*args, **kwargs):
            yield name.replace(_CHECKPOINT_PREFIX, ""), p

    @staticmethod
    def _post_state_dict_hook(module, state_dict, prefix, *args):
        _replace_prefix(state_dict, prefix + _CHECKPOINT_PREFIX, prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict, prefix, *args):
        for key in list(state_dict):
            if key.startswith(prefix) and not key.startswith(prefix + _CHECKPOINT_PREFIX):
                state_dict[prefix + _CHECKPOINT_PREFIX + key[len(prefix):]] = \
                    state_dict.pop(key)


class CheckpointWrapper(ActivationWrapper):
    """A module whose forward runs ``module`` under activation checkpointing.

    Args:
        mod (Module): the wrapped module.
        checkpoint_impl (CheckpointImpl): ``NO_REENTRANT`` (default) or ``REENTRANT``.
        checkpoint_fn (callable, optional): the checkpoint function to call as
            ``checkpoint_fn(module, *args, **checkpoint_fn_kwargs, **kwargs)``.
            Default: ``ember.utils.checkpoint.checkpoint`` with ``use_reentrant`` set from
            ``checkpoint_impl``.
        **checkpoint_fn_kwargs: passed to the checkpoint function.

    Example::

        >>> w = CheckpointWrapper(ember.nn.Linear(2, 2))
        >>> w(ember.ones(1, 2)).shape
        ember.Size([1, 2])
    """

    def __init__(self, mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                 **checkpoint_fn_kwargs):
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        if checkpoint_fn is None:
            self.checkpoint_fn = functools.partial(
                _checkpoint, use_reentrant=checkpoint_impl == CheckpointImpl.REENTRANT,
                **checkpoint_fn_kwargs)
        else:
            self.checkpoint_fn = functools.partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args, **kwargs):
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs:
            # the reentrant implementation takes positional inputs only
            def call(*flat):
                n = len(args)
                return self._checkpoint_wrapped_module(*flat[:n], **dict(zip(kwargs, flat[n:])))

            return self.checkpoint_fn(call, *args, *kwargs.values())
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


class OffloadWrapper(ActivationWrapper):
    """A module whose forward keeps its saved activations in CPU memory
    (``ember.autograd.graph.save_on_cpu``): on the CPU backend they already are.

    Args:
        mod (Module): the wrapped module.

    Example::

        >>> OffloadWrapper(ember.nn.Linear(2, 2))(ember.ones(1, 2)).shape
        ember.Size([1, 2])
    """

    def forward(self, *args, **kwargs):
        from ....autograd.graph import save_on_cpu

        with save_on_cpu(pin_memory=True):
            return self._checkpoint_wrapped_module(*args, **kwargs)


def offload_wrapper(module):
    """Wrap ``module`` in an :class:`OffloadWrapper`.

    Args:
        module (Module): the module.

    Returns:
        OffloadWrapper.

    Example::

        >>> type(offload_wrapper(ember.nn.Linear(2, 2))).__name__
        'OffloadWrapper'
    """
    return OffloadWrapper(module)


def checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT, checkpoint_fn=None,
                       **checkpoint_fn_kwargs):
    """Wrap ``module`` so that its forward runs under activation checkpointing.

    Args:
        module (Module): the module.
        checkpoint_impl (CheckpointImpl): ``NO_REENTRANT`` (default) or ``REENTRANT``.
        checkpoint_fn (callable, optional): a checkpoint function of your own.
        **checkpoint_fn_kwargs: passed to the checkpoint function.

    Returns:
        CheckpointWrapper.

    Example::

        >>> type(checkpoint_wrapper(ember.nn.Linear(2, 2))).__name__
        'CheckpointWrapper'
    """
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                                   check_fn=lambda _: True, auto_wrap_policy=None):
    """Wrap, in place, every submodule of ``model`` that ``check_fn`` (or
    ``auto_wrap_policy``) picks with ``checkpoint_wrapper_fn``.

    Args:
        model (Module): the model, changed in place (the root itself is never wrapped).
        checkpoint_wrapper_fn (callable): ``module -> wrapper``. Default:
            :func:`checkpoint_wrapper`.
        check_fn (callable): ``module -> bool``: wrap it. Default: every submodule.
        auto_wrap_policy (callable, optional): an FSDP auto-wrap policy
            (``ember.distributed.fsdp.wrap``) used instead of ``check_fn``.

    Returns:
        None.

    Example::

        >>> m = ember.nn.Sequential(ember.nn.Linear(2, 2))
        >>> apply_activation_checkpointing(m)
        >>> type(m[0]).__name__
        'CheckpointWrapper'
    """
    if auto_wrap_policy is not None:
        def picks(module):
            numel = sum(p.numel() for p in module.parameters())
            return bool(auto_wrap_policy(module=module, recurse=False, nonwrapped_numel=numel))

        def descend(module):
            numel = sum(p.numel() for p in module.parameters())
            return bool(auto_wrap_policy(module=module, recurse=True, nonwrapped_numel=numel))
    else:
        picks = check_fn

        def descend(module):
            return True

    def visit(parent):
        for name, child in list(parent.named_children()):
            if isinstance(child, ActivationWrapper):
                continue
            if descend(child):
                visit(child)
            if picks(child):
                setattr(parent, name, checkpoint_wrapper_fn(child))

    visit(model)
