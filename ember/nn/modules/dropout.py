"""Dropout layers (active in training mode only)."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training (scaling the rest by
    ``1 / (1 - p)``); identity in eval mode.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        inplace: accepted for compatibility.

    Shape:
        any.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Dropout(0.2)
        >>> tuple(m(ember.randn(20, 16)).shape)
        (20, 16)
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of a ``(N, C, L)`` input with probability ``p`` in training
    (scaling the rest by ``1 / (1 - p)``); identity in eval mode.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        inplace: accepted for compatibility.

    Shape:
        ``(N, C, L)`` or ``(C, L)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Dropout1d(0.5)
        >>> tuple(m(ember.randn(2, 3, 8)).shape)
        (2, 3, 8)
    """

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of a ``(N, C, H, W)`` input with probability ``p`` in training
    (scaling the rest by ``1 / (1 - p)``); identity in eval mode.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        inplace: accepted for compatibility.

    Shape:
        ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Dropout2d(0.5)
        >>> tuple(m(ember.randn(2, 3, 8, 8)).shape)
        (2, 3, 8, 8)
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of a ``(N, C, D, H, W)`` input with probability ``p`` in training
    (scaling the rest by ``1 / (1 - p)``); identity in eval mode.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        inplace: accepted for compatibility.

    Shape:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Dropout3d(0.5)
        >>> tuple(m(ember.randn(2, 3, 8, 8, 8)).shape)
        (2, 3, 8, 8, 8)
    """

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: dropped units take SELU's saturation value and an affine
    map keeps zero mean and unit variance; identity in eval mode.

    Args:
        p: probability of an element (or channel) to be zeroed. Default: 0.5.
        inplace: accepted for compatibility.

    Shape:
        any.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.AlphaDropout(0.2)
        >>> tuple(m(ember.randn(20, 16)).shape)
        (20, 16)
    """

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


# SELU's negative saturation value, -scale * alpha: where dropped units are sent
_SELU_SATURATION = 1.7580993408473766


def _feature_alpha_dropout(input, p, training):
    """Alpha dropout of whole channels: each (sample, channel) map is kept or set to SELU's
    saturation value, then an affine map restores zero mean and unit variance."""
    from ... import empty

    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    noise_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = empty(noise_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    a = 1.0 / ((_SELU_SATURATION ** 2 * p + 1) * (1 - p)) ** 0.5
    shift = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return input * (keep * a) + shift


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels, for SELU networks: in training each channel of each
    sample is, with probability ``p``, replaced by SELU's negative saturation value, and the
    result is rescaled to keep zero mean and unit variance. In eval mode it is the identity.

    Args:
        p (float): probability of dropping a channel. Default: 0.5.
        inplace (bool): accepted for compatibility; the result is a new tensor.

    Shape:
        Input ``(N, C, *)`` (at least 2-D); output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.FeatureAlphaDropout(0.2)
        >>> y = m(ember.randn(4, 3, 5))
        >>> tuple(y.shape)
        (4, 3, 5)
    """

    def forward(self, input):
        return _feature_alpha_dropout(input, self.p, self.training)
