"""Flatten parameters into one vector and back."""

from __future__ import annotations


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter, flattened, in order."""
    from ... import cat

    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into ``parameters`` (replacing their data)."""
    from ..._core.tensor import Tensor

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[offset:offset + n].view_as(p).data
        offset += n
