"""Adamax: Adam with the infinity norm (Kingma & Ba, 2015)."""

from __future__ import annotations

from ._base import check_adam_hparams, closure_loss, step_group, zeros_state
from .optimizer import Optimizer

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015): Adam with the infinity norm in place of the second moment.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 2e-3.
        betas (tuple): decay of the first moment and of the infinity norm.
            Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.Adamax([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "Adamax does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_adam_hparams(lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            step_group(self, group, zeros_state("exp_avg", "exp_inf"),
                       ("exp_avg", "exp_inf", "step"), adamax, eps=group["eps"], beta1=beta1,
                       beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"])
        return loss


def adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2, lr,
           weight_decay, maximize=False, **_):
    """The Adamax update (what :class:`Adamax`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        exp_avgs (list of Tensor): first-moment estimates.
        exp_infs (list of Tensor): exponentially weighted infinity norms of the gradients.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        eps (float): added to the denominator.
        beta1 (float): decay of the first moments.
        beta2 (float): decay of the infinity norms.
        lr (float): the learning rate.
        weight_decay (float): L2 penalty added to the gradient.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`Adamax` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.adamax import adamax
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> adamax([p], [g], [ember.zeros(2)], [ember.zeros(2)], [ember.tensor(0.0)], eps=1e-8,
        ...        beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0)
        >>> p
        tensor([0.9000, 1.1000])
    """
    from .. import maximum

    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        if weight_decay != 0:
            g = g.add(p, alpha=weight_decay)
        exp_avgs[i].lerp_(g, 1 - beta1)
        exp_infs[i].copy_(maximum(exp_infs[i] * beta2, g.abs() + eps))
        clr = lr / (1 - beta1 ** state_steps[i].item())
        p.addcdiv_(exp_avgs[i], exp_infs[i], value=-clr)
