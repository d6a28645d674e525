"""Adamax: Adam with the infinity norm (Kingma & Ba, 2015)."""

from __future__ import annotations

from ._base import check_range, closure_loss, state_step
from .optimizer import Optimizer

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        check_range("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        from .. import zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            params, grads, avgs, infs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    state_step(st)
                    st["exp_avg"] = zeros_like(p)
                    st["exp_inf"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                avgs.append(st["exp_avg"])
                infs.append(st["exp_inf"])
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            adamax(params, grads, avgs, infs, steps, eps=group["eps"], beta1=beta1,
                   beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                   maximize=group["maximize"])
        return loss


def adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2, lr,
           weight_decay, maximize=False, **_):
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
