"""``ember.utils._python_dispatch``: modes written in Python that see every op.

A ``TorchDispatchMode`` is a layer of ember's mode stack (NOTE [ Dispatch ] in
ember/_dispatch.py) at the top level, where tracing and logging live. While it is active
(``with MyMode():``) every op call on this thread -- functions, methods, operators, in-place
and ``out=`` forms, indexing, and the ops autograd runs in backward -- reaches its
``__torch_dispatch__(func, types, args, kwargs)`` instead of running. ``func`` is the op's
``OpOverload`` (``ember.ops.aten.add.default``); calling ``func(*args, **kwargs)`` runs the op
with this mode popped, so a mode that only observes writes::

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)
            return func(*args, **(kwargs or {}))

Composite ops reach the mode as the ops they are made of, so ``(a @ b + 1).sum()`` logs
``aten.mm.default``, ``aten.add.Tensor`` and ``aten.sum.default``. ``func`` carries torch's
overload name for the call (``aten.sum.dim_IntList`` for ``x.sum(1)``, ``aten.std.correction``,
``aten.add_.Tensor``), and indexing reaches the mode as torch's steps (``select.int``,
``slice.Tensor``, ``unsqueeze``, ``index.Tensor``): NOTE [ Overload names ] and NOTE [ Indexing
in dispatch modes ] in ember/_ops/_overloads.py. Arguments are what the op's entrance was
given after its argument normalisation: tensors and numbers positionally, the op's static
parameters as keywords (the indexing steps get torch's arguments); ``func`` runs either form.
"""

from __future__ import annotations

import contextlib

from .. import _dispatch
from .._core.tensor import Tensor
from .._ops import _overloads

__all__ = ["TorchDispatchMode", "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack",
           "_disable_current_modes", "is_in_torch_dispatch_mode", "_push_mode", "_pop_mode",
           "is_traceable_wrapper_subclass", "is_traceable_wrapper_subclass_type"]


def _tensor_types(args, kwargs):
    types = []
    stack = list(args) + list(kwargs.values())
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            if type(x) not in types:
                types.append(type(x))
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return tuple(types)


class TorchDispatchMode(_dispatch.Mode):
    """Base class of a mode that intercepts every op: override ``__torch_dispatch__``.

    Use it as a context manager; modes nest, the innermost handling a call first, and a mode
    is popped while its own ``__torch_dispatch__`` runs.

    Example::

        >>> class Count(TorchDispatchMode):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.names = []
        ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ...         self.names.append(func.overloadpacket.__name__)
        ...         return func(*args, **(kwargs or {}))
        >>> x = ember.ones(2)
        >>> with Count() as c:
        ...     _ = x + 1
        >>> c.names
        ['add']
    """

    level = 0
    #: whether ``func`` carries torch's overload names (``aten.sum.dim_IntList`` for
    #: ``x.sum(1)``; NOTE [ Overload names ] in ember/_ops/_overloads.py). None: yes for
    #: modes defined outside ember, no for ember's own (ONNX export, ``export``, the flop
    #: counter), whose tables use ember's op names.
    _torch_overload_names = None

    def __init__(self, _dispatch_key=None):
        self._entered = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        """Handle one op call; the default runs it unchanged."""
        return func(*args, **(kwargs or {}))

    def dispatch(self, handle, args, kwargs):
        if _shows_torch_names(type(self)):
            if handle.__name__ in _overloads.SPLIT:
                # this mode sees the ops torch runs for the call (indexing's steps, NOTE [
                # Indexing in dispatch modes ] in ember/_ops/_overloads.py): each goes
                # through it again
                saved = _dispatch.state.modes
                _dispatch.state.modes = saved + (self,)
                try:
                    r = _overloads.steps(handle, args, kwargs)
                finally:
                    _dispatch.state.modes = saved
                if r is not NotImplemented:
                    return r
            handle = _overloads.torch_handle(handle, args, kwargs)
        return self.__torch_dispatch__(handle, _tensor_types(args, kwargs), args, kwargs)

    def __enter__(self):
        _dispatch.push_mode(self)
        self._entered.append(True)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._entered.pop()
        _dispatch.pop_mode(self)
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        """A new instance, to be entered with ``with``."""
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False


#: mode class -> whether its modes see torch's overload names
_names_by_class: dict = {}


def _shows_torch_names(cls) -> bool:
    shows = _names_by_class.get(cls)
    if shows is None:
        shows = cls._torch_overload_names
        if shows is None:
            # ember's own modes (named torch's under the alias: NOTE [ Class names under the
            # alias ] in ember/compat/_names.py)
            shows = not (cls.__module__ or "").startswith(("ember.", "torch."))
        _names_by_class[cls] = shows
    return shows


def _user_modes():
    return [m for m in _dispatch.state.modes if isinstance(m, TorchDispatchMode)]


def _get_current_dispatch_mode():
    """The innermost active dispatch mode of this thread, or None."""
    modes = _user_modes()
    return modes[-1] if modes else None


def _get_current_dispatch_mode_stack():
    """This thread's active dispatch modes, outermost first."""
    return _user_modes()


def is_in_torch_dispatch_mode(include_infra_modes=True) -> bool:
    """True while some dispatch mode is active on this thread."""
    return bool(_user_modes())


def _push_mode(mode):
    _dispatch.push_mode(mode)


def _pop_mode(k=None):
    mode = _get_current_dispatch_mode()
    if mode is None:
        raise RuntimeError("_pop_mode: no dispatch mode is active")
    _dispatch.pop_mode(mode)
    return mode


@contextlib.contextmanager
def _disable_current_modes():
    """Pop every dispatch mode of this thread for the duration of the block."""
    saved = _dispatch.state.modes
    _dispatch.state.modes = tuple(m for m in saved if not isinstance(m, TorchDispatchMode))
    try:
        yield _user_modes_of(saved)
    finally:
        _dispatch.state.modes = saved


def _user_modes_of(modes):
    return [m for m in modes if isinstance(m, TorchDispatchMode)]


def is_traceable_wrapper_subclass_type(t) -> bool:
    """Whether the class ``t`` is a tensor subclass that says how to take its instances
    apart and rebuild them (``__tensor_flatten__`` and ``__tensor_unflatten__``), as
    tracing tools need of wrapper subclasses.

    Args:
        t (type): a class.

    Returns:
        bool: True for such a subclass of Tensor (not Tensor itself).

    Example::

        >>> is_traceable_wrapper_subclass_type(ember.Tensor)
        False
    """
    return (isinstance(t, type) and issubclass(t, Tensor) and t is not Tensor
            and hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__"))


def is_traceable_wrapper_subclass(t) -> bool:
    """Whether ``t`` is an instance of a traceable wrapper subclass (see
    :func:`is_traceable_wrapper_subclass_type`); tensordict asks it before taking a tensor
    apart.

    Args:
        t: any object.

    Returns:
        bool: True for an instance of such a subclass.

    Example::

        >>> is_traceable_wrapper_subclass(ember.ones(2))
        False
    """
    return isinstance(t, Tensor) and is_traceable_wrapper_subclass_type(type(t))
