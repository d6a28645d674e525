"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2020)."""

from __future__ import annotations

import math

from ._base import check_adam_hparams, closure_loss, step_group, zeros_state
from .optimizer import Optimizer

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """RAdam (Liu et al., 2020): Adam whose adaptive step is switched on only once the
    variance of its estimate is tractable, with a rectification factor.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 1e-3.
        betas (tuple): decays of the first and second moments. Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): weight decay. Default: 0.
        decoupled_weight_decay (bool): decay the weights directly (AdamW style). Default:
            False.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.RAdam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "RAdam does not support sparse gradients"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_adam_hparams(lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            step_group(self, group, zeros_state("exp_avg", "exp_avg_sq"),
                       ("exp_avg", "exp_avg_sq", "step"), radam, beta1=beta1, beta2=beta2,
                       lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                       decoupled_weight_decay=group["decoupled_weight_decay"],
                       maximize=group["maximize"])
        return loss


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2, lr,
          weight_decay, eps, decoupled_weight_decay=False, maximize=False, **_):
    """The RAdam update (what :class:`RAdam`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        exp_avgs (list of Tensor): first-moment estimates.
        exp_avg_sqs (list of Tensor): second-moment estimates.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        beta1 (float): decay of the first moments.
        beta2 (float): decay of the second moments.
        lr (float): the learning rate.
        weight_decay (float): the weight decay.
        eps (float): added to the denominator.
        decoupled_weight_decay (bool): decay the weights directly (as AdamW) rather than
            adding an L2 penalty to the gradient. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`RAdam` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.radam import radam
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> radam([p], [g], [ember.zeros(2)], [ember.zeros(2)], [ember.tensor(0.0)], beta1=0.9,
        ...       beta2=0.999, lr=0.1, weight_decay=0, eps=1e-8)
        >>> p  # the first steps are not rectified: plain momentum
        tensor([0.9500, 1.0500])
    """
    rho_inf = 2 / (1 - beta2) - 1
    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        step = state_steps[i].item()
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(p, alpha=weight_decay)
        exp_avgs[i].lerp_(g, 1 - beta1)
        exp_avg_sqs[i].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        corrected = exp_avgs[i] / bc1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                             ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = math.sqrt(bc2) / exp_avg_sqs[i].sqrt().add_(eps)
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)
