"""``ember.backends.kleidiai``: Arm's KleidiAI kernels, which ember does not call.

Example::

    >>> ember.backends.kleidiai.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether KleidiAI kernels can run: False.

    Returns:
        False.

    Example::

        >>> ember.backends.kleidiai.is_available()
        False
    """
    return False
