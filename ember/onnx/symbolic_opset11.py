"""``torch.onnx.symbolic_opset11``: the few opset-11 building blocks that symbolic functions
written for PyTorch's TorchScript exporter call (torchvision's ``nms`` and ``roi_align``
translations use ``unsqueeze``, ``squeeze`` and ``select``).

Each takes the graph ``g`` and writes ONNX nodes with ``g.op``; the other names of torch's
module are not provided (AttributeError names the function).
"""

from __future__ import annotations

__all__ = ["unsqueeze", "squeeze", "select"]


def _axes(g, dim):
    import ember

    return g.op("Constant", value_t=ember.tensor([int(dim)], dtype=ember.int64))


def unsqueeze(g, self, dim):
    """Insert an axis of size 1 at ``dim``: an ONNX ``Unsqueeze`` node.

    Args:
        g: the graph being written.
        self: the input value.
        dim (int): where the new axis goes.

    Returns:
        The output value.

    Example::

        >>> from ember.onnx import symbolic_opset11
        >>> callable(symbolic_opset11.unsqueeze)
        True
    """
    return g.op("Unsqueeze", self, _axes(g, dim))


def squeeze(g, self, dim=None):
    """Remove the axis ``dim`` (of size 1), or every such axis: an ONNX ``Squeeze`` node.

    Args:
        g: the graph being written.
        self: the input value.
        dim (int, optional): the axis to remove.

    Returns:
        The output value.

    Example::

        >>> from ember.onnx import symbolic_opset11
        >>> callable(symbolic_opset11.squeeze)
        True
    """
    if dim is None:
        return g.op("Squeeze", self)
    return g.op("Squeeze", self, _axes(g, dim))


def select(g, self, dim, index):
    """Take the entries ``index`` (a value) along ``dim``: an ONNX ``Gather`` node.

    Args:
        g: the graph being written.
        self: the input value.
        dim (int): the axis.
        index: the indices, a graph value.

    Returns:
        The output value.

    Example::

        >>> from ember.onnx import symbolic_opset11
        >>> callable(symbolic_opset11.select)
        True
    """
    return g.op("Gather", self, index, axis_i=int(dim))
