"""Adagrad (Duchi et al., 2011)."""

from __future__ import annotations

import numpy as np

from ._base import check_fused, check_range, closure_loss, step_group
from .optimizer import Optimizer

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): per-element steps divided by the root of the sum of all
    past squared gradients.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 1e-2.
        lr_decay (float): ``lr / (1 + (t - 1) lr_decay)`` at step t. Default: 0.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        initial_accumulator_value (float): starting sum of squares. Default: 0.
        eps (float): added to the denominator. Default: 1e-10.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.Adagrad([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_range("learning rate", lr)
        check_range("lr_decay value", lr_decay)
        check_range("weight_decay value", weight_decay)
        check_range("initial_accumulator_value value", initial_accumulator_value)
        check_range("epsilon value", eps)
        check_fused(fused, foreach, differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        from .. import full_like, tensor

        # PyTorch creates Adagrad's state eagerly
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = tensor(0.0)
                st["sum"] = full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            if group["fused"] and any(p.grad is not None and p.grad.is_sparse
                                      for p in group["params"]):
                raise RuntimeError("`fused` does not support sparse grad or complex param")
            # state is made at construction, so there is nothing to initialise here
            step_group(self, group, None, ("sum", "step"), adagrad, lr=group["lr"],
                       weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                       eps=group["eps"], maximize=group["maximize"])
        return loss


def adagrad(params, grads, state_sums, state_steps, *, lr, weight_decay, lr_decay, eps,
            maximize=False, **_):
    """The Adagrad update (what :class:`Adagrad`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        state_sums (list of Tensor): running sums of the squared gradients.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        lr (float): the learning rate.
        weight_decay (float): L2 penalty added to the gradient.
        lr_decay (float): the learning rate at step ``t`` is ``lr / (1 + (t - 1) * lr_decay)``.
        eps (float): added to the denominator.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`Adagrad` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.adagrad import adagrad
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> adagrad([p], [g], [ember.zeros(2)], [ember.tensor(0.0)], lr=0.1, weight_decay=0,
        ...         lr_decay=0, eps=1e-10)
        >>> p
        tensor([0.9000, 1.1000])
    """
    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        step = state_steps[i].item()
        if weight_decay != 0:
            if g.is_sparse:
                raise RuntimeError("weight_decay option is not compatible with sparse "
                                   "gradients")
            g = g.add(p, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        if g.is_sparse:
            _sparse_adagrad(p, g, state_sums[i], clr, eps)
            continue
        state_sums[i].addcmul_(g, g, value=1)
        std = state_sums[i].sqrt().add_(eps)
        p.addcdiv_(g, std, value=-clr)


def _sparse_adagrad(p, g, state_sum, clr, eps):
    """Adagrad's update for a sparse gradient: on the entries the coalesced gradient holds,
    the sum of squares grows and the parameter steps; every other entry keeps its value and
    its sum (PyTorch's sparse update, in its order of roundings)."""
    g = g.coalesce()
    where = tuple(g._indices()._data)
    vals = g._values()._data
    s = state_sum._data
    s[where] += vals * vals
    std = np.sqrt(s[where]) + s.dtype.type(eps)
    p._data[where] += p._data.dtype.type(-clr) * (vals / std)
    state_sum._bump()
    p._bump()
