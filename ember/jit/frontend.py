"""``torch.jit.frontend``'s errors: what scripting raises for Python it cannot compile.

Example::

    >>> issubclass(ember.jit.frontend.NotSupportedError, ember.jit.frontend.FrontendError)
    True
"""

from __future__ import annotations

__all__ = ["FrontendError", "NotSupportedError"]


class FrontendError(Exception):
    """Scripting met source it cannot turn into TorchScript.

    Args:
        *args: the message (and, in PyTorch, the source range).

    Example::

        >>> issubclass(ember.jit.frontend.FrontendError, Exception)
        True
    """


class NotSupportedError(FrontendError):
    """Scripting met a Python feature TorchScript does not support (``*args``, keyword-only
    arguments with defaults, ``**kwargs``).

    Args:
        *args: the message.

    Example::

        >>> def f(x, *rest):
        ...     return x
        >>> ember.jit.script(f)
        Traceback (most recent call last):
        ...
        ember.jit.frontend.NotSupportedError: Compiled functions can't take variable number ...
    """
