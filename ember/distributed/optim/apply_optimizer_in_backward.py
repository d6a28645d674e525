"""Optimizers that step inside ``backward()``, one parameter at a time
(``torch.distributed.optim.apply_optimizer_in_backward``).

A parameter given to ``_apply_optimizer_in_backward`` gets its own optimizer and a hook
that runs after its gradient has been accumulated: the hook steps the optimizer and drops
the gradient, so the memory of a parameter's gradient is freed as soon as it is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__: list = []

#: parameter -> the handle of its hook
param_to_optim_hook_handle_map: dict = {}
#: parameter -> its gradient accumulator, as PyTorch keeps it (here: the parameter itself,
#: whose post-accumulate-grad hooks play that role)
param_to_acc_grad_map: dict = {}


def _apply_optimizer_in_backward(optimizer_class, params: Iterable, optimizer_kwargs: dict,
                                 register_hook: bool = True) -> None:
    """Give each parameter in ``params`` an ``optimizer_class(**optimizer_kwargs)`` that
    steps during ``backward()`` right after the parameter's gradient is accumulated; the
    gradient is then set to None. Call it again on a parameter to add another optimizer.

    Args:
        optimizer_class (type): e.g. ``ember.optim.SGD``.
        params (iterable of Parameter): the parameters.
        optimizer_kwargs (dict): the optimizer's arguments (``lr`` ...).
        register_hook (bool): register the stepping hook (False: only attach the
            optimizers, for a caller that steps them itself).

    Example::

        >>> from ember.distributed.optim.apply_optimizer_in_backward import (
        ...     _apply_optimizer_in_backward)
        >>> lin = ember.nn.Linear(2, 1)
        >>> _apply_optimizer_in_backward(ember.optim.SGD, lin.parameters(), {"lr": 0.1})
        >>> before = lin.weight.detach().clone()
        >>> lin(ember.ones(1, 2)).sum().backward()
        >>> lin.weight.grad is None, bool((lin.weight != before).all())
        (True, True)
    """
    for param in params:
        opt = optimizer_class([param], **optimizer_kwargs)
        for attr, value in (("_in_backward_optimizers", opt),
                            ("_optimizer_classes", optimizer_class),
                            ("_optimizer_kwargs", optimizer_kwargs)):
            if not hasattr(param, attr):
                setattr(param, attr, [])
            getattr(param, attr).append(value)
        if not register_hook or param in param_to_optim_hook_handle_map:
            continue

        def step_then_drop(p):
            for optimizer in p._in_backward_optimizers:
                optimizer.step()
            p.grad = None

        param_to_acc_grad_map[param] = param
        param_to_optim_hook_handle_map[param] = [
            param.register_post_accumulate_grad_hook(step_then_drop)]


def _get_in_backward_optimizers(module) -> list:
    """Every optimizer attached to ``module``'s parameters by
    ``_apply_optimizer_in_backward``.

    Args:
        module (nn.Module): the module.

    Returns:
        list[Optimizer]

    Example::

        >>> from ember.distributed.optim.apply_optimizer_in_backward import (
        ...     _get_in_backward_optimizers)
        >>> _get_in_backward_optimizers(ember.nn.Linear(2, 1))
        []
    """
    optims: list[Any] = []
    for param in module.parameters():
        optims.extend(getattr(param, "_in_backward_optimizers", []))
    return optims
