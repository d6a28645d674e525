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

import os
import sys
import uuid
from argparse import REMAINDER, ArgumentParser, Namespace
from collections.abc import Callable

from .argparse_util import check_env, env
from .elastic.multiprocessing import DefaultLogsSpecs, LogsSpecs, Std
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
    from ._run_agent import _Agent

    return _Agent(args, config, cmd, cmd_args).run()


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
