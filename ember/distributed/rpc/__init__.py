"""``ember.distributed.rpc``: remote procedure calls and remote references, as
``torch.distributed.rpc``.

Each process joins with ``init_rpc(name, rank=..., world_size=...)`` and may then run a
function on any worker (``rpc_sync``, ``rpc_async`` which returns an
``ember.futures.Future``), create a value there and keep a reference to it (``remote``,
``RRef``), and leave with ``shutdown()``, which waits for every worker's outstanding
work. The transport is Python's ``multiprocessing.connection`` over the same rendezvous
as ``init_process_group`` (NOTE [ RPC transport ] in ``_agent.py``); RRefs are
reference-counted by their owner (NOTE [ RRef lifetime ] in ``_rref.py``). Gradients
across calls: ``ember.distributed.autograd``; optimizers over RRefs:
``ember.distributed.optim.DistributedOptimizer``.

Example::

    >>> import ember.distributed.rpc as rpc
    >>> rpc.is_available()
    True
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import threading

from ...futures import Future
from . import _agent, _rref, _wire, backend_registry, constants, functions, options
from ._agent import WorkerInfo
from .backend_registry import BackendType
from ._rref import PyRRef, RRef
from .._store import Store
from .options import RpcBackendOptions, TensorPipeRpcBackendOptions

__all__ = [
    "BackendType", "PyRRef", "RRef", "RpcBackendOptions", "Store",
    "TensorPipeRpcBackendOptions", "WorkerInfo", "api", "backend_registry", "constants",
    "functions", "get_rpc_timeout", "get_worker_info", "init_rpc", "is_available", "logger",
    "options", "remote", "rpc_async", "rpc_sync", "shutdown",
]

#: the logger of ember.distributed.rpc
logger = logging.getLogger(__name__)

#: the process's agent, in a list so other modules read the live value
_AGENT: list = [None]
_STATE = {"generation": 0}  # init_rpc calls so far: a fresh key prefix for each
_INIT_LOCK = threading.Lock()


def is_available() -> bool:
    """Whether RPC can be used (always: it needs only the standard library).

    Returns:
        bool

    Example::

        >>> ember.distributed.rpc.is_available()
        True
    """
    return True


def _current_agent():
    agent = _AGENT[0]
    if agent is None:
        raise RuntimeError("RPC has not been initialized. Call "
                           "ember.distributed.rpc.init_rpc first.")
    return agent


def _store_for(init_method, rank, world_size, timeout):
    """(store or None, rank, world size) for the workers' rendezvous."""
    from .. import _group, _store

    # a default process group of the same size already met: reuse its store
    if _group.is_initialized() and _group._STORE is not None and \
            _group.get_world_size() == world_size:
        rank = _group.get_rank() if rank < 0 else rank
        return _store.PrefixStore("rpc", _group._STORE), rank, world_size
    return _group._rendezvous(init_method, rank, world_size, timeout, engine=False)


def init_rpc(name: str, backend=None, rank: int = -1, world_size=None,
             rpc_backend_options=None) -> None:
    """Join this process to the RPC group as worker ``name``.

    Args:
        name (str): a unique worker name (letters, digits, ``-``, ``_``, ``:``).
        backend (BackendType, optional): ``BackendType.TENSORPIPE`` (the default).
        rank (int): this worker's rank; -1 reads ``RANK`` (``env://``).
        world_size (int, optional): the number of workers; None reads ``WORLD_SIZE``.
        rpc_backend_options (TensorPipeRpcBackendOptions, optional): ``init_method``,
            ``rpc_timeout`` (default 60 s) and ``num_worker_threads`` (default 16).

    Raises:
        RuntimeError: RPC is already initialized, or ``name`` is invalid or taken.
        TypeError: ``backend`` or ``rpc_backend_options`` has the wrong type.

    Example::

        >>> os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")  # doctest: +SKIP
        >>> rpc.init_rpc("worker0", rank=0, world_size=2)                    # doctest: +SKIP
    """
    if backend is None:
        backend = backend_registry.BackendType.TENSORPIPE
    backend = backend_registry._live(backend)
    if rpc_backend_options is None:
        rpc_backend_options = backend_registry.construct_rpc_backend_options(backend)
    elif not isinstance(rpc_backend_options, RpcBackendOptions):
        raise TypeError(f"Argument rpc_backend_options must be an instance of "
                        f"RpcBackendOptions, got {type(rpc_backend_options).__name__}")
    WorkerInfo(name, 0)  # validates the name
    if not isinstance(rank, int) or isinstance(rank, bool):
        raise TypeError(f"Argument rank must be an int, got {type(rank).__name__}")
    with _INIT_LOCK:
        if _AGENT[0] is not None:
            raise RuntimeError("RPC is already initialized")
        if world_size is None:
            if "WORLD_SIZE" not in os.environ:
                raise ValueError("init_rpc: world_size is required (or set WORLD_SIZE); "
                                 "dynamic RPC groups are not supported")
            world_size = int(os.environ["WORLD_SIZE"])
        # how long to wait for the other workers here and in shutdown(): the RPC timeout,
        # at least a minute (processes start slowly), 30 minutes when RPCs never time out
        wait_s = float(rpc_backend_options.rpc_timeout)
        timeout = datetime.timedelta(seconds=max(wait_s, 60.0) if wait_s > 0 else 1800.0)
        store, rank, world_size = _store_for(rpc_backend_options.init_method, rank,
                                             int(world_size), timeout)
        gen = _STATE["generation"]
        _STATE["generation"] += 1
        if store is not None:
            from .._store import PrefixStore

            store = PrefixStore(f"g{gen}", store)
        agent = backend_registry.init_backend(backend, store, name, rank, world_size,
                                              rpc_backend_options)
        agent.rrefs = _rref._Table(rank)
        agent.store = store
        _AGENT[0] = agent


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    """Leave the RPC group. With ``graceful=True`` (the default) wait until every worker
    has called ``shutdown`` and every call made before it has been answered.

    Args:
        graceful (bool): wait for the other workers (False: stop at once).
        timeout (float): seconds to wait for the others; 0 uses the store's timeout.

    Raises:
        RuntimeError: RPC is not initialized.

    Example::

        >>> rpc.shutdown()    # doctest: +SKIP
    """
    agent = _current_agent()
    try:
        if graceful:
            for fut in agent.pending_futures():
                try:
                    fut.wait()
                except Exception:  # noqa: BLE001 - its caller sees the error
                    pass
            _barrier(agent, "shutdown", timeout)
    finally:
        agent.close()
        _AGENT[0] = None
    if graceful:
        # the store's server lives in rank 0: keep it until everyone has left the barrier
        _barrier(agent, "exit", timeout, only_rank0_waits=True)


def _barrier(agent, tag, timeout, only_rank0_waits=False):
    if agent.world_size == 1:
        return
    store = agent.store
    if store is None:  # mpiexec
        from .. import _engine

        _engine.mpi().COMM_WORLD.barrier()
        return
    if store.add(f"{tag}/count", 1) == agent.world_size:
        store.set(f"{tag}/done", b"1")
    if only_rank0_waits and agent.rank != 0:
        return
    store.wait([f"{tag}/done"], None if not timeout else datetime.timedelta(seconds=timeout))


def get_worker_info(worker_name=None) -> WorkerInfo:
    """The ``WorkerInfo`` of ``worker_name``, or of this worker when it is None.

    Args:
        worker_name (str, optional): a worker's name.

    Returns:
        WorkerInfo

    Raises:
        RuntimeError: RPC is not initialized, or no worker has that name.

    Example::

        >>> rpc.get_worker_info("worker1")    # doctest: +SKIP
        WorkerInfo(id=1, name=worker1)
    """
    agent = _current_agent()
    if worker_name is None:
        return agent.info
    return agent.worker_info(worker_name)


def get_rpc_timeout() -> float:
    """The default timeout of RPCs in seconds (``rpc_backend_options.rpc_timeout``).

    Returns:
        float

    Raises:
        RuntimeError: RPC is not initialized.

    Example::

        >>> rpc.get_rpc_timeout()    # doctest: +SKIP
        60.0
    """
    return _current_agent().timeout


def _call_args(args, kwargs):
    args = () if args is None else tuple(args)
    kwargs = {} if kwargs is None else dict(kwargs)
    return args, kwargs


def rpc_async(to, func, args=None, kwargs=None, timeout: float = -1.0) -> Future:
    """Run ``func(*args, **kwargs)`` on worker ``to`` without waiting; a Future of its
    result. Arguments and result are copied (pickled), tensors included; an error the
    function raises is raised by ``wait()`` with the same type, its message naming the
    worker and holding the remote traceback.

    Args:
        to (str or int or WorkerInfo): the worker.
        func (callable): a function the worker can import (module level, or a builtin).
        args (tuple, optional): positional arguments.
        kwargs (dict, optional): keyword arguments.
        timeout (float): seconds before the Future fails with a RuntimeError; -1 uses the
            default (``get_rpc_timeout()``), 0 waits forever.

    Returns:
        ember.futures.Future

    Raises:
        RuntimeError: RPC is not initialized, or ``to`` is not a worker.

    Example::

        >>> fut = rpc.rpc_async("worker1", ember.add, args=(ember.ones(2), 3))  # doctest: +SKIP
        >>> fut.wait()                                                          # doctest: +SKIP
        tensor([4., 4.])
    """
    agent = _current_agent()
    dst = agent.worker_info(to)
    args, kwargs = _call_args(args, kwargs)
    payload = (func, args, kwargs)
    dist_autograd = sys.modules.get("ember.distributed.autograd")
    if dist_autograd is not None:  # inside a context: record it (NOTE [ Distributed backward ])
        payload = dist_autograd._wrap(payload, dst.id, kind="call")
    return agent.request(dst, "call", payload, timeout)


def rpc_sync(to, func, args=None, kwargs=None, timeout: float = -1.0):
    """Run ``func(*args, **kwargs)`` on worker ``to`` and wait for its result (see
    ``rpc_async`` for the errors).

    Args:
        to (str or int or WorkerInfo): the worker.
        func (callable): a function the worker can import (module level, or a builtin).
        args (tuple, optional): positional arguments.
        kwargs (dict, optional): keyword arguments.
        timeout (float): seconds before the call fails with a RuntimeError; -1 uses the
            default (``get_rpc_timeout()``), 0 waits forever.

    Returns:
        The function's result.

    Example::

        >>> rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 3))    # doctest: +SKIP
        tensor([4., 4.])
    """
    return rpc_async(to, func, args, kwargs, timeout).wait()


def remote(to, func, args=None, kwargs=None, timeout: float = -1.0) -> RRef:
    """Run ``func(*args, **kwargs)`` on worker ``to`` and keep the result there; an RRef
    to it, returned at once. ``to_here()`` fetches the value (raising the function's
    error, if any); the value is freed when no RRef to it is left (NOTE [ RRef lifetime ]).

    Args:
        to (str or int or WorkerInfo): the worker that will own the result.
        func (callable): a function the worker can import.
        args (tuple, optional): positional arguments.
        kwargs (dict, optional): keyword arguments.
        timeout (float): seconds for the owner to confirm; -1 uses the default.

    Returns:
        RRef

    Example::

        >>> rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 1))  # doctest: +SKIP
        >>> rref.to_here()                                                  # doctest: +SKIP
        tensor([2., 2.])
    """
    agent = _current_agent()
    dst = agent.worker_info(to)
    args, kwargs = _call_args(args, kwargs)
    rref_id = agent.rrefs.new_id()
    payload = (rref_id, func, args, kwargs)
    dist_autograd = sys.modules.get("ember.distributed.autograd")
    if dist_autograd is not None:  # inside a context: record it (NOTE [ Distributed backward ])
        payload = dist_autograd._wrap(payload, dst.id, kind="remote")
    if dst.id == agent.rank:
        # owned here: run on the pool, on copies of the arguments as for any other worker
        _, func, args, kwargs = _agent._open(_wire.copy_by_pickling(payload))
        entry = _rref._Owned(Future(), 0)

        def work():
            try:
                _rref.settle(entry.future, _rref.run_function(func, args, kwargs))
            except Exception as e:  # noqa: BLE001 - raised by to_here()
                entry.future.set_exception(e)

        agent._pool.submit(work)
        return RRef._make(dst, rref_id, None, entry=entry)
    confirmed = agent.request(dst, "remote", payload, 0)
    return RRef._make(dst, rref_id, agent.rrefs.new_id(), confirmed=confirmed)


def __getattr__(name):
    # ``rpc.api`` re-exports this package's names, so it loads on first use
    if name == "api":
        import importlib

        return importlib.import_module(".api", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
