"""Custom differentiable functions: ``ember.autograd.Function``.

A subclass defines ``forward`` and ``backward`` as static methods, either
``forward(ctx, *args)`` or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``,
and is called through ``apply``. The ``ctx`` object *is* the backward node (as in PyTorch),
so attributes set on it in forward are there in backward, and it appears in the graph as
``<ClassName>Backward``.
"""

from __future__ import annotations

import functools
import sys

from .. import _C_functorch, _dispatch
from .._core.tensor import Tensor, wrap

__all__ = ["FunctionCtx", "BackwardCFunction", "FunctionMeta", "Function", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]
from . import _nodes
from . import anomaly_mode as _anomaly
from ._base import Node, _sequence

_state = _dispatch.state
#: ``(cls, args, kwargs) -> outputs or NotImplemented``: set by ember/func/_batch_function.py
#: (a Function applied to batched tensors under vmap)
vmap_apply = None


class FunctionCtx:
    """The methods available on ``ctx`` inside ``forward``/``setup_context``/``backward``.

    Example::

        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * grad
        >>> x = ember.tensor([3.0], requires_grad=True)
        >>> Square.apply(x).backward()
        >>> x.grad
        tensor([6.])
    """

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read them back with ``ctx.saved_tensors``."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for ``jvp``, which reads them back as
        ``ctx.saved_tensors``.

        Args:
            *tensors (Tensor or None): inputs, outputs or intermediates of ``forward``.

        Example::

            >>> class Square(Function):
            ...     @staticmethod
            ...     def forward(ctx, x):
            ...         ctx.save_for_forward(x)
            ...         return x * x
            ...     @staticmethod
            ...     def jvp(ctx, x_dot):
            ...         (x,) = ctx.saved_tensors
            ...         return 2 * x * x_dot
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError(
                    "save_for_forward expects all arguments to be tensors; you should save "
                    "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that are not differentiable (they will not require grad)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        """Whether undefined output gradients reach ``backward`` as zeros (default) or None."""
        self.materialize_grads = value

    @property
    def saved_tensors(self):
        if getattr(self, "_in_jvp", False):
            return tuple(getattr(self, "saved_for_forward", ()))
        saved = getattr(self, "_saved_list", None)
        if saved is None:
            if getattr(self, "_freed", False):
                raise RuntimeError(_nodes._FREED)
            return tuple(getattr(self, "to_save", ()))
        return tuple(None if s is None else s.unpack(self) for s in saved)

    saved_variables = saved_tensors


class BackwardCFunction(Node, FunctionCtx):
    """The backward node of one ``Function.apply`` call (also its ``ctx``): each Function
    subclass gets its own subclass of it, ``<Name>Backward``, made by ``FunctionMeta``.

    Example:
        >>> class Double(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> y = Double.apply(ember.ones(2, requires_grad=True))
        >>> isinstance(y.grad_fn, ember.autograd.function.BackwardCFunction)
        True
    """

    _function = None
    materialize_grads = True

    def _n_outputs(self):
        return len(self._out_meta)

    @property
    def _nout(self):
        return len(self._out_meta)

    def __repr__(self):
        # PyTorch makes these classes in its autograd.function module and prints them as
        # plain Python objects, module first (its built-in nodes print without one)
        return f"<torch.autograd.function.{self.name()} object at {hex(id(self))}>"

    def _apply(self, grads):
        cls = self._function
        if self.materialize_grads:
            grads = [g if g is not None else _zeros(m) for g, m in zip(grads, self._out_meta)]
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n_in = len(self._input_is_tensor)
        if len(res) != n_in:
            if len(res) > n_in and all(r is None for r in res[n_in:]):
                res = res[:n_in]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {n_in}, got {len(res)})")
        tensor_grads = []
        for i, (r, is_t) in enumerate(zip(res, self._input_is_tensor)):
            if not is_t:
                if r is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at "
                        f"position {i + 1}, but the corresponding forward input was not a "
                        "Variable")
                continue
            if r is not None and not isinstance(r, Tensor):
                raise TypeError(
                    f"function {self.name()} returned a gradient of type {type(r).__name__} "
                    f"at position {i + 1}; expected a Tensor or None")
            tensor_grads.append(r)
        return _nodes.fit_grads(self._next, tuple(tensor_grads), self._meta_in)

    def _release(self):
        saved = getattr(self, "_saved_list", None)
        if saved is not None:
            for s in saved:
                if s is not None:
                    s.release()
            self._freed = True


def _zeros(meta):
    shape, dtype, at = meta
    return wrap(_dispatch.backends_by_type[at].xp.zeros(shape, dtype))


class FunctionMeta(type):
    """The metaclass of ``Function``: gives each subclass its backward node class,
    ``<Name>Backward`` (a ``BackwardCFunction``), as ``_backward_cls``.

    Args:
        name: the new class's name.
        bases: its base classes.
        attrs: its namespace.

    Example:
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * x
        >>> Square._backward_cls.__name__
        'SquareBackward'
    """

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_function": cls, "__module__": cls.__module__})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom autograd functions (see the module docstring): subclass it with
    static ``forward`` (and optionally ``setup_context``) and ``backward`` methods, and call
    ``MyFunction.apply(...)``; never instantiate it.

    Args:
        *args: refused with a deprecation error, as in PyTorch (use ``apply``).
        **kwargs: the keyword arguments, likewise.

    Example:
        >>> class Exp(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (y,) = ctx.saved_tensors
        ...         return grad * y
        >>> x = ember.tensor([0.0, 1.0], requires_grad=True)
        >>> Exp.apply(x).sum().backward()
        >>> x.grad
        tensor([1.0000, 2.7183])
    """

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        import warnings

        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.", DeprecationWarning,
            stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` without recording and, if an input requires grad, attach this
        function's backward node to the outputs."""
        from . import _forward

        if _forward.levels.stack and _forward.any_dual(args, kwargs):
            return _forward.function_apply(cls, args, kwargs)
        if _dispatch.intercept and vmap_apply is not None:
            # NOTE [ autograd.Function under vmap ] in ember/func/_batch_function.py
            r = vmap_apply(cls, args, kwargs)
            if r is not NotImplemented:
                return r
            session = _profiling()
            if session is not None and getattr(cls, "_profiler_event", True):
                # PyTorch's profiler shows the forward as an event named after the class
                ev = session.begin(cls.__name__)
                try:
                    return cls._apply_ctx(args, kwargs)[1]
                finally:
                    session.end(ev)
        return cls._apply_ctx(args, kwargs)[1]

    @classmethod
    def _apply_ctx(cls, args, kwargs, beneath_transforms=True):
        """``apply``'s work: returns ``(ctx, outputs)``. ``forward`` runs beneath any function
        transform, as PyTorch's (NOTE [ Transform layers ] in ember/_C_functorch.py), unless
        ``beneath_transforms`` is False (vmap's generated rule runs it inside its level)."""
        bw_cls = cls._backward_cls
        if cls.backward is Function.backward and cls.vjp is not Function.vjp:
            bw_cls.backward = cls.vjp
        ctx = object.__new__(bw_cls)
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        needs = tuple(t and a._rg for t, a in zip(is_tensor, args))
        ctx.needs_input_grad = needs
        ctx._input_is_tensor = is_tensor
        recording = _state.grad_enabled and any(needs)
        custom_setup = cls.setup_context is not Function.setup_context \
            and "setup_context" in _own_attrs(cls)
        prev = _state.grad_enabled
        _state.grad_enabled = False
        try:
            if beneath_transforms and _C_functorch.transforms_active():
                with _C_functorch.below():
                    out = cls.forward(*args, **kwargs) if custom_setup else \
                        cls.forward(ctx, *args, **kwargs)
            elif custom_setup:
                out = cls.forward(*args, **kwargs)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad_enabled = prev
        if custom_setup:
            cls.setup_context(ctx, args, out)
        return ctx, _wrap_outputs(ctx, args, out, recording)


def _profiling():
    """The profiler session recording on this thread, or None (without importing the
    profiler when nothing has)."""
    recorder = sys.modules.get("ember.profiler._recorder")
    session = recorder.current_session() if recorder is not None else None
    return session if session is not None and session.active else None


def _own_attrs(cls):
    names = set()
    for k in cls.__mro__:
        if k is Function:
            break
        names.update(vars(k))
    return names


def _wrap_outputs(ctx, args, out, recording):
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dirty = getattr(ctx, "dirty_tensors", ())
    nondiff = getattr(ctx, "non_differentiable", ())
    is_id = lambda x, group: any(x is y for y in group)  # noqa: E731
    if not recording:
        # still honour mark_dirty (version bump) and non-differentiable outputs
        for t in dirty:
            t._bump()
        return out
    nxt, meta = [], []
    for a in args:
        if isinstance(a, Tensor) and a._rg:
            nxt.append(_nodes.gradient_edge(a))
            d = a._data
            meta.append((d.shape, d.dtype))
        elif isinstance(a, Tensor):
            nxt.append((None, 0))
            meta.append(None)
    ctx._next = tuple(nxt)
    ctx._meta_in = meta
    ctx._seq = next(_sequence)
    if _anomaly._enabled:
        ctx._trace = _anomaly.forward_trace()
    for t in dirty:
        if t._rg and t._grad_fn is None and t._base is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation.")
        t._bump()
    result = []
    out_meta = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            result.append(o)
            out_meta.append(((), None, None))
            continue
        if is_id(o, args) and not is_id(o, dirty):
            # an input returned as is: the output is a new tensor sharing its data
            src = o
            o = wrap(src._data)
            if src._vc is None:
                src._vc = [0]
            o._vc = src._vc
        d = o._data
        out_meta.append((d.shape, d.dtype, type(d)))
        if is_id(o, nondiff) or d.dtype.kind in "iub":
            o._rg = False
        else:
            o._grad_fn = ctx
            o._out_nr = i
            o._rg = True
        result.append(o)
    ctx._out_meta = out_meta
    to_save = getattr(ctx, "to_save", None)
    if to_save is not None:
        saved = []
        for t in to_save:
            if t is None:
                saved.append(None)
                continue
            k = next((j for j, o in enumerate(result) if o is t), None)
            if k is None:
                k = next((j for j, o in enumerate(outs) if o is t and result[j] is not t), None)
            if k is not None and result[k]._grad_fn is ctx:
                saved.append(_nodes.save_output(result[k], k))
            else:
                saved.append(_nodes.save_input(t))
        ctx._saved_list = saved
        del ctx.to_save
    return result[0] if single else tuple(result)


class InplaceFunction(Function):
    """Kept for API compatibility (a ``Function`` that records whether it runs in place);
    subclass ``Function`` instead.

    Args:
        inplace (bool): stored as ``self.inplace``.

    Example:
        >>> issubclass(ember.autograd.function.InplaceFunction, ember.autograd.Function)
        True
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Kept for API compatibility; subclass ``Function`` instead.

    Args:
        *args: as for ``Function``.
        **kwargs: the keyword arguments, likewise.

    Example:
        >>> issubclass(ember.autograd.NestedIOFunction, ember.autograd.Function)
        True
    """


# ------------------------------------------------------------------------------------------------
# once_differentiable


# NOTE [ The delayed error's graph ]: as PyTorch's ``once_differentiable``, each output of
# the wrapped backward becomes an output of one error node whose inputs are fresh leaves
# (detached copies of those outputs), not the incoming gradients: the node reaches no
# earlier part of the graph, so differentiating *with respect to* the original inputs finds
# them unused rather than running it, while ``backward()`` over everything runs it and
# raises. Its type reads as PyTorch's C++ node does (``Error``, in ``builtins``).
class _DelayedError(Node):
    def __init__(self, msg, leaves):
        self._msg = msg
        self._next = tuple(_nodes.gradient_edge(t) if t is not None else (None, 0)
                           for t in leaves)
        self._seq = next(_sequence)

    def name(self):
        return "torch::autograd::Error"

    def _apply(self, grads):
        raise RuntimeError(self._msg)


_DelayedError.__name__ = _DelayedError.__qualname__ = "Error"
_DelayedError.__module__ = "builtins"


def once_differentiable(fn):
    """Decorate ``backward`` to run it without recording; differentiating its result raises.

    Args:
        fn (callable): the ``backward(ctx, *grads)`` static method.

    Returns:
        callable: the wrapped ``backward``.

    Example:
        >>> class Double(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @ember.autograd.function.once_differentiable
        ...     def backward(ctx, grad):
        ...         return grad * 2
        >>> x = ember.ones(2, requires_grad=True)
        >>> Double.apply(x).sum().backward()
        >>> x.grad
        tensor([2., 2.])
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _state.grad_enabled
        _state.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _state.grad_enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, Tensor) and a._rg for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # NOTE [ The delayed error's graph ]
        leaves = []
        for o in outs:
            leaf = None
            if isinstance(o, Tensor):
                leaf = o.detach()
                if leaf._data.dtype.kind not in "iub":
                    leaf.requires_grad_(True)
            leaves.append(leaf)
        err = _DelayedError("trying to differentiate twice a function that was marked with "
                            "@once_differentiable", leaves)
        wrapped = []
        for i, (o, leaf) in enumerate(zip(outs, leaves)):
            if leaf is not None and leaf._rg:
                o = o.detach()
                o._grad_fn = err
                o._out_nr = i
                o._rg = True
            wrapped.append(o)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper
