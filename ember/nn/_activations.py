"""The activations of ``nn.functional`` with its signatures (``inplace=`` flags, the in-place
``<name>_`` forms). The math is in ``ember/_ops/nn_activations.py``; the in-place forms follow
NOTE [ In-place compositions ] there.
"""

from __future__ import annotations

from .._ops import nn_activations as _act
from .._ops.nn_activations import inplace_composition
from .._ops.nn_ops import relu as _relu
from .._ops.nn_activations import (  # noqa: F401
    celu_, glu, hardshrink, logsigmoid, prelu, relu_, rrelu_, selu_, softmin as _softmin,
    softplus, softshrink, softsign, tanhshrink, threshold_,
)


def _maybe_inplace(fn, input, inplace, *args):
    return inplace_composition(fn, input, *args) if inplace else fn(input, *args)


def relu(input, inplace=False):
    """``max(0, input)``; ``inplace`` writes into ``input`` (``ember.relu`` takes no flag).

    Args:
        input: a tensor.
        inplace: write the result into ``input`` and return it.

    Returns:
        Tensor: the rectified values.

    Example::

        >>> ember.nn.functional.relu(ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    return relu_(input) if inplace else _relu(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(input, min_val, max_val)``; ``inplace`` writes into ``input``."""
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return _act.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # hardtanh's own op written in place, not ``clamp_``: its gradient is 0 at the bounds
    # themselves (clamp's is 1), as torch's hardtanh_ / relu6(inplace=True)
    return inplace_composition(_act.hardtanh, input, min_val, max_val)


def relu6(input, inplace=False):
    """``min(max(0, input), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    return _maybe_inplace(_act.leaky_relu, input, inplace, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, True)


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere."""
    return _maybe_inplace(_act.elu, input, inplace, alpha)


def elu_(input, alpha=1.0):
    """In-place :func:`elu`."""
    return elu(input, alpha, True)


def selu(input, inplace=False):
    """Scaled ELU (see ``ember.selu``)."""
    return selu_(input) if inplace else _act.selu(input)


def celu(input, alpha=1.0, inplace=False):
    """Continuously differentiable ELU (see ``ember.celu``)."""
    return celu_(input, alpha) if inplace else _act.celu(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU (see ``ember.rrelu``)."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _act.rrelu(input, lower, upper, training)


def threshold(input, threshold, value, inplace=False):
    """``input`` where greater than ``threshold``, ``value`` elsewhere."""
    if inplace:
        return threshold_(input, threshold, value)
    return _act.threshold(input, threshold, value)


def mish(input, inplace=False):
    """``input * tanh(softplus(input))``."""
    return _maybe_inplace(_act.mish, input, inplace)


def hardsigmoid(input, inplace=False):
    """``clamp(input / 6 + 1 / 2, 0, 1)``."""
    return _maybe_inplace(_act.hardsigmoid, input, inplace)


def hardswish(input, inplace=False):
    """``input * hardsigmoid(input)``."""
    return _maybe_inplace(_act.hardswish, input, inplace)


def sigmoid(input):
    """``1 / (1 + exp(-input))``."""
    return input.sigmoid()


def tanh(input):
    """Hyperbolic tangent."""
    return input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input, dim)``."""
    if dim is None:
        from .functional import _implicit_dim_warning

        _implicit_dim_warning("softmin", _stacklevel)
    return _softmin(input, dim, dtype)
