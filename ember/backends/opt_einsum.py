"""``ember.backends.opt_einsum``: the contraction-order settings of ``einsum``.

PyTorch asks the ``opt_einsum`` package for the order in which ``einsum`` contracts three or
more operands. ``is_available()`` says whether that package is installed; ``enabled``
(True when it is) and ``strategy`` ("auto" when it is, else None) are module settings. See
NOTE [ Backend settings ] in ember/backends/_flags.py.

Example::

    >>> isinstance(ember.backends.opt_einsum.is_available(), bool)
    True
"""

from __future__ import annotations

import contextlib
import functools
import sys

from ._flags import settings_module, value_setting

__all__ = ["flags", "get_opt_einsum", "is_available", "set_flags"]

_STRATEGIES = ("auto", "greedy", "optimal")


@functools.cache
def get_opt_einsum():
    """The ``opt_einsum`` package, or None when it is not installed.

    Returns:
        The imported module or None.

    Example::

        >>> m = ember.backends.opt_einsum.get_opt_einsum()
        >>> m is None or m.__name__ == "opt_einsum"
        True
    """
    try:
        import opt_einsum
    except ImportError:
        return None
    return opt_einsum


def is_available() -> bool:
    """Whether the ``opt_einsum`` package is installed.

    Returns:
        True if ``import opt_einsum`` succeeds.

    Example::

        >>> isinstance(ember.backends.opt_einsum.is_available(), bool)
        True
    """
    return get_opt_einsum() is not None


_state = {"enabled": is_available(), "strategy": "auto" if is_available() else None}


def _check_enabled(value):
    if type(value) is not bool:
        raise ValueError(f"opt_einsum.enabled expects a bool, but got {type(value).__name__}")


def _check_strategy(value):
    # ``set_flags`` checks a strategy as PyTorch's does; a plain assignment to
    # ``opt_einsum.strategy`` stores any value unchecked there (timm's Kron optimizer sets
    # opt_einsum's own "auto-hq" that way), and so here
    if not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {value} will "
                         "not be meaningful. Install opt_einsum or leave `strategy` unset.")
    if not _state["enabled"]:
        raise ValueError(f"opt_einsum is not enabled, so setting a `strategy` to {value} will "
                         "not be meaningful. Set `enabled` to True as well, or leave "
                         "`strategy` unset.")
    if value not in _STRATEGIES:
        raise ValueError("`strategy` must be one of the following: [auto, greedy, optimal] "
                         f"but is {value}")


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled`` and ``strategy`` (None leaves one unchanged); returns the old pair.

    Args:
        _enabled: the new ``enabled``.
        _strategy: the new ``strategy``.

    Returns:
        ``(enabled, strategy)`` before the call.

    Example::

        >>> old = ember.backends.opt_einsum.set_flags(False)
        >>> _ = ember.backends.opt_einsum.set_flags(*old)
    """
    module = sys.modules[__name__]
    old = (_state["enabled"], _state["strategy"])
    if _enabled is not None:
        module.enabled = _enabled
    if _strategy is not None:
        _check_strategy(_strategy)
        module.strategy = _strategy
    return old


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """A block with the given settings (None keeps one); the old ones come back on exit.

    Args:
        enabled: whether ``einsum`` consults opt_einsum.
        strategy: "auto", "greedy" or "optimal".

    Returns:
        A context manager.

    Example::

        >>> with ember.backends.opt_einsum.flags(enabled=False):
        ...     ember.backends.opt_einsum.enabled
        False
    """
    old = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*old)


settings_module(__name__, {
    "enabled": value_setting("enabled", _state, _check_enabled),
    "strategy": value_setting("strategy", _state),
})
