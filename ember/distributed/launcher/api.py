"""Starting a group of workers from Python (``torch.distributed.launcher.api``): what
``python -m ember.distributed.run`` does from the command line, callable from a program
(accelerate's ``notebook_launcher`` starts training functions this way).

``elastic_launch(config, entrypoint)(*args)`` starts ``config.nproc_per_node`` workers on
this machine, each with torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``, ...), and returns ``{rank: return value}``:

- a callable ``entrypoint`` runs in new processes (``config.start_method``, ``"spawn"`` by
  default) as ``entrypoint(*args)``; it must be importable (defined at a module's top
  level), its return value is sent back; a group whose worker fails is started again up to
  ``config.max_restarts`` times, then :class:`ChildFailedError` names the failures;
- a string ``entrypoint`` is a program run as ``entrypoint *args`` through the launcher
  (``--no-python``), several nodes included; each worker's return value is None.

Example::

    >>> from ember.distributed.launcher.api import LaunchConfig, elastic_launch
    >>> cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2, max_restarts=0)
    >>> # elastic_launch(cfg, train)(lr)  ->  {0: ..., 1: ...}
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..elastic.agent.server.api import WorkerSpec
from ..elastic.agent.server.health_check_server import HealthCheckServer, create_healthcheck_server
from ..elastic.agent.server.local_elastic_agent import (
    TORCHELASTIC_HEALTH_CHECK_PORT,
    LocalElasticAgent,
)
from ..elastic.multiprocessing import DefaultLogsSpecs, LogsSpecs, SignalException
from ..elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from ..elastic.rendezvous.api import RendezvousParameters
from ..elastic.rendezvous.utils import parse_rendezvous_endpoint
from ..elastic.utils.logging import get_logger

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]

# the names PyTorch's module holds too (tools import them from here)
_REEXPORTED = (DefaultLogsSpecs, HealthCheckServer, LocalElasticAgent, LogsSpecs,
               SignalException, TORCHELASTIC_HEALTH_CHECK_PORT, WorkerSpec,
               create_healthcheck_server, parse_rendezvous_endpoint)
logger = get_logger(__name__)


@dataclass
class LaunchConfig:
    """What :func:`launch_agent` starts: the nodes and workers per node, the rendezvous and
    the restart policy (torch's field names; those about logging, metrics, NUMA and health
    checks are accepted and unused).

    Args:
        min_nodes (int): fewest nodes. max_nodes (int): most nodes.
        nproc_per_node (int): workers on this node.
        run_id (str): the job's id (default: a fresh one).
        role (str): the workers' role name.
        rdzv_endpoint (str): ``host:port`` of the rendezvous (default: this machine, a free
            port).
        rdzv_backend (str): ``"c10d"`` or ``"static"`` (``"etcd"``, torch's default, is read
            as c10d).
        rdzv_configs (dict): extra rendezvous settings (``rank`` of this node).
        rdzv_timeout (int): seconds to wait for the nodes (-1: the default).
        max_restarts (int): times a failed group is started again. Default: 3.
        monitor_interval (float): seconds between checks on the workers.
        start_method (str): ``"spawn"``, ``"fork"`` or ``"forkserver"`` for callables.
        local_addr (str, optional): this node's address.

    Example::

        >>> LaunchConfig(1, 1, 2).nproc_per_node
        2
    """

    min_nodes: int
    max_nodes: int
    nproc_per_node: int
    logs_specs: Any = None
    run_id: str = ""
    role: str = "default_role"
    rdzv_endpoint: str = ""
    rdzv_backend: str = "etcd"
    rdzv_configs: dict = field(default_factory=dict)
    rdzv_timeout: int = -1
    max_restarts: int = 3
    monitor_interval: float = 0.1
    start_method: str = "spawn"
    log_line_prefix_template: Any = None
    metrics_cfg: dict = field(default_factory=dict)
    local_addr: Any = None
    event_log_handler: str = "null"
    numa_options: Any = None
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    duplicate_stdout_filters: Any = None
    duplicate_stderr_filters: Any = None
    virtual_local_rank: bool = False
    shutdown_timeout: Any = None

    def __post_init__(self):
        # as PyTorch: the rendezvous timeout (seconds) travels in the settings
        if self.rdzv_timeout != -1:
            self.rdzv_configs["timeout"] = self.rdzv_timeout
        elif "timeout" not in self.rdzv_configs:
            self.rdzv_configs["timeout"] = 900
        if self.min_nodes < 1 or self.max_nodes < self.min_nodes:
            raise ValueError(f"LaunchConfig: nodes must satisfy 1 <= min_nodes <= max_nodes, "
                             f"got {self.min_nodes}:{self.max_nodes}")
        if self.nproc_per_node < 1:
            raise ValueError(f"LaunchConfig: nproc_per_node must be >= 1, got "
                             f"{self.nproc_per_node}")


class elastic_launch:  # noqa: N801 -- PyTorch's name
    """A callable that starts the workers of ``config`` on ``entrypoint`` (see the module).

    Args:
        config (LaunchConfig): what to start.
        entrypoint (callable or str): the function (or program) each worker runs.
        health_check_server: accepted for PyTorch's signature.

    Example::

        >>> launcher = elastic_launch(LaunchConfig(1, 1, 1), "true")
        >>> launcher()
        {0: None}
    """

    def __init__(self, config, entrypoint, health_check_server=None):
        self._config = config
        self._entrypoint = entrypoint

    def __call__(self, *args):
        return launch_agent(self._config, self._entrypoint, list(args))


def _rendezvous_parameters(config: LaunchConfig, run_id: str) -> RendezvousParameters:
    """The rendezvous of ``config``: its endpoint and backend (``etcd``, torch's default, is
    read as ``c10d``); without an endpoint, one node meets alone on a free local port."""
    conf = dict(config.rdzv_configs)
    conf.setdefault("join_timeout", conf["timeout"])
    if not config.rdzv_endpoint:
        if config.max_nodes > 1:
            raise ValueError("elastic_launch: several nodes need an rdzv_endpoint (host:port) "
                             "they all reach")
        conf.update(is_host=True, last_call_timeout=0)
        return RendezvousParameters("c10d", "127.0.0.1:0", run_id, 1, 1, config.local_addr,
                                    **conf)
    backend = "static" if config.rdzv_backend == "static" else "c10d"
    if backend == "static":
        conf.setdefault("rank", 0)
    return RendezvousParameters(backend, config.rdzv_endpoint, run_id, config.min_nodes,
                                config.max_nodes, config.local_addr, **conf)


def _run_callable(config, entrypoint, args):
    # as PyTorch's launch_agent: a LocalElasticAgent runs the function's workers
    from ..elastic.rendezvous.registry import get_rendezvous_handler

    run_id = config.run_id or str(uuid.uuid4())
    params = _rendezvous_parameters(config, run_id)
    os.environ["TORCHELASTIC_SIGNALS_TO_HANDLE"] = config.signals_to_handle
    spec = WorkerSpec(role=config.role, local_world_size=config.nproc_per_node,
                      entrypoint=entrypoint, args=tuple(args),
                      rdzv_handler=get_rendezvous_handler(params),
                      max_restarts=config.max_restarts,
                      monitor_interval=config.monitor_interval, local_addr=config.local_addr,
                      event_log_handler=config.event_log_handler)
    agent = LocalElasticAgent(spec=spec, logs_specs=config.logs_specs or DefaultLogsSpecs(),
                              start_method=config.start_method,
                              log_line_prefix_template=config.log_line_prefix_template,
                              shutdown_timeout=config.shutdown_timeout or 30)
    result = agent.run()
    if result.is_failed():
        raise ChildFailedError(name=getattr(entrypoint, "__name__", str(entrypoint)),
                               failures=result.failures)
    return result.return_values


def _run_program(config, entrypoint, args):
    from ..run import parse_args, run

    argv = ["--nnodes", f"{config.min_nodes}:{config.max_nodes}",
            "--nproc-per-node", str(config.nproc_per_node),
            "--max-restarts", str(config.max_restarts), "--no-python"]
    if config.run_id:
        argv += ["--rdzv-id", config.run_id]
    if config.rdzv_endpoint:
        backend = "static" if config.rdzv_backend == "static" else "c10d"
        argv += ["--rdzv-backend", backend, "--rdzv-endpoint", config.rdzv_endpoint]
        if "rank" in config.rdzv_configs:
            argv += ["--node-rank", str(config.rdzv_configs["rank"])]
    elif config.max_nodes == 1:
        argv += ["--standalone"]
    status = run(parse_args(argv + [entrypoint, *[str(a) for a in args]]))
    if status != 0:
        f = ProcessFailure(0, 0, status, "")
        f.message = f"{entrypoint} exited with status {status}"
        raise ChildFailedError(entrypoint, {0: f})
    return {r: None for r in range(config.nproc_per_node)}


def launch_agent(config, entrypoint, args, health_check_server=None) -> dict:
    """Start the workers of ``config`` on ``entrypoint(*args)`` and wait for them (see the
    module's docstring).

    Args:
        config (LaunchConfig): what to start.
        entrypoint (callable or str): the function or program.
        args (list): its arguments.
        health_check_server: accepted for PyTorch's signature.

    Returns:
        dict: local rank -> the worker's return value (None for programs).

    Raises:
        ChildFailedError: when the group still failed after ``max_restarts`` restarts.

    Example::

        >>> launch_agent(LaunchConfig(1, 1, 1, max_restarts=0), "true", [])
        {0: None}
    """
    if isinstance(entrypoint, str):
        return _run_program(config, entrypoint, args)
    if not callable(entrypoint):
        raise TypeError(f"elastic_launch: entrypoint must be a callable or a program name, "
                        f"got {type(entrypoint).__name__}")
    return _run_callable(config, entrypoint, args)
