"""SparseAdam: Adam that updates only the entries a sparse gradient holds."""

from __future__ import annotations

import math

import numpy as np

from ._base import check_range, closure_loss
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for sparse gradients (``nn.Embedding(sparse=True)``): only the moments and
    parameter entries present in each gradient are updated; the others keep their values.

    Each step coalesces the gradient and, on its entries, moves the moments towards the
    gradient and its square, then steps the parameter by the bias-corrected ratio, as
    PyTorch's SparseAdam does. Dense gradients are refused (use Adam).

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
        >>> sorted(opt.state[emb.weight])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for group in self.param_groups:
            bad = [i for i, p in enumerate(group["params"]) if p.is_sparse]
            if bad:
                raise ValueError(f"Sparse params at indices {bad}: SparseAdam requires dense "
                                 "parameter tensors")

    def step(self, closure=None):
        """One update; ``closure`` re-evaluates the model and returns the loss."""
        from .. import zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            todo = []
            # every gradient of the group is checked before any state changes
            for p in group["params"]:
                if p.grad is not None:
                    if not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, "
                                           "please consider Adam instead")
                    todo.append(p)
            for p in todo:
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = zeros_like(p)
                    st["exp_avg_sq"] = zeros_like(p)
                st["step"] += 1
                _sparse_adam(p, p.grad, st, group)
        return loss


def _sparse_adam(p, grad, st, group):
    """One parameter's update on the entries of its coalesced gradient (PyTorch's order of
    roundings: the moments move by ``(g - m) * (1 - beta)``)."""
    beta1, beta2 = group["betas"]
    g = (-grad if group["maximize"] else grad).coalesce()
    vals = g._values()._data
    if vals.size == 0:
        return
    where = tuple(g._indices()._data)
    dt = p._data.dtype.type
    m, v = st["exp_avg"], st["exp_avg_sq"]
    old_m = m._data[where]
    m_step = (vals - old_m) * dt(1 - beta1)
    m._data[where] += m_step
    old_v = v._data[where]
    v_step = (vals * vals - old_v) * dt(1 - beta2)
    v._data[where] += v_step
    numer = m_step + old_m
    denom = np.sqrt(v_step + old_v) + dt(group["eps"])
    step = st["step"]
    step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p._data[where] += dt(-step_size) * (numer / denom)
    m._bump()
    v._bump()
    p._bump()
