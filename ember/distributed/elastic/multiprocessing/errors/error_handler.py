"""Writing a worker's exception where its launcher reads it (``TORCHELASTIC_ERROR_FILE``);
the class lives in the package (NOTE [ A module of the standard library only ]).

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors.error_handler import ErrorHandler
    >>> ErrorHandler().initialize()
"""

from . import ErrorHandler, logger  # noqa: F401

__all__ = ["ErrorHandler"]
