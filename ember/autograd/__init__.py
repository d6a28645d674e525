"""Reverse-mode automatic differentiation: PyTorch's ``torch.autograd``.

- ``_nodes.py``: recording (the dispatcher's ``record`` hook), saved tensors, in-place/views.
- ``_engine.py``: ``backward`` / ``grad``, the engine, ``.grad`` accumulation.
- ``graph.py``: ``Node``, saved-tensor hooks, gradient edges, multi-grad hooks.
- ``function.py``: custom ``Function``.  ``gradcheck.py``: numerical checks.
- ``grad_mode.py``: no_grad & co.  ``anomaly_mode.py``: detect_anomaly.

Importing this package installs the hooks into ``ember._dispatch`` and the autograd methods
of ``Tensor`` (``backward``, ``register_hook``, ``retain_grad``, ...).
"""

from __future__ import annotations

import weakref

from .. import _dispatch
from .._core import tensor as _tensor_mod
from .._core.tensor import Tensor
from . import _nodes, anomaly_mode, graph, grad_mode
from ._engine import backward, grad
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx, NestedIOFunction, once_differentiable
from .grad_mode import (
    enable_grad, enforce_grad_layout_policy, inference_mode, is_grad_enabled,
    is_inference_mode_enabled, is_multithreading_enabled, is_view_replay_enabled, no_grad,
    set_grad_enabled, set_multithreading_enabled,
)
from ._nodes import SavedTensor  # noqa: F401  (the objects behind a node's _raw_saved_*)
from ..overrides import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401,E402
from .gradcheck import gradcheck, gradgradcheck
from .graph import _add_hook

_dispatch.record = _nodes.record
_dispatch.record_binary = _nodes.record_binary
_dispatch.record_unary = _nodes.record_unary
_dispatch.record_affine = _nodes.record_affine
_dispatch.check_inplace = _nodes.check_inplace
_dispatch.begin_inplace = _nodes.begin_inplace
_dispatch.end_inplace = _nodes.end_inplace
_dispatch.commit_inplace = _nodes.commit_inplace
_tensor_mod._view_refresh = _nodes.refresh_view

from . import function  # noqa: E402,F401
from . import gradcheck as _gradcheck_mod  # noqa: E402,F401
from . import functional  # noqa: E402  (jacobian, hessian, vjp, jvp, vhp, hvp)
from . import forward_ad  # noqa: E402,F401  (dual levels: forward-mode AD)
from .profiler import (  # noqa: E402,F401  (binds the profiler, profiler_util modules too)
    DeviceType, ProfilerActivity, ProfilerConfig, ProfilerEvent, ProfilerState, kineto_available,
)
from . import profiler_legacy  # noqa: E402,F401  (PyTorch's deprecated legacy entry point)


class _VariableMeta(type):
    """``isinstance(x, Variable)`` holds for every tensor, as it has since PyTorch 0.4."""

    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(data)`` gives a new leaf tensor sharing ``data``'s memory, with
    ``requires_grad`` as asked (tensors have been variables since PyTorch 0.4).

    Calling it returns a :class:`Tensor` (never a ``Variable``): ``data`` detached from its
    graph, so the caller's tensor keeps its own ``requires_grad`` and history while the
    result is a fresh leaf. Every tensor is an instance of ``Variable``, so old
    ``isinstance(h, Variable)`` checks still hold.

    Args:
        data (Tensor, optional): the tensor. Default: an empty float tensor.
        requires_grad (bool): whether the new leaf requires gradients. Default: False.
        volatile (bool): no effect since PyTorch 0.4 (warns when True).

    Returns:
        Tensor: a leaf view of ``data``'s memory.

    Example:
        >>> t = ember.ones(2)
        >>> x = ember.autograd.Variable(t, requires_grad=True)
        >>> type(x).__name__, x.requires_grad, t.requires_grad
        ('Tensor', True, False)
        >>> isinstance(t, ember.autograd.Variable)
        True
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from .._ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            import warnings

            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        out = data.detach()
        if requires_grad:  # (a constructor's refusal wording, as torch's Variable)
            out.requires_grad_(True, _refusal=_tensor_mod.CONSTRUCTOR_REFUSAL)
        return out


def variable(*args, **kwargs):
    """The deprecated ``torch.autograd.variable(...)``: ``Variable(...)`` by another name.

    Args:
        *args: as for :func:`Variable`.
        **kwargs: as for :func:`Variable`.

    Returns:
        The tensor.

    Example::

        >>> ember.autograd.variable(ember.ones(1), requires_grad=True).requires_grad
        True
    """
    return Variable(*args, **kwargs)


# ------------------------------------------------------------------------------------------------
# Tensor methods


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradient of ``self`` with respect to the graph's leaves, accumulating it
    into their ``.grad`` (``ember.autograd.backward((self,), ...)``).

    Args:
        gradient (Tensor, optional): the gradient of some scalar with respect to ``self``;
            needed unless ``self`` has one element. Default: None (a one).
        retain_graph (bool, optional): keep the graph's saved tensors for another backward.
            Default: ``create_graph``.
        create_graph (bool): record the backward pass itself, for higher derivatives.
            Default: False.
        inputs (sequence of Tensors, optional): accumulate into these only. Default: every
            leaf.

    Returns:
        None.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> (x ** 2).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
             inputs=inputs)


def _register_hook(self, hook):
    """Register ``hook(grad)`` to run when ``self``'s gradient is computed; it may return a
    replacement gradient.

    Args:
        hook (callable): called with the gradient; returns None or a new gradient.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> handle = x.register_hook(lambda grad: grad * 10)
        >>> (x * 3).sum().backward()
        >>> x.grad
        tensor([30., 30.])
        >>> handle.remove()
    """
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._base is not None:
        _nodes.refresh_view(self)
    fn = self._grad_fn
    if fn is None:
        return _add_hook(self, "_hooks", hook)
    fn._hooked = True
    tpre = fn._tpre
    if tpre is None:
        tpre = fn._tpre = {}
    d = tpre.get(self._out_nr)
    if d is None:
        d = tpre[self._out_nr] = graph._HookDict()
    h = graph.RemovableHandle(d)
    d[h.id] = hook
    return h


def _hook_slot(self, name):
    try:
        return getattr(self, name)
    except AttributeError:
        return None


def _register_post_accumulate_grad_hook(self, hook):
    """Register ``hook(tensor)`` to run after a leaf's ``.grad`` was accumulated (optimizers
    that step parameter by parameter during backward use it).

    Args:
        hook (callable): called with the leaf tensor itself; its return value is ignored.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> w = ember.tensor([1.0], requires_grad=True)
        >>> seen = []
        >>> handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item()))
        >>> (w * 4).sum().backward()
        >>> seen
        [4.0]
    """
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        raise RuntimeError(
            "post accumulate grad hooks cannot be registered on non-leaf tensors")
    return _add_hook(self, "_post_acc_hooks", hook)


def _retain_grad(self):
    """Keep ``.grad`` for this non-leaf tensor during backward (leaves keep theirs anyway).

    Returns:
        None.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 2
        >>> y.retain_grad()
        >>> y.sum().backward()
        >>> y.grad
        tensor([1., 1.])
    """
    if not self._rg:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self._base is not None:
        _nodes.refresh_view(self)
    fn = self._grad_fn
    if fn is None or _hook_slot(self, "_retains_grad"):
        return
    fn._hooked = True
    if fn._retain is None:
        fn._retain = {}
    fn._retain[self._out_nr] = weakref.ref(self)
    self._retains_grad = True


Tensor.backward = _backward
Tensor.register_hook = _register_hook
Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
Tensor.retain_grad = _retain_grad

__all__ = [
    "Function", "FunctionCtx", "NestedIOFunction", "Variable", "anomaly_mode", "backward",
    "detect_anomaly", "enable_grad", "grad", "grad_mode", "gradcheck", "gradgradcheck", "graph",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "once_differentiable", "set_detect_anomaly", "set_grad_enabled",
]
