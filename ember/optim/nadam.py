"""NAdam: Adam with Nesterov momentum (Dozat, 2016)."""

from __future__ import annotations

from ._base import (check_adam_hparams, check_range, closure_loss, state_step, step_group,
                    zeros_state)
from .optimizer import Optimizer

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """NAdam (Dozat, 2016): Adam with Nesterov momentum and a momentum warm-up schedule.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 2e-3.
        betas (tuple): decays of the first and second moments. Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): weight decay. Default: 0.
        momentum_decay (float): speed of the momentum warm-up. Default: 4e-3.
        decoupled_weight_decay (bool): decay the weights directly (AdamW style) instead of
            adding an L2 term to the gradient. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.NAdam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "NAdam does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_adam_hparams(lr, eps, betas, weight_decay)
        check_range("momentum_decay value", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def step(self, closure=None):
        from .. import tensor

        def init(p, st):
            # (in PyTorch's order: a program listing the state sees the same keys)
            state_step(st)
            st["mu_product"] = tensor(1.0)
            zeros_state("exp_avg", "exp_avg_sq")(p, st)

        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            step_group(self, group, init, ("exp_avg", "exp_avg_sq", "mu_product", "step"),
                       nadam, beta1=beta1, beta2=beta2, lr=group["lr"],
                       weight_decay=group["weight_decay"],
                       momentum_decay=group["momentum_decay"], eps=group["eps"],
                       decoupled_weight_decay=group["decoupled_weight_decay"],
                       maximize=group["maximize"])
        return loss


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *, beta1, beta2,
          lr, weight_decay, momentum_decay, eps, decoupled_weight_decay=False, maximize=False,
          **_):
    """The NAdam update (what :class:`NAdam`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        exp_avgs (list of Tensor): first-moment estimates.
        exp_avg_sqs (list of Tensor): second-moment estimates.
        mu_products (list of Tensor): 0-d running products of the momentum coefficients
            (start at 1).
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        beta1 (float): decay of the first moments.
        beta2 (float): decay of the second moments.
        lr (float): the learning rate.
        weight_decay (float): the weight decay.
        momentum_decay (float): the momentum schedule's decay.
        eps (float): added to the denominator.
        decoupled_weight_decay (bool): decay the weights directly (as AdamW) rather than
            adding an L2 penalty to the gradient. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`NAdam` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.nadam import nadam
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> nadam([p], [g], [ember.zeros(2)], [ember.zeros(2)], [ember.tensor(1.0)],
        ...       [ember.tensor(0.0)], beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0,
        ...       momentum_decay=4e-3, eps=1e-8)
        >>> p
        tensor([0.8944, 1.1056])
    """
    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        step = state_steps[i].item()
        bc2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(p, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_products[i].mul_(mu)
        mu_product = mu_products[i].item()
        exp_avgs[i].lerp_(g, 1 - beta1)
        exp_avg_sqs[i].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = (exp_avg_sqs[i] / bc2).sqrt().add_(eps)
        p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        p.addcdiv_(exp_avgs[i], denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
