"""``ember.backends.nnpack``: the NNPACK convolution library, which ember does not call.

Example::

    >>> ember.backends.nnpack.is_available()
    False
"""

from __future__ import annotations

import contextlib
import sys

from ._flags import bool_setting, settings_module

__all__ = ["flags", "is_available", "set_flags"]

_state = {"enabled": True}


def is_available() -> bool:
    """Whether NNPACK kernels can run: False (ember's convolutions are NumPy's).

    Returns:
        False.

    Example::

        >>> ember.backends.nnpack.is_available()
        False
    """
    return False


def set_flags(_enabled):
    """Set ``enabled``; returns the previous value as a one-element tuple.

    Args:
        _enabled: the new setting.

    Returns:
        ``(enabled,)`` before the call.

    Example::

        >>> old = ember.backends.nnpack.set_flags(True)
    """
    old = (_state["enabled"],)
    sys.modules[__name__].enabled = _enabled
    return old


@contextlib.contextmanager
def flags(enabled=False):
    """A block with ``enabled`` set; the previous setting comes back on exit.

    Args:
        enabled: the setting inside the block.

    Returns:
        A context manager.

    Example::

        >>> with ember.backends.nnpack.flags(enabled=False):
        ...     ember.backends.nnpack.enabled
        False
    """
    old = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(*old)


settings_module(__name__, {"enabled": bool_setting("torch.backends.nnpack", "enabled", _state)})
