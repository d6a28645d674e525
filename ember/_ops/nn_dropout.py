"""Dropout: ``dropout``, ``dropout1d``/``2d``/``3d`` (whole channels) and ``alpha_dropout``.

Compositions of ember ops -- a Bernoulli mask, then a product -- so the mask is ordinary
autograd state. ``nn.functional`` re-exports them; they live with the ops because scaled
dot-product attention (``nn_attention.py``) applies dropout to its probabilities.
"""

from __future__ import annotations

from .creation import empty, empty_like


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    mask = empty_like(input).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, training, inplace, nd, name):
    _check_p(p)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but received a "
                           f"{input.dim()}D input")
    if not training or p == 0.0:
        return input
    batched = input.dim() == nd + 2
    shape = tuple(input.shape[:2 if batched else 1]) + (1,) * nd
    mask = empty(*shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    mask = mask.div_(1 - p) if p < 1 else mask
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations' mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_p = -1.7580993408473766
    keep = empty_like(input).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out
