"""``ember.nn.init``: parameter initialisers with PyTorch's formulas.

Every initialiser fills its tensor in place without recording gradients and returns it.
"""

from __future__ import annotations

import math
import warnings

from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_", "sparse_",
]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain (scaling of the standard deviation) for a nonlinearity: 1 for
    linear and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for
    leaky_relu, 3/4 for selu.

    Args:
        nonlinearity (str): ``"relu"``, ``"tanh"``, ``"conv2d"``...
        param (float, optional): the negative slope of ``leaky_relu`` (default 0.01).

    Returns:
        float.

    Example:
        >>> import ember
        >>> round(ember.nn.init.calculate_gain('tanh'), 4)
        1.6667
    """
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _check(tensor, name):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with samples from the uniform distribution U(a, b).

    Args:
        tensor (Tensor): the tensor to fill.
        a (float): lower bound. Default: 0.
        b (float): upper bound. Default: 1.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.uniform_(ember.empty(3, 5), -1, 1)
        >>> bool((w.abs() <= 1).all())
        True
    """
    _check(tensor, "uniform_")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with samples from the normal distribution N(mean, std^2).

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean. Default: 0.
        std (float): the standard deviation. Default: 1.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> tuple(ember.nn.init.normal_(ember.empty(3, 5), std=0.02).shape)
        (3, 5)
    """
    _check(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` with N(mean, std^2) truncated to [a, b], by rejection sampling (warns
    when ``mean`` is more than 2 std outside [a, b]).

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean. Default: 0.
        std (float): the standard deviation. Default: 1.
        a (float): lower cut-off. Default: -2.
        b (float): upper cut-off. Default: 2.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.trunc_normal_(ember.empty(100), std=0.02, a=-0.04, b=0.04)
        >>> bool((w.abs() <= 0.04).all())
        True
    """
    _check(tensor, "trunc_normal_")
    if tensor.is_meta:  # nothing to fill, nothing drawn
        return tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            _trunc_normal_redraw(tensor, mean, std, a, b, generator)
        else:
            _trunc_normal_uniform_proposals(tensor, mean, std, a, b, generator)
        return tensor


# NOTE [ trunc_normal_'s two samplers ]
# PyTorch 2.13 samples a truncated normal by rejection, and which sampler runs depends on how
# much of the normal's mass lies in [a, b]; ember runs the same ops in the same order, so a
# seeded initialisation draws the same words and gives the same values:
#   * mass > 0.3: draw N(mean, std^2) over the whole tensor; while any element lies outside
#     [a, b] (the bounds rounded to the tensor's dtype first), draw a whole fresh tensor of
#     normals and take its values where the current ones are out of bounds;
#   * a narrow window (mass <= 0.3): propose U(a, b) over the whole tensor and accept where
#     log(U(0, 1)) <= the log density relative to its peak in [a, b]; rejected elements take
#     the next round's proposals, each round drawing whole tensors of proposals and of
#     acceptance uniforms.
# The rounds' arithmetic (subtract, divide, square, scale by -0.5, subtract the peak) runs in
# the tensor's dtype in that order: a reordered formula would round differently and flip
# accept/reject decisions near the boundary.


def _trunc_normal_redraw(tensor, mean, std, a, b, generator):
    from .. import empty_like, tensor as as_tensor, where

    lo = as_tensor(a, dtype=tensor.dtype).item()
    hi = as_tensor(b, dtype=tensor.dtype).item()
    result = tensor.normal_(mean, std, generator=generator)
    while True:
        outside = (result < lo) | (result > hi)
        if not outside.any():
            break
        fresh = empty_like(result).normal_(mean, std, generator=generator)
        result = where(outside, fresh, result)
    if result is not tensor:
        tensor.copy_(result)


def _trunc_normal_uniform_proposals(tensor, mean, std, a, b, generator):
    from .. import empty_like, where

    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_density(x):  # in place, relative to the peak
        return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

    proposals = empty_like(tensor)
    accept_u = empty_like(tensor)
    tensor.uniform_(a, b, generator=generator)
    log_density(proposals.copy_(tensor))
    pending = accept_u.uniform_(generator=generator).log_().gt(proposals)
    if not pending.any():
        return
    result = tensor
    while True:
        proposals.uniform_(a, b, generator=generator)
        result = where(pending, proposals, result)
        log_density(proposals)
        rejected = accept_u.uniform_(generator=generator).log_().gt(proposals)
        pending = where(pending, rejected, pending)
        if not pending.any():
            break
    tensor.copy_(result)


def constant_(tensor, val):
    """Fill ``tensor`` with the value ``val``.

    Args:
        tensor (Tensor): the tensor to fill.
        val (float): the value.

    Returns:
        The tensor, filled in place (without recording gradients).

    Example:
        >>> import ember
        >>> ember.nn.init.constant_(ember.empty(2), 0.3)
        tensor([0.3000, 0.3000])
    """
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill ``tensor`` with ones.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        The tensor, filled in place (without recording gradients).

    Example:
        >>> import ember
        >>> ember.nn.init.ones_(ember.empty(2))
        tensor([1., 1.])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill ``tensor`` with zeros.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        The tensor, filled in place (without recording gradients).

    Example:
        >>> import ember
        >>> ember.nn.init.zeros_(ember.empty(2))
        tensor([0., 0.])
    """
    _check(tensor, "zeros_")
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal), so a Linear
    layer starts by passing its inputs through.

    Args:
        tensor (Tensor): a 2-D tensor.

    Returns:
        The tensor, filled in place (without recording gradients).

    Example:
        >>> import ember
        >>> ember.nn.init.eye_(ember.empty(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    _check(tensor, "eye_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import eye

    with no_grad():
        tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta, so the convolution
    starts as the identity on as many channels as it can keep (in each group).

    Args:
        tensor (Tensor): a ``(out, in/groups, *kernel)`` weight.
        groups (int): the convolution's groups. Default: 1.

    Returns:
        The tensor, filled in place (without recording gradients).

    Example:
        >>> import ember
        >>> w = ember.nn.init.dirac_(ember.empty(2, 2, 3))
        >>> w[:, :, 1]
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check(tensor, "dirac_")
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    with no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for i in range(min_dim):
                tensor[(g * out_per_group + i, i) + centre] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot/Xavier uniform (Glorot & Bengio, 2010): U(-a, a) with
    ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    Args:
        tensor (Tensor): the tensor to fill (at least 2-D).
        gain (float): scaling factor (see ``calculate_gain``). Default: 1.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.xavier_uniform_(ember.empty(3, 5))
        >>> bool((w.abs() <= (6 / 8) ** 0.5).all())
        True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot/Xavier normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Args:
        tensor (Tensor): the tensor to fill (at least 2-D).
        gain (float): scaling factor. Default: 1.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> tuple(ember.nn.init.xavier_normal_(ember.empty(3, 5)).shape)
        (3, 5)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Kaiming/He uniform (He et al., 2015): U(-b, b) with ``b = gain * sqrt(3 / fan)``;
    the default of ``nn.Linear`` and ``nn.Conv*`` weights (with ``a = sqrt(5)``).

    Args:
        tensor (Tensor): the tensor to fill (at least 2-D).
        a (float): negative slope of the following leaky_relu. Default: 0.
        mode (str): ``"fan_in"`` (keeps forward variance) or ``"fan_out"`` (backward).
        nonlinearity (str): ``"relu"`` or ``"leaky_relu"`` (default).
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.kaiming_uniform_(ember.empty(3, 6), nonlinearity='relu')
        >>> bool((w.abs() <= 1.0).all())
        True
    """
    _check(tensor, "kaiming_uniform_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Kaiming/He normal: N(0, std^2) with ``std = gain / sqrt(fan)``.

    Args:
        tensor (Tensor): the tensor to fill (at least 2-D).
        a (float): negative slope of the following leaky_relu. Default: 0.
        mode (str): ``"fan_in"`` or ``"fan_out"``.
        nonlinearity (str): ``"relu"`` or ``"leaky_relu"`` (default).
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.kaiming_normal_(ember.empty(3, 5), mode='fan_out')
        >>> tuple(w.shape)
        (3, 5)
    """
    _check(tensor, "kaiming_normal_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (Saxe et al., 2014), from the QR decomposition of
    a Gaussian matrix; dimensions after the first are flattened.

    Args:
        tensor (Tensor): the tensor to fill (at least 2-D).
        gain (float): scaling factor. Default: 1.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.orthogonal_(ember.empty(3, 5))
        >>> bool(ember.allclose(w @ w.T, ember.eye(3), atol=1e-5))
        True
    """
    _check(tensor, "orthogonal_")
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .. import empty, linalg

    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = empty(rows, cols, dtype=tensor.dtype).normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.t()
        q, r = linalg.qr(flat)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q) if tensor.is_contiguous() else tensor.copy_(
            q.reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor as a sparse matrix (Martens, 2010): a fraction ``sparsity`` of each
    column is zero, the rest N(0, std^2).

    Args:
        tensor (Tensor): a 2-D tensor.
        sparsity (float): fraction of zeros per column.
        std (float): standard deviation of the non-zeros. Default: 0.01.
        generator (Generator, optional): the random source.

    Returns:
        The tensor, filled in place (without recording gradients).

    Differences from PyTorch:
        Random numbers: on the CPU, seeded streams are PyTorch's (see :func:`ember.manual_seed`):
        a seed gives the numbers PyTorch draws from it. On CUDA devices they are ember's own.

    Example:
        >>> import ember
        >>> w = ember.nn.init.sparse_(ember.empty(10, 3), sparsity=0.5)
        >>> int((w == 0).sum())
        15
    """
    _check(tensor, "sparse_")
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import randperm

    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            idx = randperm(rows, generator=generator)[:num_zeros]
            tensor[idx, c] = 0
    return tensor


# deprecated spellings without the trailing underscore
def _deprecated(fn):
    new_name, old_name = fn.__name__, fn.__name__[:-1]
    example_args = {"constant": "ember.empty(3, 3), 0.5",
                    "sparse": "ember.empty(3, 3), 0.5",
                    "dirac": "ember.empty(3, 3, 1)"}.get(old_name, "ember.empty(3, 3)")

    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = (f"Deprecated spelling of :func:`{new_name}` (warns FutureWarning).\n\n"
                   f"    Args:\n        *args: as for ``{new_name}``.\n"
                   f"        **kwargs: as for ``{new_name}``.\n\n"
                   f"    Returns:\n        The tensor, filled in place.\n\n"
                   f"    Example:\n        >>> import ember, warnings\n"
                   f"        >>> with warnings.catch_warnings():\n"
                   f"        ...     warnings.simplefilter('ignore')\n"
                   f"        ...     w = ember.nn.init.{old_name}({example_args})\n"
                   f"        >>> tuple(w.shape[:2])\n        (3, 3)\n")
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
