"""Activation functions composed from ember ops (the fused ones -- relu, gelu, silu, softmax,
log_softmax -- are registry ops in ``nn_ops.py``).

Those PyTorch also exposes at top level (``torch.celu``, ``torch.threshold_``, ...) are
declared ``public`` here with the top-level signature: no ``inplace=`` flag, the in-place form
a separate ``<name>_`` function. ``nn.functional`` wraps them with its own signatures
(``F.celu(input, alpha, inplace)``) in ``ember/nn/_activations.py``.

NOTE [ In-place compositions ]
An in-place form computes the result out of place and writes it into ``input`` through the
one in-place protocol (``_dispatch.commit_inplace_result``): autograd refuses what PyTorch
refuses (a leaf that requires grad), the version counter is bumped, ``input``'s history
becomes the composition's, and any tensor the composition saves for backward that shares
``input``'s storage is saved as a copy -- so ``leaky_relu(conv(x), inplace=True)`` keeps a
valid backward, with no copy when nothing is saved.
"""

from __future__ import annotations

from .. import _dispatch
from .._core.tensor import Tensor
from ._registry import public
from .creation import empty_like
from .nn_checks import kernel_dtype
from .nn_ops import softmax
from . import _node_names
from ._elementwise import ElementwiseOp, elementwise
from .pointwise import opmath, where

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def _where_pos(input, neg):
    return where(input > 0, input, neg)


def inplace_composition(fn, input, *args):
    """``fn(input, *args)`` written into ``input`` (NOTE [ In-place compositions ])."""
    if not isinstance(input, Tensor):
        return fn(input, *args)  # fn raises PyTorch's TypeError
    return _dispatch.commit_inplace_result(fn.__name__ + "_", input, lambda: fn(input, *args))


# ------------------------------------------------------------------------------------------------
# declared at top level (torch.<name>)


@public(method=False)
def celu(input, alpha=1.0):
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        input: a floating-point tensor.
        alpha: the scale of the negative part (not 0).

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.celu(ember.tensor([-1.0, 2.0]), alpha=2.0)
        tensor([-0.7869,  2.0000])
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _node_names.rename(_elu(input, alpha, 1.0, 1.0 / alpha), "CeluBackward0")


@public(method=False)
def celu_(input, alpha=1.0):
    """In-place :func:`celu`: writes the result into ``input`` and returns it.

    Args:
        input: a floating-point tensor, overwritten.
        alpha: the scale of the negative part.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> x = ember.tensor([-1.0, 2.0])
        >>> ember.celu_(x)
        tensor([-0.6321,  2.0000])
    """
    return inplace_composition(celu, input, alpha)


@public(method=False)
def selu(input):
    """Scaled ELU: ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with the
    self-normalising constants ``alpha ~ 1.6733`` and ``scale ~ 1.0507``.

    Args:
        input: a floating-point tensor.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.selu(ember.tensor([-1.0, 1.0]))
        tensor([-1.1113,  1.0507])
    """
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


@public(method=False)
def selu_(input):
    """In-place :func:`selu`.

    Args:
        input: a floating-point tensor, overwritten.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.selu_(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 1.0507])
    """
    return inplace_composition(selu, input)


@public(method=False)
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU: negative inputs are scaled by a slope drawn uniformly from
    ``[lower, upper]`` per element in training, by ``(lower + upper) / 2`` otherwise.

    Args:
        input: a floating-point tensor.
        lower, upper: the range of the negative slope.
        training: draw random slopes (True) or use their mean (False).
        generator: the random generator for the slopes.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.rrelu(ember.tensor([-3.0, 2.0]), 0.1, 0.3)
        tensor([-0.6000,  2.0000])
    """
    kernel_dtype("leaky_relu", input, None if not training else "rrelu_with_noise_out_cpu")
    if training:
        slope = empty_like(input).uniform_(lower, upper, generator=generator)
        return _where_pos(input, input * slope)
    return _where_pos(input, input * ((lower + upper) / 2))


@public(method=False)
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In-place :func:`rrelu`.

    Args:
        input: a floating-point tensor, overwritten.
        lower, upper: the range of the negative slope.
        training: draw random slopes (True) or use their mean (False).
        generator: the random generator for the slopes.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.rrelu_(ember.tensor([-3.0, 2.0]), 0.1, 0.3)
        tensor([-0.6000,  2.0000])
    """
    return inplace_composition(rrelu, input, lower, upper, training, generator)


@public(method=False)
def threshold(input, threshold, value):
    """``input`` where it is greater than ``threshold``, ``value`` elsewhere.

    Args:
        input: a tensor.
        threshold: the cut-off (strictly greater passes).
        value: the replacement for the rest.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.threshold(ember.tensor([0.5, 2.0]), 1.0, -1.0)
        tensor([-1.,  2.])
    """
    return _threshold(input, threshold, value)


def _threshold(input, cut, value):
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        if input.dtype.category != 1 or input.dtype.name == "bool":
            raise NotImplementedError(
                f'"threshold_cpu" not implemented for \'{input.dtype.scalar_name}\'')
        from .ranges import _int_endpoint

        # an integer input keeps its dtype: the value is converted to it (and must fit)
        value = input.new_full((), _int_endpoint(value, input.dtype))
    # NaN is not <= cut, so it passes (value and gradient), as torch
    return where(input <= cut, value, input)


@public(method=False)
def threshold_(input, threshold, value):
    """In-place :func:`threshold`.

    Args:
        input: a tensor, overwritten.
        threshold: the cut-off (strictly greater passes).
        value: the replacement for the rest.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.threshold_(ember.tensor([0.5, 2.0]), 1.0, 0.0)
        tensor([0., 2.])
    """
    return inplace_composition(_threshold, input, threshold, value)


@public
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, zero elsewhere.

    Args:
        input: a floating-point tensor.
        lambd: the half-width of the zeroed band.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.hardshrink(ember.tensor([-1.0, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
    """
    kernel_dtype("hardshrink", input)
    return where(input.abs() > lambd, input, input * 0)


@public
def prelu(input, weight):
    """Parametric ReLU: ``max(0, x) + weight * min(0, x)``, one slope per channel (dim 1) or
    a single shared slope.

    Args:
        input: a tensor; channels on dim 1 when it has two or more dims.
        weight: one slope, or one per channel.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.prelu(ember.tensor([[-2.0, 1.0]]), ember.tensor([0.25]))
        tensor([[-0.5000,  1.0000]])
    """
    kernel_dtype("prelu", input)
    if isinstance(weight, Tensor) and weight.dtype != input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{input.dtype.scalar_name} and {weight.dtype.scalar_name}")
    shape = [1] * input.dim()
    if weight.numel() > 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = {channels}.")
        shape[1] = weight.numel()
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    w = weight.reshape(shape) if input.dim() else weight.reshape(())
    return _where_pos(input, input * w)


@public(method=False)
def relu_(input):
    """In-place ``relu``: ``max(input, 0)`` written into ``input``.

    Args:
        input: a tensor, overwritten.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.relu_(ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    return input.relu_()


# ------------------------------------------------------------------------------------------------
# nn.functional only


# NOTE [ Hard activations' kinks ]
# PyTorch's hardtanh, relu6, hardsigmoid and hardswish pass gradient only strictly inside
# their linear pieces: at a boundary (relu6 at 0 and 6) the gradient is that of the flat side
# (``clamp``'s own gradient includes the boundaries). Each is one element-wise op here whose
# formula tests the input against the pieces as torch's backward kernels do, NaN included
# (hardtanh and hardswish pass a NaN's gradient, hardsigmoid does not).


def integer_hardtanh_bounds(input, min_val, max_val):
    """The bounds torch's hardtanh uses on an integer ``input`` (which keeps its dtype), or
    None for a floating one."""
    if not isinstance(input, Tensor) or input.is_floating_point() or input.is_complex():
        return None
    if input.dtype.name == "uint8" and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return int(min_val), int(max_val)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.is_quantized:  # ember/ao/_qops.py
        from ..ao import _qops

        return _qops.hardtanh(input, min_val, max_val)
    if isinstance(input, Tensor) and input.dtype.name == "bool":
        raise RuntimeError("Bool inputs not supported for hardtanh")
    bounds = integer_hardtanh_bounds(input, min_val, max_val)
    if bounds is not None:  # integers: no gradient, the dtype kept
        return input.clamp(*bounds)
    return elementwise(hardtanh_op, (input,), {"min_val": float(min_val),
                                               "max_val": float(max_val)})


def _hardtanh_kernel(xp, a, *, min_val, max_val):
    return xp.clip(a, a.dtype.type(min_val), a.dtype.type(max_val))


def _hardtanh_vjp(g, a, *, min_val, max_val):
    # NOTE [ Hard activations' kinks ]: no gradient on or beyond a bound; NaN passes it, as
    # torch's scalar loop does (its SIMD loop, which takes all but the last few elements of
    # a long tensor, gives a NaN zero: torch itself answers both ways)
    return where((a <= min_val) | (a >= max_val), 0.0, g)


def _hardtanh_jvp(x_dots, a, *, min_val, max_val, out=None):
    t = x_dots[0]
    return None if t is None else where((a <= min_val) | (a >= max_val), 0.0, t)


# one op (torch's HardtanhBackward0, relu6's too) rather than a clamp and a ``where``
hardtanh_op = ElementwiseOp("hardtanh", _hardtanh_kernel, vjp=_hardtanh_vjp,
                            jvp=_hardtanh_jvp, allow=(2,))


# leaky_relu is one element-wise op (one pass, one node named as torch's
# LeakyReluBackward0) rather than a ``where`` of two branches: DCGAN-style discriminators
# run it after every layer


def _leaky_relu_kernel(xp, a, *, negative_slope):
    return xp.where(a > 0, a, a * negative_slope)


def _leaky_relu_vjp(g, a, *, negative_slope):
    # torch's rule: the slope wherever the input is not positive (0 and NaN included)
    return where(a > 0, g, g * negative_slope)


def _leaky_relu_jvp(x_dots, a, *, negative_slope, out=None):
    return None if x_dots[0] is None else where(a > 0, x_dots[0], x_dots[0] * negative_slope)


leaky_relu_op = ElementwiseOp("leaky_relu", _leaky_relu_kernel, vjp=_leaky_relu_vjp,
                              jvp=_leaky_relu_jvp, allow=(2,))


def leaky_relu(input, negative_slope=0.01):
    kernel_dtype("leaky_relu", input)
    return elementwise(leaky_relu_op, (input,), {"negative_slope": float(negative_slope)})


def elu(input, alpha=1.0):
    return _elu(input, alpha, 1.0, 1.0)


def _elu(input, alpha, scale, input_scale):
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise NotImplementedError(
            f'"elu_cpu" not implemented for \'{input.dtype.scalar_name}\'')
    return elementwise(elu_op, (input,), {"alpha": float(alpha), "scale": float(scale),
                                          "input_scale": float(input_scale)})


def _elu_kernel(xp, a, *, alpha, scale, input_scale):
    # the negative branch sees min(a, 0): no overflow from the side ``where`` drops
    return xp.where(a > 0, a, alpha * xp.expm1(xp.minimum(a, 0) * input_scale)) * scale


def _elu_slope(a, alpha, scale, input_scale):
    """d elu / d a: ``scale`` on the identity side (NaN included, as torch), ``scale * alpha *
    input_scale * exp(a * input_scale)`` where ``a <= 0``."""
    return where(a <= 0, ((a.clamp(max=0) * input_scale).exp() * (alpha * scale * input_scale)),
                 scale)


def _elu_vjp(g, a, *, alpha, scale, input_scale):
    return g * _elu_slope(a, alpha, scale, input_scale)


def _elu_jvp(x_dots, a, *, alpha, scale, input_scale, out=None):
    t = x_dots[0]
    return None if t is None else t * _elu_slope(a, alpha, scale, input_scale)


# elu, selu and celu are one op (torch's kernel has the same three parameters); torch names
# the nodes EluBackward0 (elu, selu) and CeluBackward0
elu_op = ElementwiseOp("elu", opmath(_elu_kernel), vjp=_elu_vjp, jvp=_elu_jvp, allow=(2,))


def softplus(input, beta=1.0, threshold=20.0):
    kernel_dtype("softplus", input)
    return elementwise(softplus_op, (input,), {"beta": float(beta),
                                               "threshold": float(threshold)})


def _softplus_kernel(xp, a, *, beta, threshold):
    scaled = a * beta
    # the log branch sees at most the threshold: no overflow on the side ``where`` drops
    return xp.where(scaled > threshold, a,
                    xp.log1p(xp.exp(xp.minimum(scaled, threshold))) / beta)


def _softplus_slope(g, a, beta, threshold):
    # torch's rule: 1 above the threshold, sigmoid(beta x) below (NaN stays NaN)
    scaled = a * beta
    z = scaled.clamp(max=threshold).exp()
    return where(scaled > threshold, g, g * z / (z + 1))


def _softplus_vjp(g, a, *, beta, threshold):
    return _softplus_slope(g, a, beta, threshold)


def _softplus_jvp(x_dots, a, *, beta, threshold, out=None):
    return None if x_dots[0] is None else _softplus_slope(x_dots[0], a, beta, threshold)


softplus_op = ElementwiseOp("softplus", opmath(_softplus_kernel), vjp=_softplus_vjp,
                            jvp=_softplus_jvp, allow=(2,))


def mish(input):
    kernel_dtype("mish", input)
    return elementwise(mish_op, (input,))


def _mish_kernel(xp, a):
    # softplus with torch's threshold of 20 (no overflow in the dropped branch)
    sp = xp.where(a > 20, a, xp.log1p(xp.exp(xp.minimum(a, 20))))
    return a * xp.tanh(sp)


def _mish_slope(g, a):
    # d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)
    t = softplus(a).tanh()
    return g * (t + a * a.sigmoid() * (1 - t * t))


def _mish_vjp(g, a):
    return _mish_slope(g, a)


def _mish_jvp(x_dots, a, out=None):
    return None if x_dots[0] is None else _mish_slope(x_dots[0], a)


mish_op = ElementwiseOp("mish", opmath(_mish_kernel), vjp=_mish_vjp, jvp=_mish_jvp, allow=(2,))


def softsign(input):
    return input / (1 + input.abs())


def softshrink(input, lambd=0.5):
    kernel_dtype("softshrink", input)
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, inf) for input dtype {input.dtype}, "
                           f"but found {lambd}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd,
                                                     input * 0))


def tanhshrink(input):
    return input - input.tanh()


def hardsigmoid(input):
    kernel_dtype("hardsigmoid", input)
    return elementwise(hardsigmoid_op, (input,))


def _hardsigmoid_kernel(xp, a):
    return xp.clip(a / 6 + 0.5, 0, 1)


def _hardsigmoid_vjp(g, a):
    # NOTE [ Hard activations' kinks ]: 1/6 strictly inside (-3, 3), else (NaN too) 0
    return where((a > -3) & (a < 3), g / 6, 0.0)


def _hardsigmoid_jvp(x_dots, a, out=None):
    return None if x_dots[0] is None else _hardsigmoid_vjp(x_dots[0], a)


hardsigmoid_op = ElementwiseOp("hardsigmoid", opmath(_hardsigmoid_kernel),
                               vjp=_hardsigmoid_vjp, jvp=_hardsigmoid_jvp, allow=(2,))


def hardswish(input):
    kernel_dtype("hardswish", input)
    return elementwise(hardswish_op, (input,))


def _hardswish_kernel(xp, a):
    return a * xp.clip(a + 3, 0, 6) / 6


def _hardswish_slope(g, a):
    # 0 up to -3, (x / 3 + 1/2) below 3, 1 from 3 on -- NaN takes the last side, as torch
    # (NOTE [ Hard activations' kinks ])
    return where(a <= -3, 0.0, where(a < 3, g * (a / 3 + 0.5), g))


def _hardswish_vjp(g, a):
    return _hardswish_slope(g, a)


def _hardswish_jvp(x_dots, a, out=None):
    return None if x_dots[0] is None else _hardswish_slope(x_dots[0], a)


hardswish_op = ElementwiseOp("hardswish", opmath(_hardswish_kernel), vjp=_hardswish_vjp,
                             jvp=_hardswish_jvp, allow=(2,))


def logsigmoid(input):
    kernel_dtype("log_sigmoid", input)
    return elementwise(log_sigmoid_op, (input,))


def _log_sigmoid_kernel(xp, a):
    # min(x, 0) - log(1 + exp(-|x|)): no overflow on either side
    return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))


def _log_sigmoid_slope(g, a):
    # d/dx log sigmoid(x) = sigmoid(-x), from exp(-|x|) so that nothing overflows
    e = (-a.abs()).exp()
    return g * where(a >= 0, e, 1.0) / (e + 1)


def _log_sigmoid_vjp(g, a):
    return _log_sigmoid_slope(g, a)


def _log_sigmoid_jvp(x_dots, a, out=None):
    return None if x_dots[0] is None else _log_sigmoid_slope(x_dots[0], a)


log_sigmoid_op = ElementwiseOp("log_sigmoid", opmath(_log_sigmoid_kernel),
                               vjp=_log_sigmoid_vjp, jvp=_log_sigmoid_jvp, allow=(2,))


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    kernel_dtype("glu", input)
    if input.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
            f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softmin(input, dim=None, dtype=None):
    return softmax(-input, dim, dtype)
