"""Adafactor (Shazeer & Stern, 2018): Adam-like steps with a factored second moment.

A matrix gradient's second moment is kept as a row mean and a column mean (O(m + n) memory
instead of O(m n)); their outer product, divided by the mean of the row factor, estimates
the full matrix. Vectors keep an ordinary running mean of ``g * g``. The step size is
relative: ``min(lr, 1/sqrt(t))`` times the parameter's RMS (at least ``eps[1]``), and each
update is clipped to an RMS of at most ``d``.
"""

from __future__ import annotations

import math

from .._core.tensor import Tensor
from ._base import closure_loss
from .optimizer import Optimizer

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Adafactor: a memory-light adaptive optimizer with relative step sizes.

    Args:
        params: an iterable of parameters (or ``(name, parameter)`` pairs, or dicts defining
            parameter groups).
        lr (float): the largest relative step size ``rho_t = min(lr, 1/sqrt(t))``, also the
            weight-decay rate. Default: 1e-2.
        beta2_decay (float): ``1 - beta2_t = t ** beta2_decay``; must be <= 0. Default: -0.8.
        eps (tuple): ``(eps1, eps2)``: eps1 floors the second-moment estimate (``None``
            means the parameter dtype's machine epsilon); eps2 floors the parameter RMS used
            to scale the step. Default: ``(None, 1e-3)``.
        d (float): clipping threshold on the update's RMS; must be >= 1. Default: 1.0.
        weight_decay (float): decoupled weight decay coefficient. Default: 0.0.
        foreach (bool, optional): accepted for compatibility; ember runs one loop.
        maximize (bool): ascend the objective instead. Default: False.

    Returns:
        An optimizer whose ``step()`` updates the parameters in place. Per-parameter state:
        ``step``, and ``row_var``/``col_var`` (matrices) or ``variance`` (vectors).

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.ones(3, 2))
        >>> opt = ember.optim.Adafactor([w], lr=0.01)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[w])
        ['col_var', 'row_var', 'step']
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        from .. import tensor

        for group in self.param_groups:
            group.setdefault("foreach", None)
            for p in group["params"]:
                st = self.state.get(p)
                if st and not isinstance(st.get("step"), Tensor):
                    st["step"] = tensor(float(st["step"]))

    def step(self, closure=None):
        """One update; ``closure`` re-evaluates the model and returns the loss.

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        from .. import tensor, zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            params, grads, row_vars, col_vars, variances, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients")
                st = self.state[p]
                if not st:
                    st["step"] = tensor(0.0)
                    if p.grad.dim() > 1:
                        st["row_var"] = p.grad.new_zeros(p.grad.shape[:-1] + (1,))
                        st["col_var"] = p.grad.new_zeros(
                            p.grad.shape[:-2] + (1,) + p.grad.shape[-1:])
                    else:
                        st["variance"] = zeros_like(p.grad)
                params.append(p)
                grads.append(p.grad)
                row_vars.append(st.get("row_var"))
                col_vars.append(st.get("col_var"))
                variances.append(st.get("variance"))
                steps.append(st["step"])
            eps1, eps2 = group["eps"]
            adafactor(params, grads, row_vars, col_vars, variances, steps, d=group["d"],
                      lr=group["lr"], beta2_decay=group["beta2_decay"],
                      weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                      maximize=group["maximize"])
        return loss


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, *, d, lr,
              beta2_decay, weight_decay, eps1, eps2, maximize, **_):
    """The Adafactor update on lists of tensors; factors, variances and steps in place.

    Args:
        params, grads: the parameters and their gradients.
        row_vars, col_vars: per matrix parameter, the row and column second-moment factors
            (shapes ``(..., m, 1)`` and ``(..., 1, n)``); None for vectors.
        variances: per vector parameter, the second moment; None for matrices.
        state_steps: per parameter, a 0-dim float tensor step counter.
        d, lr, beta2_decay, weight_decay, eps1, eps2, maximize: see :class:`Adafactor`.

    Returns:
        None.

    Example:
        >>> import ember
        >>> p, g = ember.ones(2), ember.full((2,), 0.5)
        >>> adafactor([p], [g], [None], [None], [ember.zeros(2)], [ember.tensor(0.0)], d=1.0,
        ...           lr=0.01, beta2_decay=-0.8, weight_decay=0.0, eps1=None, eps2=1e-3,
        ...           maximize=False)
        >>> p
        tensor([0.9900, 0.9900])
    """
    from .. import finfo

    lr = float(lr)
    for i, p in enumerate(params):
        g = -grads[i] if maximize else grads[i]
        step_t = state_steps[i]
        eps1_i = finfo(p.dtype).eps if eps1 is None else eps1
        step_t.add_(1)
        t = step_t.item()
        one_minus_beta2 = t ** beta2_decay
        rho = min(lr, 1 / math.sqrt(t))
        # the step is relative to the parameter's RMS before weight decay
        alpha = max(eps2, p.norm(2).item() / math.sqrt(p.numel())) * rho
        if weight_decay != 0:
            p.mul_(1 - lr * weight_decay)
        if g.dim() > 1:
            row_var, col_var = row_vars[i], col_vars[i]
            row_var.lerp_((g * g).mean(dim=-1, keepdim=True), one_minus_beta2)
            col_var.lerp_((g * g).mean(dim=-2, keepdim=True), one_minus_beta2)
            var = row_var @ col_var
            var = var / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1_i)
        else:
            variances[i].lerp_(g * g, one_minus_beta2)
            var = variances[i].clone()
        # eps1 floors the standard deviation, so the variance is floored at eps1 squared
        update = var.clamp_(min=eps1_i * eps1_i).rsqrt_().mul_(g)
        clip = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * d))
        p.add_(update, alpha=-alpha / clip)
