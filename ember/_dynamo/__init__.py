"""``ember._dynamo``: the graph-capture namespace programs configure and decorate with.

ember has no bytecode compiler: ``ember.compile`` runs eagerly (NOTE [ Eager compile ] in
eval_frame.py), so the decorators here (``disable``, ``allow_in_graph``, ...) return the
function to run as it is, the shape hints (``mark_dynamic``, ...) check their arguments and
change nothing, and ``is_compiling()`` is always False. ``config`` keeps the settings
programs tune (NOTE [ Compiler config ]). ``explain`` runs a function once and reports the
graphs and graph breaks a compiler would capture (NOTE [ Explain by recording ] in
_explain.py).

Example::

    >>> ember._dynamo.config.suppress_errors = True
    >>> ember._dynamo.reset()
    >>> ember._dynamo.is_compiling()
    False
    >>> ember._dynamo.config.suppress_errors = False
"""

from __future__ import annotations

from . import config, exc  # noqa: F401
from .eval_frame import OptimizedModule, compile, list_backends  # noqa: F401
from ._explain import explain  # noqa: F401

__all__ = [
    "OptimizedModule", "allow_in_graph", "assume_constant_result", "config", "disable",
    "explain", "graph_break", "is_compiling", "list_backends", "mark_dynamic", "mark_static",
    "mark_static_address", "maybe_mark_dynamic", "optimize", "reset", "run",
]


def reset() -> None:
    """Forget every compiled artefact (ember keeps none: compilation is eager).

    Returns:
        None

    Example::

        >>> ember._dynamo.reset()
    """


def is_compiling() -> bool:
    """Whether the caller is being traced for compilation: always False in ember.

    Returns:
        False

    Example::

        >>> ember._dynamo.is_compiling()
        False
    """
    return False


def disable(fn=None, recursive: bool = True, *, reason=None, wrapping: bool = True):
    """Keep ``fn`` out of compilation: it runs eagerly, as everything does in ember.

    Args:
        fn: the function or module; None to get a decorator.
        recursive: also keep the functions ``fn`` calls out (always so in ember).
        reason: why, for logs.
        wrapping: accepted for PyTorch's signature.

    Returns:
        ``fn`` itself, or a decorator when ``fn`` is None.

    Example::

        >>> @ember._dynamo.disable
        ... def f(x):
        ...     return x + 1
        >>> f(1)
        2
    """
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason, wrapping=wrapping)
    if not callable(fn):
        raise AssertionError(f"disable expects a callable, but got {type(fn)}")
    return fn


def allow_in_graph(fn):
    """Mark ``fn`` to be put in captured graphs whole; returns ``fn`` unchanged.

    Args:
        fn: a function (or a list of functions).

    Returns:
        ``fn``

    Example::

        >>> f = ember._dynamo.allow_in_graph(abs)
        >>> f is abs
        True
    """
    return fn


def assume_constant_result(fn):
    """Mark ``fn`` as returning a constant graph capture may fold; returns ``fn``.

    Args:
        fn: a function.

    Returns:
        ``fn``

    Example::

        >>> ember._dynamo.assume_constant_result(len) is len
        True
    """
    return fn


def graph_break() -> None:
    """Force a break in the captured graph here (no graph is captured in ember).

    Returns:
        None

    Example::

        >>> ember._dynamo.graph_break()
    """


def _check_dims(t, index, fn: str):
    from .._core.tensor import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, but got {type(t).__name__}")
    dims = index if isinstance(index, (list, tuple)) else [index]
    for d in dims:
        if not isinstance(d, int) or not -t.dim() <= d < max(t.dim(), 1):
            raise IndexError(f"{fn}: dimension {d!r} is out of range for a tensor with "
                             f"{t.dim()} dimensions")


def mark_dynamic(t, index, *, min=None, max=None, **kwargs) -> None:  # noqa: A002
    """Hint that dimension(s) ``index`` of ``t`` vary between calls (a hint for graph
    capture; nothing to do when running eagerly).

    Args:
        t: a tensor.
        index: a dimension or a list of dimensions.
        min, max: the range the size takes.
        **kwargs: PyTorch's further keywords, accepted.

    Returns:
        None

    Raises:
        IndexError: a dimension out of range.

    Example::

        >>> ember._dynamo.mark_dynamic(ember.ones(4, 3), 0)
    """
    _check_dims(t, index, "mark_dynamic")


def maybe_mark_dynamic(t, index) -> None:
    """Like ``mark_dynamic``, without insisting (a hint; nothing to do eagerly).

    Args:
        t: a tensor.
        index: a dimension or a list of dimensions.

    Returns:
        None

    Example::

        >>> ember._dynamo.maybe_mark_dynamic(ember.ones(4), 0)
    """
    _check_dims(t, index, "maybe_mark_dynamic")


def mark_static(t, index=None) -> None:
    """Hint that dimension(s) ``index`` of ``t`` never change (nothing to do eagerly).

    Args:
        t: a tensor (or a module).
        index: a dimension, a list of them, or None for all.

    Returns:
        None

    Example::

        >>> ember._dynamo.mark_static(ember.ones(4), 0)
    """
    from .._core.tensor import Tensor

    if isinstance(t, Tensor) and index is not None:
        _check_dims(t, index, "mark_static")


def mark_static_address(t, guard: bool = True) -> None:
    """Hint that ``t``'s memory address never changes (for CUDA graphs; nothing eagerly).

    Args:
        t: a tensor.
        guard: accepted for PyTorch's signature.

    Returns:
        None

    Example::

        >>> ember._dynamo.mark_static_address(ember.ones(2))
    """
    from .._core.tensor import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")


def optimize(backend="inductor", *, nopython: bool = False, **kwargs):
    """Old spelling of ``ember.compile``: ``optimize(backend)(fn)`` compiles ``fn``.

    Args:
        backend: as for ``ember.compile``.
        nopython: as ``fullgraph``.
        **kwargs: as for ``ember.compile``.

    Returns:
        A decorator.

    Example::

        >>> f = ember._dynamo.optimize("eager")(lambda x: x + 1)
        >>> f(1)
        2
    """
    kwargs.pop("guard_export_fn", None)
    kwargs.pop("guard_fail_fn", None)
    return lambda fn: compile(fn, backend=backend, fullgraph=nopython, **kwargs)


def run(fn=None):
    """Run ``fn`` without compiling anything new (everything runs eagerly in ember).

    Args:
        fn: a function; None to get a decorator.

    Returns:
        ``fn``

    Example::

        >>> ember._dynamo.run(abs)(-1)
        1
    """
    return (lambda f: f) if fn is None else fn
