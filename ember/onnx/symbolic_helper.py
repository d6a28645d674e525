"""``torch.onnx.symbolic_helper``: the decorator that older symbolic functions (torchvision's
ONNX translations) are written with.

ember's exporter hands a symbolic function its arguments already as graph values (tensors)
and Python numbers (NOTE in :func:`ember.onnx.register_custom_op_symbolic`), so there is
nothing for :func:`parse_args` to convert: it records the descriptors and returns the
function.
"""

from __future__ import annotations

__all__ = ["parse_args"]


def parse_args(*arg_descriptors):
    """Declare how a symbolic function's arguments are read (``"v"`` value, ``"i"`` int,
    ``"f"`` float, ``"b"`` bool, ``"is"`` int list, ``"none"`` unused).

    Args:
        *arg_descriptors: one descriptor per argument after ``g``.

    Returns:
        A decorator returning the function itself, with ``_arg_descriptors`` set.

    Example::

        >>> from ember.onnx.symbolic_helper import parse_args
        >>> @parse_args("v", "i")
        ... def my_symbolic(g, x, dim):
        ...     return g.op("Unsqueeze", x, dim)
        >>> my_symbolic._arg_descriptors
        ('v', 'i')
    """
    def decorate(fn):
        fn._arg_descriptors = arg_descriptors
        return fn

    return decorate
