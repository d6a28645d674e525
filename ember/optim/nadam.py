"""NAdam: Adam with Nesterov momentum (Dozat, 2016)."""

from __future__ import annotations

from ._base import check_range, closure_loss, state_step
from .optimizer import Optimizer

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        check_range("weight_decay value", weight_decay)
        check_range("momentum_decay value", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def step(self, closure=None):
        from .. import tensor, zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            ps, gs, m1, m2, mus, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    state_step(st)
                    st["mu_product"] = tensor(1.0)
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                ps.append(p)
                gs.append(p.grad)
                m1.append(st["exp_avg"])
                m2.append(st["exp_avg_sq"])
                mus.append(st["mu_product"])
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            nadam(ps, gs, m1, m2, mus, steps, beta1=beta1, beta2=beta2, lr=group["lr"],
                  weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"],
                  eps=group["eps"], decoupled_weight_decay=group["decoupled_weight_decay"],
                  maximize=group["maximize"])
        return loss


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *, beta1, beta2,
          lr, weight_decay, momentum_decay, eps, decoupled_weight_decay=False, maximize=False,
          **_):
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
