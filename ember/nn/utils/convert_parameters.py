"""Flatten parameters into one vector and back."""

from __future__ import annotations


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter, flattened, in order.

    Args:
        parameters (iterable of Tensor): e.g. ``model.parameters()``.

    Returns:
        Tensor: the concatenation.

    Example:
        >>> import ember
        >>> parameters_to_vector(ember.nn.Linear(3, 2).parameters()).shape
        ember.Size([8])
    """
    from ... import cat

    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into ``parameters`` (replacing their data), the
    inverse of :func:`parameters_to_vector`.

    Args:
        vec (Tensor): a 1-D tensor with as many elements as the parameters together.
        parameters (iterable of Tensor): the parameters to overwrite.

    Returns:
        None.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(3, 2)
        >>> vector_to_parameters(ember.zeros(8), layer.parameters())
        >>> float(layer.weight.abs().sum())
        0.0
    """
    from ..._core.tensor import Tensor

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[offset:offset + n].view_as(p).data
        offset += n
