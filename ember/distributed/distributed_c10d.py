"""``torch.distributed.distributed_c10d``: where PyTorch defines the process-group API.
Programs that import from it directly find the same functions as ``ember.distributed``.

Example::

    >>> from ember.distributed.distributed_c10d import get_world_size
    >>> get_world_size is ember.distributed.get_world_size
    True
"""

from ._collectives import *  # noqa: F401,F403
from ._collectives import __all__ as _c
from ._extras import *  # noqa: F401,F403
from ._extras import __all__ as _e
from ._group import *  # noqa: F401,F403
from ._group import (NOT_INITIALIZED, destroy_process_group, get_backend,  # noqa: F401
                     get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                     get_world_size, init_process_group, is_initialized, new_group)
from ._group import __all__ as _g


def _get_default_group():
    """The default process group (raises ValueError before ``init_process_group``)."""
    from ._group import _world

    return _world()


__all__ = sorted(set(_c) | set(_e) | set(_g) | {
    "NOT_INITIALIZED", "destroy_process_group", "get_backend", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size",
    "init_process_group", "is_initialized", "new_group"})
