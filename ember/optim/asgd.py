"""Averaged SGD (Polyak & Juditsky, 1992)."""

from __future__ import annotations

import functools

from ._base import check_range, closure_loss, step_group
from .optimizer import Optimizer

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, 1992): SGD with a decaying step, keeping a running
    average of the iterates (``state["ax"]``) from step ``t0`` on.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 1e-2.
        lambd (float): decay term. Default: 1e-4.
        alpha (float): power of the step-size decay. Default: 0.75.
        t0 (float): step at which averaging starts. Default: 1e6.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.ASGD([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "ASGD does not support sparse gradients"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_range("learning rate", lr)
        check_range("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        from .. import tensor, zeros_like

        def init(p, st, lr):
            st["step"] = tensor(0.0)
            st["eta"] = tensor(float(lr))
            st["mu"] = tensor(1.0)
            st["ax"] = zeros_like(p)

        loss = closure_loss(closure)
        for group in self.param_groups:
            step_group(self, group, functools.partial(init, lr=group["lr"]),
                       ("ax", "mu", "eta", "step"), asgd, lambd=group["lambd"], lr=group["lr"],
                       t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"])
        return loss


def asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha, weight_decay,
         maximize=False, **_):
    """The averaged SGD update (what :class:`ASGD`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        axs (list of Tensor): the running averages of the parameters.
        mus (list of Tensor): 0-d averaging coefficients, updated.
        etas (list of Tensor): 0-d step sizes, updated.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        lambd (float): the decay term.
        lr (float): the learning rate.
        t0 (float): the step at which averaging starts.
        alpha (float): the power of the step size's decay.
        weight_decay (float): L2 penalty added to the gradient.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`ASGD` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.asgd import asgd
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> asgd([p], [g], [ember.zeros(2)], [ember.tensor(1.0)], [ember.tensor(0.1)],
        ...      [ember.tensor(0.0)], lambd=1e-4, lr=0.1, t0=1e6, alpha=0.75, weight_decay=0)
        >>> p
        tensor([0.9500, 1.0500])
    """
    from .. import tensor

    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        step = state_steps[i].item()
        if weight_decay != 0:
            g = g.add(p, alpha=weight_decay)
        eta = etas[i].item()
        p.mul_(1 - lambd * eta)
        p.add_(g, alpha=-eta)
        if mus[i].item() != 1:
            axs[i].add_(p.sub(axs[i]).mul_(mus[i].item()))
        else:
            axs[i].copy_(p)
        # the new eta and mu are made as tensors of the default dtype, then copied in, as
        # PyTorch's (float32 rounding even where a resumed state holds them in float64)
        etas[i].copy_(tensor(lr / ((1 + lambd * lr * step) ** alpha)))
        mus[i].copy_(tensor(1 / max(1, step - t0)))
