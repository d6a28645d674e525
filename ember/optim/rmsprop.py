"""RMSprop (Hinton's lecture notes; centered variant of Graves, 2013)."""

from __future__ import annotations

from ._base import check_range, closure_loss, step_group, zeros_state
from .optimizer import Optimizer

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        check_range("alpha value", alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            names = ["square_avg"] + (["momentum_buffer"] if group["momentum"] > 0 else []) \
                + (["grad_avg"] if group["centered"] else [])
            step_group(self, group, zeros_state(*names),
                       ("square_avg", "grad_avg", "momentum_buffer", "step"), rmsprop,
                       lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                       weight_decay=group["weight_decay"], momentum=group["momentum"],
                       centered=group["centered"], maximize=group["maximize"])
        return loss


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, *, lr,
            alpha, eps, weight_decay, momentum, centered, maximize=False, **_):
    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        if weight_decay != 0:
            g = g.add(p, alpha=weight_decay)
        sa = square_avgs[i]
        sa.mul_(alpha).addcmul_(g, g, value=1 - alpha)
        if centered:
            ga = grad_avgs[i]
            ga.lerp_(g, 1 - alpha)
            avg = sa.addcmul(ga, ga, value=-1).sqrt_()
        else:
            avg = sa.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(g, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(g, avg, value=-lr)
