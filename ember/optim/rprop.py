"""Rprop: resilient backpropagation (Riedmiller & Braun, 1993)."""

from __future__ import annotations

from ._base import check_range, closure_loss, state_step, step_group
from .optimizer import Optimizer

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun, 1993): per-element step sizes grown while the gradient keeps
    its sign and shrunk when it flips; only the gradient's sign is used.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): initial step size. Default: 1e-2.
        etas (tuple): ``(shrink, grow)`` factors, ``0 < shrink < 1 < grow``.
            Default: (0.5, 1.2).
        step_sizes (tuple): minimal and maximal step sizes. Default: (1e-6, 50).
        maximize (bool): ascend the objective instead. Default: False.
        foreach, capturable, differentiable, fused: accepted for PyTorch compatibility
            (ember picks its own loop; see NOTE [ Flat optimizer step ]).

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3))
        >>> opt = ember.optim.Rprop([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> bool((w < 1).all())
        True
    """

    _sparse_refusal = "Rprop does not support sparse gradients"

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_range("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        from .. import full_like, zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            def init(p, st, lr=group["lr"]):
                state_step(st)
                st["prev"] = zeros_like(p)
                # a complex parameter is two real ones (NOTE [ Complex parameters in
                # optimizers ]): both parts start at the full step size
                st["step_size"] = full_like(p.grad, complex(lr, lr) if p.is_complex() else lr)

            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            step_group(self, group, init, ("prev", "step_size", "step"), rprop,
                       step_size_min=lo, step_size_max=hi, etaminus=etaminus,
                       etaplus=etaplus, maximize=group["maximize"])
        return loss


def rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min, step_size_max,
          etaminus, etaplus, maximize=False, **_):
    """The resilient backpropagation update (what :class:`Rprop`'s ``step`` runs) on lists of
    tensors: each parameter moves by its own step size, in the direction of its gradient's
    sign.

    Args:
        params (list of Tensor): the parameters, updated in place.
        grads (list of Tensor): their gradients.
        prevs (list of Tensor): the previous steps' gradients.
        step_sizes (list of Tensor): the per-element step sizes, updated.
        state_steps (list of Tensor): one 0-d step count per parameter, incremented.
        step_size_min (float): the smallest step size.
        step_size_max (float): the largest step size.
        etaminus (float): the factor a step size shrinks by when the gradient's sign flips.
        etaplus (float): the factor it grows by while the sign holds.
        maximize (bool): ascend the objective instead. Default: False.
        **_: the other options :class:`Rprop` passes (``foreach``, ``capturable``,
            ``differentiable``, ...), accepted and ignored.

    Returns:
        None. The parameters, the state tensors and the step counts are updated in place.

    Example:
        >>> import ember
        >>> from ember.optim.rprop import rprop
        >>> p, g = ember.ones(2), ember.tensor([0.5, -0.5])
        >>> rprop([p], [g], [ember.zeros(2)], [ember.full((2,), 0.01)], [ember.tensor(0.0)],
        ...       step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2)
        >>> p
        tensor([0.9900, 1.0100])
    """
    from .. import where

    for i, p in enumerate(params):
        g = grads[i] if not maximize else -grads[i]
        state_steps[i].add_(1)
        sign = (g * prevs[i]).sign()
        plus, minus, one = g.new_tensor(etaplus), g.new_tensor(etaminus), g.new_tensor(1.0)
        factor = where(sign > 0, plus, where(sign < 0, minus, one))
        step_sizes[i].mul_(factor).clamp_(step_size_min, step_size_max)
        g = where(factor == etaminus, g * 0, g)
        p.addcmul_(g.sign(), step_sizes[i], value=-1)
        prevs[i].copy_(g)
