"""The autograd graph: ``Node`` and the user-facing utilities over it.

``Node`` is the base class of every backward node (``grad_fn``): op nodes made by the
dispatcher's ``record`` hook (``_nodes.py``), ``AccumulateGrad`` for leaves, ``CopySlices``
for in-place writes into views, and the nodes of custom ``Function`` s. It is defined in
``_base.py`` (see NOTE [ Nodes do not own their outputs ] there), below the recorder and the
engine that the utilities here use.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple
from collections.abc import Callable

from .._core.tensor import Tensor
from . import _engine, _nodes
from ._base import (  # noqa: F401  (re-exported: graph.Node, graph.RemovableHandle, ...)
    AccumulateGrad, Node, RemovableHandle, _add_hook, _hooks_state, _HookDict, _sequence,
)

# ------------------------------------------------------------------------------------------------
# saved-tensor hooks


class saved_tensors_hooks:
    """Pack every tensor saved for backward with ``pack_hook`` and unpack it with
    ``unpack_hook`` when the backward needs it. The innermost active pair wins.

    Args:
        pack_hook: ``pack_hook(tensor) -> Any``, called when a tensor is saved.
        unpack_hook: ``unpack_hook(packed) -> Tensor``, called with what ``pack_hook``
            returned when the backward needs the tensor.

    Example:
        >>> import ember
        >>> packed = []
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
        ...                                               lambda t: t):
        ...     y = (x * x).sum()
        >>> y.backward(); len(packed), x.grad
        (2, tensor([2., 2.]))
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_state.disabled is not None:
            raise RuntimeError(_hooks_state.disabled)
        _nodes.slow_save = True  # saving now consults the hook stack (see _nodes.save_input)
        _hooks_state.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks_state.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU when saved and back to their device on unpack.

    Args:
        pin_memory: PyTorch's option to pin the CPU copies (accepted; not needed here).
        device_type: the device type whose tensors are moved (PyTorch's argument).

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.autograd.graph.save_on_cpu():
        ...     y = (x * x).sum()
        >>> y.backward(); x.grad
        tensor([2., 2.])
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            dev, t = packed
            return t.to(dev)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside the block, registering saved-tensor hooks raises ``RuntimeError(error_message)``.

    Args:
        error_message: the message of that error.

    Example:
        >>> import ember
        >>> from ember.autograd import graph
        >>> with graph.disable_saved_tensors_hooks("no hooks here"):
        ...     try:
        ...         with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        ...             pass
        ...     except RuntimeError as e:
        ...         print(e)
        no hooks here
    """

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _hooks_state.disabled
        _hooks_state.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _hooks_state.disabled = self.prev
        return False


def current_saved_hooks():
    """The innermost (pack, unpack) pair, or None.

    Returns:
        tuple or None: the hooks of the innermost active ``saved_tensors_hooks``.

    Example:
        >>> from ember.autograd import graph
        >>> graph.current_saved_hooks() is None
        True
    """
    s = _hooks_state.stack
    return s[-1] if s else None


# ------------------------------------------------------------------------------------------------
# gradient edges, multi-grad hooks, versions


class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: ``(node, output_nr)``.

    Args:
        node: the backward node (a ``grad_fn``, or a leaf's ``AccumulateGrad``).
        output_nr: which of the node's outputs the tensor is.

    Example:
        >>> import ember
        >>> y = ember.ones(2, requires_grad=True) * 2
        >>> edge = ember.autograd.graph.get_gradient_edge(y)
        >>> edge.node is y.grad_fn, edge.output_nr
        (True, 0)
    """

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge through which ``tensor`` receives its gradient (its AccumulateGrad for a
    leaf).

    Args:
        tensor: a tensor that requires grad.

    Returns:
        GradientEdge: ``(node, output_nr)``; ``autograd.grad`` accepts it in place of the
        tensor.

    Raises:
        RuntimeError: when ``tensor`` does not require grad.

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> type(ember.autograd.graph.get_gradient_edge(x).node).__name__
        'AccumulateGrad'
    """
    if not tensor._rg:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients")
    node, nr = _nodes.gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable) as an
    in-place write would.

    Args:
        tensor: a tensor, or an iterable of tensors.

    Example:
        >>> import ember
        >>> x = ember.ones(2)
        >>> ember.autograd.graph.increment_version(x); x._version
        1
    """
    ts = [tensor] if isinstance(tensor, Tensor) else list(tensor)
    for t in ts:
        t._bump()


def register_multi_grad_hook(tensors, fn: Callable, *, mode: str = "all"):
    """Call ``fn`` once per backward after the gradients of ``tensors`` are computed.

    ``mode="all"``: ``fn(grads)`` gets a list with one gradient per tensor (None for those the
    backward did not reach) once all reachable ones are known. ``mode="any"``: ``fn(grad)``
    with the first gradient computed.

    Args:
        tensors: the tensors whose gradients are watched.
        fn: the hook; its return value is ignored.
        mode: ``"all"`` or ``"any"``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Raises:
        ValueError: for another ``mode``.

    Example:
        >>> import ember
        >>> a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
        >>> seen = []
        >>> h = ember.autograd.graph.register_multi_grad_hook((a, b), seen.append)
        >>> (a * 2 + b * 3).sum().backward()
        >>> seen[0][0], seen[0][1]
        (tensor([2., 2.]), tensor([3., 3.]))
        >>> h.remove()
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    n = len(tensors)
    lock = threading.Lock()
    handles = []

    if mode == "any":
        state = {"task": None}

        def make_any(i):
            def hook(g):
                task = _engine.current_task()
                with lock:
                    if state["task"] is task:
                        return None
                    state["task"] = task
                fn(g)
                return None

            return hook

        for i, t in enumerate(tensors):
            if t._rg:
                handles.append(t.register_hook(make_any(i)))
        return _MultiHandle(handles)

    state = {"task": None, "count": 0, "expected": 0, "grads": None}

    def make_all(i):
        def hook(g):
            task = _engine.current_task()
            with lock:
                if state["task"] is not task:
                    state["task"] = task
                    state["grads"] = [None] * n
                    state["count"] = 0
                    state["expected"] = sum(
                        1 for t in tensors if t._rg and _engine.will_receive_grad(task, t))
                state["grads"][i] = g
                state["count"] += 1
                done = state["count"] == state["expected"]
                grads = state["grads"]
            if done:
                fn(list(grads))
            return None

        return hook

    for i, t in enumerate(tensors):
        if t._rg:
            handles.append(t.register_hook(make_all(i)))
    return _MultiHandle(handles)


class _MultiHandle:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


class allow_mutation_on_saved_tensors:
    """Inside the block, tensors saved for backward may be mutated in place: each is cloned
    when it is first saved, so backward sees the value it had at save time.

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.autograd.graph.allow_mutation_on_saved_tensors():
        ...     a = x * 1
        ...     y = (a * a).sum()
        ...     _ = a.mul_(5)
        ...     y.backward()
        >>> x.grad
        tensor([2., 2.])
    """

    def __enter__(self):
        self.prev = _nodes.clone_on_save
        _nodes.clone_on_save = True
        _nodes.slow_save = True
        return self

    def __exit__(self, *exc):
        _nodes.clone_on_save = self.prev
        return False


Variable = Tensor
