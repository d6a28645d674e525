"""The error handler ``@record`` uses unless given one (defined in the package, NOTE
[ A module of the standard library only ]).

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors.handlers import get_error_handler
    >>> get_error_handler().__class__.__name__
    'ErrorHandler'
"""

from . import ErrorHandler, get_error_handler

__all__ = ["ErrorHandler", "get_error_handler"]
