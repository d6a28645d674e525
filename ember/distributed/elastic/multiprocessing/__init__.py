"""``ember.distributed.elastic.multiprocessing``: worker-failure reporting (``errors``).

Example::

    >>> from ember.distributed.elastic.multiprocessing import errors
    >>> errors.record.__name__
    'record'
"""

from . import errors  # noqa: F401
