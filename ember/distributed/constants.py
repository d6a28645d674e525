"""Constants of ``torch.distributed``: the default process-group timeouts.

Example::

    >>> from ember.distributed.constants import default_pg_timeout
    >>> default_pg_timeout.total_seconds()
    1800.0
"""

from ._extras import default_pg_timeout

#: NCCL groups default to the same 30 minutes
default_pg_nccl_timeout = default_pg_timeout

__all__ = ["default_pg_nccl_timeout", "default_pg_timeout"]
