"""``ember.compiler``: the public face of compilation (``disable``, ``is_compiling``, ...).

Compilation in ember runs eagerly (NOTE [ Eager compile ] in ember/_dynamo/eval_frame.py):
the decorators return their function to run as it is and ``is_compiling()`` is False.

Example::

    >>> @ember.compiler.disable
    ... def step(x):
    ...     return x * 2
    >>> step(3), ember.compiler.is_compiling()
    (6, False)
"""

from __future__ import annotations

import contextlib

from .._dynamo import allow_in_graph, assume_constant_result, disable, list_backends, reset
from .._dynamo import config  # noqa: F401
from .._dynamo.eval_frame import compile  # noqa: F401

__all__ = [
    "allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
    "disable", "get_default_backend", "is_compiling", "is_dynamo_compiling", "is_exporting",
    "list_backends", "nested_compile_region", "reset", "set_stance", "substitute_in_graph",
]

_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
            "eager_then_compile", "aot_eager_then_compile")
_stance = {"stance": "default"}


def is_compiling() -> bool:
    """Whether the caller is being traced for compilation or export: always False in ember.

    Returns:
        False

    Example::

        >>> ember.compiler.is_compiling()
        False
    """
    return False


def is_dynamo_compiling() -> bool:
    """Whether the caller is being traced by graph capture: always False in ember.

    Returns:
        False

    Example::

        >>> ember.compiler.is_dynamo_compiling()
        False
    """
    return False


def is_exporting() -> bool:
    """Whether the caller is being traced for export: always False in ember.

    Returns:
        False

    Example::

        >>> ember.compiler.is_exporting()
        False
    """
    return False


def get_default_backend() -> str:
    """The backend ``ember.compile`` uses when none is named: "inductor" (run eagerly).

    Returns:
        str

    Example::

        >>> ember.compiler.get_default_backend()
        'inductor'
    """
    return "inductor"


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a training or inference step for CUDA graphs (ember records none).

    Returns:
        None

    Example::

        >>> ember.compiler.cudagraph_mark_step_begin()
    """


class set_stance(contextlib.ContextDecorator):
    """Set how compiled functions behave ("default", "force_eager", ...), for good, for a
    block, or for a decorated function. Everything runs eagerly in ember; the stance is
    checked and kept.

    Args:
        stance: "default", "force_eager", "eager_on_recompile", "fail_on_recompile",
            "eager_then_compile" or "aot_eager_then_compile".
        skip_guard_eval_unsafe: accepted for PyTorch's signature.
        force_backend: accepted for PyTorch's signature.

    Raises:
        RuntimeError: an unknown stance.

    Example::

        >>> with ember.compiler.set_stance("force_eager"):
        ...     pass
    """

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend=None):
        if stance not in _STANCES:
            raise RuntimeError(f"invalid torch.compile stance {stance!r}; expected one of "
                               f"{', '.join(_STANCES)}")
        self._prev = _stance["stance"]
        self.stance = stance
        _stance["stance"] = stance

    def __enter__(self):
        _stance["stance"] = self.stance
        return self

    def __exit__(self, *exc):
        _stance["stance"] = self._prev
        return False


def substitute_in_graph(original_fn, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False):
    """Register a traceable stand-in for ``original_fn`` inside captured graphs; returns a
    decorator that gives back the stand-in (graph capture, when it comes, will use it).

    Args:
        original_fn: the function to stand in for.
        can_constant_fold_through: accepted for PyTorch's signature.
        skip_signature_check: skip checking that the signatures match.

    Returns:
        A decorator.

    Example::

        >>> @ember.compiler.substitute_in_graph(len)
        ... def my_len(obj):
        ...     return len(obj)
        >>> my_len([1, 2])
        2
    """
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {type(original_fn)}")
    return lambda fn: fn


def nested_compile_region(fn=None, *, options=None, max_reuse_entries: int = 8,
                          reuse_hash_fn=None):
    """Mark ``fn`` as a region compiled once and reused (it runs eagerly in ember).

    Args:
        fn: the function; None to get a decorator.
        options, max_reuse_entries, reuse_hash_fn: accepted for PyTorch's signature.

    Returns:
        ``fn``, or a decorator when ``fn`` is None.

    Example::

        >>> ember.compiler.nested_compile_region(abs)(-2)
        2
    """
    return (lambda f: f) if fn is None else fn
