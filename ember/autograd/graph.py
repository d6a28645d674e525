"""The autograd graph: ``Node`` and the user-facing utilities over it.

``Node`` is the base class of every backward node (``grad_fn``): op nodes made by the
dispatcher's ``record`` hook (``_engine.py``), ``AccumulateGrad`` for leaves, ``CopySlices``
for in-place writes into views, and the nodes of custom ``Function`` s.

NOTE [ Nodes do not own their outputs ]
A node holds edges to the nodes of its *inputs* (``next_functions``) and the values it
saved, never its output tensors: an output points at its node, not the reverse, so there are
no reference cycles and an intermediate dies by reference counting as soon as nothing needs
it. A node that saves its own result keeps the array and re-wraps it on unpack.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from typing import Any, NamedTuple
from collections.abc import Callable

from .._core.tensor import Tensor

#: the global sequence number: nodes created later run earlier in backward
_sequence = itertools.count()

# ------------------------------------------------------------------------------------------------
# hook handles


class RemovableHandle:
    """Returned by ``register_hook`` and friends; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict):
        self._ref = weakref.ref(hooks_dict) if hooks_dict is not None else None
        self.id = next(RemovableHandle._ids)

    def remove(self):
        d = self._ref() if self._ref is not None else None
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(OrderedDict):
    """An ordered dict of hooks that can be weakly referenced by handles."""


def _add_hook(holder, attr, fn):
    d = getattr(holder, attr, None)
    if d is None:
        d = _HookDict()
        setattr(holder, attr, d)
    h = RemovableHandle(d)
    d[h.id] = fn
    return h


# ------------------------------------------------------------------------------------------------
# Node


class Node:
    """A node of the backward graph: the ``grad_fn`` of a tensor.

    Subclasses implement ``_apply(grads) -> tuple`` taking one gradient per output (None
    where none arrived) and returning one gradient per edge in ``next_functions``.
    """

    # ``_next``: tuple of (node or None, input_nr); ``_seq``: sequence_nr;
    # ``_pre``/``_post``: user hooks; ``_tpre``: tensor hooks of outputs keyed by output nr;
    # ``_retain``: weakrefs of outputs that retain their grad, keyed by output nr.
    _next = ()
    _pre = None
    _post = None
    _tpre = None
    _retain = None
    _meta = None
    _trace = None
    _seq = 0
    #: True once a pre-hook, tensor hook or retain_grad was registered (the engine's cheap test)
    _hooked = False

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self):
        return self._next

    @property
    def metadata(self) -> dict:
        m = self._meta
        if m is None:
            m = self._meta = {}
        return m

    @property
    def requires_grad(self) -> bool:
        return True

    def _sequence_nr(self) -> int:
        return self._seq

    def _set_sequence_nr(self, n):
        self._seq = n

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after the node; it may return new
        ``grad_inputs``."""
        return _add_hook(self, "_post", fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before the node; it may return new ``grad_outputs``."""
        self._hooked = True
        return _add_hook(self, "_pre", fn)

    def _register_hook_dict(self, tensor):  # torch's internal name; kept for tooling
        pass

    def __call__(self, *grads):
        """Run the node's formula directly (as torch allows): returns the input gradients."""
        res = self._apply(list(grads))
        return res[0] if len(res) == 1 else res

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    # -- for subclasses -------------------------------------------------------------------------

    def _apply(self, grads):
        raise NotImplementedError

    def _release(self):
        """Free saved values after a backward without retain_graph."""

    def _n_outputs(self) -> int:
        return 1


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: writes gradients into ``variable.grad``.

    Held weakly by its tensor (``tensor._accum``) and strongly by the nodes that use the
    leaf, so it lives as long as some graph reaches it. See NOTE [ Accumulating .grad ] in
    ``_engine.py`` for the rules.
    """

    _seq = float("inf")  # leaves are flushed as soon as they are ready (NOTE [ Engine ])

    def __init__(self, variable):
        self.variable = variable

    def _apply(self, grads):
        from ._engine import accumulate_grad

        accumulate_grad(self.variable, grads[0])
        return ()


# ------------------------------------------------------------------------------------------------
# saved-tensor hooks


class _HooksState(threading.local):
    def __init__(self):
        self.stack = []  # (pack, unpack) pairs, innermost last
        self.disabled = None  # error message while disable_saved_tensors_hooks is active


_hooks_state = _HooksState()


class saved_tensors_hooks:
    """Pack every tensor saved for backward with ``pack_hook`` and unpack it with
    ``unpack_hook`` when the backward needs it. The innermost active pair wins."""

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_state.disabled is not None:
            raise RuntimeError(_hooks_state.disabled)
        from . import _nodes

        _nodes.slow_save = True  # saving now consults the hook stack (see _nodes.save_input)
        _hooks_state.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks_state.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU when saved and back to their device on unpack."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            dev, t = packed
            return t.to(dev)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside the block, registering saved-tensor hooks raises ``RuntimeError(error_message)``."""

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
    """The innermost (pack, unpack) pair, or None."""
    s = _hooks_state.stack
    return s[-1] if s else None


# ------------------------------------------------------------------------------------------------
# gradient edges, multi-grad hooks, versions


class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: ``(node, output_nr)``."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge through which ``tensor`` receives its gradient (its AccumulateGrad for a
    leaf)."""
    from ._engine import gradient_edge

    if not tensor._rg:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients")
    node, nr = gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable) as an
    in-place write would."""
    ts = [tensor] if isinstance(tensor, Tensor) else list(tensor)
    for t in ts:
        t._bump()


def register_multi_grad_hook(tensors, fn: Callable, *, mode: str = "all"):
    """Call ``fn`` once per backward after the gradients of ``tensors`` are computed.

    ``mode="all"``: ``fn(grads)`` gets one gradient per tensor (None for those the backward did
    not reach) once all reachable ones are known. ``mode="any"``: ``fn(grad)`` with the first
    gradient computed.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    from . import _engine

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
                fn(tuple(grads))
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
    when it is first saved, so backward sees the value it had at save time."""

    def __enter__(self):
        from . import _nodes

        self.prev = _nodes.clone_on_save
        _nodes.clone_on_save = True
        _nodes.slow_save = True
        return self

    def __exit__(self, *exc):
        from . import _nodes

        _nodes.clone_on_save = self.prev
        return False


Variable = Tensor
