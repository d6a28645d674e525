"""Decorators for DataPipes: registration by name, determinism markers and (accepted)
type-validation switches."""

from __future__ import annotations

import functools

from .datapipe import IterDataPipe, MapDataPipe

__all__ = ["functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "argument_validation", "runtime_validation", "runtime_validation_disabled"]

_determinism = False


class functional_datapipe:
    """Class decorator: make a DataPipe class callable as a method named ``name`` on every
    pipe of its kind.

    Args:
        name: the method name, e.g. ``"double"``.
        enable_df_api_tracing: accepted for compatibility.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> @functional_datapipe("twice_example")
        ... class Twice(IterDataPipe):
        ...     def __init__(self, dp):
        ...         self.dp = dp
        ...     def __iter__(self):
        ...         for x in self.dp:
        ...             yield 2 * x
        >>> list(IterableWrapper([1, 2]).twice_example())
        [2, 4]
    """

    def __init__(self, name: str, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe or "
                            "MapDataPipe")
        return cls


class guaranteed_datapipes_determinism:
    """Context manager: refuse to build DataPipes marked ``non_deterministic`` inside it.

    Example:
        >>> with guaranteed_datapipes_determinism():
        ...     pass
    """

    def __enter__(self):
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __exit__(self, *exc):
        global _determinism
        _determinism = self.prev
        return False


def non_deterministic(arg):
    """Class decorator marking a DataPipe whose output order is not reproducible; building
    one under ``guaranteed_datapipes_determinism`` raises TypeError.

    Args:
        arg: the DataPipe class, or a function of the constructor arguments saying whether
            an instance is non-deterministic (then it returns the class decorator).

    Returns:
        The class (or a decorator).

    Example:
        >>> @non_deterministic
        ... class Racy(IterDataPipe):
        ...     def __iter__(self):
        ...         yield 1
        >>> list(Racy())
        [1]
    """
    if isinstance(arg, type):
        return _guard(arg, lambda *a, **k: True)
    if callable(arg):
        return lambda cls: _guard(cls, arg)
    raise TypeError(f"{arg} can not be decorated by non_deterministic")


def _guard(cls, is_non_deterministic):
    original = cls.__new__

    def __new__(klass, *args, **kwargs):
        if _determinism and is_non_deterministic(*args, **kwargs):
            raise TypeError(f"{cls.__name__} is non-deterministic, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism "
                            "for this DataPipe if that is acceptable for your application")
        if original is object.__new__:
            return original(klass)
        return original(klass, *args, **kwargs)

    cls.__new__ = __new__
    return cls


def argument_validation(f):
    """Decorator kept for PyTorch compatibility: returns ``f`` unchanged (ember does not
    check DataPipe type hints).

    Args:
        f: a function.

    Returns:
        ``f``.

    Example:
        >>> argument_validation(len)([1])
        1
    """
    return f


def runtime_validation(f):
    """Decorator for ``__iter__`` kept for PyTorch compatibility: ``f`` unchanged.

    Args:
        f: an ``__iter__`` method.

    Returns:
        A wrapper that behaves as ``f``.

    Example:
        >>> list(runtime_validation(lambda self: iter([1]))(None))
        [1]
    """
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


class runtime_validation_disabled:
    """Context manager kept for PyTorch compatibility (ember validates nothing at run time).

    Example:
        >>> with runtime_validation_disabled():
        ...     pass
    """

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
