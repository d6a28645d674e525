"""``ember.functorch``: the ``functorch`` package's API, for programs written before
``torch.func`` (``from functorch import vmap, grad, make_functional``).

The transforms are ``ember.func``'s own. What ``torch.func`` dropped is here too:
``make_functional`` / ``make_functional_with_buffers`` (a model's parameters as a tuple and
a module taking them as its first argument) and ``combine_state_for_ensemble`` (several
models' parameters stacked for ``vmap``). Each public name warns once per call site with a
FutureWarning naming its ``torch.func`` replacement, as PyTorch 2.x does. Under
``python -m ember.compat.run`` the import hook resolves ``functorch`` here.
"""

from __future__ import annotations

import copy
import functools
import warnings

from .. import func as _func
from ..nn.modules.module import Module

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functionalize", "make_functional", "make_functional_with_buffers",
           "combine_state_for_ensemble", "FunctionalModule", "FunctionalModuleWithBuffers",
           "experimental"]


def _deprecated(name, replacement):
    warnings.warn(
        f"functorch has been merged into PyTorch: `functorch.{name}` is deprecated since "
        f"PyTorch 2.0 and will be removed; use `{replacement}` instead (see the `torch.func` "
        "migration guide).", FutureWarning, stacklevel=3)


def _forwarding(name, target, replacement):
    @functools.wraps(target)
    def wrapper(*args, **kwargs):
        _deprecated(name, replacement)
        return target(*args, **kwargs)

    wrapper.__doc__ = (f"``ember.func.{target.__name__}`` under functorch's name (deprecated; "
                       f"use ``{replacement}``).\n\n{target.__doc__ or ''}")
    return wrapper


vmap = _forwarding("vmap", _func.vmap, "torch.vmap")
grad = _forwarding("grad", _func.grad, "torch.func.grad")
grad_and_value = _forwarding("grad_and_value", _func.grad_and_value,
                             "torch.func.grad_and_value")
vjp = _forwarding("vjp", _func.vjp, "torch.func.vjp")
jvp = _forwarding("jvp", _func.jvp, "torch.func.jvp")
jacrev = _forwarding("jacrev", _func.jacrev, "torch.func.jacrev")
jacfwd = _forwarding("jacfwd", _func.jacfwd, "torch.func.jacfwd")
hessian = _forwarding("hessian", _func.hessian, "torch.func.hessian")
functionalize = _forwarding("functionalize", _func.functionalize, "torch.func.functionalize")


def _stateless_copy(model):
    """A copy of ``model`` whose parameters and buffers live on the meta device (the
    functional module supplies real ones at each call)."""
    clone = copy.deepcopy(model)
    return clone.to("meta")


class FunctionalModule(Module):
    """A module called as ``fmodel(params, *args)``: ``params`` (a tuple, in the order
    ``make_functional`` returned them) stand in for the wrapped model's parameters.

    Args:
        stateless_model (Module): the model, its parameters on the meta device.
        param_names (tuple of str): the parameters' names, in ``params`` order.

    Returns:
        A Module.

    Example:
        >>> import ember
        >>> from ember.functorch import make_functional
        >>> fmodel, params = make_functional(ember.nn.Linear(3, 2))
        >>> fmodel(params, ember.ones(4, 3)).shape
        ember.Size([4, 2])
    """

    def __init__(self, stateless_model, param_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)

    def forward(self, params, *args, **kwargs):
        if len(params) != len(self.param_names):
            raise RuntimeError(f"FunctionalModule: expected {len(self.param_names)} parameters, "
                               f"got {len(params)}")
        return _func.functional_call(self.stateless_model, dict(zip(self.param_names, params)),
                                     args, kwargs)


class FunctionalModuleWithBuffers(Module):
    """A module called as ``fmodel(params, buffers, *args)`` (see ``FunctionalModule``).

    Args:
        stateless_model (Module): the model, its state on the meta device.
        param_names (tuple of str): the parameters' names, in ``params`` order.
        buffer_names (tuple of str): the buffers' names, in ``buffers`` order.

    Returns:
        A Module.

    Example:
        >>> import ember
        >>> from ember.functorch import make_functional_with_buffers
        >>> fmodel, params, buffers = make_functional_with_buffers(ember.nn.BatchNorm1d(3))
        >>> fmodel(params, buffers, ember.randn(4, 3)).shape
        ember.Size([4, 3])
    """

    def __init__(self, stateless_model, param_names, buffer_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    def forward(self, params, buffers, *args, **kwargs):
        state = dict(zip(self.param_names, params))
        state.update(zip(self.buffer_names, buffers))
        return _func.functional_call(self.stateless_model, state, args, kwargs)


def _state(model, disable_autograd_tracking):
    names, params = [], []
    for n, p in model.named_parameters():
        names.append(n)
        params.append(p.detach() if disable_autograd_tracking else p)
    return names, tuple(params)


def make_functional(model, disable_autograd_tracking=False):
    """Split ``model`` into a stateless module and its parameters.

    Args:
        model (Module): a model without buffers (see ``make_functional_with_buffers``).
        disable_autograd_tracking (bool): return the parameters detached. Default: False.

    Returns:
        (FunctionalModule, tuple of Tensor): call ``fmodel(params, *inputs)``.

    Raises:
        RuntimeError: the model has buffers.

    Example:
        >>> import ember
        >>> from ember.functorch import make_functional
        >>> fmodel, params = make_functional(ember.nn.Linear(3, 2))
        >>> [tuple(p.shape) for p in params]
        [(2, 3), (2,)]
    """
    _deprecated("make_functional", "torch.func.functional_call")
    if len(tuple(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    names, params = _state(model, disable_autograd_tracking)
    return FunctionalModule(_stateless_copy(model), names), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """Split ``model`` into a stateless module, its parameters and its buffers.

    Args:
        model (Module): the model.
        disable_autograd_tracking (bool): return the parameters detached. Default: False.

    Returns:
        (FunctionalModuleWithBuffers, tuple of Tensor, tuple of Tensor): call
        ``fmodel(params, buffers, *inputs)``.

    Example:
        >>> import ember
        >>> from ember.functorch import make_functional_with_buffers
        >>> fmodel, params, buffers = make_functional_with_buffers(ember.nn.BatchNorm1d(3))
        >>> len(params), len(buffers)
        (2, 3)
    """
    _deprecated("make_functional_with_buffers", "torch.func.functional_call")
    names, params = _state(model, disable_autograd_tracking)
    bnames = [n for n, _ in model.named_buffers()]
    buffers = tuple(b for _, b in model.named_buffers())
    return (FunctionalModuleWithBuffers(_stateless_copy(model), names, bnames), params,
            buffers)


def combine_state_for_ensemble(models):
    """Stack the parameters and buffers of models of one class, for ``vmap`` over them.

    Args:
        models (sequence of Module): same class, all in training or all in eval mode.

    Returns:
        (FunctionalModuleWithBuffers, tuple of Tensor, tuple of Tensor): each tensor has a
        leading dimension of ``len(models)``; ``vmap(fmodel)(params, buffers, x)`` runs them
        all (``in_dims=(0, 0, None)`` to share ``x``).

    Raises:
        RuntimeError: no models, models of different classes or modes.

    Example:
        >>> import ember
        >>> from ember.functorch import combine_state_for_ensemble, vmap
        >>> models = [ember.nn.Linear(3, 2) for _ in range(4)]
        >>> fmodel, params, buffers = combine_state_for_ensemble(models)
        >>> vmap(fmodel, in_dims=(0, 0, None))(params, buffers, ember.ones(5, 3)).shape
        ember.Size([4, 5, 2])
    """
    _deprecated("combine_state_for_ensemble", "torch.func.stack_module_state")
    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same "
                           "class.")
    from .._ops.join import stack

    names = [n for n, _ in models[0].named_parameters()]
    bnames = [n for n, _ in models[0].named_buffers()]
    # detached, as functorch's are: an ensemble is usually trained through ``grad``
    params = tuple(stack([dict(m.named_parameters())[n].detach() for m in models])
                   for n in names)
    buffers = tuple(stack([dict(m.named_buffers())[n] for m in models]) for n in bnames)
    fmodel = FunctionalModuleWithBuffers(_stateless_copy(models[0]), names, bnames)
    return fmodel, params, buffers


from . import experimental  # noqa: E402
