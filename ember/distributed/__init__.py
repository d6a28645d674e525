"""``ember.distributed``: process groups and collectives, as ``torch.distributed``.

Processes started by ``python -m ember.distributed.run`` (torchrun's environment), by
``ember.multiprocessing.spawn``, or by ``mpiexec`` join one group with
``init_process_group`` and then exchange ember tensors with ``all_reduce``,
``broadcast``, ``all_gather`` and the rest. The engine is MPI through mpi4py (NOTE
[ Engine ] in ``_engine.py``); the backend names "gloo" and "mpi" both run on it, so
scripts written for PyTorch's CPU backend run unchanged. A group of one process needs no
engine (NOTE [ A world of one ] in ``_solo.py``); more processes need mpi4py (``pip install
'ember[distributed]'``). "nccl" adds CuPy's NCCL for
CUDA tensors (NOTE [ NCCL backend ] in ``_nccl.py``). Collectives check that every rank
passes the same shapes (NOTE [ Collective fingerprints ] in ``_collectives.py``).

Beside the group API: ``algorithms`` (``Join`` for uneven inputs, DDP communication hooks
including PowerSGD), ``optim.ZeroRedundancyOptimizer`` and ``fsdp.fully_shard``; DDP
itself is ``ember.nn.parallel.DistributedDataParallel``.

Example::

    >>> import ember.distributed as dist
    >>> dist.is_initialized()
    False
"""

from __future__ import annotations

import os

from . import _engine
from ._collectives import (DebugLevel, P2POp, ReduceOp, _all_gather_base, _reduce_scatter_base,
                           _make_nccl_premul_sum,
                           all_gather, all_gather_into_tensor, all_gather_object,
                           all_gather_single, all_reduce, all_to_all, all_to_all_single,
                           barrier, batch_isend_irecv, broadcast, broadcast_object_list, gather,
                           gather_object, irecv, isend, monitored_barrier, recv, reduce,
                           reduce_scatter, reduce_scatter_single, reduce_scatter_tensor,
                           scatter, scatter_object_list,
                           send, get_debug_level, set_debug_level, set_debug_level_from_env)
from ._group import (NOT_INITIALIZED, Backend, DistBackendError, GroupMember, ProcessGroup, Work,
                     destroy_process_group, get_backend, get_global_rank, get_group_rank,
                     get_process_group_ranks, get_rank, get_world_size, group,
                     init_process_group, is_initialized, new_group)
from ._future import Future
from ._grad_bucket import GradBucket
from ._store import DistError, DistStoreError, FileStore, HashStore, PrefixStore, Store, TCPStore
from ._extras import *  # noqa: F401,F403,E402
from ._extras import __all__ as _extras_all
from . import algorithms  # noqa: E402  (after the names the algorithms use)
from . import (c10d_logger, config, constants, device_mesh, distributed_c10d,  # noqa: E402
               logging_handlers, remote_device, rendezvous, utils)
from .rendezvous import register_rendezvous_handler  # noqa: E402
from . import autograd, rpc  # noqa: E402  (torch.distributed.rpc / .autograd as attributes)

__all__ = [
    "Backend", "DebugLevel", "DistBackendError", "DistError", "DistStoreError", "FileStore",
    "Future", "GradBucket", "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup",
    "ReduceOp", "Store", "TCPStore", "Work", "algorithms", "all_gather", "all_gather_into_tensor",
    "all_gather_single", "reduce_scatter_single",
    "autograd", "rpc",
    "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
    "batch_isend_irecv", "broadcast", "broadcast_object_list", "c10d_logger", "config",
    "constants", "remote_device",
    "destroy_process_group", "device_mesh", "distributed_c10d", "gather", "gather_object",
    "get_backend", "get_debug_level", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "isend", "log", "logging_handlers",
    "monitored_barrier", "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
    "register_rendezvous_handler", "rendezvous", "scatter", "scatter_object_list", "send",
    "set_debug_level", "set_debug_level_from_env", "utils",
]
__all__ += _extras_all

#: the logger of ember.distributed (collective diagnostics go here)
log = __import__("logging").getLogger("ember.distributed")


#: the first DDP bucket's size in bytes when ``bucket_cap_mb`` is not given (as torch)
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


def is_available() -> bool:
    """Whether the distributed package is usable: always True in ember, as in PyTorch's
    builds. A group of one process runs anywhere; a group of several needs mpi4py (``pip
    install 'ember[distributed]'``), which ``init_process_group`` says when it is missing.

    Returns:
        bool: True.

    Example::

        >>> ember.distributed.is_available()
        True
    """
    return True


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
    """Whether the "nccl" backend can be used: CuPy with NCCL support is installed (this
    imports CuPy when present; see NOTE [ NCCL backend ] in ``_nccl.py``).

    Returns:
        bool

    Example::

        >>> isinstance(ember.distributed.is_nccl_available(), bool)
        True
    """
    from . import _nccl

    return _nccl.available()


def is_gloo_available() -> bool:
    """Whether the "gloo" backend name can be used: always True (ember runs it on MPI, see
    NOTE [ Engine ]; a group of one process needs no MPI, NOTE [ A world of one ]).

    Returns:
        bool: True.

    Example::

        >>> ember.distributed.is_gloo_available()
        True
    """
    return True


def is_mpi_available() -> bool:
    """Whether the "mpi" backend can be used: True when mpi4py is installed.

    Returns:
        bool

    Example::

        >>> isinstance(ember.distributed.is_mpi_available(), bool)
        True
    """
    return _engine.available()
