"""SparseAdam: Adam that updates only the entries a gradient touches.

ember has no sparse tensors; embedding gradients are dense with zero rows. SparseAdam
treats the nonzero entries of each gradient as the sparse gradient PyTorch would pass, so
untouched rows keep their moments and values, which is the algorithm's point.
"""

from __future__ import annotations

import math

from ._base import check_range, closure_loss, state_step
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for sparse gradients (``nn.Embedding(sparse=True)``): only the moments and
    parameter rows present in each gradient are updated.

    Args:
        params: an iterable of parameters (or dicts defining parameter groups).
        lr (float): learning rate. Default: 1e-3.
        betas (tuple): decays of the first and second moments. Default: (0.9, 0.999).
        eps (float): added to the denominator. Default: 1e-8.
        maximize (bool): ascend the objective instead. Default: False.

    Returns:
        An optimizer whose ``step()`` updates the parameters in place.

    Example:
        >>> import ember
        >>> emb = ember.nn.Embedding(10, 3, sparse=True)
        >>> opt = ember.optim.SparseAdam(emb.parameters(), lr=0.1)
        >>> emb(ember.tensor([1, 2])).sum().backward()
        >>> opt.step()
        >>> len(opt.state[emb.weight])
        3
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure=None):
        from .. import where, zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad if not group["maximize"] else -p.grad
                st = self.state[p]
                if not st:
                    state_step(st)
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                st["step"].add_(1)
                step = st["step"].item()
                touched = g != 0
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.copy_(where(touched, m * beta1 + g * (1 - beta1), m))
                v.copy_(where(touched, v * beta2 + g * g * (1 - beta2), v))
                bc1 = 1 - beta1 ** step
                bc2 = 1 - beta2 ** step
                step_size = group["lr"] * math.sqrt(bc2) / bc1
                update = m / (v.sqrt() + group["eps"])
                p.sub_(where(touched, update * step_size, update * 0))
        return loss
