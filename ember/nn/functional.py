"""``ember.nn.functional``: the math behind the layers, as functions.

Heavy ops (linear, softmax, log_softmax, the losses) are fused registry ops in
``ember/_ops/nn_ops.py``; the rest are short compositions of ember ops.
"""

from __future__ import annotations

from .._ops.nn_ops import (  # noqa: F401
    cross_entropy, linear, log_softmax, mse_loss, nll_loss, reduction_enum, relu, softmax,
)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    from .. import where

    out = where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    from .. import empty_like

    mask = empty_like(input).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask
