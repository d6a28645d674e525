"""Node metadata carried from one graph to the next: while ``preserve_node_meta()`` is
active, nodes created during a ``Transformer`` run copy selected ``meta`` fields (the module
stack, the stack trace) from the node being run (``set_current_meta``).
"""

from __future__ import annotations

import contextlib
import threading
import traceback as _tb

__all__ = ["preserve_node_meta", "has_preserved_node_meta", "set_stack_trace",
           "format_stack", "set_current_meta", "get_current_meta", "reset_grad_fn_seq_nr",
           "set_grad_fn_seq_nr"]

#: the ``meta`` fields a new node takes from the node being run
_COPY_META_FIELDS = ("nn_module_stack", "source_fn_stack", "stack_trace", "original_aten",
                     "recompute", "from_node", "seq_nr")


class _State(threading.local):
    preserve = False
    current_meta: dict = {}
    stack_trace: list | None = None


_state = _State()


@contextlib.contextmanager
def preserve_node_meta(enable: bool = True):
    """Context manager: inside, new nodes copy metadata from the node being run.

    Args:
        enable: switch preservation on (False switches it off inside).

    Example::

        >>> from ember.fx import traceback as fx_traceback
        >>> with fx_traceback.preserve_node_meta():
        ...     fx_traceback.has_preserved_node_meta()
        True
    """
    saved = (_state.preserve, _state.current_meta)
    _state.preserve = enable
    try:
        yield
    finally:
        _state.preserve, _state.current_meta = saved


def has_preserved_node_meta() -> bool:
    """Whether ``preserve_node_meta`` is active.

    Returns:
        bool.

    Example::

        >>> from ember.fx.traceback import has_preserved_node_meta
        >>> has_preserved_node_meta()
        False
    """
    return _state.preserve


def set_stack_trace(stack: list) -> None:
    """Record a stack trace (a list of formatted lines) for the nodes about to be made.

    Args:
        stack: the lines.

    Example::

        >>> from ember.fx.traceback import set_stack_trace, format_stack
        >>> set_stack_trace(["line\\n"])
    """
    if _state.preserve and stack:
        _state.current_meta = {**_state.current_meta, "stack_trace": "".join(stack)}
    _state.stack_trace = list(stack) if stack else None


def format_stack() -> list:
    """The current stack trace as formatted lines (the preserved one while
    ``preserve_node_meta`` is active and one was recorded).

    Returns:
        A list of strings.

    Example::

        >>> from ember.fx.traceback import format_stack
        >>> isinstance(format_stack(), list)
        True
    """
    if _state.preserve and "stack_trace" in _state.current_meta:
        return [_state.current_meta["stack_trace"]]
    return _tb.format_list(_tb.extract_stack()[:-1])


@contextlib.contextmanager
def set_current_meta(node, pass_name: str = ""):
    """Context manager: while preserving, ``node.meta`` is the current metadata.

    Args:
        node: the node being run.
        pass_name: the pass running it (kept for torch's signature).

    Example::

        >>> import ember.fx as fx
        >>> from ember.fx.traceback import set_current_meta, get_current_meta
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> with set_current_meta(x):
        ...     pass
    """
    if _state.preserve and node is not None:
        saved = _state.current_meta
        _state.current_meta = node.meta
        try:
            yield
        finally:
            _state.current_meta = saved
    else:
        yield


def get_current_meta() -> dict:
    """The current node metadata (empty outside ``set_current_meta``).

    Returns:
        A dict.

    Example::

        >>> from ember.fx.traceback import get_current_meta
        >>> get_current_meta()
        {}
    """
    return _state.current_meta


def set_grad_fn_seq_nr(seq_nr: int) -> None:
    """Record an autograd sequence number in the current metadata.

    Args:
        seq_nr: the number.

    Example::

        >>> from ember.fx.traceback import set_grad_fn_seq_nr
        >>> set_grad_fn_seq_nr(0)
    """
    if _state.preserve:
        _state.current_meta = {**_state.current_meta, "seq_nr": seq_nr}


def reset_grad_fn_seq_nr() -> None:
    """Forget the autograd sequence number of the current metadata.

    Example::

        >>> from ember.fx.traceback import reset_grad_fn_seq_nr
        >>> reset_grad_fn_seq_nr()
    """
    if _state.preserve and "seq_nr" in _state.current_meta:
        meta = dict(_state.current_meta)
        del meta["seq_nr"]
        _state.current_meta = meta
