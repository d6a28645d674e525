"""``ember.backends.mha``: the fast-path switch of ``nn.MultiheadAttention``.

PyTorch's fast path is a fused inference kernel; ember's ``MultiheadAttention`` always runs
the composed computation, which gives the same results, so the switch is recorded only.

Example::

    >>> ember.backends.mha.get_fastpath_enabled()
    True
"""

from __future__ import annotations

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_state = {"fastpath": True}


def get_fastpath_enabled() -> bool:
    """Whether the MultiheadAttention fast path is enabled (default True).

    Returns:
        The switch.

    Example::

        >>> ember.backends.mha.get_fastpath_enabled()
        True
    """
    return _state["fastpath"]


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the MultiheadAttention fast path.

    Args:
        value: the new switch.

    Returns:
        None.

    Example::

        >>> ember.backends.mha.set_fastpath_enabled(True)
    """
    _state["fastpath"] = bool(value)
