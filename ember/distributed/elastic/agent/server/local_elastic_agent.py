"""The agent of worker processes on this node (``torch.distributed.elastic.agent.server.
local_elastic_agent``): ``LocalElasticAgent(spec, logs_specs).run()`` runs the loop of
:class:`~.api.SimpleElasticAgent` with the workers as local processes
(:func:`~ember.distributed.elastic.multiprocessing.start_processes`), each given
torchrun's environment. Group rank 0's agent serves the workers' store (NOTE [ The
agent's store ] in ``ember/distributed/_run_agent.py``).

With ``TORCHELASTIC_ENABLE_FILE_TIMER=1`` the agent runs a
:class:`~ember.distributed.elastic.timer.FileTimerServer` and gives the workers its pipe
in ``TORCHELASTIC_TIMER_FILE``, so ``expires`` blocks in workers can be enforced.

Example::

    >>> from ember.distributed.elastic.agent.server import WorkerSpec
    >>> from ember.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    >>> from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs
    >>> from ember.distributed.elastic.rendezvous.static_tcp_rendezvous import (
    ...     StaticTCPRendezvous)
    >>> spec = WorkerSpec("trainer", 1, StaticTCPRendezvous("127.0.0.1", 0, 0, 1, "job", 30),
    ...                   entrypoint="true", max_restarts=0)
    >>> LocalElasticAgent(spec, DefaultLogsSpecs(log_dir="/dev/null")).run().state.value
    'SUCCEEDED'
"""

from __future__ import annotations

import datetime
import os
import signal
import time
import uuid
from string import Template
from typing import Any

from ...multiprocessing import LogsSpecs, PContext, start_processes
from ...utils import macros
from ...utils.logging import get_logger
from .api import RunResult, SimpleElasticAgent, WorkerGroup, WorkerSpec, WorkerState
from .health_check_server import HealthCheckServer, create_healthcheck_server

__all__ = ["LocalElasticAgent", "TORCHELASTIC_ENABLE_FILE_TIMER",
           "TORCHELASTIC_HEALTH_CHECK_PORT", "TORCHELASTIC_TIMER_FILE",
           "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"]

logger = get_logger(__name__)

TORCHELASTIC_ENABLE_FILE_TIMER = "TORCHELASTIC_ENABLE_FILE_TIMER"
TORCHELASTIC_HEALTH_CHECK_PORT = "TORCHELASTIC_HEALTH_CHECK_PORT"
TORCHELASTIC_TIMER_FILE = "TORCHELASTIC_TIMER_FILE"
TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT = "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"


class LocalElasticAgent(SimpleElasticAgent):
    """Runs ``spec``'s workers as processes of this node (see the module).

    Args:
        spec (WorkerSpec): what to run.
        logs_specs (LogsSpecs): where the workers' output goes.
        start_method (str): for function entrypoints: ``spawn``, ``fork``, ``forkserver``.
        exit_barrier_timeout (float): seconds to wait for the other agents at the end.
        log_line_prefix_template (str, optional): console prefix of tee'd lines, with
            ``${role_name}``, ``${rank}``, ``${local_rank}``.
        shutdown_timeout (int): seconds between SIGTERM and SIGKILL.
        health_check_server (HealthCheckServer, optional): reports the agent's health.

    Example::

        >>> LocalElasticAgent.__mro__[1].__name__
        'SimpleElasticAgent'
    """

    def __init__(self, spec: WorkerSpec, logs_specs: LogsSpecs, start_method="spawn",
                 exit_barrier_timeout: float = 300, log_line_prefix_template: str | None = None,
                 shutdown_timeout: int = 30,
                 health_check_server: HealthCheckServer | None = None,
                 uninterruptible_state_timeout: float | None = None):
        super().__init__(spec, exit_barrier_timeout, shutdown_timeout)
        self._start_method = start_method
        self._pcontext: PContext | None = None
        self._rdzv_handler = spec.rdzv_handler
        self._log_line_prefix_template = log_line_prefix_template
        self._worker_watchdog = None
        self._logs_specs = logs_specs
        self._health_check_server = health_check_server
        self._worker_store = None

    def _setup_local_watchdog(self, envs: dict[int, dict[str, str]]) -> None:
        if os.getenv(TORCHELASTIC_ENABLE_FILE_TIMER) != "1" or self._worker_watchdog:
            return
        from ...timer import FileTimerServer

        path = os.getenv(TORCHELASTIC_TIMER_FILE) or \
            f"/tmp/watchdog_timer_{uuid.uuid4()}"  # noqa: S108 - PyTorch's location
        self._worker_watchdog = FileTimerServer(path, self._rdzv_handler.get_run_id(),
                                                max_interval=0.1, daemon=True)
        self._worker_watchdog.start()
        for env in envs.values():
            env[TORCHELASTIC_TIMER_FILE] = path

    def _setup_healthcheck(self) -> None:
        port = os.getenv(TORCHELASTIC_HEALTH_CHECK_PORT)
        if port is None or self._health_check_server is not None:
            return
        self._health_check_server = create_healthcheck_server(
            alive_callback=lambda: int(time.time()), port=int(port), timeout=60)
        self._health_check_server.start()

    def _serve_worker_store(self, worker_group: WorkerGroup) -> None:
        # group rank 0 serves the workers' store at MASTER_PORT unless something serves
        # it already (the static rendezvous' own store is there)
        from ...._store import TCPStore

        if self._worker_store is not None:
            self._worker_store.close()
            self._worker_store = None
        if worker_group.group_rank != 0:
            return
        if worker_group.master_port is None:
            from ...utils.distributed import get_free_port

            worker_group.master_port = get_free_port()
        try:
            self._worker_store = TCPStore("127.0.0.1", worker_group.master_port,
                                          is_master=True, wait_for_workers=False,
                                          timeout=datetime.timedelta(seconds=60))
        except OSError:
            self._worker_store = None  # the rendezvous' store already serves this port

    def _start_workers(self, worker_group: WorkerGroup) -> dict[int, Any]:
        spec = worker_group.spec
        self._serve_worker_store(worker_group)
        restart_count = spec.max_restarts - self._remaining_restarts
        args, envs = {}, {}
        prefixes: dict[int, str] | None = {} if self._log_line_prefix_template else None
        for w in worker_group.workers:
            envs[w.local_rank] = {
                "LOCAL_RANK": str(w.local_rank), "RANK": str(w.global_rank),
                "GROUP_RANK": str(worker_group.group_rank), "ROLE_RANK": str(w.role_rank),
                "ROLE_NAME": spec.role, "LOCAL_WORLD_SIZE": str(spec.local_world_size),
                "WORLD_SIZE": str(w.world_size),
                "GROUP_WORLD_SIZE": str(worker_group.group_world_size),
                "ROLE_WORLD_SIZE": str(w.role_world_size),
                "MASTER_ADDR": worker_group.master_addr,
                "MASTER_PORT": str(worker_group.master_port),
                "TORCHELASTIC_RESTART_COUNT": str(restart_count),
                "TORCHELASTIC_MAX_RESTARTS": str(spec.max_restarts),
                "TORCHELASTIC_RUN_ID": spec.rdzv_handler.get_run_id(),
                "TORCHELASTIC_USE_AGENT_STORE": str(True),
                "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.getenv(
                    "TORCH_NCCL_ASYNC_ERROR_HANDLING", str(1)),
            }
            if "OMP_NUM_THREADS" in os.environ:
                envs[w.local_rank]["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
            if prefixes is not None:
                prefixes[w.local_rank] = Template(self._log_line_prefix_template) \
                    .safe_substitute(role_name=spec.role, rank=w.global_rank,
                                     local_rank=w.local_rank)
            args[w.local_rank] = tuple(macros.substitute(list(spec.args), str(w.local_rank)))
        self._setup_local_watchdog(envs)
        self._setup_healthcheck()
        self._pcontext = start_processes(name=spec.role, entrypoint=spec.entrypoint,
                                         args=args, envs=envs, logs_specs=self._logs_specs,
                                         log_line_prefixes=prefixes,
                                         start_method=self._start_method)
        return self._pcontext.pids()

    def _stop_workers(self, worker_group: WorkerGroup) -> None:
        self._shutdown(is_restart=True)

    def _shutdown(self, death_sig: signal.Signals = signal.SIGTERM,
                  is_restart: bool = False) -> None:
        if self._worker_watchdog is not None and not is_restart:
            self._worker_watchdog.stop()
            self._worker_watchdog = None
        if self._health_check_server is not None and not is_restart:
            self._health_check_server.stop()
            self._health_check_server = None
        if self._pcontext:
            self._pcontext.close(death_sig, timeout=self._shutdown_timeout)
        if self._worker_store is not None and not is_restart:
            self._worker_store.close()
            self._worker_store = None
        if not is_restart and self._rdzv_handler:
            self._rdzv_handler.shutdown()

    def _monitor_workers(self, worker_group: WorkerGroup) -> RunResult:
        role = worker_group.spec.role
        worker_pids = {w.id for w in worker_group.workers}
        if self._pcontext is None:
            raise AssertionError("the workers were not started")
        pc_pids = set(self._pcontext.pids().values())
        if worker_pids != pc_pids:
            logger.error("[%s] worker pids do not match process_context pids. Expected: %s, "
                         "actual: %s", role, worker_pids, pc_pids)
            return RunResult(state=WorkerState.UNKNOWN)
        result = self._pcontext.wait(0)
        if result is None:
            return RunResult(state=WorkerState.HEALTHY)
        if result.is_failed():
            failures = {}
            for w in worker_group.workers:
                failure = result.failures.get(w.local_rank)
                if failure:
                    failures[w.global_rank] = failure
            return RunResult(state=WorkerState.FAILED, failures=failures)
        values = {w.global_rank: result.return_values[w.local_rank]
                  for w in worker_group.workers}
        return RunResult(state=WorkerState.SUCCEEDED, return_values=values)
