"""``ember.overrides``: the ``__torch_function__`` protocol's public helpers (PyTorch's
``torch.overrides``), for Tensor subclasses, tensor-like classes and function modes.

See NOTE [ __torch_function__ ] in ember/_overrides.py for how calls reach them.

Example::

    >>> class Logged(ember.Tensor):
    ...     calls = []
    ...     @classmethod
    ...     def __torch_function__(cls, func, types, args=(), kwargs=None):
    ...         cls.calls.append(func.__name__)
    ...         return super().__torch_function__(func, types, args, kwargs)
    >>> x = ember.ones(2).as_subclass(Logged)
    >>> type(x + 1).__name__, Logged.calls
    ('Logged', ['__add__'])
"""

from __future__ import annotations

import functools

from . import _overrides
from ._core.tensor import Tensor
from ._overrides import (  # noqa: F401  (re-exported)
    DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl,
)

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "is_tensor_like", "is_tensor_method_or_property",
           "get_overridable_functions", "get_ignored_functions", "get_testing_overrides",
           "resolve_name", "TorchFunctionMode", "wrap_torch_function"]


def has_torch_function(relevant_args) -> bool:
    """True when some object in ``relevant_args`` overrides ember functions (a Tensor
    subclass taking part in the protocol, or a tensor-like), or a function mode is active.

    Args:
        relevant_args: an iterable of the arguments to look at.

    Returns:
        bool.

    Example::

        >>> class Logged(ember.Tensor):
        ...     pass
        >>> x = ember.ones(1)
        >>> ember.overrides.has_torch_function((x,)), ember.overrides.has_torch_function(
        ...     (x.as_subclass(Logged),))
        (False, True)
    """
    if _overrides.state.all_disabled:
        return False
    if _overrides.state.modes:
        return True
    if _overrides.state.subclasses_disabled:
        return False
    return bool(_overrides.overloaded_args(tuple(relevant_args)))


def has_torch_function_unary(arg) -> bool:
    """``has_torch_function((arg,))`` for one argument.

    Args:
        arg: the argument to look at.

    Returns:
        bool.

    Example::

        >>> has_torch_function_unary(ember.ones(1))
        False
    """
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)`` with the arguments spread.

    Args:
        *args: the arguments to look at.

    Returns:
        bool.

    Example::

        >>> has_torch_function_variadic(ember.ones(1), 2)
        False
    """
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Hand a call of ``public_api`` to the active mode and the overriding arguments among
    ``relevant_args``; for functions of your own that should be overridable like ember's.

    Args:
        public_api: the function being called (passed to ``__torch_function__`` as ``func``).
        relevant_args: the arguments that may override it.
        *args: the call's arguments.
        **kwargs: the keyword arguments, likewise.

    Returns:
        The first result that is not ``NotImplemented``.

    Raises:
        TypeError: when every override returned ``NotImplemented``.

    Example::

        >>> def double(x):
        ...     if has_torch_function((x,)):
        ...         return handle_torch_function(double, (x,), x)
        ...     return x * 2
    """
    r = _overrides.handle(public_api, args, kwargs, relevant=tuple(relevant_args))
    if r is _overrides.NOT_HANDLED:
        # a mode declined and no argument overrides: run the function itself, modes off
        with DisableTorchFunction():
            return public_api(*args, **kwargs)
    return r


def wrap_torch_function(dispatcher):
    """Decorator making a function overridable like ember's own.

    Args:
        dispatcher: ``dispatcher(*args, **kwargs)`` returns the arguments that may override
            the function.

    Returns:
        The decorator.

    Example::

        >>> @wrap_torch_function(lambda x: (x,))
        ... def twice(x):
        ...     return x * 2
        >>> twice(ember.ones(1)).tolist()
        [2.0]
    """

    def deco(f):
        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return f(*args, **kwargs)

        return wrapped

    return deco


def is_tensor_like(inp) -> bool:
    """True for Tensors and for objects whose type defines ``__torch_function__``.

    Args:
        inp: any object.

    Returns:
        bool.

    Example::

        >>> is_tensor_like(ember.ones(1)), is_tensor_like([1.0])
        (True, False)
    """
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    """True when ``func`` is a ``Tensor`` method or property (``func`` as
    ``__torch_function__`` receives it for method calls).

    Args:
        func: a function, such as the ``func`` a ``__torch_function__`` override receives.

    Returns:
        bool: whether ``func`` is one of ``Tensor``'s methods or a property's getter/setter.

    Example::

        >>> is_tensor_method_or_property(ember.Tensor.add)
        True
        >>> is_tensor_method_or_property(ember.zeros)
        False
    """
    for v in vars(Tensor).values():
        if v is func or (isinstance(v, property) and func in (v.fget, v.fset)):
            return True
    return False


def _public_functions():
    import ember
    from ember.nn import functional as F

    from ._ops._registry import functions

    table = {ember: [], Tensor: [], F: []}
    seen = set()
    for f in functions.values():
        if id(f) not in seen:
            seen.add(id(f))
            table[ember].append(f)
    for v in vars(Tensor).values():
        if callable(v) and getattr(v, "_torch_function_wrapper", False):
            table[Tensor].append(v)
    for name in dir(F):
        v = getattr(F, name)
        if callable(v) and not name.startswith("_") and not isinstance(v, type):
            table[F].append(v)
    return table


def get_overridable_functions():
    """The functions ``__torch_function__`` can override, by namespace.

    Returns:
        ``{namespace: [functions]}`` for ``ember``, ``ember.Tensor`` and
        ``ember.nn.functional``.

    Example::

        >>> ember.add in get_overridable_functions()[ember]
        True
    """
    return _public_functions()


def get_ignored_functions():
    """The public functions that do not consult ``__torch_function__`` (empty: all do).

    Returns:
        set: the functions; empty in ember.

    Example::

        >>> get_ignored_functions()
        set()
    """
    return set()


def get_testing_overrides():
    """Dummy implementations of every overridable function, for testing an override's
    coverage.

    Returns:
        ``{function: dummy}``, each dummy with the function's signature, returning -1.

    Example::

        >>> get_testing_overrides()[ember.add](ember.ones(1), 1)
        -1
    """
    import inspect

    out = {}
    for funcs in _public_functions().values():
        for f in funcs:
            try:
                sig = inspect.signature(f)
            except (TypeError, ValueError):
                sig = None

            def dummy(*args, **kwargs):
                return -1

            if sig is not None:
                dummy.__signature__ = sig
            out[f] = dummy
    return out


def resolve_name(f):
    """The dotted public name of an overridable function.

    Args:
        f: a function.

    Returns:
        ``"ember.add"``, ``"ember.Tensor.sum"``, ...; None for other functions.

    Example::

        >>> resolve_name(ember.add)
        'ember.add'
    """
    for ns, funcs in _public_functions().items():
        if f in funcs:
            prefix = "ember.Tensor" if ns is Tensor else ns.__name__
            return f"{prefix}.{f.__name__}"
    return None


class TorchFunctionMode:
    """A mode that sees every public API call on this thread while active: override
    ``__torch_function__(self, func, types, args=(), kwargs=None)``.

    Inside its own ``__torch_function__`` the mode is inactive, so calling ``func`` runs the
    function (through any outer mode). Modes nest; the innermost sees a call first.

    Example::

        >>> class Names(TorchFunctionMode):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.names = []
        ...     def __torch_function__(self, func, types, args=(), kwargs=None):
        ...         self.names.append(func.__name__)
        ...         return func(*args, **(kwargs or {}))
        >>> x = ember.ones(1)
        >>> with Names() as m:
        ...     _ = ember.add(x, 1)
        >>> m.names
        ['add']
    """

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} must define __torch_function__")

    def __enter__(self):
        _overrides.push_mode(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        _overrides.pop_mode(self)
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def _get_current_function_mode():
    """The innermost active function mode of this thread, or None."""
    modes = _overrides.state.modes
    return modes[-1] if modes else None


def _get_current_function_mode_stack():
    """This thread's active function modes, outermost first."""
    return list(_overrides.state.modes)
