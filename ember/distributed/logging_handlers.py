"""Named logging handlers for distributed logs (``torch.distributed.logging_handlers``).

Example::

    >>> from ember.distributed.logging_handlers import _log_handlers
    >>> "default" in _log_handlers
    True
"""

import logging

__all__: list = []

_log_handlers = {"default": logging.NullHandler()}
