"""Muon (Jordan et al., 2024): momentum whose update is orthogonalised by Newton-Schulz.

Each 2-D parameter keeps a momentum buffer; the (Nesterov) momentum direction is pushed
toward the nearest semi-orthogonal matrix by a few steps of a quintic Newton-Schulz
iteration run in bfloat16, as the reference implementation does, and the step is scaled so
rectangular matrices get updates of comparable RMS.
"""

from __future__ import annotations

import math

from .._core.tensor import Tensor
from ._base import closure_loss
from .optimizer import Optimizer

__all__ = ["Muon", "muon"]

_NS_COEFFICIENTS = (3.4445, -4.775, 2.0315)


class Muon(Optimizer):
    """Muon: SGD-momentum with orthogonalised updates, for 2-D (hidden-layer) weights.

    Biases, embeddings and other non-matrix parameters belong with another optimizer
    (AdamW, say); Muon refuses them.

    Args:
        params: an iterable of 2-D parameters (or ``(name, parameter)`` pairs, or dicts
            defining parameter groups).
        lr (float): learning rate. Default: 1e-3.
        weight_decay (float): decoupled weight decay, ``p <- p (1 - lr wd)``. Default: 0.1.
        momentum (float): momentum factor. Default: 0.95.
        nesterov (bool): use the Nesterov direction ``g + momentum (B - g)``. Default: True.
        ns_coefficients (tuple): the quintic's ``(a, b, c)``.
            Default: ``(3.4445, -4.775, 2.0315)``.
        eps (float): floor of the norm the direction is divided by. Default: 1e-7.
        ns_steps (int): Newton-Schulz iterations (fewer than 100). Default: 5.
        adjust_lr_fn (str, optional): ``"original"`` (``sqrt(max(1, A/B))``, the default) or
            ``"match_rms_adamw"`` (``0.2 sqrt(max(A, B))``) scaling of the lr for an
            ``A x B`` matrix.

    Returns:
        An optimizer whose ``step()`` updates the parameters in place; per-parameter state
        ``momentum_buffer``.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.randn(4, 3))
        >>> opt = ember.optim.Muon([w], lr=0.02)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> list(opt.state[w])
        ['momentum_buffer']
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS_COEFFICIENTS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}")

    def step(self, closure=None):
        """One update.

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        from .. import zeros_like

        loss = closure_loss(closure)
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = zeros_like(p.grad)
                params.append(p)
                grads.append(p.grad)
                bufs.append(st["momentum_buffer"])
            muon(params, grads, bufs, lr=group["lr"], weight_decay=group["weight_decay"],
                 momentum=group["momentum"], nesterov=group["nesterov"],
                 ns_coefficients=group["ns_coefficients"], eps=group["eps"],
                 ns_steps=group["ns_steps"], adjust_lr_fn=group["adjust_lr_fn"])
        return loss


def _orthogonalize(grad, ns_coefficients, ns_steps, eps):
    """Approximately ``U V^T`` of ``grad = U S V^T`` by ``ns_steps`` quintic Newton-Schulz
    steps in bfloat16 (singular values land near, not at, one; that is the point)."""
    from .. import addmm

    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:  # iterate on the wide side: the Gram matrix is the smaller square
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        poly = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, poly, x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


def muon(params, grads, momentum_buffers, *, lr, weight_decay, momentum, nesterov,
         ns_coefficients, ns_steps, eps, adjust_lr_fn, **_):
    """The Muon update on lists of 2-D tensors; momentum buffers updated in place.

    Args:
        params, grads: the parameters and their gradients (all 2-D).
        momentum_buffers: per parameter, its momentum buffer.
        lr, weight_decay, momentum, nesterov, ns_coefficients, ns_steps, eps, adjust_lr_fn:
            see :class:`Muon`.

    Returns:
        None.

    Example:
        >>> import ember
        >>> p = ember.eye(2)
        >>> muon([p], [ember.eye(2)], [ember.zeros(2, 2)], lr=0.1, weight_decay=0.0,
        ...      momentum=0.9, nesterov=True, ns_coefficients=(3.4445, -4.775, 2.0315),
        ...      ns_steps=5, eps=1e-7, adjust_lr_fn=None)
        >>> bool(p[0, 0] < 1)
        True
    """
    lr = float(lr)
    for p, g, buf in zip(params, grads, momentum_buffers):
        if g.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(g, 1 - momentum)
        direction = g.lerp(buf, momentum) if nesterov else buf
        update = _orthogonalize(direction, ns_coefficients, ns_steps, eps)
        p.mul_(1 - lr * weight_decay)
        p.add_(update, alpha=-_adjusted_lr(lr, adjust_lr_fn, p.shape))
