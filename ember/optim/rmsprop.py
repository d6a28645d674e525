"""RMSprop (Hinton's lecture notes; centered variant of Graves, 2013)."""

from __future__ import annotations

from ._base import check_range, closure_loss, step_group, zeros_state
from .optimizer import Optimizer

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton, 2012): steps divided by a running RMS of the gradients, optionally
    centred and with momentum.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 1e-2.
        alpha (float): smoothing constant of the squared-gradient average. Default: 0.99.
        eps (float): added to the denominator. Default: 1e-8.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        momentum (float): momentum factor. Default: 0.
        centered (bool): normalise by the estimated variance instead of the raw second
            moment. Default: False.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.RMSprop([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "RMSprop does not support sparse gradients"

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
    """The RMSprop update (what :class:`RMSprop`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        square_avgs (list of Tensor): running averages of the squared gradients.
        grad_avgs (list of Tensor): running averages of the gradients (used when
            ``centered``).
        momentum_buffer_list (list of Tensor): momentum buffers (used when ``momentum > 0``).
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        lr (float): the learning rate.
        alpha (float): decay of the running averages.
        eps (float): added to the denominator.
        weight_decay (float): L2 penalty added to the gradient.
        momentum (float): the momentum factor.
        centered (bool): normalise by the estimated variance instead of the second moment.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`RMSprop` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.rmsprop import rmsprop
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> rmsprop([p], [g], [ember.zeros(2)], [ember.zeros(2)], [ember.zeros(2)],
        ...         [ember.tensor(0.0)], lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0,
        ...         momentum=0, centered=False)
        >>> p
        tensor([0.9000, 1.1000])
    """
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
