"""The error handler ``@record`` uses unless given one.

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors.handlers import get_error_handler
    >>> get_error_handler().__class__.__name__
    'ErrorHandler'
"""

from .error_handler import ErrorHandler

__all__ = ["ErrorHandler", "get_error_handler"]


def get_error_handler() -> ErrorHandler:
    """The error handler ``record`` uses by default.

    Returns:
        ErrorHandler

    Example::

        >>> from ember.distributed.elastic.multiprocessing.errors import get_error_handler
        >>> type(get_error_handler()).__name__
        'ErrorHandler'
    """
    return ErrorHandler()
