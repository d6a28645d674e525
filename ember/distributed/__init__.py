"""``ember.distributed``: process groups and collectives, as ``torch.distributed``.

Processes started by ``python -m ember.distributed.run`` (torchrun's environment), by
``ember.multiprocessing.spawn``, or by ``mpiexec`` join one group with
``init_process_group`` and then exchange ember tensors with ``all_reduce``,
``broadcast``, ``all_gather`` and the rest. The engine is MPI through mpi4py (NOTE
[ Engine ] in ``_engine.py``); the backend names "gloo" and "mpi" both run on it, so
scripts written for PyTorch's CPU backend run unchanged. ``is_available()`` says whether
mpi4py is installed (``pip install 'ember[distributed]'``).

Example::

    >>> import ember.distributed as dist
    >>> dist.is_initialized()
    False
"""

from __future__ import annotations

import os

from . import _engine
from ._collectives import (P2POp, ReduceOp, all_gather, all_gather_into_tensor,
                           all_gather_object, all_reduce, all_to_all, all_to_all_single,
                           barrier, batch_isend_irecv, broadcast, broadcast_object_list, gather,
                           gather_object, irecv, isend, monitored_barrier, recv, reduce,
                           reduce_scatter, reduce_scatter_tensor, scatter, scatter_object_list,
                           send)
from ._group import (NOT_INITIALIZED, Backend, DistBackendError, GroupMember, ProcessGroup, Work,
                     destroy_process_group, get_backend, get_global_rank, get_group_rank,
                     get_process_group_ranks, get_rank, get_world_size, group,
                     init_process_group, is_initialized, new_group)
from ._store import DistError, DistStoreError, FileStore, HashStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistStoreError", "FileStore", "GroupMember",
    "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store", "TCPStore",
    "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "destroy_process_group", "gather", "gather_object", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]


def is_available() -> bool:
    """Whether ember can run distributed programs: True when mpi4py is installed.

    Returns:
        bool

    Example::

        >>> isinstance(ember.distributed.is_available(), bool)
        True
    """
    return _engine.available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by a torchrun-style launcher
    (``TORCHELASTIC_RUN_ID`` is set; ``ember.distributed.run`` sets it).

    Returns:
        bool

    Example::

        >>> isinstance(ember.distributed.is_torchelastic_launched(), bool)
        True
    """
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_nccl_available() -> bool:
    """Whether the NCCL backend is built in: False (ember's NCCL path is not written yet).

    Returns:
        False

    Example::

        >>> ember.distributed.is_nccl_available()
        False
    """
    return False


def is_gloo_available() -> bool:
    """Whether the "gloo" backend name can be used: True when mpi4py is installed (ember
    runs it on MPI, see NOTE [ Engine ]).

    Returns:
        bool

    Example::

        >>> ember.distributed.is_gloo_available() == ember.distributed.is_available()
        True
    """
    return _engine.available()


def is_mpi_available() -> bool:
    """Whether the "mpi" backend can be used: True when mpi4py is installed.

    Returns:
        bool

    Example::

        >>> ember.distributed.is_mpi_available() == ember.distributed.is_available()
        True
    """
    return _engine.available()
