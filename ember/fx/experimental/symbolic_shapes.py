"""``fx.experimental.symbolic_shapes``: the errors symbolic tracing raises about shapes and
values.

ember captures graphs with concrete sizes (NOTE [ Export trace ] in ember/export/_trace.py),
so the one error programs meet here is the branch on a tensor's value during
``ember.export.export``: PyTorch raises ``GuardOnDataDependentSymNode`` and so does ember.
"""

from __future__ import annotations

__all__ = ["GuardOnDataDependentSymNode"]


class GuardOnDataDependentSymNode(RuntimeError):
    """Raised when captured code branches on a value computed from the inputs (``if
    x.sum() > 0:`` inside a module being exported): the graph could hold only one branch.
    Use ``ember.cond`` for control flow that depends on data.

    Args:
        message (str): what was read, and where.

    Example::

        >>> issubclass(GuardOnDataDependentSymNode, RuntimeError)
        True
    """
