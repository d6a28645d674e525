"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""

from __future__ import annotations

import functools
import inspect
import threading
import warnings

from .. import _dispatch
from .._core.tensor import Tensor

_state = _dispatch.state


class _DecoratorContextManager:
    """A context manager usable as a decorator (of functions and generator functions)."""

    def __call__(self, func):
        if inspect.isclass(func):
            # PyTorch still allows it (deprecated): constructing the class runs in the mode
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. "
                "You should only decorate functions or methods. To preserve the current "
                "behavior of class decoration, you can directly decorate the `__init__` "
                "method and nothing else.", FutureWarning, stacklevel=2)
            wrapped = self(lambda *args, **kwargs: func(*args, **kwargs))
            return lambda *args, **kwargs: wrapped(*args, **kwargs)
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen(*args, **kwargs):
                # the mode holds while the generator's body runs, not while its caller
                # handles a yielded item; close() and throw() reach the body in the mode too
                g = func(*args, **kwargs)
                try:
                    with self.clone():
                        resp = g.send(None)
                    while True:
                        try:
                            req = yield resp
                        except GeneratorExit:
                            with self.clone():
                                g.close()
                            raise
                        except BaseException as exc:
                            with self.clone():
                                resp = g.throw(exc)
                        else:
                            with self.clone():
                                resp = g.send(req)
                except StopIteration as e:
                    return e.value

            return gen

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A decorator context manager without arguments, so also usable bare: ``@no_grad``
    as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording inside the block or decorated function.

    Usable as a context manager, as a decorator (``@no_grad()`` or bare ``@no_grad``), also
    of generator functions (the mode holds while the generator body runs).

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     (x * 2).requires_grad
        False
    """

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = _state.grad_enabled
        _state.grad_enabled = False

    def __exit__(self, *exc):
        _state.grad_enabled = self.prev
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside the block or decorated function, even within
    ``no_grad``. Usable bare (``@enable_grad``) or called (``@enable_grad()``).

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad(), ember.enable_grad():
        ...     (x * 2).requires_grad
        True
    """

    def __init__(self):
        self.prev = None

    def __enter__(self):
        self.prev = _state.grad_enabled
        _state.grad_enabled = True

    def __exit__(self, *exc):
        _state.grad_enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Turn gradient recording on or off: at once when called, and back on exit when used as a
    context manager (or for the call when used as a decorator).

    Args:
        mode (bool): True to record operations for autograd, False not to.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.set_grad_enabled(False):
        ...     y = x * 2
        >>> y.requires_grad, ember.is_grad_enabled()
        (False, True)
    """

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be "
                            f"bool, not {type(mode).__name__}")
        self.prev = _state.grad_enabled
        self.mode = mode
        _state.grad_enabled = mode

    def __call__(self, func):
        _state.grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        _state.grad_enabled = self.mode

    def __exit__(self, *exc):
        _state.grad_enabled = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, and the tensors made inside are inference tensors: they can never
    join an autograd graph later, which lets ember skip version counting for them.

    Usable as a context manager, a decorator, or a bare decorator (``@inference_mode``).

    Args:
        mode (bool): False makes it do nothing (to switch it off with a flag). Default: True.

    Example:
        >>> with ember.inference_mode():
        ...     y = ember.ones(2) * 2
        >>> y.requires_grad, y.is_inference()
        (False, True)
    """

    def __init__(self, mode: bool = True):
        self.mode = mode
        self.prev = None

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        # used as a bare decorator: @inference_mode
        return cls()(mode)

    def __enter__(self):
        self.prev = (_state.grad_enabled, _state.inference_mode)
        if self.mode:
            _state.grad_enabled = False
            _state.inference_mode = True
            self._marking = _InferenceMarking()
            _marking_on(self._marking)
        else:
            _state.inference_mode = False

    def __exit__(self, *exc):
        _state.grad_enabled, _state.inference_mode = self.prev
        if self.mode:
            _marking_off(self._marking)
        return False

    def clone(self):
        return type(self)(self.mode)


# NOTE [ Inference tensors ]
# Tensors made while inference mode is on are inference tensors: ``is_inference()`` is True,
# an in-place write to one outside inference mode raises, and saving one for backward raises.
# Marking them is a layer of the mode stack (NOTE [ Dispatch ] in ember/_dispatch.py): while
# an inference_mode block is active on a thread, ``_InferenceMarking`` sees every op call
# there and marks the results that are new tensors -- not an input handed back (an in-place
# op's self) and not a view of a normal tensor, which stays normal as in PyTorch. Outside
# such blocks nothing is pushed and the hot path runs exactly as before. Inference tensors
# never get a version counter, so the first-bump branch of ``Tensor._bump`` is where an
# in-place write is caught (after the write; tensors that got a counter through a view are
# not caught -- a known gap).

_active = 0
_lock = threading.Lock()


class _InferenceMarking(_dispatch.Mode):
    level = 50

    def dispatch(self, handle, args, kwargs):
        r = handle(*args, **kwargs)
        if _state.inference_mode:
            if type(r) is tuple or type(r) is list:
                for t in r:
                    _mark(t, args)
            else:
                _mark(r, args)
        return r


def _mark(t, args):
    if not isinstance(t, Tensor):
        return
    for a in args:
        if a is t:
            return
    base = t._base
    if base is not None and not getattr(base, "_inference", False):
        return
    t._inference = True


def _marking_on(mode):
    global _active
    from .._core import tensor as _tensor_mod
    from . import _nodes

    _dispatch.push_mode(mode)
    with _lock:
        _active += 1
        if _active == 1:
            _nodes.inference_seen = True
            _nodes.slow_save = True
            _tensor_mod._inference_check = _inference_bump_check


def _marking_off(mode):
    global _active
    _dispatch.pop_mode(mode)
    with _lock:
        _active -= 1


def _inference_bump_check(t):
    """Called on a tensor's first version bump: True (keep no counter) for inference
    tensors, raising outside inference mode."""
    if getattr(t, "_inference", False):
        from ._nodes import check_inference_inplace

        check_inference_inplace(t)
        return True
    return False


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for autograd in this thread (grad mode).

    Returns:
        bool: False inside ``no_grad()``, ``inference_mode()`` or ``set_grad_enabled(False)``.

    Example:
        >>> with ember.no_grad():
        ...     inside = ember.is_grad_enabled()
        >>> inside, ember.is_grad_enabled()
        (False, True)
    """
    return _state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``ember.inference_mode()``.

    Returns:
        bool: True inside the block.

    Example:
        >>> with ember.inference_mode():
        ...     print(ember.is_inference_mode_enabled())
        True
    """
    return _state.inference_mode


class _FlagState(threading.local):
    multithreading = True
    grad_layout_policy = True


_flags = _FlagState()


class set_multithreading_enabled(_DecoratorContextManager):
    """Allow or forbid the backward pass to run device threads (thread-local; a context
    manager or a plain call).

    ember's engine runs every backward pass on the calling thread, so the flag only records
    the choice, which :func:`is_multithreading_enabled` reports.

    Args:
        mode: True to allow.

    Example::

        >>> with ember.autograd.set_multithreading_enabled(False):
        ...     ember.autograd.is_multithreading_enabled()
        False
    """

    def __init__(self, mode: bool):
        self.prev = _flags.multithreading
        self.mode = bool(mode)
        _flags.multithreading = self.mode

    def __call__(self, func):
        _flags.multithreading = self.prev
        return super().__call__(func)

    def __enter__(self):
        _flags.multithreading = self.mode

    def __exit__(self, *exc):
        _flags.multithreading = self.prev
        return False

    def clone(self):
        return set_multithreading_enabled(self.mode)


def is_multithreading_enabled() -> bool:
    """Whether ``set_multithreading_enabled`` allows backward on device threads (the default).

    Returns:
        bool.

    Example::

        >>> ember.autograd.is_multithreading_enabled()
        True
    """
    return _flags.multithreading


class enforce_grad_layout_policy(_DecoratorContextManager):
    """Whether accumulated gradients must follow their parameter's memory layout
    (thread-local; a context manager or a plain call).

    ember accumulates every ``.grad`` as a new dense tensor in its parameter's shape, so the
    contract holds either way; the flag is recorded for code that sets it.

    Args:
        enable: True (the default) to enforce.

    Example::

        >>> with ember.autograd.enforce_grad_layout_policy(False):
        ...     pass
    """

    def __init__(self, enable: bool = True):
        self.prev = _flags.grad_layout_policy
        self.mode = bool(enable)
        _flags.grad_layout_policy = self.mode

    def __call__(self, func):
        _flags.grad_layout_policy = self.prev
        return super().__call__(func)

    def __enter__(self):
        _flags.grad_layout_policy = self.mode

    def __exit__(self, *exc):
        _flags.grad_layout_policy = self.prev
        return False

    def clone(self):
        return enforce_grad_layout_policy(self.mode)


def is_view_replay_enabled() -> bool:
    """Whether views of tensors are rebuilt by replaying the view op: never in ember, whose
    views share their base's array (as torch's default).

    Returns:
        False.

    Example::

        >>> ember.autograd.is_view_replay_enabled()
        False
    """
    return False
