"""The agent's model of its workers (``torch.distributed.elastic.agent.server.api``):
what to run (:class:`WorkerSpec`), the workers of one attempt (:class:`WorkerGroup` of
:class:`Worker`), their state (:class:`WorkerState`) and outcome (:class:`RunResult`), and
:class:`SimpleElasticAgent`, the loop every agent runs: rendezvous, assign ranks, start
the workers, watch them, restart them on failure (``max_restarts`` times) or when nodes
wait to join, and finally wait for the other agents (the exit barrier).

NOTE [ Ranks of an elastic group ]
After each rendezvous, every agent publishes ``(role, local_world_size)`` in the group's
store and reads every agent's. A worker's global rank is its local rank plus the local
world sizes of the agents of lower group rank; its role rank counts only the agents of its
role. All agents compute the same numbers from the same list, without a leader.

Example::

    >>> from ember.distributed.elastic.agent.server.api import RunResult, WorkerState
    >>> RunResult(WorkerState.SUCCEEDED, return_values={0: 1}).is_failed()
    False
"""

from __future__ import annotations

import abc
import json
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from collections.abc import Callable

from ...events import Event, EventSource, record
from ...metrics import prof, put_metric
from ...multiprocessing import ProcessFailure, SignalException
from ...rendezvous import RendezvousGracefulExitError, RendezvousHandler
from ...utils.logging import get_logger

__all__ = ["DEFAULT_ROLE", "ElasticAgent", "RunResult", "SimpleElasticAgent", "Worker",
           "WorkerGroup", "WorkerSpec", "WorkerState"]

DEFAULT_ROLE = "default"
logger = get_logger(__name__)


@dataclass
class WorkerSpec:
    """What an agent runs: ``local_world_size`` workers of ``role``, each running
    ``entrypoint`` (a function, or a program given ``args``; ``${local_rank}`` in the
    arguments becomes each worker's local rank), meeting through ``rdzv_handler``.

    Args:
        role (str): the workers' role.
        local_world_size (int): workers on this node.
        rdzv_handler (RendezvousHandler): the rendezvous.
        fn (callable, optional): the entrypoint (older name).
        entrypoint (callable or str): the function or program.
        args (tuple): its arguments.
        max_restarts (int): restarts of a failed group.
        monitor_interval (float): seconds between checks.
        master_port (int, optional): the workers' store port (default: the rendezvous').
        master_addr (str, optional): its address.
        local_addr (str, optional): this node's address.

    Raises:
        AssertionError: no entrypoint, or non-positive sizes or interval.

    Example::

        >>> from ember.distributed.elastic.rendezvous.static_tcp_rendezvous import (
        ...     StaticTCPRendezvous)
        >>> h = StaticTCPRendezvous("127.0.0.1", 0, 0, 1, "job", 5)
        >>> WorkerSpec("trainer", 2, h, entrypoint="/usr/bin/python").get_entrypoint_name()
        'python'
    """

    role: str
    local_world_size: int
    rdzv_handler: RendezvousHandler
    fn: Callable | None = None
    entrypoint: Callable | str | None = None
    args: tuple = ()
    max_restarts: int = 3
    monitor_interval: float = 0.1
    master_port: int | None = None
    master_addr: str | None = None
    local_addr: str | None = None
    event_log_handler: str = "null"
    numa_options: Any = None
    duplicate_stdout_filters: list[str] | None = None
    duplicate_stderr_filters: list[str] | None = None
    virtual_local_rank: bool = False

    def __post_init__(self):
        if self.local_world_size <= 0:
            raise AssertionError(f"local_world_size must be positive, got "
                                 f"{self.local_world_size}")
        if self.monitor_interval <= 0:
            raise AssertionError(f"monitor_interval must be positive, got "
                                 f"{self.monitor_interval}")
        if self.fn:
            self.entrypoint = self.fn
        if not self.entrypoint:
            raise AssertionError("WorkerSpec needs an entrypoint (or fn)")

    def get_entrypoint_name(self) -> str:
        """The program's base name, or the function's qualified name.

        Returns:
            str
        """
        if isinstance(self.entrypoint, str):
            return os.path.basename(self.entrypoint)
        return self.entrypoint.__qualname__


class Worker:
    """One worker: its local, global and role ranks and the sizes of its groups (-1 until
    assigned), and its process id once started.

    Args:
        local_rank (int): its local rank.
        global_rank (int): its rank in the job.
        role_rank (int): its rank among its role.
        world_size (int): the job's size.
        role_world_size (int): its role's size.

    Example::

        >>> Worker(local_rank=1).global_rank
        -1
    """

    __slots__ = ["id", "local_rank", "global_rank", "role_rank", "world_size",
                 "role_world_size"]

    def __init__(self, local_rank: int, global_rank: int = -1, role_rank: int = -1,
                 world_size: int = -1, role_world_size: int = -1):
        self.id: Any = None
        self.local_rank = local_rank
        self.global_rank = global_rank
        self.role_rank = role_rank
        self.world_size = world_size
        self.role_world_size = role_world_size

    def __str__(self):
        return (f"local_rank={self.local_rank},global_rank={self.global_rank}"
                f",role_rank={self.role_rank},world_size={self.world_size}"
                f",role_world_size={self.role_world_size}")

    def __repr__(self):
        return str(self)


class WorkerState(str, Enum):
    """A worker group's state: ``UNKNOWN``, ``INIT``, ``HEALTHY``, ``UNHEALTHY``,
    ``STOPPED``, ``SUCCEEDED``, ``FAILED``.

    Example::

        >>> WorkerState.is_running(WorkerState.FAILED)
        False
    """

    UNKNOWN = "UNKNOWN"
    INIT = "INIT"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @staticmethod
    def is_running(state: WorkerState) -> bool:
        """Whether workers in ``state`` still run (HEALTHY or UNHEALTHY).

        Args:
            state (WorkerState): the state.

        Returns:
            bool
        """
        return state in {WorkerState.HEALTHY, WorkerState.UNHEALTHY}


class WorkerGroup:
    """The workers of one spec on this node, for one attempt: their state, the group's
    store, this node's group rank and the node count, and the workers' store address.

    Args:
        spec (WorkerSpec): what they run.

    Example::

        >>> from ember.distributed.elastic.rendezvous.static_tcp_rendezvous import (
        ...     StaticTCPRendezvous)
        >>> spec = WorkerSpec("r", 2, StaticTCPRendezvous("h", 1, 0, 1, "j", 5), entrypoint="x")
        >>> [w.local_rank for w in WorkerGroup(spec).workers]
        [0, 1]
    """

    __slots__ = ["spec", "workers", "store", "group_rank", "group_world_size", "state",
                 "master_addr", "master_port"]

    def __init__(self, spec: WorkerSpec):
        self.spec = spec
        self.workers = [Worker(local_rank=i) for i in range(spec.local_world_size)]
        self.store = None
        self.group_rank = None
        self.group_world_size = None
        self.master_addr = None
        self.master_port = None
        self.state = WorkerState.INIT


@dataclass
class RunResult:
    """The outcome of an agent's run: the final state, the workers' return values (by
    global rank) when they succeeded, the failures otherwise.

    Example::

        >>> RunResult(WorkerState.FAILED).is_failed()
        True
    """

    state: WorkerState
    return_values: dict[int, Any] = field(default_factory=dict)
    failures: dict[int, ProcessFailure] = field(default_factory=dict)

    def is_failed(self) -> bool:
        """Whether the workers failed.

        Returns:
            bool
        """
        return self.state == WorkerState.FAILED


class ElasticAgent(abc.ABC):
    """An agent: ``run()`` until its workers succeed or fail for good.

    Example::

        >>> ElasticAgent.__abstractmethods__ == frozenset({"run", "get_worker_group"})
        True
    """

    @abc.abstractmethod
    def run(self, role: str = DEFAULT_ROLE) -> RunResult:
        """Run the workers to the end (restarting them as allowed)."""

    @abc.abstractmethod
    def get_worker_group(self, role: str = DEFAULT_ROLE) -> WorkerGroup:
        """The worker group of ``role``."""


def _encode(role: str, local_world_size: int) -> bytes:
    return json.dumps({"role": role, "local_world_size": local_world_size}).encode()


class SimpleElasticAgent(ElasticAgent):
    """The agent loop of one spec (see the module); subclasses start, stop and watch the
    processes (``_start_workers``, ``_stop_workers``, ``_monitor_workers``, ``_shutdown``).

    Args:
        spec (WorkerSpec): what to run.
        exit_barrier_timeout (float): seconds to wait for the other agents at the end.
        shutdown_timeout (int): seconds between SIGTERM and SIGKILL when stopping.

    Example::

        >>> SimpleElasticAgent.__abstractmethods__ >= {"_start_workers", "_monitor_workers"}
        True
    """

    def __init__(self, spec: WorkerSpec, exit_barrier_timeout: float = 300,
                 shutdown_timeout: int = 30):
        self._worker_group = WorkerGroup(spec)
        self._remaining_restarts = spec.max_restarts
        self._store = None
        self._exit_barrier_timeout = exit_barrier_timeout
        self._total_execution_time = 0
        self._shutdown_timeout = shutdown_timeout

    def get_worker_group(self, role: str = DEFAULT_ROLE) -> WorkerGroup:
        """The worker group.

        Args:
            role (str): ignored (one spec per agent).

        Returns:
            WorkerGroup
        """
        return self._worker_group

    @abc.abstractmethod
    def _start_workers(self, worker_group: WorkerGroup) -> dict[int, Any]:
        ...

    @abc.abstractmethod
    def _stop_workers(self, worker_group: WorkerGroup) -> None:
        ...

    @abc.abstractmethod
    def _monitor_workers(self, worker_group: WorkerGroup) -> RunResult:
        ...

    @abc.abstractmethod
    def _shutdown(self, death_sig: signal.Signals = signal.SIGTERM) -> None:
        ...

    def _rendezvous(self, worker_group: WorkerGroup) -> None:
        spec = worker_group.spec
        info = spec.rdzv_handler.next_rendezvous()
        self._store = info.store
        worker_group.workers = self._assign_worker_ranks(info.store, info.rank,
                                                         info.world_size, spec)
        worker_group.store = info.store
        worker_group.group_rank = info.rank
        worker_group.group_world_size = info.world_size
        bootstrap = info.bootstrap_store_info
        worker_group.master_addr = spec.master_addr or (
            bootstrap.master_addr if bootstrap else (spec.local_addr or socket.getfqdn()))
        worker_group.master_port = spec.master_port or (
            bootstrap.master_port if bootstrap else None)
        logger.info("[%s] Rendezvous complete for workers. Result:\n  restart_count=%s\n  "
                    "master_addr=%s\n  master_port=%s\n  group_rank=%s\n  group_world_size=%s",
                    spec.role, spec.max_restarts - self._remaining_restarts,
                    worker_group.master_addr, worker_group.master_port, info.rank,
                    info.world_size)

    def _assign_worker_ranks(self, store, group_rank: int, group_world_size: int,
                             spec: WorkerSpec) -> list[Worker]:
        # NOTE [ Ranks of an elastic group ]
        from ...utils.store import synchronize

        prefix = "torchelastic/role_info/"
        infos = [json.loads(b) for b in synchronize(
            store, _encode(spec.role, spec.local_world_size), group_rank, group_world_size,
            prefix)]
        sizes = [i["local_world_size"] for i in infos]
        world = sum(sizes)
        base = sum(sizes[:group_rank])
        same_role = [i["local_world_size"] if i["role"] == spec.role else 0 for i in infos]
        role_world = sum(same_role)
        role_base = sum(same_role[:group_rank])
        return [Worker(local_rank=i, global_rank=base + i, role_rank=role_base + i,
                       world_size=world, role_world_size=role_world)
                for i in range(spec.local_world_size)]

    @prof
    def _initialize_workers(self, worker_group: WorkerGroup) -> None:
        worker_group.state = WorkerState.INIT
        self._rendezvous(worker_group)
        worker_ids = self._start_workers(worker_group)
        for w in worker_group.workers:
            w.id = worker_ids[w.local_rank]
        worker_group.state = WorkerState.HEALTHY

    @prof
    def _restart_workers(self, worker_group: WorkerGroup) -> None:
        self._stop_workers(worker_group)
        worker_group.state = WorkerState.STOPPED
        self._initialize_workers(worker_group)

    @prof
    def run(self, role: str = DEFAULT_ROLE) -> RunResult:
        """Run the workers to the end: restart them after a failure while restarts are
        left, or when nodes wait to join; stop them on a termination signal.

        Args:
            role (str): the role (informational).

        Returns:
            RunResult

        Raises:
            SignalException: the agent received SIGTERM/SIGINT/SIGHUP/SIGQUIT.
        """
        start = time.monotonic()
        shutdown_called = False
        try:
            result = self._invoke_run(role)
            self._total_execution_time = int(time.monotonic() - start)
            self._record_worker_events(result)
            return result
        except RendezvousGracefulExitError as e:
            logger.info("Rendezvous gracefully exited: %s", e)
            return RunResult(WorkerState.SUCCEEDED)
        except SignalException as e:
            logger.warning("Received %s death signal, shutting down workers", e.sigval)
            self._shutdown(e.sigval)
            shutdown_called = True
            raise
        finally:
            if not shutdown_called:
                self._shutdown()

    def _record_worker_events(self, result: RunResult) -> None:
        spec = self._worker_group.spec
        for worker in self._worker_group.workers:
            failure = result.failures.get(worker.global_rank)
            state = "FAILED" if failure else result.state.value
            record(Event(f"torchelastic.worker.status.{state}", EventSource.WORKER,
                         metadata={"run_id": spec.rdzv_handler.get_run_id(),
                                   "global_rank": worker.global_rank,
                                   "local_rank": worker.local_rank, "role": spec.role,
                                   "state": state,
                                   "raw_error": json.dumps(failure.error_file_data)
                                   if failure else None}),
                   spec.event_log_handler)

    def _invoke_run(self, role: str = DEFAULT_ROLE) -> RunResult:
        spec = self._worker_group.spec
        self._initialize_workers(self._worker_group)
        rdzv = spec.rdzv_handler
        while True:
            time.sleep(spec.monitor_interval)
            result = self._monitor_workers(self._worker_group)
            state = result.state
            self._worker_group.state = state
            put_metric(f"workers.{spec.role}.remaining_restarts", self._remaining_restarts)
            put_metric(f"workers.{spec.role}.{state.name.lower()}", 1)
            if state == WorkerState.SUCCEEDED:
                logger.info("[%s] worker group successfully finished. Waiting %s seconds for "
                            "other agents to finish.", spec.role, self._exit_barrier_timeout)
                self._exit_barrier()
                return result
            if state in {WorkerState.UNHEALTHY, WorkerState.FAILED}:
                if self._remaining_restarts > 0:
                    logger.info("[%s] Worker group %s. %s/%s attempts left; will restart "
                                "worker group", spec.role, state.name, self._remaining_restarts,
                                spec.max_restarts)
                    self._remaining_restarts -= 1
                    self._restart_workers(self._worker_group)
                else:
                    self._stop_workers(self._worker_group)
                    self._worker_group.state = WorkerState.FAILED
                    return result
            elif state == WorkerState.HEALTHY and rdzv.num_nodes_waiting() > 0:
                logger.info("[%s] Detected %s new nodes from group_rank=%s; will restart "
                            "worker group", spec.role, rdzv.num_nodes_waiting(),
                            self._worker_group.group_rank)
                self._restart_workers(self._worker_group)

    def _exit_barrier(self) -> None:
        from ...utils.store import barrier

        group = self._worker_group
        if not group.group_world_size or group.group_world_size <= 1:
            return
        try:
            barrier(self._store, group.group_world_size,
                    "torchelastic/agent/exit_barrier",
                    self._exit_barrier_timeout, rank=group.group_rank)
        except Exception:  # noqa: BLE001 - the workers succeeded; only the wait failed
            logger.exception("Error waiting on exit barrier. Elapsed: %s seconds",
                             self._exit_barrier_timeout)
