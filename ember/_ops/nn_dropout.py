"""Dropout: ``dropout``, ``dropout1d``/``2d``/``3d`` (whole channels) and ``alpha_dropout``.

Compositions of ember ops -- a Bernoulli mask, then a product -- so the mask is ordinary
autograd state. The top-level forms PyTorch also has (``torch.dropout(input, p, train)``,
``torch.feature_alpha_dropout_``, ``torch.native_dropout`` ...) are declared ``public`` at
the end, with its signatures: ``p`` and ``train`` required, the in-place form a separate
``<name>_`` function. ``nn.functional`` re-exports them; they live with the ops because scaled
dot-product attention (``nn_attention.py``) applies dropout to its probabilities.
"""

from __future__ import annotations

import math

from ._registry import public, recorded_as
from .creation import empty_like


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


# PyTorch records each form as one op (``aten::dropout``, ``aten::feature_dropout_``...)
# around the ops ember composes it from (NOTE [ Composite op events ])
def _event(base):
    return lambda bound: base + "_" if bound["inplace"] else base


@recorded_as(_event("aten::dropout"), ("input", "p", "training"))
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    mask = empty_like(input).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


@recorded_as(_event("aten::feature_dropout"), ("input", "p", "training"))
def _feature_dropout(input, p, training, inplace, nd, name):
    _check_p(p)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but received a "
                           f"{input.dim()}D input")
    if not training or p == 0.0:
        return input
    batched = input.dim() == nd + 2
    shape = tuple(input.shape[:2 if batched else 1]) + (1,) * nd
    mask = input.new_empty(shape).bernoulli_(1 - p)
    mask = mask.div_(1 - p) if p < 1 else mask
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def _unusual_rank(name, nd, input):
    # PyTorch takes other ranks too, with a deprecation warning (an MLP's (N, C) activations
    # through nn.Dropout2d is common in older examples)
    from .._settings import warn_at_caller

    warn_at_caller(
        f"{name}: Received a {input.dim()}-D input to {name}, which is deprecated and will "
        "result in an error in a future release. To retain the behavior and silence this "
        f"warning, please use dropout instead. Note that {name} exists to provide channel-wise "
        f"dropout on inputs with {nd} spatial dimensions, a channel dimension, and an optional "
        f"batch dimension (i.e. {nd + 1}D or {nd + 2}D inputs).", UserWarning)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (3, 4):
        _unusual_rank("dropout2d", 2, input)
    if input.dim() == 3:
        # PyTorch reads a 3-D input as (N, C, L), not as unbatched (C, H, W)
        from .._settings import warn_at_caller

        warn_at_caller(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning)
    # any rank: one draw per (dim 0, dim 1) entry, as PyTorch's feature dropout
    return _channel_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (4, 5):
        _unusual_rank("dropout3d", 3, input)
    if input.dim() == 5:
        return _channel_dropout(input, p, training, inplace)
    # unbatched (and other ranks): dim 0 is the channel dim
    if inplace:
        return _channel_dropout(input.unsqueeze_(0), p, training, True).squeeze_(0)
    return _channel_dropout(input.unsqueeze(0), p, training, False).squeeze(0)


_SELU_ALPHA = 1.7580993408473766  # selu's scale * alpha: dropped units sit at -_SELU_ALPHA


# NOTE [ Alpha dropout's arithmetic ]
# A dropped unit takes SELU's saturation value -alpha', then the affine map ``a * x + b``
# restores zero mean and unit variance, with a = ((1 - p) (1 + p alpha'^2))^-1/2. PyTorch
# folds both into the Bernoulli keep-mask ``m`` (drawn in the input's dtype):
#     b = (m - 1) * (alpha' a) + alpha' a p,   m *= a,   out = input * m + b
# each step rounding in the input's dtype; ember computes the same steps in the same order,
# so seeded outputs agree bit for bit, not just to rounding.
@recorded_as(lambda b: ("aten::feature_alpha_dropout" if b["feature"] else
                        "aten::alpha_dropout") + ("_" if b["inplace"] else ""),
             ("input", "p", "training"))
def _alpha_dropout(input, p, training, inplace, feature):
    """Dropped units take SELU's saturation value, then an affine map restores the mean and
    variance; ``feature`` drops whole channels (dims 0 and 1 pick the mask)."""
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped, nothing drawn
        return input.mul_(0) if inplace else input * 0
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
        keep = input.new_empty(shape).bernoulli_(1 - p)
    else:
        keep = empty_like(input).bernoulli_(1 - p)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = keep.add(-1).mul_(_SELU_ALPHA * a).add_(_SELU_ALPHA * a * p)
    keep.mul_(a)
    if inplace:
        return input.mul_(keep).add_(shift)
    return (input * keep).add_(shift)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations' mean and variance."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: a (N, C, ...) input loses entire (n, c) planes."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, True)


# ------------------------------------------------------------------------------------------------
# top-level forms (torch.<name>)


def _check_p_top(p):
    if p < 0.0 or p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


@recorded_as(_event("aten::feature_dropout"), ("input", "p", "train"))
def _channel_dropout(input, p, train, inplace):
    _check_p_top(p)
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not train or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    mask = input.new_empty(shape).bernoulli_(1 - p)
    mask = mask.div_(1 - p) if p < 1 else mask
    return input.mul_(mask) if inplace else input * mask


@public(name="dropout", method=False)
def _dropout_top(input, p, train):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (``train`` False: ``input`` unchanged).

    Args:
        input: a tensor.
        p: the probability of zeroing an element, in [0, 1].
        train: apply dropout (True) or pass ``input`` through (False).

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    _check_p_top(p)
    return dropout(input, p, train)


@public(method=False)
def dropout_(input, p, train):
    """In-place :func:`ember.dropout`.

    Args:
        input: a tensor, overwritten.
        p: the probability of zeroing an element.
        train: apply dropout.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.dropout_(ember.ones(2), 0.0, True)
        tensor([1., 1.])
    """
    _check_p_top(p)
    return dropout(input, p, train, inplace=True)


@public(method=False)
def feature_dropout(input, p, train):
    """Dropout of whole channels: each (n, c) plane of a (N, C, ...) input is zeroed with
    probability ``p``, the rest scaled by ``1 / (1 - p)``.

    Args:
        input: a tensor of at least 2 dims.
        p: the probability of zeroing a channel.
        train: apply dropout.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.feature_dropout(ember.ones(1, 2, 2), 0.5, False)
        tensor([[[1., 1.],
                 [1., 1.]]])
    """
    return _channel_dropout(input, p, train, False)


@public(method=False)
def feature_dropout_(input, p, train):
    """In-place :func:`feature_dropout`.

    Args:
        input: a tensor of at least 2 dims, overwritten.
        p: the probability of zeroing a channel.
        train: apply dropout.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.feature_dropout_(ember.ones(1, 2), 0.0, True)
        tensor([[1., 1.]])
    """
    return _channel_dropout(input, p, train, True)


@public(name="alpha_dropout", method=False)
def _alpha_dropout_top(input, p, train):
    """Alpha dropout (for SELU networks): dropped elements take SELU's saturation value and
    an affine map keeps the mean and variance.

    Args:
        input: a tensor.
        p: the probability of dropping an element.
        train: apply dropout.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.alpha_dropout(ember.ones(2), 0.5, False)
        tensor([1., 1.])
    """
    _check_p_top(p)
    return _alpha_dropout(input, p, train, False, False)


@public(method=False)
def alpha_dropout_(input, p, train):
    """In-place alpha dropout (see ``ember.alpha_dropout``).

    Args:
        input: a tensor, overwritten.
        p: the probability of dropping an element.
        train: apply dropout.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.alpha_dropout_(ember.ones(2), 0.5, False)
        tensor([1., 1.])
    """
    _check_p_top(p)
    return _alpha_dropout(input, p, train, True, False)


@public(name="feature_alpha_dropout", method=False)
def _feature_alpha_dropout_top(input, p, train):
    """Alpha dropout of whole channels (each (n, c) plane of a (N, C, ...) input).

    Args:
        input: a tensor of at least 2 dims.
        p: the probability of dropping a channel.
        train: apply dropout.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.feature_alpha_dropout(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_p_top(p)
    return _alpha_dropout(input, p, train, False, True)


@public(method=False)
def feature_alpha_dropout_(input, p, train):
    """In-place channel-wise alpha dropout (see ``ember.feature_alpha_dropout``).

    Args:
        input: a tensor of at least 2 dims, overwritten.
        p: the probability of dropping a channel.
        train: apply dropout.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> ember.feature_alpha_dropout_(ember.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    _check_p_top(p)
    return _alpha_dropout(input, p, train, True, True)


@public(method=False)
def native_dropout(input, p, train):
    """Dropout that also returns its mask: ``(output, mask)`` with ``mask`` a bool tensor,
    True where the element was kept (all True when not training).

    Args:
        input: a floating-point tensor.
        p: the probability of zeroing an element.
        train: apply dropout (None counts as True).

    Returns:
        ``(output, mask)``.

    Example:
        >>> import ember
        >>> ember.native_dropout(ember.ones(2), 0.5, False)
        (tensor([1., 1.]), tensor([True, True]))
    """
    from .._core import dtype as _dt

    _check_p_top(p)
    if train is None or train:
        keep = empty_like(input).bernoulli_(1 - p)
        scale = 1.0 / (1 - p) if p < 1 else 0.0
        return input * keep * scale, keep.to(_dt.bool_)
    return input.clone(), empty_like(input, dtype=_dt.bool_).fill_(True)
