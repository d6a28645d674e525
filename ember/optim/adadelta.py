"""Adadelta (Zeiler, 2012)."""

from __future__ import annotations

from .. import _dispatch, _kernels
from ._base import NUMBERS as _NUMBERS, check_range, closure_loss, step_group, zeros_state
from .optimizer import Optimizer

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): steps scaled by the ratio of running RMS of past updates to
    running RMS of gradients, so the learning rate is mostly self-tuned.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): scale of the computed update. Default: 1.0.
        rho (float): decay of the running averages, in [0, 1]. Default: 0.9.
        eps (float): added inside the square roots. Default: 1e-6.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.Adadelta([w], lr=1.0)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "Adadelta does not support sparse gradients"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_range("learning rate", lr)
        check_range("rho value", rho, 0.0, 1.0, high_open=False)
        check_range("epsilon value", eps)
        check_range("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            step_group(self, group, zeros_state("square_avg", "acc_delta"),
                       ("square_avg", "acc_delta", "step"), adadelta, lr=group["lr"],
                       rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"])
        return loss


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho, eps,
             weight_decay, maximize=False, **_):
    """The Adadelta update (what :class:`Adadelta`'s ``step`` runs) on lists of tensors.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        square_avgs (list of Tensor): running averages of the squared gradients.
        acc_deltas (list of Tensor): running averages of the squared updates.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        lr (float): scale of the computed update.
        rho (float): decay of the running averages.
        eps (float): added inside the square roots.
        weight_decay (float): L2 penalty added to the gradient.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`Adadelta` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.adadelta import adadelta
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> adadelta([p], [g], [ember.zeros(2)], [ember.zeros(2)], [ember.tensor(0.0)],
        ...          lr=1.0, rho=0.9, eps=1e-6, weight_decay=0)
        >>> p
        tensor([0.9968, 1.0032])
    """
    for i, p in enumerate(params):
        state_steps[i].add_(1)
        if _fused_adadelta(p, grads[i], square_avgs[i], acc_deltas[i], lr, rho, eps,
                           weight_decay, maximize):
            continue
        g = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            g = g.add(p, alpha=weight_decay)
        sa, ad = square_avgs[i], acc_deltas[i]
        sa.mul_(rho).addcmul_(g, g, value=1 - rho)
        std = sa.add(eps).sqrt_()
        delta = ad.add(eps).sqrt_().div_(std).mul_(g)
        ad.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-lr)


def _fused_adadelta(p, g, sa, ad, lr, rho, eps, weight_decay, maximize):
    """The step as one compiled pass on NumPy float32 arrays (NOTE [ Fused optimizer steps ]
    in ember/_kernels) where it covers them and no mode intercepts ops; False (nothing
    changed) else."""
    if _dispatch.intercept or p.requires_grad and _dispatch.state.grad_enabled or \
            not all(isinstance(h, _NUMBERS) for h in (lr, rho, eps, weight_decay)):
        return False
    if not _kernels.adadelta(p._data, g._data, sa._data, ad._data, lr=lr, rho=rho, eps=eps,
                             weight_decay=weight_decay, maximize=maximize):
        return False
    for t in (p, sa, ad):
        t._bump()
    return True
