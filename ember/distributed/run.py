"""``python -m ember.distributed.run`` (``torchrun``): start worker processes with
PyTorch's launcher environment.

Each worker gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS,
TORCHELASTIC_ERROR_FILE, TORCHELASTIC_USE_AGENT_STORE, ...), so a script calls
``init_process_group("gloo")`` with the default ``env://`` and joins the group. Every option
of torchrun is accepted, also from ``PET_<OPTION>`` variables (``argparse_util``).

- When a worker fails, the others are stopped; with ``--max-restarts`` left the group starts
  again (``TORCHELASTIC_RESTART_COUNT`` counts), else the launcher raises
  ``ChildFailedError``, whose text is the failure report (with the traceback ``@record``
  saved), and exits with status 1.
- SIGTERM, SIGINT, SIGHUP or SIGQUIT to the launcher stops the workers with that signal and
  ends the launcher with ``SignalException`` (no restart).
- ``--log-dir``/``--redirects``/``--tee``/``--local-ranks-filter`` lay the workers' output
  out as NOTE [ Worker logs ] in ``elastic/multiprocessing/api.py`` says.
- ``--rdzv-backend c10d --rdzv-endpoint host:port --nnodes MIN:MAX`` forms the group from the
  nodes that arrive (NOTE [ Elastic rendezvous ] in ``elastic/_rendezvous.py``).

Example::

    python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3
"""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import sys
import time
import uuid
from argparse import REMAINDER, ArgumentParser, Namespace
from collections.abc import Callable
from string import Template

from .argparse_util import check_env, env
from .elastic.multiprocessing import DefaultLogsSpecs, LogsSpecs, SignalException, Std
from .elastic.multiprocessing.errors import record
from .elastic.utils import macros
from .elastic.utils.logging import get_logger
from .launcher.api import LaunchConfig, elastic_launch

__all__ = ["DefaultLogsSpecs", "LaunchConfig", "LogsSpecs", "REMAINDER", "Std", "check_env",
           "config_from_args", "determine_local_world_size", "elastic_launch", "env",
           "get_args_parser", "get_logger", "get_rdzv_endpoint", "get_use_env", "logger",
           "macros", "main", "parse_args", "parse_min_max_nnodes", "record", "run",
           "run_script_path"]

logger = get_logger(__name__)


def get_args_parser() -> ArgumentParser:
    """The launcher's argument parser: torchrun's options (``--a-b`` and ``--a_b`` both
    work; each also reads ``PET_<A_B>`` from the environment).

    Returns:
        argparse.ArgumentParser

    Example::

        >>> from ember.distributed.run import get_args_parser
        >>> get_args_parser().parse_args(["--nproc-per-node=2", "t.py"]).nproc_per_node
        '2'
    """
    p = ArgumentParser(prog="ember.distributed.run",
                       description="Start distributed workers (torchrun-compatible).")

    def opt(name, **kw):
        # torchrun's spellings: --a-b and --a_b; the value also from PET_A_B
        flags = list(dict.fromkeys([name, "--" + name[2:].replace("-", "_")]))
        kw.setdefault("action", env)
        p.add_argument(*flags, dest=name[2:].replace("-", "_"), **kw)

    opt("--nnodes", type=str, default="1:1",
        help="number of nodes, or MIN:MAX for an elastic group")
    opt("--nproc-per-node", type=str, default="1",
        help="workers per node: a number, or cpu, gpu, xpu, auto")
    opt("--rdzv-backend", type=str, default="static", help="static or c10d")
    opt("--rdzv-endpoint", type=str, default="", help="host:port of the rendezvous")
    opt("--rdzv-id", type=str, default="none", help="the job's id")
    opt("--rdzv-conf", type=str, default="", help="key=value,... rendezvous settings")
    opt("--standalone", action=check_env,
        help="one node, a rendezvous on a free local port")
    opt("--max-restarts", type=int, default=0, help="restarts of a failed worker group")
    opt("--monitor-interval", type=float, default=0.1,
        help="seconds between checks on the workers")
    opt("--start-method", type=str, default="spawn", choices=["spawn", "fork", "forkserver"],
        help="how Python-function workers start")
    opt("--event-log-handler", type=str, default="null", help="where events are recorded")
    opt("--role", type=str, default="default", help="the workers' role name")
    p.add_argument("-m", "--module", action=check_env, dest="module",
                   help="run the script as a module (python -m)")
    opt("--no-python", action=check_env, help="run the script as a program, not with python")
    opt("--run-path", action=check_env, help="run the script with runpy.run_path")
    opt("--log-dir", type=str, default=None, help="the root folder of the workers' logs")
    p.add_argument("-r", "--redirects", action=env, type=str, default="0", dest="redirects",
                   help="streams to send to log files: 0-3, or rank:N,...")
    p.add_argument("-t", "--tee", action=env, type=str, default="0", dest="tee",
                   help="streams to send to log files and the console: 0-3, or rank:N,...")
    opt("--local-ranks-filter", type=str, default="",
        help="the only local ranks shown on the console: 0,1,...")
    opt("--duplicate-stdout-filters", type=_comma_list, default=[],
        help="accepted for torchrun's command line")
    opt("--duplicate-stderr-filters", type=_comma_list, default=[],
        help="accepted for torchrun's command line")
    opt("--node-rank", type=int, default=0, help="this node's rank (static rendezvous)")
    opt("--master-addr", type=str, default="127.0.0.1",
        help="node 0's address (static rendezvous)")
    opt("--master-port", type=int, default=None, help="node 0's port (static rendezvous)")
    opt("--local-addr", type=str, default=None, help="this node's address")
    opt("--logs-specs", type=str, default=None,
        help="a torchrun.logs_specs entry point naming a LogsSpecs class")
    opt("--numa-binding", type=str, default=None,
        choices=["node", "socket", "exclusive", "core-complex"],
        help="accepted for torchrun's command line")
    opt("--signals-to-handle", type=str, default="SIGTERM,SIGINT,SIGHUP,SIGQUIT",
        help="signals that stop the workers and the launcher")
    opt("--shutdown-timeout", type=int, default=None,
        help="seconds between SIGTERM and SIGKILL when stopping workers (default 30)")
    opt("--virtual-local-rank", action=check_env, help="accepted for torchrun's command line")
    p.add_argument("training_script", type=str, help="the script, module or program")
    p.add_argument("training_script_args", nargs=REMAINDER)
    return p


def _comma_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_args(args=None) -> Namespace:
    """Parse the launcher's command line.

    Args:
        args: the command line after the program name (None: ``sys.argv[1:]``).

    Returns:
        argparse.Namespace: the launcher's options and the script's own arguments.

    Example::

        >>> from ember.distributed.run import parse_args
        >>> parse_args(["--nproc_per_node", "2", "t.py", "--lr", "1"]).training_script_args
        ['--lr', '1']
    """
    return get_args_parser().parse_args(args)


def parse_min_max_nnodes(nnodes: str) -> tuple[int, int]:
    """``"2"`` -> (2, 2); ``"1:4"`` -> (1, 4).

    Args:
        nnodes (str): ``--nnodes``.

    Returns:
        tuple[int, int]

    Raises:
        RuntimeError: more than one ``:``.
        ValueError: a part is not an integer.

    Example::

        >>> parse_min_max_nnodes("1:2")
        (1, 2)
    """
    parts = nnodes.split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise RuntimeError(f'nnodes={nnodes} is not in "MIN:MAX" format')


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def determine_local_world_size(nproc_per_node: str) -> int:
    """The number of workers ``--nproc-per-node`` asks for: a number, ``cpu`` (the CPUs
    this process may use), ``gpu`` (the CUDA devices), or ``auto`` (the devices, else the
    CPUs).

    Args:
        nproc_per_node (str): the option's value.

    Returns:
        int

    Raises:
        ValueError: ``gpu``/``xpu`` without such devices, or an unknown value.

    Example::

        >>> determine_local_world_size("3")
        3
    """
    try:
        return int(nproc_per_node)
    except ValueError as e:
        from .. import cuda

        if nproc_per_node == "cpu":
            return _cpu_count()
        if nproc_per_node == "gpu":
            if not cuda.is_available():
                raise ValueError("Cuda is not available.") from e
            return cuda.device_count()
        if nproc_per_node == "xpu":
            raise ValueError("Xpu is not available.") from e
        if nproc_per_node == "auto":
            return cuda.device_count() if cuda.is_available() else _cpu_count()
        raise ValueError(f"Unsupported nproc_per_node value: {nproc_per_node}") from e


def get_rdzv_endpoint(args: Namespace) -> str:
    """The rendezvous endpoint: ``--rdzv-endpoint``, or ``master_addr:master_port`` for the
    static backend.

    Args:
        args (argparse.Namespace): the parsed options.

    Returns:
        str

    Example::

        >>> get_rdzv_endpoint(parse_args(["--master-port", "1234", "t.py"]))
        '127.0.0.1:1234'
    """
    if args.rdzv_backend == "static" and not args.rdzv_endpoint:
        return f"{args.master_addr}:{args.master_port}"
    return args.rdzv_endpoint


def get_use_env(args: Namespace) -> bool:
    """Whether workers find their local rank in ``LOCAL_RANK`` only; False (the legacy
    ``ember.distributed.launch`` without ``--use-env``) also passes ``--local-rank=N``.

    Args:
        args (argparse.Namespace): the parsed options.

    Returns:
        bool

    Example::

        >>> get_use_env(parse_args(["t.py"]))
        True
    """
    return getattr(args, "use_env", True)


def _parse_rendezvous_config(text: str) -> dict[str, str]:
    """``"a=1,b=x"`` -> {"a": "1", "b": "x"} (``--rdzv-conf``)."""
    config: dict[str, str] = {}
    if not text.strip():
        return config
    for kv in text.strip().split(","):
        key, _, value = kv.partition("=")
        key, value = key.strip(), value.strip()
        if not key:
            raise ValueError("The rendezvous configuration string must be in format "
                             "<key1>=<value1>,...,<keyN>=<valueN>.")
        if not value:
            raise ValueError(f"The rendezvous configuration option '{key}' must have a value "
                             "specified.")
        config[key] = value
    return config


def config_from_args(args: Namespace) -> tuple[LaunchConfig, Callable | str, list[str]]:
    """What the options mean: the launch configuration, the entrypoint (the Python
    interpreter, the program, or :func:`run_script_path`) and its arguments, with
    ``${local_rank}`` (``macros.local_rank``) where each worker's rank goes.

    Also sets ``OMP_NUM_THREADS=1`` for the workers (saying so) when several run here and
    the variable is not set.

    Args:
        args (argparse.Namespace): the parsed options.

    Returns:
        tuple: (LaunchConfig, entrypoint, list of arguments).

    Raises:
        AssertionError: bad ``--nnodes`` or ``--max-restarts``.
        ValueError: bad ``--local-ranks-filter``, ``--redirects``, ``--tee``, or
            ``--no-python`` with ``--module``.

    Example::

        >>> cfg, cmd, cmd_args = config_from_args(parse_args(["--no-python", "echo", "hi"]))
        >>> cfg.nproc_per_node, cmd, cmd_args
        (1, 'echo', ['hi'])
    """
    min_nodes, max_nodes = parse_min_max_nnodes(args.nnodes)
    if not 0 < min_nodes <= max_nodes:
        raise AssertionError(f"min_nodes must be > 0 and <= max_nodes, got min_nodes="
                             f"{min_nodes}, max_nodes={max_nodes}")
    if args.max_restarts < 0:
        raise AssertionError("max_restarts must be >= 0")
    if args.rdzv_backend != "static" and not args.rdzv_endpoint:
        logger.warning("master_addr is only used for static rdzv_backend and when "
                       "rdzv_endpoint is not specified.")
    if args.node_rank != 0 and args.rdzv_backend != "static":
        logger.warning("node_rank is only used for static rdzv_backend. It will be ignored "
                       "for rdzv_backend=%s.", args.rdzv_backend)
    nproc_per_node = determine_local_world_size(args.nproc_per_node)
    if "OMP_NUM_THREADS" not in os.environ and nproc_per_node > 1:
        logger.warning(
            "\n*****************************************\n"
            "Setting OMP_NUM_THREADS environment variable for each process to be %s in "
            "default, to avoid your system being overloaded, please further tune the "
            "variable for optimal performance in your application as needed. \n"
            "*****************************************", 1)
        os.environ["OMP_NUM_THREADS"] = "1"
    rdzv_configs = _parse_rendezvous_config(args.rdzv_conf)
    if args.rdzv_backend == "static":
        rdzv_configs["rank"] = args.node_rank
    ranks = None
    if args.local_ranks_filter:
        try:
            ranks = set(map(int, args.local_ranks_filter.split(",")))
        except ValueError as e:
            raise ValueError("--local_ranks_filter must be a comma-separated list of integers "
                             "e.g. --local_ranks_filter=0,1,2") from e
    logs_specs = _logs_specs_class(args.logs_specs)(
        log_dir=args.log_dir, redirects=Std.from_str(args.redirects),
        tee=Std.from_str(args.tee), local_ranks_filter=ranks)
    config = LaunchConfig(
        min_nodes=min_nodes, max_nodes=max_nodes, nproc_per_node=nproc_per_node,
        run_id=args.rdzv_id, role=args.role, rdzv_endpoint=get_rdzv_endpoint(args),
        rdzv_backend=args.rdzv_backend, rdzv_configs=rdzv_configs,
        max_restarts=args.max_restarts, monitor_interval=args.monitor_interval,
        start_method=args.start_method,
        log_line_prefix_template=os.getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"),
        local_addr=args.local_addr, logs_specs=logs_specs,
        event_log_handler=args.event_log_handler, signals_to_handle=args.signals_to_handle,
        duplicate_stdout_filters=args.duplicate_stdout_filters,
        duplicate_stderr_filters=args.duplicate_stderr_filters,
        virtual_local_rank=args.virtual_local_rank, shutdown_timeout=args.shutdown_timeout)
    cmd: Callable | str
    cmd_args: list[str] = []
    if args.run_path:
        cmd = run_script_path
        cmd_args.append(args.training_script)
    elif not args.no_python:
        cmd = os.getenv("PYTHON_EXEC", sys.executable)
        cmd_args.append("-u")
        if args.module:
            cmd_args.append("-m")
        cmd_args.append(args.training_script)
    else:
        if args.module:
            raise ValueError("Don't use both the '--no-python' flag and the '--module' flag "
                             "at the same time.")
        cmd = args.training_script
    if not get_use_env(args):
        cmd_args.append(f"--local-rank={macros.local_rank}")
    cmd_args.extend(args.training_script_args)
    return config, cmd, cmd_args


def _logs_specs_class(name: str | None) -> type:
    if name is None:
        return DefaultLogsSpecs
    from importlib import metadata

    group = metadata.entry_points().select(group="torchrun.logs_specs")
    found = group.select(name=name)
    if not found:
        raise ValueError(f"Could not find entrypoint under 'torchrun.logs_specs[{name}]' key")
    return next(iter(found)).load()


def run_script_path(training_script: str, *training_script_args: str) -> None:
    """Run ``training_script`` in this interpreter as ``__main__`` with the given
    arguments (``--run-path``).

    Args:
        training_script (str): the script's path.
        *training_script_args (str): its arguments (``sys.argv[1:]``).

    Returns:
        None

    Example::

        >>> run_script_path("/path/to/train.py", "--lr", "0.1")  # doctest: +SKIP
    """
    import runpy

    sys.argv = [training_script, *training_script_args]
    runpy.run_path(sys.argv[0], run_name="__main__")


def _worker_command(cmd, cmd_args: list[str]) -> tuple[str, list[str]]:
    """The program and arguments each worker runs (``${local_rank}`` still in them).

    NOTE [ Workers of a PyTorch script ]
    Python workers run the script through ``ember.compat.run``, whichever way this launcher
    was started (``python -m ember.distributed.run train.py``, or ``python -m
    ember.compat.run -m torch.distributed.run train.py``): a worker is a new interpreter,
    and a script written for PyTorch (``import torch``) would otherwise load PyTorch itself
    where it is installed, and fail where it is not. A script that imports ember runs as
    before: the alias only names ``torch``. ``--run-path`` runs the script the same way
    (``ember.compat.run`` is ``runpy.run_path`` with the alias installed).
    """
    if cmd is run_script_path:
        return sys.executable, ["-u", "-m", "ember.compat.run", *cmd_args]
    if cmd == os.getenv("PYTHON_EXEC", sys.executable) and cmd_args[:1] == ["-u"]:
        return cmd, ["-u", "-m", "ember.compat.run", *cmd_args[1:]]
    return cmd, list(cmd_args)


def _job_name(cmd, cmd_args: list[str]) -> str:
    """The name the failure report gives the job, as PyTorch's launcher names it: the
    function's name, else the first argument that is not an option (the script or
    module), else the program."""
    if callable(cmd):
        return cmd.__name__
    if cmd == os.getenv("PYTHON_EXEC", sys.executable):
        return next((a for a in cmd_args if not a.startswith("-")), "")
    return cmd


def _signals(names: str) -> list[signal.Signals]:
    out = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        try:
            out.append(signal.Signals[name])
        except KeyError:
            logger.warning("Signal %s is not available on this platform, skipping", name)
    return out


def run(args: Namespace) -> int:
    """Start the workers described by ``args`` and wait for them, restarting the worker
    group after a failure up to ``--max-restarts`` times (and when nodes join or leave an
    elastic group, NOTE [ Elastic rendezvous ]).

    Args:
        args: the options ``parse_args`` returned.

    Returns:
        int: 0 when every worker succeeded; 1 when the rendezvous failed or was lost.

    Raises:
        ChildFailedError: workers failed and no restart was left; its text is the failure
            report (NOTE [ The launcher's failure report ] in
            ``elastic/multiprocessing/errors``).
        SignalException: the launcher received a signal of ``--signals-to-handle``; the
            workers were stopped with it.

    Example::

        >>> from ember.distributed.run import parse_args, run
        >>> run(parse_args(["--no-python", "true"]))
        0
    """
    if args.standalone or (args.rdzv_backend == "static" and not args.rdzv_endpoint
                           and args.master_port is None
                           and parse_min_max_nnodes(args.nnodes)[1] == 1):
        # one node and no address given: as torchrun, a fresh local rendezvous and job id
        args.rdzv_backend, args.rdzv_endpoint = "c10d", "localhost:0"
        args.rdzv_id = str(uuid.uuid4())
        logger.info("\n**************************************\nRendezvous info:\n"
                    "--rdzv-backend=%s --rdzv-endpoint=%s --rdzv-id=%s\n"
                    "**************************************\n", args.rdzv_backend,
                    args.rdzv_endpoint, args.rdzv_id)
    if args.master_port is None:
        args.master_port = 29500
    config, cmd, cmd_args = config_from_args(args)
    return _Agent(args, config, cmd, cmd_args).run()


class _Agent:
    """This node's agent: rendezvous, start the worker group, watch it, restart it."""

    def __init__(self, args, config: LaunchConfig, cmd, cmd_args: list[str]):
        self.args, self.config = args, config
        self.program, self.program_args = _worker_command(cmd, cmd_args)
        self.job_name = _job_name(cmd, cmd_args)
        self.run_id = config.run_id if config.run_id != "none" else str(uuid.uuid4())
        self.signals = _signals(config.signals_to_handle)
        self.shutdown_timeout = config.shutdown_timeout or 30

    def _rendezvous(self):
        from .elastic._rendezvous import StaticRendezvous, StoreRendezvous

        cfg, args = self.config, self.args
        host, _, port = cfg.rdzv_endpoint.rpartition(":")
        if cfg.rdzv_backend == "c10d" and port == "0" and cfg.max_nodes == 1:
            # --standalone: this agent alone; its workers' store on a fresh local port
            return StaticRendezvous(0, 1, host or "localhost", 0, fresh_port=True)
        if cfg.rdzv_backend == "c10d":
            return StoreRendezvous(cfg.rdzv_endpoint, self.run_id, cfg.min_nodes,
                                   cfg.max_nodes, cfg.rdzv_configs, cfg.local_addr)
        if cfg.rdzv_backend != "static":
            raise ValueError(f"ember.distributed.run: --rdzv-backend {cfg.rdzv_backend} is not "
                             "available; use c10d (a TCPStore at --rdzv-endpoint) or static")
        if cfg.min_nodes != cfg.max_nodes:
            raise ValueError(f"ember.distributed.run: --nnodes {args.nnodes} (MIN:MAX) needs an "
                             "elastic rendezvous: pass --rdzv-backend c10d --rdzv-endpoint "
                             "host:port")
        return StaticRendezvous(args.node_rank, cfg.max_nodes, host or args.master_addr,
                                int(port or args.master_port))

    def run(self) -> int:
        from .elastic._rendezvous import RendezvousError
        from .elastic.multiprocessing.errors import ChildFailedError

        rdzv = self._rendezvous()
        logs_specs = self.config.logs_specs
        own_log_dir = self.args.log_dir is None and isinstance(logs_specs, DefaultLogsSpecs)
        restarts = 0
        keep_logs = False
        try:
            while True:
                try:
                    node_rank, nnodes, addr, port = rdzv.next_rendezvous()
                except (RendezvousError, OSError) as e:
                    print(f"ember.distributed.run: rendezvous failed: {e}", file=sys.stderr)
                    return 1
                group = _Group(self, node_rank, nnodes, addr, port, restarts)
                outcome = group.run(rdzv)
                if outcome is None:
                    return 0
                kind, detail = outcome
                if kind == "membership":
                    print(f"ember.distributed.run: {detail}; starting the worker group again",
                          file=sys.stderr)
                    rdzv.restart()
                    continue
                if kind == "failed":
                    detail, failures = detail
                print(f"ember.distributed.run: {detail}", file=sys.stderr)
                if kind == "failed" and restarts < self.config.max_restarts:
                    restarts += 1
                    print(f"ember.distributed.run: restarting the worker group (restart "
                          f"{restarts} of {self.config.max_restarts})", file=sys.stderr)
                    rdzv.restart()
                    continue
                if kind == "failed":
                    try:
                        rdzv.shutdown(f"node {node_rank}: {detail}")
                    except (RendezvousError, OSError):
                        pass
                    # the report names the error files @record wrote: kept for it (as
                    # torchrun keeps its log folder); without any, nothing is left behind
                    keep_logs = any(os.path.isfile(f.error_file) for f in failures.values())
                    raise ChildFailedError(self.job_name, failures)
                return 1
        finally:
            if own_log_dir and not keep_logs:
                shutil.rmtree(logs_specs.root_log_dir, ignore_errors=True)


class _Group:
    """One node's workers of one rendezvous round."""

    def __init__(self, agent: _Agent, node_rank, nnodes, addr, port, restarts):
        self.agent, self.node_rank, self.nnodes = agent, node_rank, nnodes
        self.addr, self.port, self.restarts = addr, port, restarts
        self.nproc = agent.config.nproc_per_node
        self.store = None

    def _envs(self) -> dict[int, dict[str, str]]:
        cfg, nproc = self.agent.config, self.nproc
        world = self.nnodes * nproc
        envs = {}
        for i in range(nproc):
            rank = self.node_rank * nproc + i
            envs[i] = {
                "LOCAL_RANK": str(i), "RANK": str(rank), "GROUP_RANK": str(self.node_rank),
                "ROLE_RANK": str(rank), "ROLE_NAME": cfg.role,
                "LOCAL_WORLD_SIZE": str(nproc), "WORLD_SIZE": str(world),
                "GROUP_WORLD_SIZE": str(self.nnodes), "ROLE_WORLD_SIZE": str(world),
                "MASTER_ADDR": self.addr, "MASTER_PORT": str(self.port),
                "TORCHELASTIC_RESTART_COUNT": str(self.restarts),
                "TORCHELASTIC_MAX_RESTARTS": str(cfg.max_restarts),
                "TORCHELASTIC_RUN_ID": self.agent.run_id,
                "TORCHELASTIC_USE_AGENT_STORE": str(True),
                "TORCHELASTIC_SIGNALS_TO_HANDLE": cfg.signals_to_handle,
                "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.getenv(
                    "TORCH_NCCL_ASYNC_ERROR_HANDLING", str(1)),
            }
            if "OMP_NUM_THREADS" in os.environ:
                envs[i]["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
        return envs

    def _serve_store(self) -> None:
        # NOTE [ The agent's store ]
        # As torchrun's agent does, node 0's launcher serves the store the workers meet
        # through (MASTER_ADDR:MASTER_PORT) and says so with TORCHELASTIC_USE_AGENT_STORE,
        # so every worker connects to it as a client (``_group._rendezvous``). The store
        # then lives as long as the worker group, not as long as worker 0, and no worker
        # races another program for the port. A new store serves each group: nothing of
        # an earlier attempt is left in it.
        if self.node_rank == 0:
            from ._store import TCPStore

            self.store = TCPStore("127.0.0.1", self.port, is_master=True,
                                  timeout=datetime.timedelta(seconds=60),
                                  wait_for_workers=False)

    def run(self, rdzv):
        """None when every worker of every node succeeded, else ``(kind, detail)``:
        ``"failed"`` (a worker here failed; detail: message and failures), ``"membership"``
        (the group must form again) or ``"lost"`` (the rendezvous is gone)."""
        from .elastic._rendezvous import RendezvousError
        from .elastic.multiprocessing import SubprocessContext

        agent = self.agent
        try:
            self._serve_store()
        except OSError as e:
            return "lost", f"cannot serve the workers' store on port {self.port}: {e}"
        args = {i: tuple(macros.substitute(agent.program_args, str(i)))
                for i in range(self.nproc)}
        prefixes = None
        template = agent.config.log_line_prefix_template  # TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
        if template:
            prefixes = {i: Template(template).safe_substitute(
                role_name=agent.config.role, rank=self.node_rank * self.nproc + i,
                local_rank=i) for i in range(self.nproc)}
        pc = SubprocessContext(agent.config.role, agent.program, args, self._envs(),
                               agent.config.logs_specs, prefixes)
        old = {s: signal.getsignal(s) for s in agent.signals}
        try:
            for s in agent.signals:
                signal.signal(s, _raise_signal_exception)
            pc.start()
            for s in agent.signals:  # start() set its own handlers: the option's list wins
                signal.signal(s, _raise_signal_exception)
            while True:
                result = pc._poll()
                if result is not None:
                    if result.is_failed():
                        return "failed", self._failure(result.failures)
                    break
                try:
                    why = rdzv.should_stop(self.nnodes)
                except (RendezvousError, OSError) as e:
                    pc.close(timeout=agent.shutdown_timeout)
                    return "lost", f"stopping the workers: {e}"
                if why is not None:
                    pc.close(timeout=agent.shutdown_timeout)
                    return "membership", why
                time.sleep(agent.config.monitor_interval)
            try:
                why = rdzv.finish(self.nnodes)
            except (RendezvousError, OSError) as e:
                return "lost", f"stopping: {e}"
            return None if why is None else ("membership", why)
        except SignalException as e:
            logger.warning("Received %s death signal, shutting down workers", e.sigval)
            pc.close(e.sigval, timeout=agent.shutdown_timeout)
            raise
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            pc.close(timeout=agent.shutdown_timeout)
            if self.store is not None:
                self.store.close()

    def _failure(self, local_failures):
        """The one-line account of the first failure, and the failures by global rank,
        the first one first (the root cause: workers stopped after it fail too)."""
        base = self.node_rank * self.nproc
        first = min(local_failures.values(), key=lambda f: f.timestamp)
        i, code = first.local_rank, first.exitcode
        what = f"signal {first.signal_name()}" if code < 0 else f"exit code {code}"
        detail = f": {first.summary()}" if first.error_file != "<N/A>" else ""
        failures = {base + i: first}
        for j, f in sorted(local_failures.items()):
            if j != i:
                failures[base + j] = f
        return (f"worker rank {base + i} (local_rank {i}, pid {first.pid}) failed with "
                f"{what}{detail}; the other workers were stopped"), failures


def _raise_signal_exception(signum, frame):
    raise SignalException(f"Process {os.getpid()} got signal: {signum}",
                          sigval=signal.Signals(signum))


@record
def main(args=None) -> None:
    """The command-line entry point: parse and run; a failed job raises (the failure
    report) or exits with status 1.

    Args:
        args: the command line after the program name (None: ``sys.argv[1:]``).

    Returns:
        None when every worker succeeded.

    Example::

        >>> from ember.distributed.run import main
        >>> main(["--no-python", "true"])
    """
    status = run(parse_args(args))
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
