"""``ember._dynamo.exc``: the errors of graph capture, named as PyTorch names them.

Example::

    >>> issubclass(ember._dynamo.exc.InvalidBackend, RuntimeError)
    True
"""

from __future__ import annotations

__all__ = ["BackendCompilerFailed", "InvalidBackend", "TorchDynamoException", "Unsupported"]


class TorchDynamoException(RuntimeError):
    """The base of the graph-capture errors.

    Example::

        >>> issubclass(ember._dynamo.exc.TorchDynamoException, RuntimeError)
        True
    """


class InvalidBackend(TorchDynamoException):
    """``ember.compile`` was given a backend name it does not know.

    Args:
        name: the backend's name.

    Example::

        >>> str(ember._dynamo.exc.InvalidBackend("nope")).startswith("Invalid backend")
        True
    """

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


class Unsupported(TorchDynamoException):
    """Graph capture met something it cannot trace.

    Example::

        >>> issubclass(ember._dynamo.exc.Unsupported, RuntimeError)
        True
    """


class BackendCompilerFailed(TorchDynamoException):
    """A compiler backend raised while compiling a captured graph.

    Example::

        >>> issubclass(ember._dynamo.exc.BackendCompilerFailed, RuntimeError)
        True
    """
