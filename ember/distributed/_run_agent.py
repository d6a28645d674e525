"""The agent loop of ``python -m ember.distributed.run`` (one per node): rendezvous, start
this node's worker group, watch it, restart it; see ``run.py`` for what users see.
"""

from __future__ import annotations

import datetime
import os
import signal
import shutil
import sys
import time
import uuid
from string import Template

from .elastic.multiprocessing import DefaultLogsSpecs, SignalException
from .elastic.utils import macros
from .elastic.utils.logging import get_logger
from .launcher.api import LaunchConfig

logger = get_logger("ember.distributed.run")


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
    if callable(cmd):  # run_script_path, the only function config_from_args gives
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

    def _serve_store(self, rdzv) -> None:
        # NOTE [ The agent's store ]
        # As torchrun's agent does, node 0's launcher serves the store the workers meet
        # through (MASTER_ADDR:MASTER_PORT) and says so with TORCHELASTIC_USE_AGENT_STORE,
        # so every worker connects to it as a client (``_group._rendezvous``). The store
        # then lives as long as the worker group, not as long as worker 0, and no worker
        # races another program for the port. A new store serves each group: nothing of
        # an earlier attempt is left in it. Alone on this node (--standalone) the group is
        # given port 0 and the store binds whichever port the OS picks: a port found free
        # and bound later could be taken in between by any connection on the machine. An
        # elastic rendezvous has node 0's agent serve the store before it tells the port.
        self.store = rdzv.take_workers_store()
        if self.store is None and self.node_rank == 0:
            from ._store import TCPStore

            self.store = TCPStore("127.0.0.1", self.port, is_master=True,
                                  timeout=datetime.timedelta(seconds=60),
                                  wait_for_workers=False)
            self.port = self.store.port

    def run(self, rdzv):
        """None when every worker of every node succeeded, else ``(kind, detail)``:
        ``"failed"`` (a worker here failed; detail: message and failures), ``"membership"``
        (the group must form again) or ``"lost"`` (the rendezvous is gone)."""
        from .elastic._rendezvous import RendezvousError
        from .elastic.multiprocessing import SubprocessContext

        agent = self.agent
        try:
            self._serve_store(rdzv)
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
