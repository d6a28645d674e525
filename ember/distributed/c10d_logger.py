"""The ``torch.distributed`` logger (``torch.distributed.c10d_logger``): collective
diagnostics (``TORCH_DISTRIBUTED_DEBUG=DETAIL``) go to ``logging.getLogger("ember.distributed")``.

Example::

    >>> from ember.distributed.c10d_logger import _get_logger
    >>> _get_logger().name
    'ember.distributed'
"""

import logging

__all__: list = []


def _get_logger():
    """The logger of ``ember.distributed``."""
    return logging.getLogger("ember.distributed")
