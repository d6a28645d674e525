"""``ember.onnx.operators``: shapes as tensors, kept for scripts written for PyTorch's
ONNX exporter of old (``shape_as_tensor``, ``reshape_from_tensor_shape``)."""

from __future__ import annotations

import ember

__all__: list = []


def shape_as_tensor(x):
    """The shape of ``x`` as a 1-D int64 tensor.

    Args:
        x (Tensor): any tensor.

    Returns:
        Tensor: ``len(x.shape)`` sizes.

    Example::

        >>> shape_as_tensor(ember.zeros(2, 3))
        tensor([2, 3])
    """
    return ember.tensor(list(x.shape), dtype=ember.int64)


def reshape_from_tensor_shape(x, shape):
    """``x`` reshaped to the sizes held in the 1-D int64 tensor ``shape`` (a view where
    ``reshape`` gives one; ``-1`` infers a size).

    Args:
        x (Tensor): the tensor.
        shape (Tensor): the new sizes, 1-D int64.

    Returns:
        Tensor

    Example::

        >>> reshape_from_tensor_shape(ember.arange(6), ember.tensor([2, 3])).shape
        ember.Size([2, 3])
    """
    if shape.dim() != 1:
        raise RuntimeError("Expected shape_tensor.dim() == 1 to be true, but got false.")
    if shape.dtype != ember.int64:
        raise RuntimeError(f"expected scalar type Long but found {shape.dtype.scalar_name}")
    return x.reshape(tuple(int(v) for v in shape.tolist()))
