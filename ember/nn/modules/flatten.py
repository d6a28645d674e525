"""Flatten and Unflatten."""

from __future__ import annotations

from .module import Module


class Flatten(Module):
    """Flatten dimensions ``start_dim..end_dim`` into one.

    Args:
        start_dim: first dimension to flatten. Default: 1.
        end_dim: last dimension to flatten. Default: -1.

    Shape:
        ``(*, S_start, ..., S_end, *)`` -> ``(*, prod, *)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Flatten()
        >>> tuple(m(ember.randn(32, 1, 5, 5)).shape)
        (32, 25)
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size``.

    Args:
        dim: the dimension the operation runs along.
        unflattened_size: the shape the dimension is split into.

    Shape:
        ``(*, S_dim, *)`` -> ``(*, U, *)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Unflatten(1, (2, 5))
        >>> tuple(m(ember.randn(3, 10)).shape)
        (3, 2, 5)
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
