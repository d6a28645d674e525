"""Activation functions of ``nn.functional`` written as compositions of ember ops (the fused
ones -- relu, gelu, silu, softmax, log_softmax -- are registry ops in ``_ops/nn_ops.py``).

``nn.functional`` re-exports them; the losses in ``_loss_functions.py`` build on them.
"""

from __future__ import annotations

from .._ops.creation import empty_like
from .._ops.nn_ops import softmax
from .._ops.pointwise import where


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _where_pos(input, neg, inplace):
    out = where(input > 0, input, neg)
    return input.copy_(out) if inplace else out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _where_pos(input, input * negative_slope, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _where_pos(input, alpha * input.expm1(), inplace)


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    out = scale * _where_pos(input, alpha * input.expm1(), False)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    return _where_pos(input, alpha * (input / alpha).expm1(), inplace)


def mish(input, inplace=False):
    out = input * softplus(input).tanh()
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    scaled = input * beta
    return where(scaled > threshold, input, (scaled.exp().log1p()) / beta)


def softsign(input):
    return input / (1 + input.abs())


def softshrink(input, lambd=0.5):
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd,
                                                     input * 0))


def hardshrink(input, lambd=0.5):
    return where(input.abs() > lambd, input, input * 0)


def tanhshrink(input):
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    out = where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    out = (input / 6 + 0.5).clamp(0, 1)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * (input + 3).clamp(0, 6) / 6
    return input.copy_(out) if inplace else out


def logsigmoid(input):
    return -softplus(-input)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
            f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input, weight):
    shape = [1] * input.dim()
    if input.dim() >= 2 and weight.numel() > 1:
        shape[1] = weight.numel()
    return _where_pos(input, input * weight.reshape(shape), False)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if training:
        a = empty_like(input).uniform_(lower, upper)
        return _where_pos(input, input * a, inplace)
    return leaky_relu(input, (lower + upper) / 2, inplace)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype)
