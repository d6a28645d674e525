"""``ember.backends.cusparselt``: NVIDIA's cuSPARSELt library, which ember does not call.

Example::

    >>> ember.backends.cusparselt.is_available(), ember.backends.cusparselt.version()
    (False, None)
"""

from __future__ import annotations

__all__ = ["get_max_alg_id", "is_available", "version"]


def is_available() -> bool:
    """Whether cuSPARSELt can be used: False.

    Returns:
        False.

    Example::

        >>> ember.backends.cusparselt.is_available()
        False
    """
    return False


def version():
    """cuSPARSELt's version: None, since it is not available.

    Returns:
        None.

    Example::

        >>> ember.backends.cusparselt.version() is None
        True
    """
    return None


def get_max_alg_id():
    """The largest cuSPARSELt algorithm id: None, since it is not available.

    Returns:
        None.

    Example::

        >>> ember.backends.cusparselt.get_max_alg_id() is None
        True
    """
    return None
