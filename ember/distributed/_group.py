"""Process groups: ``init_process_group``, ``new_group``, ranks, and the ``Work`` handle.

A ``ProcessGroup`` wraps one MPI intracommunicator (see NOTE [ Engine ] in ``_engine.py``)
and the global ranks it holds. ``init_process_group`` resolves the rank, the world size
and a rendezvous store from ``init_method`` (``env://``, ``tcp://host:port``,
``file://path``) or from MPI when ``mpiexec`` started the processes, then connects them.
"""

from __future__ import annotations

import datetime
import io
import os
import sys
import threading
import time
import urllib.parse
import warnings

from . import _engine, _progress
from ._store import DistError, FileStore, PrefixStore, Store, TCPStore

__all__ = ["Backend", "DistBackendError", "GroupMember", "ProcessGroup", "Work", "group"]

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class DistBackendError(DistError):
    """A collective failed or timed out in the backend (``torch.distributed.DistBackendError``).

    Example::

        >>> issubclass(ember.distributed.DistBackendError, ember.distributed.DistError)
        True
    """


class Backend(str):
    """A process-group backend name ("gloo", "nccl", "mpi", ...), lower-cased.

    Args:
        name: the backend's name.

    Example::

        >>> ember.distributed.Backend("GLOO"), ember.distributed.Backend.NCCL
        ('gloo', 'nccl')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A set of processes that run collectives together, over one MPI communicator.

    Args:
        comm: the MPI intracommunicator.
        ranks: the global ranks of its members, in group-rank order.
        backend: the backend name it was created with.

    Example::

        >>> ember.distributed.ProcessGroup  # made by init_process_group / new_group
        <class 'ember.distributed._group.ProcessGroup'>
    """

    def __init__(self, comm, ranks, backend: str, timeout: datetime.timedelta):
        self.comm = comm
        self.ranks = list(ranks)
        self.backend = Backend(backend)
        self.timeout = timeout
        self.nccl = None  # a NcclComm for CUDA tensors in "nccl" groups (_nccl.py)

    def rank(self) -> int:
        """This process's rank within the group."""
        return self.comm.Get_rank()

    def size(self) -> int:
        """How many processes the group holds."""
        return self.comm.Get_size()

    def name(self) -> str:
        """The backend's name."""
        return str(self.backend)

    def __repr__(self):
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


class GroupMember:
    """``GroupMember.WORLD``: the default group; ``NON_GROUP_MEMBER``: what ``new_group``
    returns to processes outside the new group.

    Example::

        >>> ember.distributed.GroupMember.NON_GROUP_MEMBER
        -100
    """

    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    """``group.WORLD``: the default process group (None before ``init_process_group``).

    Example::

        >>> ember.distributed.group.WORLD is None
        True
    """

    WORLD = None


class Work:
    """A handle on a collective started with ``async_op=True``.

    ``wait()`` blocks until it is done (raising DistBackendError after the group's
    timeout); ``is_completed()`` asks without blocking. The received data is written into
    the output tensors when the operation completes.

    Args:
        requests (sequence): the pending MPI requests.
        finish (callable, optional): run once they completed (unpacks received data).
        outputs (sequence of Tensors): the tensors the collective writes.
        timeout (float, optional): seconds ``wait()`` waits before raising.
        name (str): the collective's name, for error messages.
        result (optional): what ``result()`` returns (default: ``outputs``).

    Example::

        >>> w = ember.distributed.Work()   # a handle on nothing: already complete
        >>> w.wait(), w.is_completed()
        (True, True)
    """

    # NOTE [ MPI progress thread ] in _progress.py: while ``_driver`` is set, that thread
    # owns the requests; it sets ``_driven_done`` (or ``_failure``) when they complete
    _driver = None
    _driven_done = False
    _failure = None
    _event = None  # a profiler event (the collective's row) that ends when it completes
    _pg = None  # the group it runs on (``_run`` sets it): where a Future finds its driver
    _future = None  # the Future of ``get_future``: set by whichever thread completes it

    def __init__(self, requests=(), finish=None, outputs=(), timeout=None, name="collective",
                 result=None):
        self._requests = list(requests)
        self._finish = finish
        self._outputs = list(outputs)
        self._timeout = timeout
        self._name = name
        self._done = not self._requests and finish is None
        self._value = result
        # completion may race between the owner and the progress thread (NOTE [ Hook
        # futures on the progress thread ] in _progress.py): one of them unpacks
        self._lock = threading.Lock()

    def _complete(self):
        if self._done:
            return
        with self._lock:
            if self._done:
                return
            if self._event is not None and self._event.end is None:
                self._event.end = time.perf_counter_ns()
            if self._finish is not None:
                self._value = self._finish()
            self._done = True  # after the outputs are written: is_completed reads it
            fut, self._future = self._future, None
        if fut is not None and not fut.done():
            fut.set_result(self._outputs)

    def _settle(self) -> None:
        """On the progress thread, once the requests completed (or failed): unpack and
        complete the Future someone holds, running its callbacks on this thread."""
        if self._failure is None:
            self._complete()
            return
        with self._lock:
            fut, self._future = self._future, None
        if fut is not None and not fut.done():
            fut.set_exception(self._failure_error())

    def _await(self) -> None:
        """A driven work's Future is waited on: wait for the progress thread to complete it,
        within the group's timeout (on the progress thread itself -- a callback waiting on
        another collective -- take the work back and wait here)."""
        fut = self._future
        driver = self._driver
        if fut is None or driver is None or driver.is_current():
            self.wait()
            return
        limit = self._timeout
        if isinstance(limit, datetime.timedelta):
            limit = limit.total_seconds()
        if fut._event.wait(limit):
            return
        driver.take_back(self)
        if not self._done and not self._driven_done:
            raise DistBackendError(
                f"{self._name}: timed out after {limit:.1f} s waiting for the other ranks "
                "(a process may have died or not reached this collective)")
        self.wait()

    def _failure_error(self):
        return DistBackendError(f"{self._name}: the communication failed ({self._failure}); "
                                "another process may have died")

    def is_completed(self) -> bool:
        """Whether the operation has finished (never blocks)."""
        if self._done:
            return True
        if self._driver is not None:  # the progress thread tests it
            return False
        if self._failure is not None:
            return True  # finished, with an error that ``wait()`` raises
        if self._driven_done or _engine.mpi().Request.Testall(self._requests):
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until the operation finishes; True.

        Args:
            timeout: seconds or ``timedelta`` (default: the group's timeout).

        Raises:
            DistBackendError: it did not finish in time (a peer died or never joined).
        """
        if self._done:
            return True
        if self._driver is not None:
            self._driver.take_back(self)
        if self._failure is not None:
            raise self._failure_error()
        if not self._driven_done:
            limit = timeout if timeout is not None else self._timeout
            if isinstance(limit, datetime.timedelta):
                limit = limit.total_seconds()
            _wait_requests(self._requests, limit, self._name)
        self._complete()
        return True

    def is_success(self) -> bool:
        """Whether it finished without error."""
        return self.is_completed() and self._failure is None

    def exception(self):
        """The error it failed with, or None."""
        return None if self._failure is None else self._failure_error()

    def result(self) -> list:
        """The output tensors."""
        return self._outputs

    def source_rank(self) -> int:
        """For ``irecv`` from any source: the rank the message came from."""
        self.wait()
        return self._value if isinstance(self._value, int) else -1

    def synchronize(self) -> None:
        """Wait (CPU work has no stream to synchronize)."""
        self.wait()

    def get_future(self):
        """A ``Future`` whose value is ``result()`` once the operation is done. In a group
        of several processes the progress thread completes it and runs its ``then``
        callbacks, as gloo's threads do (NOTE [ Hook futures on the progress thread ]);
        elsewhere waiting on it waits for the operation (NOTE [ Lazy futures ])."""
        from ._future import from_work

        return from_work(self, self._outputs)


# NOTE [ Waiting on MPI ]
# MPI moves data only inside its progress calls (here ``Testall``): a large message goes a
# fragment per call (UCX copies 5 MB in ~10 pieces of ~0.1 ms), and MPICH's own ``Wait``
# busy-polls. Gloo instead blocks its threads in the kernel until data arrives. On a
# machine whose CPUs are shared (two ranks on two cores, or more processes than cores)
# a waiter that keeps polling takes CPU time from the peer it waits for, and one that
# yields after every call (``sleep(0)``) goes to the back of the run queue between two
# fragments: under load a 5 MB all-reduce then took ~60 calls and ~30 ms instead of ~12
# calls and ~3 ms. So the wait tells the two states apart by how long a progress call
# took. A call that did work (longer than ``_BUSY_CALL``) is followed at once by the next
# one, so a transfer runs at memory speed. Calls that find nothing to do mean a peer has
# not reached this point yet: after a short spin (a reply may be microseconds away; a
# shorter spin after a long call, since the first call after a nap often runs long on
# cold caches without moving anything) the waiter sleeps, each nap a quarter of the time
# waited so far (between ``_NAP_MIN`` and ``_NAP_MAX``). Noticing a peer that arrives
# then costs at most a quarter more than the wait itself, and a long wait costs little
# CPU: a rank blocked 1 s on its peer used 0.18-0.23 s of CPU polling with ``sleep(0)``,
# 0.03 s napping (2 CPUs at load ~8).

_BUSY_CALL = 15e-6  # seconds: a progress call longer than this moved data
_IDLE_SPINS = 64  # idle calls before the first nap
_RESPINS = 16  # idle calls before a nap after a call that moved data
_NAP_MIN, _NAP_MAX = 20e-6, 5e-3  # seconds


def _wait_requests(requests, limit, name):
    """Wait for MPI requests, dead peers failing after ``limit`` seconds (NOTE [ Waiting on
    MPI ])."""
    if not requests:
        return
    testall = _engine.mpi().Request.Testall
    clock = time.perf_counter
    begun = clock()
    deadline = None if limit is None else begun + limit
    idle = 0
    while True:
        start = clock()
        try:
            if testall(requests):
                return
        except _engine.mpi().Exception as e:  # a peer's connection broke: it died
            raise DistBackendError(f"{name}: the communication failed ({e.Get_error_string()}"
                                   "); another process may have died") from None
        now = clock()
        if deadline is not None and now > deadline:
            raise DistBackendError(
                f"{name}: timed out after {limit:.1f} s waiting for the other ranks "
                "(a process may have died or not reached this collective)")
        if now - start > _BUSY_CALL:  # data moved: the next fragment may be ready
            idle = min(idle, _IDLE_SPINS - _RESPINS)
            continue
        idle += 1
        if idle <= _IDLE_SPINS:
            continue
        time.sleep(min(_NAP_MAX, max(_NAP_MIN, (now - begun) / 4)))


# -- the default group ------------------------------------------------------------------------

_WORLD: ProcessGroup | None = None
_STORE: Store | None = None
_GROUPS: list = []


def is_initialized() -> bool:
    """Whether the default process group has been set up.

    Returns:
        bool

    Example::

        >>> ember.distributed.is_initialized()
        False
    """
    return _WORLD is not None


def _world() -> ProcessGroup:
    if _WORLD is None:
        raise ValueError(NOT_INITIALIZED)
    return _WORLD


def _resolve(group_) -> ProcessGroup:
    if group_ is None or group_ is GroupMember.WORLD:
        return _world()
    return group_


def _is_member(pg) -> bool:
    return pg is not GroupMember.NON_GROUP_MEMBER


def _seconds(t) -> float:
    return t.total_seconds() if isinstance(t, datetime.timedelta) else float(t)


def _rendezvous(init_method, rank, world_size, timeout, engine=True):
    """(store, rank, world_size) for ``init_method``; store is None under mpiexec. With
    ``engine`` (a process group's rendezvous), more than one process needs MPI, and its
    absence is said before any store opens; RPC's rendezvous needs only the store."""
    if init_method is None:
        init_method = "env://"
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    if "rank" in query:
        rank = int(query["rank"])
    if "world_size" in query:
        world_size = int(query["world_size"])
    if url.scheme == "env":
        env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        if env_rank is None and _engine.launched_by_mpiexec():
            r, n = _engine.world_rank_size()
            return None, (r if rank < 0 else rank), (n if world_size < 0 else world_size)
        if rank < 0:
            if env_rank is None:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                                 "environment variable RANK expected, but not set")
            rank = int(env_rank)
        if world_size < 0:
            if env_size is None:
                raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                                 "environment variable WORLD_SIZE expected, but not set")
            world_size = int(env_size)
        if world_size == 1:
            return None, rank, world_size
        if engine:
            _engine.require(world_size)
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if addr is None:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             "environment variable MASTER_ADDR expected, but not set")
        if port is None:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             "environment variable MASTER_PORT expected, but not set")
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == str(True):
            # the launcher serves the store (NOTE [ The agent's store ] in _run_agent.py); each
            # init_process_group of the group, the nth on every rank, gets its own keys
            agent_store = TCPStore(addr, int(port), world_size, False, timeout)
            n = agent_store.add(f"torchelastic/worker_init/{rank}", 1)
            store = PrefixStore(f"torchelastic/worker_init_{n}", agent_store)
            store._close_with = agent_store  # destroy_process_group closes the connection
        else:
            store = TCPStore(addr, int(port), world_size, rank == 0, timeout)
    elif url.scheme == "tcp":
        if rank < 0 or world_size < 0:
            raise ValueError("rank parameter missing" if rank < 0 else
                             "world_size parameter missing")
        if world_size == 1:
            return None, rank, world_size
        if engine:
            _engine.require(world_size)
        store = TCPStore(url.hostname, url.port, world_size, rank == 0, timeout)
    elif url.scheme == "file":
        if rank < 0 or world_size < 0:
            raise ValueError("rank parameter missing" if rank < 0 else
                             "world_size parameter missing")
        if engine:
            _engine.require(world_size)
        store = FileStore(url.path, world_size)
        store.set_timeout(timeout)
    else:
        raise RuntimeError(f"No rendezvous handler for {url.scheme}://")
    return store, rank, world_size


def _check_device_id(device_id) -> None:
    """``init_process_group(device_id=...)`` names the accelerator this rank binds: an
    indexed CUDA device that this installation can reach (PyTorch's checks, in its order)."""
    from .. import cuda

    if isinstance(device_id, int):
        if not cuda.is_available():
            raise ValueError("device_id is an int, but no accelerator support is found from "
                             "the current compilation. Please use a different compiled "
                             "version that supports your accelerator.")
        return
    if device_id.type != "cpu" and not cuda.is_available():
        raise ValueError(f"device_id {device_id} does not match the current compilation's "
                         "accelerator support: None. Please use a different compiled version "
                         "that supports your accelerator.")
    if device_id.type == "cpu" or device_id.index is None:
        raise ValueError("init_process_group device_id parameter must be an accelerator with "
                         "an index")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None) -> None:
    """Join this process to the default process group, over MPI (NOTE [ Engine ]).

    Args:
        backend: "gloo" or "mpi" (CPU, both run on MPI); "nccl" (CUDA tensors through
            CuPy's NCCL, CPU tensors on MPI; NOTE [ NCCL backend ]).
        init_method: "env://" (default: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the
            environment, or the ranks of mpiexec), "tcp://host:port" or "file://path".
        timeout: how long collectives and the rendezvous wait (default 30 minutes).
        world_size: number of processes (-1: from the environment).
        rank: this process's rank (-1: from the environment).
        store: a rendezvous store to use instead of ``init_method``.
        device_id (ember.device or int, optional): the CUDA device this rank uses
            (checked as PyTorch checks it: an indexed accelerator device).
        group_name, pg_options: accepted for compatibility.

    Returns:
        None

    Raises:
        ValueError: a second call, an unknown backend, or a ``device_id`` that is not an
            indexed accelerator this installation has.

    Example::

        >>> import ember.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29581",
        ...                         rank=0, world_size=1)  # doctest: +SKIP
        >>> dist.get_world_size()  # doctest: +SKIP
        1
    """
    global _WORLD, _STORE
    if _WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if device_id is not None:
        _check_device_id(device_id)
    if backend is None:
        backend = "gloo"
    text = str(backend).lower()
    if ":" in text:  # "cpu:gloo,cuda:nccl": the CUDA entry decides whether NCCL is used
        parts = dict(p.split(":", 1) for p in text.split(","))
        name = Backend("nccl" if parts.get("cuda") == "nccl" else parts.get("cpu", "gloo"))
    else:
        name = Backend(text)
    use_nccl = name == "nccl"
    if use_nccl:
        from .. import cuda
        from . import _nccl

        if not cuda.is_available() or not _nccl.available():
            raise RuntimeError("Distributed package doesn't have NCCL built in")
    elif name not in ("gloo", "mpi"):
        raise ValueError(f"Invalid backend: '{backend}'")
    if name == "mpi" and not _engine.available():
        raise RuntimeError("Distributed package doesn't have MPI built in: ember's \"mpi\" "
                           "backend is MPI through mpi4py, which is not installed; install it "
                           "with `pip install 'ember[distributed]'` (or use \"gloo\")")
    timeout = _DEFAULT_TIMEOUT if timeout is None else timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    if store is not None:
        if rank < 0 or world_size <= 0:
            raise ValueError("init_process_group: rank and world_size are required with store")
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        _engine.require(world_size)
    else:
        store, rank, world_size = _rendezvous(init_method, rank, world_size, timeout)
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                         f"[0, {world_size - 1}]")
    from ._collectives import set_debug_level_from_env

    set_debug_level_from_env()
    pg_store = None if store is None else PrefixStore("default_pg", store)
    comm = _engine.connect(pg_store, rank, world_size, _seconds(timeout))
    comm.Set_errhandler(_engine.mpi().ERRORS_RETURN)
    _STORE = store
    _WORLD = ProcessGroup(comm, range(world_size), name, timeout)
    if use_nccl:  # NOTE [ NCCL backend ] in _nccl.py
        from ._nccl import NcclComm

        _WORLD.nccl = NcclComm(None if store is None else PrefixStore("nccl", store), comm,
                               rank, world_size, _seconds(timeout))
    group.WORLD = GroupMember.WORLD = _WORLD
    _prefix_uncaught_errors(rank)


def _prefix_uncaught_errors(rank: int) -> None:
    """Print an uncaught exception's lines with ``[rank<N>]: `` in front, as PyTorch does.

    NOTE [ Rank-prefixed tracebacks ]
    Once a process joins a group, PyTorch wraps ``sys.excepthook`` so that the traceback
    of an exception nobody caught comes out with every line led by ``[rank<N>]: ``: the
    workers of a launcher share one terminal, and their tracebacks interleave. Scripts and
    log scrapers read that form (``grep '\\[rank1\\]'``), so ember does the same: the hook
    that was installed before (Python's, or the user's) still formats the exception; its
    output is captured and each non-empty line is prefixed. Like PyTorch, the wrapper is
    not removed by ``destroy_process_group`` (a later uncaught error still names its rank),
    and each ``init_process_group`` wraps the hook again.
    """
    previous = sys.excepthook
    prefix = f"[rank{rank}]"

    def hook(*exc_info):
        real_stderr, buf = sys.stderr, io.StringIO()
        sys.stderr = buf
        try:
            previous(*exc_info)
        finally:
            sys.stderr = real_stderr
        lines = buf.getvalue().split("\n")
        real_stderr.write("\n".join(f"{prefix}: {line}" if line else "" for line in lines))
        real_stderr.flush()

    sys.excepthook = hook


def destroy_process_group(group_=None) -> None:
    """Tear down a process group (the default one, and with it every group, by default).

    Args:
        group_: the group to destroy (default: all of them).

    Returns:
        None

    Example::

        >>> ember.distributed.destroy_process_group()
        Traceback (most recent call last):
        ...
        AssertionError: Process group cannot be None
    """
    global _WORLD, _STORE
    if group_ is None or group_ is _WORLD:
        if _WORLD is None:
            raise AssertionError("Process group cannot be None")
        _progress.stop()  # NOTE [ MPI progress thread ]: before the communicators go
        for pg in _GROUPS:
            pg.comm.Free()
        _GROUPS.clear()
        if _WORLD.nccl is not None:
            _WORLD.nccl.destroy()
        if _WORLD.comm != _engine.mpi().COMM_WORLD:
            _WORLD.comm.Free()
        own = getattr(_STORE, "_close_with", _STORE)
        if isinstance(own, TCPStore):
            own.close()
        _WORLD = _STORE = None
        group.WORLD = GroupMember.WORLD = None
        return
    if _is_member(group_):
        group_.comm.Free()
        if group_ in _GROUPS:
            _GROUPS.remove(group_)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A process group over the global ``ranks`` (all of them by default).

    As in PyTorch, every process of the default group should call it in the same order;
    only the members communicate (see NOTE [ Groups of members ]), so a group made by its
    members alone (``new_subgroups(group=...)`` inside a subgroup) works too.

    Args:
        ranks: the global ranks of the members; the group ranks follow this order sorted.
        timeout, backend, pg_options, use_local_synchronization, group_desc, device_id:
            as in PyTorch (the backend is the default group's).

    Returns:
        ProcessGroup, or ``GroupMember.NON_GROUP_MEMBER`` on processes outside it.

    Raises:
        ValueError: a rank is outside the default group.

    Example::

        >>> ember.distributed.new_group([0])  # doctest: +SKIP
    """
    world = _world()
    ranks = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"Invalid rank {r}, rank should be in the interval "
                             f"[0, {world.size() - 1}]")
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(_members_comm(world.comm, ranks), ranks, backend or world.backend,
                      timeout or world.timeout)
    _GROUPS.append(pg)
    return pg


# NOTE [ Groups of members ]
# A new group's communicator is made with MPI_Comm_create_group, which is collective over
# the new group's members only (MPI_Comm_split would need every process of the parent).
# PyTorch's gloo groups behave the same way: processes outside a group need not take part
# in making it, which is what lets the members of a subgroup split it further
# (``new_subgroups(group=...)``, ``split_group``) while the other processes do other work.
# The tag keeps concurrent creations of different groups apart.

def _members_comm(parent, ranks):
    """A communicator over ``ranks`` (ranks of ``parent``), made by those processes alone."""
    MPI = _engine.mpi()
    members = parent.Get_group().Incl(ranks)
    try:
        comm = parent.Create_group(members, tag=hash(tuple(ranks)) % 32767)
    finally:
        members.Free()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    return comm


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default group by default); -1 outside it.

    Args:
        group (ProcessGroup, optional): the group. Default: the default (world) group.

    Returns:
        int

    Example::

        >>> ember.distributed.get_rank()  # doctest: +SKIP
        0
    """
    if not _is_member(group):
        return -1
    return _resolve(group).rank()


def get_world_size(group=None) -> int:
    """How many processes ``group`` holds; -1 outside it.

    Args:
        group (ProcessGroup, optional): the group. Default: the default (world) group.

    Returns:
        int

    Example::

        >>> ember.distributed.get_world_size()  # doctest: +SKIP
        2
    """
    if not _is_member(group):
        return -1
    return _resolve(group).size()


def get_backend(group=None) -> Backend:
    """The backend name of ``group`` ("gloo", "mpi").

    Args:
        group (ProcessGroup, optional): the group. Default: the default (world) group.

    Returns:
        Backend

    Example::

        >>> ember.distributed.get_backend()  # doctest: +SKIP
        'gloo'
    """
    if not _is_member(group):
        raise ValueError("Invalid process group specified")
    return _resolve(group).backend


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order.

    Args:
        group (ProcessGroup or None): the group (None: the default group).

    Example::

        >>> ember.distributed.get_process_group_ranks(None)  # doctest: +SKIP
        [0, 1]
    """
    return list(_resolve(group).ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``.

    Args:
        group (ProcessGroup or None): the group (None: the default group).
        group_rank (int): a rank within ``group``.

    Example::

        >>> ember.distributed.get_global_rank(None, 0)  # doctest: +SKIP
        0
    """
    ranks = _resolve(group).ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank within ``group`` of the process with ``global_rank``.

    Args:
        group (ProcessGroup or None): the group (None: the default group).
        global_rank (int): a global rank, member of ``group``.

    Example::

        >>> ember.distributed.get_group_rank(None, 0)  # doctest: +SKIP
        0
    """
    ranks = _resolve(group).ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def _warn_not_in_group(name):
    warnings.warn(f"Running {name} on global rank {get_rank()} which does not belong to the "
                  "given group.", stacklevel=3)
