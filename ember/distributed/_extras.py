"""The smaller parts of ``torch.distributed``: option records, coalesced and object
point-to-point collectives, subgroups, backend queries, ``breakpoint``, ``DeviceMesh``.
"""

from __future__ import annotations

import datetime
import os
import pickle
import weakref

import numpy as np

from . import _engine
from ._collectives import ReduceOp, all_gather, all_reduce, recv, send
from ._group import (ProcessGroup, _GROUPS, _members_comm, _resolve, _world, get_rank,
                     get_world_size, new_group)
from ._store import DistError, DistStoreError, QueueEmptyError  # noqa: F401

__all__ = [
    "AllToAllOptions", "AllreduceCoalescedOptions", "AllreduceOptions", "BackendConfig",
    "BarrierOptions", "BroadcastOptions", "BuiltinCommHookType", "DeviceMesh",
    "DistNetworkError", "GatherOptions", "ProcessGroupGloo", "QueueEmptyError", "RankType",
    "ReduceOptions", "ReduceScatterOptions", "ScatterOptions", "all_gather_coalesced",
    "all_reduce_coalesced", "breakpoint", "default_pg_timeout",
    "get_backend_config", "get_default_backend_for_device", "get_node_local_rank",
    "get_pg_count", "init_device_mesh", "is_backend_available", "is_ucc_available",
    "is_xccl_available", "new_subgroups", "new_subgroups_by_enumeration", "record_comm",
    "recv_object_list", "reduce_op", "send_object_list",
    "shrink_group", "split_group", "supports_complex",
]

#: the default timeout of process groups (30 minutes), as ``torch.distributed``
default_pg_timeout = datetime.timedelta(minutes=30)

#: what a rank argument may be
RankType = int


class DistNetworkError(DistError):
    """A network failure while talking to peers or the store (a ``DistError``).

    Example::

        >>> issubclass(ember.distributed.DistNetworkError, RuntimeError)
        True
    """


# -- option records (the arguments of ProcessGroup methods in torch) ---------------------------

_UNSET_TIMEOUT = datetime.timedelta(milliseconds=-1)


class _Options:
    _fields: dict = {}

    def __init__(self):
        self.asyncOp = True
        self.timeout = _UNSET_TIMEOUT
        for k, v in self._fields.items():
            setattr(self, k, list(v) if isinstance(v, list) else v)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def _options(name, doc, **fields):
    cls = type(name, (_Options,), {"_fields": fields, "__doc__": doc,
                                   "__module__": __name__})
    return cls


AllreduceOptions = _options("AllreduceOptions", """Options of an all-reduce: ``reduceOp``,
    ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.AllreduceOptions().reduceOp
        <ReduceOp.SUM: 0>
    """, reduceOp=ReduceOp.SUM)
AllreduceCoalescedOptions = _options("AllreduceCoalescedOptions", """Options of a coalesced
    all-reduce: ``reduceOp``, ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.AllreduceCoalescedOptions().asyncOp
        True
    """, reduceOp=ReduceOp.SUM)
ReduceOptions = _options("ReduceOptions", """Options of a reduce: ``reduceOp``,
    ``rootRank``, ``rootTensor``, ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.ReduceOptions().rootRank
        0
    """, reduceOp=ReduceOp.SUM, rootRank=0, rootTensor=0)
ReduceScatterOptions = _options("ReduceScatterOptions", """Options of a reduce-scatter:
    ``reduceOp``, ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.ReduceScatterOptions().reduceOp
        <ReduceOp.SUM: 0>
    """, reduceOp=ReduceOp.SUM)
BroadcastOptions = _options("BroadcastOptions", """Options of a broadcast: ``rootRank``,
    ``rootTensor``, ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.BroadcastOptions().rootTensor
        0
    """, rootRank=0, rootTensor=0)
GatherOptions = _options("GatherOptions", """Options of a gather: ``rootRank``,
    ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.GatherOptions().rootRank
        0
    """, rootRank=0)
ScatterOptions = _options("ScatterOptions", """Options of a scatter: ``rootRank``,
    ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.ScatterOptions().rootRank
        0
    """, rootRank=0)
AllToAllOptions = _options("AllToAllOptions", """Options of an all-to-all: ``timeout``,
    ``asyncOp``.

    Example::

        >>> ember.distributed.AllToAllOptions().asyncOp
        True
    """)
BarrierOptions = _options("BarrierOptions", """Options of a barrier: ``device_ids``,
    ``device``, ``timeout``, ``asyncOp``.

    Example::

        >>> ember.distributed.BarrierOptions().device_ids
        []
    """, device_ids=[], device=None)


class BuiltinCommHookType:
    """The DDP communication hooks built into the reducer (``ALLREDUCE``,
    ``FP16_COMPRESS``), for ``DistributedDataParallel._register_builtin_comm_hook``.

    Example::

        >>> ember.distributed.BuiltinCommHookType.FP16_COMPRESS.name
        'FP16_COMPRESS'
    """

    class _Member:
        def __init__(self, name, value):
            self.name, self.value = name, value

        def __repr__(self):
            return f"BuiltinCommHookType.{self.name}"

    ALLREDUCE = _Member("ALLREDUCE", 0)
    FP16_COMPRESS = _Member("FP16_COMPRESS", 1)
    __members__ = {"ALLREDUCE": ALLREDUCE, "FP16_COMPRESS": FP16_COMPRESS}


class ProcessGroupGloo(ProcessGroup):
    """The "gloo" process group type (ember runs it on MPI; see NOTE [ Engine ]). Groups
    are made by ``init_process_group`` / ``new_group``, not by this constructor.

    Args:
        comm: the MPI communicator the group runs on.
        ranks (list of ints): the global ranks of its members.
        backend (str): the backend name (``"gloo"``).
        timeout (datetime.timedelta): the collectives' timeout.

    Example::

        >>> issubclass(ember.distributed.ProcessGroupGloo, ember.distributed.ProcessGroup)
        True
    """


class _ReduceOpAlias:
    """The deprecated ``reduce_op`` namespace: ``reduce_op.SUM`` is ``ReduceOp.SUM``."""

    def __getattr__(self, name):
        import warnings

        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use "
                      "`torch.distributed.ReduceOp` instead", FutureWarning, stacklevel=2)
        return getattr(ReduceOp, name)


reduce_op = _ReduceOpAlias()


class BackendConfig:
    """Which backend serves each device type for a backend string such as ``"gloo"`` or
    ``"cpu:gloo,cuda:nccl"``.

    Args:
        backend: the backend string.

    Example::

        >>> ember.distributed.BackendConfig("gloo").get_device_backend_map()
        {'cpu': 'gloo', 'cuda': 'gloo'}
    """

    def __init__(self, backend):
        text = str(backend).lower()
        if ":" in text:
            self._map = {}
            for part in text.split(","):
                device, _, name = part.partition(":")
                self._map[device.strip()] = name.strip()
        elif text == "undefined":
            self._map = {"cpu": "gloo", "cuda": "nccl"}
        else:
            self._map = {"cpu": text, "cuda": text}

    def get_device_backend_map(self) -> dict:
        """``{device type: backend name}``."""
        return dict(self._map)

    def __repr__(self):
        return ",".join(f"{d}:{b}" for d, b in self._map.items())


def get_backend_config(group=None) -> str:
    """The backend string of ``group`` (e.g. ``"cpu:gloo,cuda:gloo"``).

    Args:
        group (ProcessGroup, optional): the group. Default: the default (world) group.

    Example::

        >>> ember.distributed.get_backend_config()  # doctest: +SKIP
        'cpu:gloo,cuda:gloo'
    """
    return str(BackendConfig(_resolve(group).backend))


def get_default_backend_for_device(device) -> str:
    """The default backend for a device type: "gloo" for CPU, "nccl" for CUDA.

    Args:
        device (str, int or ember.device): a device or device type (``"cpu"``, ``"cuda"``).

    Returns:
        str: the backend's name.

    Raises:
        TypeError, RuntimeError: what ``ember.device(device)`` raises for it.
        ValueError: a device type without a default backend (``"meta"``).

    Example::

        >>> ember.distributed.get_default_backend_for_device("cpu")
        'gloo'
    """
    from .. import device as _device

    # as in PyTorch, anything but a device goes through the device constructor first: None
    # raises TypeError, an index names the (absent) accelerator, a bad string RuntimeError
    kind = (device if isinstance(device, _device) else _device(device)).type
    table = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl", "mps": "gloo"}
    if kind not in table:
        raise ValueError(f"Default backend not registered for device : {kind}")
    return table[kind]


def is_backend_available(backend: str) -> bool:
    """Whether the backend name can be used here.

    Args:
        backend (str): a backend name (``"gloo"``, ``"nccl"``, ``"mpi"``).

    Example::

        >>> ember.distributed.is_backend_available("foo")
        False
    """
    name = str(backend).lower()
    if name == "gloo":  # a group of one runs without mpi4py (NOTE [ A world of one ])
        return True
    if name == "mpi":
        return _engine.available()
    if name == "nccl":
        from . import is_nccl_available

        return is_nccl_available()
    return False


def is_ucc_available() -> bool:
    """Whether the UCC backend is built in: False.

    Example::

        >>> ember.distributed.is_ucc_available()
        False
    """
    return False


def is_xccl_available() -> bool:
    """Whether the XCCL (Intel GPU) backend is built in: False.

    Example::

        >>> ember.distributed.is_xccl_available()
        False
    """
    return False


def supports_complex(reduceOp) -> bool:
    """Whether ``reduceOp`` is defined on complex tensors (not MAX, MIN, PRODUCT, bitwise).

    Args:
        reduceOp (ReduceOp): the reduction.

    Example::

        >>> ember.distributed.supports_complex(ember.distributed.ReduceOp.MAX)
        False
    """
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND,
                            ReduceOp.BOR, ReduceOp.BXOR)


def get_pg_count() -> int:
    """How many process groups exist (the default one and those of ``new_group``).

    Example::

        >>> ember.distributed.get_pg_count()
        0
    """
    from . import is_initialized

    return (1 + len(_GROUPS)) if is_initialized() else 0


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank on its machine (``LOCAL_RANK``), or ``fallback_rank``.

    Args:
        fallback_rank (int, optional): returned when ``LOCAL_RANK`` is not set (else that raises).

    Raises:
        RuntimeError: LOCAL_RANK is unset and no fallback was given.

    Example::

        >>> ember.distributed.get_node_local_rank(fallback_rank=0)  # doctest: +SKIP
        0
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming you are not running "
                       "in a multi-device context and want the code to run locally instead.")


def record_comm(name: str):
    """A context manager naming the collectives inside it in profiles (no effect here).

    Args:
        name (str): the label of the recorded communication.

    Example::

        >>> with ember.distributed.record_comm("grads"):
        ...     pass
    """
    import contextlib

    return contextlib.nullcontext()


# -- collectives built from the others ------------------------------------------------------

def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """All-reduce several tensors of one dtype as one message.

    Args:
        tensors: the tensors (reduced in place).
        op, group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.all_reduce_coalesced([ember.ones(2), ember.ones(3)])  # doctest: +SKIP
    """
    import warnings

    from .. import cat

    from ._group import Work

    warnings.warn("torch.distributed.all_reduce_coalesced will be deprecated. If you must "
                  "use it, please revisit our documentation later at "
                  "https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    tensors = list(tensors)
    if not tensors:
        return Work() if async_op else None
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("all_reduce_coalesced: all tensors must have the same dtype")
    flat = cat([t.detach().reshape(-1) for t in tensors])
    work = all_reduce(flat, op, group, async_op=True)

    def finish():
        work.wait()
        at = 0
        for t in tensors:
            n = t.numel()
            np.copyto(t._data, flat._data[at:at + n].reshape(t._data.shape))
            t._bump()
            at += n

    if async_op:
        return Work([], finish, tensors, None, "all_reduce_coalesced")
    finish()
    return None


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False):
    """``all_gather`` of several tensors: ``output_tensor_lists[r][i]`` receives rank r's
    ``input_tensor_list[i]``.

    Args:
        output_tensor_lists (list of lists of Tensors): one list per rank, filled in place.
        input_tensor_list (list of Tensors): this rank's tensors.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        async_op (bool): return a ``Work`` to wait on instead of blocking. Default: False.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> outs = [[ember.zeros(2)], [ember.zeros(2)]]
        >>> ember.distributed.all_gather_coalesced(outs, [ember.ones(2)])  # doctest: +SKIP
    """
    import warnings

    from ._group import Work

    warnings.warn("torch.distributed.all_gather_coalesced will be deprecated. If you must "
                  "use it, please revisit our documentation later at "
                  "https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    for i, t in enumerate(input_tensor_list):
        all_gather([outs[i] for outs in output_tensor_lists], t, group)
    return Work() if async_op else None


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None):
    """Send picklable objects to rank ``dst`` (which calls ``recv_object_list``).

    Args:
        object_list (list): the picklable objects.
        dst (int, optional): the receiver's global rank.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        device (ember.device, optional): accepted for PyTorch compatibility.
        group_dst (int, optional): the receiver's rank within ``group``.

    Example::

        >>> ember.distributed.send_object_list([{"step": 3}], dst=1)  # doctest: +SKIP
    """
    from .. import from_numpy, tensor

    payloads = [np.frombuffer(pickle.dumps(o), np.uint8) for o in object_list]
    sizes = tensor([p.size for p in payloads])
    send(sizes, dst, group, group_dst=group_dst)
    if payloads:
        send(from_numpy(np.concatenate(payloads)), dst, group, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Receive objects sent by ``send_object_list`` into ``object_list`` (its length must
    match); the sender's rank.

    Args:
        object_list (list): filled in place (its length must match the sender's list).
        src (int, optional): the sender's global rank (None: any).
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        device (ember.device, optional): accepted for PyTorch compatibility.
        group_src (int, optional): the sender's rank within ``group``.

    Example::

        >>> objs = [None]
        >>> ember.distributed.recv_object_list(objs, src=0)  # doctest: +SKIP
        0
    """
    from .. import from_numpy, zeros

    sizes = zeros(len(object_list), dtype=_int64())
    sender = recv(sizes, src, group, group_src=group_src)
    total = int(sizes.sum().item())
    buf = from_numpy(np.empty(total, np.uint8))
    if object_list:
        recv(buf, sender, group)
    at = 0
    for i, n in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(buf._data[at:at + n].tobytes())
        at += n
    return sender


def _int64():
    from .. import int64

    return int64


# -- subgroups ----------------------------------------------------------------------------------

def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """Make one group per list of global ranks.

    As in PyTorch, the processes that call it make every listed group in order; each group
    is made by its members (NOTE [ Groups of members ]).

    Args:
        ranks_per_subgroup_list (list of lists of ints): the global ranks of each group.
        timeout (datetime.timedelta, optional): the groups' collective timeout.
        backend (str, optional): the backend of the new groups. Default: the default group's.
        pg_options (optional): accepted for PyTorch compatibility.
        group_desc (str, optional): a description, shown in errors.

    Returns:
        (this rank's subgroup or None, all the subgroups in order; the ones this rank is
        not in are ``GroupMember.NON_GROUP_MEMBER``)

    Raises:
        ValueError: the list is empty or a rank appears in two subgroups.

    Example::

        >>> ember.distributed.new_subgroups_by_enumeration([[0], [1]])  # doctest: +SKIP
        (ProcessGroup(backend='gloo', ranks=[0]), [ProcessGroup(...), -100])
    """
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner = {}
    for ranks in ranks_per_subgroup_list:
        for r in ranks:
            if r in owner:
                raise ValueError(f"Rank {r} has appeared in both subgroup {owner[r]} and "
                                 f"{ranks}")
            owner[r] = ranks
    me, mine, groups = get_rank(), None, []
    for ranks in ranks_per_subgroup_list:
        g = new_group(ranks, timeout=timeout, backend=backend)
        groups.append(g)
        if me in ranks:
            mine = g
    return mine, groups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split ``group`` (the whole world by default) into consecutive subgroups of
    ``group_size`` of its ranks.

    Every member of ``group`` calls it; outside ``group`` it raises, as PyTorch's does
    (the group's size is -1 there).

    Args:
        group_size (int, optional): the ranks per subgroup. Default: the number of CUDA
            devices (one subgroup per machine); without CUDA it must be given.
        group (ProcessGroup, optional): the group to split. Default: the default group.
        timeout (datetime.timedelta, optional): the groups' collective timeout.
        backend (str, optional): the backend of the new groups. Default: the default group's.
        pg_options (optional): accepted for PyTorch compatibility.
        group_desc (str, optional): a description, shown in errors.

    Returns:
        (this rank's subgroup, all the subgroups)

    Raises:
        ValueError: ``group_size`` does not divide the group's size or exceeds it, or is
            None without CUDA.

    Example::

        >>> sub, subs = ember.distributed.new_subgroups(1)  # doctest: +SKIP
        >>> ember.distributed.get_world_size(sub)  # doctest: +SKIP
        1
    """
    if group_size is None:
        from .. import cuda

        if not cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available. "
                             "If your subgroup uses a backend that does not depend on CUDA, "
                             "please pass in 'group_size' correctly.")
        group_size = cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    size = get_world_size(group)
    if group_size > size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world "
                         f"size ({size})")
    if size % group_size:
        raise ValueError(f"The world size ({size}) must be divisible by 'group_size={group_size}'")
    ranks = _resolve(group).ranks
    return new_subgroups_by_enumeration(
        [ranks[s:s + group_size] for s in range(0, size, group_size)], timeout, backend)


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                group_desc=None, backend=None):
    """Split ``parent_pg`` into the groups of ``split_ranks``; this rank's new group.

    Only ``parent_pg``'s members call it, and each new group is made by its own members
    (NOTE [ Groups of members ]). PyTorch splits only NCCL/XCCL groups (its gloo groups
    refuse); ember splits any group.

    Args:
        parent_pg (ProcessGroup, optional): the group to split. Default: the default group.
        split_ranks (list of lists of ints): the ranks *within* ``parent_pg`` of each new
            group; ranks in none of them get None.
        timeout (datetime.timedelta, optional): the new groups' collective timeout.
        pg_options (optional): accepted for PyTorch compatibility.
        group_desc (str, optional): a description, shown in errors.
        backend (str, optional): the new group's backend. Default: the parent's.

    Returns:
        ProcessGroup or None

    Raises:
        ValueError: ``split_ranks`` is empty, a split group is empty, larger than the world
            or repeats a rank, or this process is not in ``parent_pg``.

    Example::

        >>> ember.distributed.split_group(split_ranks=[[0], [1]])  # doctest: +SKIP
        ProcessGroup(backend='gloo', ranks=[0])
    """
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    world = _world()
    parent = world if parent_pg is None else parent_pg
    if not isinstance(parent, ProcessGroup):
        raise ValueError(f"Group {parent_pg} is not registered")
    if world.rank() not in parent.ranks:
        raise ValueError(f"Global rank {world.rank()} is not part of the parent group "
                         f"{parent_pg}")
    me = parent.rank()
    for ranks in split_ranks:
        if len(ranks) == 0:
            raise ValueError("the split group cannot be empty")
        if len(ranks) > world.size():
            raise ValueError("the split group's size should be less or equal to the "
                             "world_size set by init_process_group")
        if len(ranks) != len(set(ranks)):
            raise ValueError("the split group cannot have duplicate ranks")
    mine = next((sorted(r) for r in split_ranks if me in r), None)
    if mine is None:
        return None
    for r in mine:
        if not 0 <= r < parent.size():
            raise ValueError(f"Invalid rank {r} in split_ranks: the parent group has "
                             f"{parent.size()} ranks")
    pg = ProcessGroup(_members_comm(parent.comm, mine), [parent.ranks[r] for r in mine],
                      backend or parent.backend, timeout or parent.timeout)
    _GROUPS.append(pg)
    return pg


def shrink_group(ranks_to_exclude, group=None, shrink_flags=0, pg_options=None):
    """A group of ``group``'s members less ``ranks_to_exclude`` (called by the remaining
    members and the excluded ones alike).

    Args:
        ranks_to_exclude (list of ints): the ranks (within ``group``) left out.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        shrink_flags (int): accepted for PyTorch compatibility. Default: 0.
        pg_options (optional): accepted for PyTorch compatibility.

    Example::

        >>> ember.distributed.shrink_group([1])  # doctest: +SKIP
    """
    pg = _resolve(group)
    excluded = set(ranks_to_exclude)
    if not excluded:
        raise ValueError("ranks_to_exclude cannot be empty")
    keep = [r for i, r in enumerate(pg.ranks) if i not in excluded]
    return new_group(keep)


def breakpoint(rank: int = 0, skip: int = 0, timeout_s=3600):
    """Drop into the debugger on one rank while the others wait at a barrier.

    Args:
        rank: the rank that stops.
        skip: skip the first ``skip`` calls.
        timeout_s: how long the others wait.

    Example::

        >>> ember.distributed.breakpoint()  # doctest: +SKIP
    """
    import pdb

    from ._collectives import barrier

    count = getattr(breakpoint, "_calls", 0)
    breakpoint._calls = count + 1
    if count < skip:
        return
    if get_rank() == rank:
        pdb.Pdb().set_trace()
    barrier()


# -- device meshes ------------------------------------------------------------------------------

class DeviceMesh:
    """An n-dimensional arrangement of the ranks, with one process group per dimension
    (ranks that differ only in that coordinate).

    Args:
        device_type: "cpu" or "cuda".
        mesh: the ranks, as a nested list or tensor of the mesh's shape.
        mesh_dim_names: a name per dimension.

    Example::

        >>> mesh = ember.distributed.init_device_mesh("cpu", (2,))  # doctest: +SKIP
        >>> mesh.get_group().size()  # doctest: +SKIP
        2
    """

    def __init__(self, device_type, mesh, *, mesh_dim_names=None, _init_backend=True, **_):
        self.device_type = device_type
        arr = np.asarray(mesh.tolist() if hasattr(mesh, "tolist") else mesh, dtype=np.int64)
        self._mesh = arr
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None
        if self.mesh_dim_names and len(self.mesh_dim_names) != arr.ndim:
            raise ValueError(f"mesh_dim_names {self.mesh_dim_names} must have one name per "
                             f"dimension of the mesh {arr.shape}")
        me = get_rank()
        where = np.argwhere(arr == me)
        self._coordinate = [int(c) for c in where[0]] if len(where) else None
        self._groups = []
        for dim in range(arr.ndim):
            moved = np.moveaxis(arr, dim, -1).reshape(-1, arr.shape[dim])
            mine = None
            for ranks in moved:
                ranks = [int(r) for r in ranks]
                if len(ranks) == get_world_size():
                    g = _world()
                else:
                    g = new_group(ranks)
                if me in ranks:
                    mine = g
            self._groups.append(mine)
        _LIVE_MESHES[self._key()] = self

    # NOTE [ Pickled meshes ]
    # A mesh pickles (and deep-copies) as its layout only, in plain Python values: device
    # type, ranks, dimension names and the layout of the mesh it was cut from (so
    # ``ember.load(weights_only=True)`` can read it back). Process groups hold MPI
    # communicators, which cannot travel, and making new ones would be a collective that an
    # unpickling rank cannot start alone. So a restored mesh is the live mesh of the same
    # layout in this process when there is one (the usual case: a checkpoint read back by
    # the run that wrote it); else it takes the live groups over the same ranks; with no
    # process group at all its groups stay None, as PyTorch's stay unresolved. Meshes compare
    # and hash by layout, as PyTorch's do.
    def _key(self):
        return (self.device_type, self._mesh.shape, self._mesh.tobytes(), self.mesh_dim_names)

    def __eq__(self, other):
        if self is other:
            return True
        return isinstance(other, DeviceMesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _layout(self):
        root = getattr(self, "_root", None)
        return (self.device_type, self._mesh.tolist(), self.mesh_dim_names,
                None if root is None else (root[0]._layout(), list(root[1])))

    def __reduce__(self):
        return (_restore_mesh, (self._layout(),))

    def __deepcopy__(self, memo):
        return self  # nothing in a mesh is copied: its groups are the process's own

    @property
    def mesh(self):
        """The ranks as an int64 tensor of the mesh's shape."""
        from .. import from_numpy

        return from_numpy(self._mesh.copy())

    @property
    def shape(self) -> tuple:
        """The mesh's shape."""
        return tuple(self._mesh.shape)

    @property
    def ndim(self) -> int:
        """The number of mesh dimensions."""
        return self._mesh.ndim

    def size(self, mesh_dim=None) -> int:
        """The number of ranks (in one dimension when ``mesh_dim`` is given).

        Args:
            mesh_dim (int, optional): the mesh dimension.

        Returns:
            int

        Example::

            >>> mesh.size(0)  # doctest: +SKIP
        """
        return int(self._mesh.size if mesh_dim is None else self._mesh.shape[mesh_dim])

    def _dim(self, mesh_dim):
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError("Found the DeviceMesh have "
                                   f"{self.ndim} dimensions. Optional kwarg `mesh_dim` needs "
                                   "to be specified when device_mesh.ndim > 1.")
            return 0
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        return int(mesh_dim)

    def get_group(self, mesh_dim=None):
        """The process group along ``mesh_dim`` that holds this rank.

        Args:
            mesh_dim (int or str, optional): an index or a name (needed when ndim > 1).

        Returns:
            ProcessGroup

        Example::

            >>> mesh.get_group("tp")  # doctest: +SKIP
        """
        return self._groups[self._dim(mesh_dim)]

    def get_all_groups(self) -> list:
        """This rank's process group along every dimension.

        Returns:
            list of ProcessGroup

        Example::

            >>> mesh.get_all_groups()  # doctest: +SKIP
        """
        return list(self._groups)

    def get_rank(self) -> int:
        """This process's global rank.

        Returns:
            int

        Example::

            >>> mesh.get_rank()  # doctest: +SKIP
        """
        return get_rank()

    def get_local_rank(self, mesh_dim=None) -> int:
        """This rank's coordinate along ``mesh_dim``.

        Args:
            mesh_dim (int or str, optional): an index or a name (needed when ndim > 1).

        Returns:
            int

        Example::

            >>> mesh.get_local_rank(0)  # doctest: +SKIP
        """
        return self._coordinate[self._dim(mesh_dim)]

    def get_coordinate(self):
        """This rank's coordinates in the mesh (None if it is not in it).

        Returns:
            tuple of int, or None

        Example::

            >>> mesh.get_coordinate()  # doctest: +SKIP
        """
        return None if self._coordinate is None else tuple(self._coordinate)

    def __getitem__(self, names):
        names = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(n) for n in names]
        index = tuple(slice(None) if d in dims else self._coordinate[d]
                      for d in range(self.ndim))
        sub = DeviceMesh.__new__(DeviceMesh)
        sub.device_type = self.device_type
        sub._mesh = self._mesh[index]
        sub.mesh_dim_names = names
        sub._coordinate = [self._coordinate[d] for d in dims]
        sub._groups = [self._groups[d] for d in dims]
        # the mesh it was cut from, and which of its dimensions it keeps (fully_shard over
        # ``mesh["dp"]`` lays a tensor-parallel parameter out over both)
        root = getattr(self, "_root", None)
        sub._root = ((self, dims) if root is None
                     else (root[0], [root[1][d] for d in dims]))
        _LIVE_MESHES.setdefault(sub._key(), sub)
        return sub

    def __repr__(self):
        # PyTorch's form: the sizes (named when the dimensions are), and each dimension's
        # step between consecutive ranks (``()`` for a dimension of one rank)
        shape = self._mesh.shape
        sizes = (f"({', '.join(f'{n}={k}' for n, k in zip(self.mesh_dim_names, shape))})"
                 if self.mesh_dim_names else str(tuple(shape)))
        strides = []
        for d, k in enumerate(shape):
            if k < 2:
                strides.append(())
                continue
            line = np.moveaxis(self._mesh, d, 0)
            strides.append(int((line[1] - line[0]).flat[0]))
        text = f"DeviceMesh({sizes}, '{self.device_type}', stride={tuple(strides)}"
        if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "") == "DETAIL":
            text += f", Mesh: {self._mesh.tolist()}"
        return text + ")"


# the meshes alive in this process, by layout (NOTE [ Pickled meshes ])
_LIVE_MESHES = weakref.WeakValueDictionary()


def _live_group(ranks):
    """The live process group over the global ``ranks`` (the newest such), or None."""
    from . import _group

    if ranks == list(range(get_world_size())):
        return _group._WORLD
    return next((g for g in reversed(_GROUPS) if g.ranks == ranks), None)


def _restore_mesh(layout):
    """The mesh a pickled ``layout`` describes (NOTE [ Pickled meshes ])."""
    from ._group import is_initialized

    device_type, ranks, names, root = layout
    mesh = DeviceMesh.__new__(DeviceMesh)
    mesh.device_type = device_type
    mesh._mesh = np.asarray(ranks, dtype=np.int64)
    mesh.mesh_dim_names = None if names is None else tuple(names)
    live = _LIVE_MESHES.get(mesh._key())
    if live is not None and all(g is None or g is _world_or_none() or g in _GROUPS
                                for g in live._groups):
        return live
    if root is not None:
        mesh._root = (_restore_mesh(root[0]), list(root[1]))
    where = np.argwhere(mesh._mesh == get_rank()) if is_initialized() else []
    mesh._coordinate = [int(c) for c in where[0]] if len(where) else None
    mesh._groups = []
    for d in range(mesh._mesh.ndim):
        if mesh._coordinate is None:
            mesh._groups.append(None)
            continue
        line = tuple(slice(None) if k == d else c for k, c in enumerate(mesh._coordinate))
        mesh._groups.append(_live_group(sorted(int(r) for r in mesh._mesh[line])))
    return mesh


def _world_or_none():
    from . import _group

    return _group._WORLD


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """A ``DeviceMesh`` of ``mesh_shape`` over the ranks 0..world_size-1 in order (the
    default process group must exist, or is made from the environment).

    Args:
        device_type (str): ``"cpu"`` or ``"cuda"``.
        mesh_shape (tuple of ints): the mesh's shape; its product is the world size.
        mesh_dim_names (tuple of str, optional): a name per mesh dimension. Keyword-only.
        backend_override (dict, optional): accepted for PyTorch compatibility. Keyword-only.

    Returns:
        DeviceMesh

    Raises:
        RuntimeError: the mesh's size is not the world size.

    Example::

        >>> mesh = ember.distributed.init_device_mesh("cpu", (2,),
        ...                                           mesh_dim_names=("dp",))  # doctest: +SKIP
    """
    from . import init_process_group, is_initialized

    if not is_initialized():
        init_process_group()
    shape = tuple(int(s) for s in mesh_shape)
    n = int(np.prod(shape))
    if n != get_world_size():
        raise RuntimeError(f"Mesh should not be bigger than default world size "
                           f"{get_world_size()}, but found {n} ranks!")
    return DeviceMesh(device_type, np.arange(n).reshape(shape), mesh_dim_names=mesh_dim_names)

