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


class _BranchWatch:
    """Watches, on this thread, for user code calling ``bool()`` on a tensor that ``lookup``
    (``id(tensor) -> entry``) holds and ``watched(entry)`` accepts -- a Python branch on a
    traced value (NOTE [ Export trace ] in ember/export/_trace.py, NOTE [ ONNX export ]).
    ``found`` is then ``(file, line, function)`` of the first such user frame; ember's own
    frames are not the user's."""

    def __init__(self, lookup: dict):
        import os

        from ..._core.tensor import Tensor

        self.lookup = lookup
        self.code = Tensor.__bool__.__code__
        self.found = None
        self.ember_dir = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))) + os.sep

    def watched(self, entry) -> bool:
        return True

    def user_caller(self, frame):
        """``frame``'s caller when it is user code (not ember's own, nor a wrapper), else
        None."""
        caller = frame.f_back
        name = caller.f_code.co_filename if caller is not None else ""
        if name.startswith(self.ember_dir) or name.startswith("<ember wrapper"):
            return None
        return caller

    def _profile(self, frame, event, arg):
        if event != "call" or frame.f_code is not self.code or self.found is not None:
            return
        caller = self.user_caller(frame)
        if caller is None:
            return
        entry = self.lookup.get(id(frame.f_locals.get("self")))
        if entry is not None and self.watched(entry):
            self.found = (caller.f_code.co_filename, caller.f_lineno, caller.f_code.co_name)

    def __enter__(self):
        import sys

        self.saved = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        import sys

        sys.setprofile(self.saved)
