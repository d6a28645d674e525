"""Activation functions: each one element-wise op where torch has one node (leaky_relu,
hardtanh, elu, softplus, prelu, rrelu, the shrinks, threshold, ...; glu an op of its own),
composed from ember ops where torch composes too (softsign, tanhshrink). relu, gelu, silu,
softmax and log_softmax are registry ops in ``nn_ops.py``.

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

import math

import numpy as np

from .. import _dispatch, _kernels
from .._core.checks import holds_values
from .._core.tensor import Tensor, wrap
from ._registry import Op, public
from .creation import empty_like, zeros_like
from .join import cat
from .nn_checks import kernel_dtype
from .nn_ops import softmax, threshold_backward_op
from . import _node_names
from ._elementwise import ElementwiseOp, elementwise
from .pointwise import maximum, opmath, where

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def _half_in_float(vjp):
    """``vjp`` (``(g, a, **params)``) evaluated in float32 for float16/bfloat16 ``a`` and
    rounded once, as PyTorch's CPU backward kernels of these activations compute; under
    ``create_graph`` the float32 detour is differentiable like any other op."""

    def wrapped(g, a, **params):
        if a.dtype.itemsize != 2 or not a.dtype.is_floating_point:
            return vjp(g, a, **params)
        return vjp(g.float(), a.float(), **params).to(a.dtype)

    wrapped.__name__ = vjp.__name__
    return wrapped


def inplace_composition(fn, input, *args):
    """``fn(input, *args)`` written into ``input`` (NOTE [ In-place compositions ])."""
    if not isinstance(input, Tensor):
        return fn(input, *args)  # fn raises PyTorch's TypeError
    r = _dispatch.commit_inplace_result(fn.__name__ + "_", input, lambda: fn(input, *args))
    node = type(r._grad_fn).__name__ if r._grad_fn is not None else None
    if node in _INPLACE_OVERLOAD_NODES:
        _node_names.rename(r, node[:-1] + "1")
    return r


#: the nodes whose ops torch runs in place as overloads of their own, with a derivative of
#: their own named ``...Backward1`` (``elu_``, ``leaky_relu_``, ``threshold_``, ...)
_INPLACE_OVERLOAD_NODES = frozenset({"CeluBackward0", "EluBackward0", "LeakyReluBackward0",
                                     "RreluWithNoiseBackward0", "ThresholdBackward0"})


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
        if input.dtype.name == "float16":  # torch's training kernel has no float16 form
            raise NotImplementedError(
                "\"rrelu_with_noise_out_cpu\" not implemented for 'Half'")
        # each non-positive element's slope drawn from the generator, then one op (torch's
        # RreluWithNoiseBackward0) that saves the slopes for backward
        noise = _rrelu_slopes(input, lower, upper, generator)
        return elementwise(rrelu_with_noise_op, (input, noise))
    # evaluation: leaky_relu with the mean slope, in the node torch names for rrelu
    return _node_names.rename(leaky_relu(input, (lower + upper) / 2), "RreluWithNoiseBackward0")


# NOTE [ rrelu's slopes ]
# In training PyTorch's CPU kernel walks the input in order and, for each element that is not
# positive (NaN is), draws one 64-bit word and maps its low 53 bits to a double in [0, 1),
# then to ``u * (upper - lower) + lower`` in double, the bounds first rounded to the op's
# math type (float32 for float32 and bfloat16 inputs); positive elements keep slope 1 and
# draw nothing. ``random_()`` on an int64 tensor draws one 64-bit word per element in the
# same order and keeps the low 63 bits, so it yields those words: ember maps them the same
# way and the slopes, the outputs and the stream left behind equal PyTorch's.
def _rrelu_slopes(input, lower, upper, generator):
    from .. import float32, float64, int64  # the package namespace, loaded by now

    x = input.detach()
    noise = empty_like(x).fill_(1)
    drawn = ~(x > 0)
    count = int(drawn.sum().item())
    if count:
        words = x.new_empty((count,), dtype=int64).random_(generator=generator)
        u = words.bitwise_and_((1 << 53) - 1).to(float64).mul_(2.0 ** -53)
        if x.dtype is not float64:  # the bounds as the op's float32 math type holds them
            lower, upper = float(np.float32(lower)), float(np.float32(upper))
        slopes = u.mul_(upper - lower).add_(lower)
        if x.dtype is not float64:
            slopes = slopes.to(float32)
        noise[drawn] = slopes.to(x.dtype)
    return noise


def _rrelu_kernel(xp, a, noise):
    return _leaky(xp, a, noise)


def _rrelu_vjp(g, a, noise):
    # the drawn slope wherever the input is not positive (0 and NaN included), as torch
    return _leaky_grad(g, a, noise), None


def _rrelu_jvp(x_dots, a, noise, out=None):
    return None if x_dots[0] is None else _leaky_grad(x_dots[0], a, noise)


rrelu_with_noise_op = ElementwiseOp("rrelu_with_noise", opmath(_rrelu_kernel), vjp=_rrelu_vjp,
                                    jvp=_rrelu_jvp, allow=(2,))


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

        # an integer input keeps its dtype: the cut is truncated and the value converted to
        # it (and must fit), as torch converts both
        return elementwise(threshold_op, (input,), {
            "threshold": math.trunc(cut), "value": _int_endpoint(value, input.dtype)})
    return elementwise(threshold_op, (input,), {"threshold": float(cut), "value": float(value)})


# NOTE [ Shrink and threshold cuts ]
# torch compares a float32 or float64 input with its cut rounded to the input's dtype
# (threshold's ``threshold``, hardshrink's and softshrink's ``lambd``); a float16 or bfloat16
# input is compared in float32 with the cut rounded to float32 (threshold, softshrink) or
# with the cut rounded to the half type itself (hardshrink). ``_cut`` gives the operand and
# the cut that reproduce this, for the kernels (arrays) and the formulas (tensors) alike, so
# that the gradient's mask is the value's mask.
# A NaN input passes its gradient (NaN is in no band and under no cut) in torch's scalar
# loop of hardshrink's and softshrink's backward, but gets 0 in its vectorized one: see NOTE
# [ NaN in vectorized backward loops ], which hardtanh's backward follows too.


# NOTE [ NaN in vectorized backward loops ]
# torch's CPU backward kernels of hardtanh (relu6), hardshrink and softshrink test a NaN
# input both ways: the scalar loop (``x <= lo || x >= hi ? 0 : g``) passes its gradient, the
# vectorized one (``g`` masked by ``lo < x < hi``) gives 0. The vectorized loop takes 64
# bytes at a time (8 float64, 16 float32) over the dense operands in memory order and leaves
# the last ``n % lanes`` elements to the scalar loop; a strided operand runs scalar
# throughout. ``_nan_in_vector_loop`` marks the NaNs the vectorized loop sees (float32 and
# float64 on the CPU; half types keep the scalar answer), measured against torch 2.13 on an
# AVX-512 machine (the same 64-byte steps as on AVX2 ones, where this was first seen).
def _nan_in_vector_loop(xp, g, a):
    """The NaNs of ``a`` that torch's vectorized backward loop reads (NOTE [ NaN in
    vectorized backward loops ]), as a bool array, or None when there are none."""
    if xp is not np or a.dtype.itemsize not in (4, 8) or a.dtype.kind != "f" or not a.size:
        return None  # (CUDA kernels have no scalar tail: a NaN passes its gradient there)
    nan = xp.isnan(a)
    if not nan.any():
        return None
    if g.shape != a.shape or (g.strides != a.strides and any(g.strides)):
        return None
    order = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    mem = a.transpose(order)
    if not mem.flags.c_contiguous:
        return None
    n = a.size
    lanes = 64 // a.dtype.itemsize
    index = xp.arange(n).reshape(mem.shape)
    inside = (index < n - n % lanes).transpose(np.argsort(order))
    return nan & inside


# NOTE [ Selecting by bits ]
# NumPy's ``where`` takes a branch per element, mispredicted half the time on a mask of random
# signs: over 2^20 float32 elements it costs ~22 ms here against ~1.6 ms for the same
# selection by integer operations on the values' bits, ``y ^ ((x ^ y) & -mask)``, which is
# exact for every value (NaN payloads, -0.0 and infinities are copied, not computed).


def select(xp, mask, x, y):
    """``where(mask, x, y)`` (NOTE [ Selecting by bits ]) for NumPy arrays of one numeric
    dtype, ``x`` or ``y`` possibly 0-d; other arrays go to ``xp.where``.

    Args:
        xp: the array namespace.
        mask: a boolean array of the result's shape.
        x, y: the values where ``mask`` is True and False.

    Returns:
        The selected array.

    Example:
        >>> import numpy as np
        >>> select(np, np.array([True, False]), np.zeros(2), np.ones(2)).tolist()
        [0.0, 1.0]
    """
    d = x.dtype
    if (xp is not np or d != y.dtype or d.itemsize not in (1, 2, 4, 8) or d.kind in "bcOSUM"
            or mask.shape != np.broadcast_shapes(x.shape, y.shape) or mask.ndim == 0):
        return xp.where(mask, x, y)
    r = _kernels.where(mask, x, y)  # the compiled pass (NOTE [ Selecting without branches ])
    if r is not None:
        return r
    it = np.dtype(f"i{d.itemsize}")
    k = mask.view(np.uint8).astype(it)
    np.negative(k, out=k)  # all ones where the mask holds
    r = np.bitwise_xor(x.view(it), y.view(it))
    r &= k
    r ^= y.view(it)
    return r.view(d)


def _cut(a, cut, half_in_float):
    """(operand, cut) to compare as torch does (NOTE [ Shrink and threshold cuts ])."""
    dt = np.dtype((a._data if isinstance(a, Tensor) else a).dtype)
    if dt.kind != "f" and dt.name != "bfloat16":
        return a, cut  # integers: the cut is already converted
    if dt.itemsize == 2 and half_in_float:
        up = a.float() if isinstance(a, Tensor) else a.astype(np.float32)
        return up, float(np.float32(cut))
    return a, float(dt.type(cut))


def _threshold_kernel(xp, a, *, threshold, value):
    x, cut = _cut(a, threshold, True)
    # NaN is not <= the cut: it passes (value and gradient), as in torch
    return select(xp, x <= cut, xp.asarray(value).astype(a.dtype), a)


def _above_cut(g, x, cut):
    """``g`` where ``x > cut`` (NaN included), else 0: relu's one-pass backward op, which
    ``create_graph`` differentiates in ``g`` (the mask has no derivative)."""
    return _dispatch.apply(threshold_backward_op, (g, x), {"threshold": cut})


def _threshold_mask_vjp(g, a, *, threshold, value):
    x, cut = _cut(a, threshold, True)
    return _above_cut(g, x, cut)


def _threshold_jvp(x_dots, a, *, threshold, value, out=None):
    return None if x_dots[0] is None else _threshold_mask_vjp(x_dots[0], a,
                                                               threshold=threshold, value=value)


# one op (torch's ThresholdBackward0) rather than a comparison and a ``where``
threshold_op = ElementwiseOp("threshold", _threshold_kernel, vjp=_threshold_mask_vjp,
                             jvp=_threshold_jvp, allow=(1, 2))


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
    return elementwise(hardshrink_op, (input,), {"lambd": float(lambd)})


def _hardshrink_kernel(xp, a, *, lambd):
    # NOTE [ Shrink and threshold cuts ]: a half input is compared in its own type here;
    # +0 inside the closed band (as torch), the input elsewhere (NaN included)
    x, cut = _cut(a, lambd, False)
    return select(xp, xp.abs(x) <= cut, xp.zeros((), a.dtype), a)


def _hardshrink_vjp(g, a, *, lambd):
    x, cut = _cut(a, lambd, False)
    return _shrink_nan(g, a, _above_cut(g, x.abs(), cut))


def _shrink_nan(g, a, r):
    """The shrinks' gradient ``r`` with the NaNs of NOTE [ NaN in vectorized backward
    loops ] zeroed."""
    ad = a._data
    xp = _dispatch.backends_by_type[type(ad)].xp
    vector_nan = _nan_in_vector_loop(xp, g._data, ad)
    if vector_nan is None:
        return r
    return where(wrap(vector_nan), 0.0, r)


def _hardshrink_jvp(x_dots, a, *, lambd, out=None):
    return None if x_dots[0] is None else _hardshrink_vjp(x_dots[0], a, lambd=lambd)


hardshrink_op = ElementwiseOp("hardshrink", _hardshrink_kernel, vjp=_hardshrink_vjp,
                              jvp=_hardshrink_jvp, allow=(2,))


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
    # torch's order of checks: dtypes, the weight's rank, its size, then the kernel's dtypes
    if isinstance(weight, Tensor) and weight.dtype != input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{input.dtype.scalar_name} and {weight.dtype.scalar_name}")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    shape = [1] * input.dim()
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = {channels}.")
        shape[1] = weight.numel()
    kernel_dtype("prelu", input)
    w = weight.reshape(shape) if input.dim() else weight.reshape(())
    return elementwise(prelu_op, (input, w))


def _prelu_kernel(xp, a, w):
    return _leaky(xp, a, w)


def _prelu_vjp(g, a, w):
    # torch's rule: the input's gradient is the slope wherever the input is not positive (0
    # and NaN included); the slope's is the input there (summed over the broadcast dims)
    return _leaky_grad(g, a, w), where(a > 0, 0.0, g * a)


def _prelu_jvp(x_dots, a, w, out=None):
    a_dot, w_dot = x_dots
    pos = a > 0
    t = None if a_dot is None else where(pos, a_dot, a_dot * w)
    if w_dot is not None:
        tw = where(pos, 0.0, a * w_dot)
        t = tw if t is None else t + tw
    return t


# one op (torch's PreluKernelBackward0) rather than a comparison, a product and a ``where``
prelu_op = ElementwiseOp("prelu", opmath(_prelu_kernel), vjp=_prelu_vjp, jvp=_prelu_jvp,
                         allow=(2,))
prelu_op.node_name = "PreluKernelBackward0"


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
# (hardswish passes a NaN's gradient, hardsigmoid does not, hardtanh does in torch's scalar
# loop only: NOTE [ NaN in vectorized backward loops ]).


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
    return elementwise(hardtanh_backward_op, (g, a), {"min_val": min_val, "max_val": max_val})


def _hardtanh_backward_kernel(xp, g, a, *, min_val, max_val):
    # NOTE [ Hard activations' kinks ]: no gradient on or beyond a bound; a NaN passes it in
    # torch's scalar loop and gets 0 in its vector loop (NOTE [ NaN in vectorized backward
    # loops ])
    r = select(xp, (a <= min_val) | (a >= max_val), xp.zeros((), g.dtype), g)
    vector_nan = _nan_in_vector_loop(xp, g, a)
    return r if vector_nan is None else xp.where(vector_nan, xp.zeros((), r.dtype), r)


def _hardtanh_jvp(x_dots, a, *, min_val, max_val, out=None):
    t = x_dots[0]
    return None if t is None else where((a <= min_val) | (a >= max_val), 0.0, t)


# one op (torch's HardtanhBackward0, relu6's too) rather than a clamp and a ``where``
hardtanh_op = ElementwiseOp("hardtanh", _hardtanh_kernel, vjp=_hardtanh_vjp,
                            jvp=_hardtanh_jvp, allow=(2,))


# NOTE [ Backward ops of piecewise-linear activations ]
# hardtanh's and leaky_relu's gradients are ops of (grad, input), linear in grad and with a
# zero derivative in the input, as torch's ``hardtanh_backward`` / ``leaky_relu_backward``
# are: a first gradient taken with create_graph then stays connected to the input (its
# second derivative there is zeros, not a gradient that does not require grad), as in torch
# -- ``grad(grad(F.relu6(x).sum(), x, create_graph=True)[0].sum(), x)`` is zeros.


def _mask_backward_op(name, kernel):
    """The element-wise op ``kernel(xp, g, a, **params)``, linear in ``g``, whose derivative
    in ``a`` is zero (NOTE [ Backward ops of piecewise-linear activations ])."""

    def vjp(gg, _g, a, **params):
        return elementwise(op, (gg, a), params), zeros_like(a)

    def jvp(x_dots, _g, a, out=None, **params):
        return None if x_dots[0] is None else elementwise(op, (x_dots[0], a), params)

    op = ElementwiseOp(name, kernel, vjp=vjp, jvp=jvp, allow=(2,))
    return op


hardtanh_backward_op = _mask_backward_op("hardtanh_backward", _hardtanh_backward_kernel)


# leaky_relu is one element-wise op (one pass, one node named as torch's
# LeakyReluBackward0) rather than a ``where`` of two branches: DCGAN-style discriminators
# run it after every layer


def _leaky_relu_kernel(xp, a, *, negative_slope):
    if a.dtype.itemsize == 2:
        # half types: the product in float32 with the slope as float32, rounded once, as
        # torch's kernel (NOTE [ A number in half-precision opmath ] in _elementwise.py)
        prod = (a.astype(np.float32) * np.float32(negative_slope)).astype(a.dtype)
        return select(xp, a > 0, a, prod)
    return _leaky(xp, a, negative_slope)


# NOTE [ Leaky slopes as a maximum ]
# ``where(a > 0, a, a * s)`` is ``maximum(a, a * s)`` for every slope 0 < s <= 1 (and
# ``minimum`` for s > 1), NaN, +-inf and -0.0 included; NumPy's ``where`` on a mask of
# random signs costs ~20x a ``maximum`` (a mispredicted branch per element). A slope of 0 or
# below keeps the ``where``: there inf * 0 would turn the positive side into NaN.


def _leaky(xp, a, s):
    """``where(a > 0, a, a * s)`` for a number or an array of slopes ``s`` (NOTE [ Leaky
    slopes as a maximum ])."""
    if isinstance(s, (int, float)):
        lo, hi = s, s
    elif xp is np and s.size and holds_values(s):  # (a device would wait for the GPU)
        lo, hi = s.min(), s.max()
    else:
        lo = hi = 0
    if 0 < lo and hi <= 1:
        return xp.maximum(a, a * s)
    if lo > 1:
        return xp.minimum(a, a * s)
    return select(xp, a > 0, a, a * s)


def _leaky_relu_vjp(g, a, *, negative_slope):
    # torch's rule: the slope wherever the input is not positive (0 and NaN included)
    return elementwise(leaky_relu_backward_op, (g, a), {"negative_slope": negative_slope})


def _leaky_relu_backward_kernel(xp, g, a, *, negative_slope):
    s = negative_slope
    d = g.dtype
    if xp is np and (d == np.float32 or d == np.float64) and a.dtype == d and 0 < s <= 1:
        # g times the 0/1 mask raised to the slope: exact, without the slow ``where`` (NOTE
        # [ Leaky slopes as a maximum ])
        return g * np.maximum((a > 0).astype(d), d.type(s))
    # (half types: the product in float32, rounded once, as torch's kernel)
    prod = (g.astype(np.float32) * np.float32(s)).astype(d) if d.itemsize == 2 else \
        xp.asarray(g * d.type(s))
    return select(xp, a > 0, g, prod)


def _leaky_relu_jvp(x_dots, a, *, negative_slope, out=None):
    return None if x_dots[0] is None else _leaky_grad(x_dots[0], a, negative_slope)


def _leaky_grad(g, a, s):
    """``where(a > 0, g, g * s)`` for a number or a tensor of slopes ``s``. For
    float32/float64 and slopes in (0, 1] it is ``g`` times the 0/1 mask
    raised to ``s`` (``maximum``): exact, and without the slow ``where`` (NOTE [ Leaky slopes
    as a maximum ]); half types keep the ``where``, whose product rounds as torch's."""
    d = g._data.dtype
    if (d == np.float32 or d == np.float64) and a._data.dtype == d:
        if isinstance(s, (int, float)):
            fits = 0 < s <= 1
        else:
            # (strictly below 1 for a slope that takes gradient: maximum's tie at 1 would
            # share it)
            # (not under a mode: a vmap example's tensor holds one example's values)
            plain = not _dispatch.intercept and type(s._data) is np.ndarray and s._data.size
            top = s._data.max() if plain else 0
            fits = (plain and s._data.dtype == d and 0 < s._data.min()
                    and (top < 1 or (top == 1 and not s._rg)))
        if fits:
            mask = (a > 0).to(g.dtype)
            return g * (mask.clamp(min=s) if isinstance(s, (int, float)) else maximum(mask, s))
    return where(a > 0, g, g * s)


leaky_relu_op = ElementwiseOp("leaky_relu", _leaky_relu_kernel, vjp=_leaky_relu_vjp,
                              jvp=_leaky_relu_jvp, allow=(2,))
leaky_relu_backward_op = _mask_backward_op("leaky_relu_backward", _leaky_relu_backward_kernel)


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
    # the negative branch sees min(a, 0): no overflow from the side ``where`` drops; its
    # sign is a's, so that -0.0 stays -0.0 (``alpha * expm1(-0.0)``), as in torch
    neg = xp.copysign(xp.minimum(a, 0), a)
    return xp.where(a > 0, a, alpha * xp.expm1(neg * input_scale)) * scale


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
elu_op = ElementwiseOp("elu", opmath(_elu_kernel), vjp=_half_in_float(_elu_vjp), jvp=_elu_jvp,
                       allow=(2,))


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


softplus_op = ElementwiseOp("softplus", opmath(_softplus_kernel), vjp=_half_in_float(_softplus_vjp),
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


mish_op = ElementwiseOp("mish", opmath(_mish_kernel), vjp=_half_in_float(_mish_vjp),
                        jvp=_mish_jvp, allow=(2,))


def softsign(input):
    return input / (1 + input.abs())


def softshrink(input, lambd=0.5):
    kernel_dtype("softshrink", input)
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, inf) for input dtype {input.dtype}, "
                           f"but found {lambd}")
    return elementwise(softshrink_op, (input,), {"lambd": float(lambd)})


def _softshrink_kernel(xp, a, *, lambd):
    x, cut = _cut(a, lambd, True)  # NOTE [ Shrink and threshold cuts ]
    # x - clip(x, -cut, cut): x - cut above the band, x + cut below, +0 in it (as torch's
    # vectorized loop; its scalar loop gives x * 0); NaN stays NaN
    return xp.asarray(x - xp.clip(x, -cut, cut)).astype(a.dtype, copy=False)


def _softshrink_vjp(g, a, *, lambd):
    x, cut = _cut(a, lambd, True)
    return _shrink_nan(g, a, _above_cut(g, x.abs(), cut))


def _softshrink_jvp(x_dots, a, *, lambd, out=None):
    return None if x_dots[0] is None else _softshrink_vjp(x_dots[0], a, lambd=lambd)


softshrink_op = ElementwiseOp("softshrink", _softshrink_kernel, vjp=_softshrink_vjp,
                              jvp=_softshrink_jvp, allow=(2,))


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


hardswish_op = ElementwiseOp("hardswish", opmath(_hardswish_kernel),
                             vjp=_half_in_float(_hardswish_vjp), jvp=_hardswish_jvp,
                             allow=(2,))


def logsigmoid(input):
    kernel_dtype("log_sigmoid", input)
    return elementwise(log_sigmoid_op, (input,))


def _log_sigmoid_kernel(xp, a):
    # min(x, 0) - log(1 + exp(-|x|)): no overflow on either side
    return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))


def _log_sigmoid_slope(g, a):
    # d/dx log sigmoid(x) = sigmoid(-x), from exp(-|x|) so that nothing overflows; for
    # float16/bfloat16, exp(-|x|) rounded to that dtype (torch keeps it from the forward so),
    # the rest in float32, rounded once
    e = (-a.abs()).exp()
    dtype = a.dtype
    half = dtype.itemsize == 2 and dtype.is_floating_point
    if half:
        g, a, e = g.float(), a.float(), e.float()
    q = e / (e + 1)
    r = g * where(a < 0, 1 - q, q)  # (torch's order: a NaN goes through q)
    return r.to(dtype) if half else r


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
    return _dispatch.apply(glu_op, (input,), {"dim": dim % input.dim()})


def _glu_kernel(xp, x, *, dim):
    a, b = xp.split(x, 2, axis=dim)
    # a / (1 + exp(-b)) in one temporary, exp(-b) overflowing to inf (a zero gate)
    e = xp.negative(b)
    xp.exp(e, out=e)
    e += 1
    return xp.divide(a, e, out=e)


def _glu_backward_kernel(xp, g, x, *, dim):
    """Both halves of glu's gradient written into one array: g s and g s a (1 - s), with
    s = sigmoid(b), in two temporaries."""
    a, b = xp.split(x, 2, axis=dim)
    out = xp.empty(x.shape, xp.result_type(g, x))
    ga, gb = xp.split(out, 2, axis=dim)
    s = xp.negative(b)
    xp.exp(s, out=s)
    s += 1
    xp.reciprocal(s, out=s)
    xp.multiply(g, s, out=ga)
    xp.subtract(1, s, out=s)
    s *= a
    xp.multiply(ga, s, out=gb)
    return out


# glu's backward in one call where no graph is built through it (and no mode batches it);
# half types take the formula below, whose steps round as torch's do
glu_backward_op = Op("glu_backward", _glu_backward_kernel)


def _glu_vjp(g, x, *, dim):
    if (not _dispatch.intercept and x._data.dtype.itemsize >= 4 and g._data.dtype == x._data.dtype
            and not _dispatch.differentiable_formula(g, x)):
        return _dispatch.apply(glu_backward_op, (g, x), {"dim": dim})
    a, b = x.chunk(2, dim)
    s = b.sigmoid()
    ga = g * s
    return cat([ga, ga * a * (1 - s)], dim)


def _glu_jvp(x_dots, x, *, dim, out=None):
    if x_dots[0] is None:
        return None
    a, b = x.chunk(2, dim)
    a_dot, b_dot = x_dots[0].chunk(2, dim)
    s = b.sigmoid()
    return s * (a_dot + a * (1 - s) * b_dot)


# one op (torch's GluBackward0) rather than a split, a sigmoid and a product
glu_op = Op("glu", opmath(_glu_kernel), vjp=_glu_vjp, jvp=_glu_jvp)


def softmin(input, dim=None, dtype=None):
    return softmax(-input, dim, dtype)
