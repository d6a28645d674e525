"""Tracing helpers of PyTorch's compiler that libraries use directly
(``torch._dynamo._trace_wrapped_higher_order_op``).

Example::

    >>> from ember._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex
    >>> with TransformGetItemToIndex():
    ...     ember.arange(3)[ember.tensor(1)]
    tensor(1)
"""

from __future__ import annotations

from ..overrides import TorchFunctionMode

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex(TorchFunctionMode):
    """A mode under which indexing a tensor by tensors stays a tensor operation.

    PyTorch's compiler and ``vmap`` need ``x[i]`` with a tensor ``i`` to be an indexing op
    rather than a read of ``i``'s value; libraries (transformers' attention masks) enter
    this mode around such code. ember's indexing with tensors is already a tensor operation
    (``vmap`` included), so the mode runs every call as it is.

    Args:
        (none)

    Returns:
        A context manager (a ``TorchFunctionMode``).

    Example::

        >>> with TransformGetItemToIndex():
        ...     ember.ones(2, 3)[ember.tensor(0), ember.tensor(2)]
        tensor(1.)
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
