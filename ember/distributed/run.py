"""``python -m ember.distributed.run``: start worker processes the way ``torchrun`` does.

Each worker gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, ...), so a script
calls ``init_process_group("gloo")`` with the default ``env://`` and joins the group.
SIGINT/SIGTERM are forwarded to the workers; when one worker fails, the others are
terminated and the launcher exits with status 1, naming the failed rank, unless
``--max-restarts`` allows starting the worker group again. ``--rdzv-backend c10d
--rdzv-endpoint host:port --nnodes MIN:MAX`` forms the group from the nodes that arrive
(see NOTE [ Elastic rendezvous ] in ``elastic/_rendezvous.py``).

Example::

    python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

__all__ = ["get_args_parser", "main", "parse_args", "run"]


def get_args_parser() -> argparse.ArgumentParser:
    """The launcher's argument parser (torchrun's options; ``--a-b`` and ``--a_b`` both work).

    Example::

        >>> from ember.distributed.run import get_args_parser
        >>> get_args_parser().parse_args(["--nproc-per-node=2", "t.py"]).nproc_per_node
        '2'
    """
    p = argparse.ArgumentParser(prog="ember.distributed.run",
                                description="Start distributed workers (torchrun-compatible).")
    p.add_argument("--nnodes", type=str, default="1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", type=str,
                   default="1")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true")
    p.add_argument("--rdzv-backend", "--rdzv_backend", dest="rdzv_backend", default="static")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", dest="rdzv_endpoint", default="")
    p.add_argument("--rdzv-id", "--rdzv_id", dest="rdzv_id", default="none")
    p.add_argument("--rdzv-conf", "--rdzv_conf", dest="rdzv_conf", default="")
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int, default=0)
    p.add_argument("--monitor-interval", "--monitor_interval", dest="monitor_interval",
                   type=float, default=0.1)
    p.add_argument("--local-addr", "--local_addr", dest="local_addr", default=None)
    p.add_argument("--role", default="default")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true")
    p.add_argument("--run-path", "--run_path", dest="run_path", action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_args(args=None) -> argparse.Namespace:
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


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        raise ValueError("--nproc-per-node=gpu: ember's launcher runs CPU workers only")
    return int(value)


def _worker_env(args, local_rank, nproc, nnodes, port, run_id, node_rank, addr, restarts):
    env = dict(os.environ)
    rank = node_rank * nproc + local_rank
    world = nnodes * nproc
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node_rank),
        "GROUP_WORLD_SIZE": str(nnodes), "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": args.role, "MASTER_ADDR": addr, "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": str(restarts),
        "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    })
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"
    return env


def _command(args, local_rank=None):
    script_args = list(args.training_script_args)
    if getattr(args, "use_env", True) is False and local_rank is not None:
        # ``ember.distributed.launch`` without --use-env: the rank as the script's argument
        script_args.insert(0, f"--local-rank={local_rank}")
    if args.no_python:
        return [args.training_script, *script_args]
    # NOTE [ Workers of a PyTorch script ]
    # the workers run the script through ``ember.compat.run``, whichever way this launcher
    # was started (``python -m ember.distributed.run train.py``, or ``python -m
    # ember.compat.run -m torch.distributed.run train.py``): a worker is a new interpreter,
    # and a script written for PyTorch (``import torch``) would otherwise load PyTorch
    # itself where it is installed, and fail where it is not. A script that imports ember
    # runs as before: the alias only names ``torch``.
    python = [sys.executable, "-u", "-m", "ember.compat.run"]
    if args.module:
        return [*python, "-m", args.training_script, *script_args]
    return [*python, args.training_script, *script_args]


def _warn_threads(nproc: int) -> None:
    """Say, as torchrun does, that each worker gets one OpenMP thread unless the user chose."""
    if "OMP_NUM_THREADS" not in os.environ and nproc > 1:
        import logging

        logging.getLogger(__name__).warning(
            "\n*****************************************\n"
            "Setting OMP_NUM_THREADS environment variable for each process to be 1 in "
            "default, to avoid your system being overloaded, please further tune the "
            "variable for optimal performance in your application as needed. \n"
            "*****************************************")


def _rendezvous(args, nmin, nmax, run_id):
    from .elastic._rendezvous import StaticRendezvous, StoreRendezvous, parse_conf

    backend = args.rdzv_backend
    if args.standalone:
        return StaticRendezvous(0, 1, "127.0.0.1", 0, fresh_port=True)
    if backend == "c10d":
        endpoint = args.rdzv_endpoint or f"{args.master_addr}:29400"
        return StoreRendezvous(endpoint, run_id, nmin, nmax, parse_conf(args.rdzv_conf),
                               args.local_addr)
    if backend != "static":
        raise ValueError(f"ember.distributed.run: --rdzv-backend {backend} is not available; "
                         "use c10d (a TCPStore at --rdzv-endpoint) or static")
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, p = args.rdzv_endpoint.rpartition(":")
        addr, port = host or addr, int(p or port)
    if nmin != nmax:
        raise ValueError(f"ember.distributed.run: --nnodes {args.nnodes} (MIN:MAX) needs an "
                         "elastic rendezvous: pass --rdzv-backend c10d --rdzv-endpoint host:port")
    return StaticRendezvous(args.node_rank, nmax, addr, port)


def run(args: argparse.Namespace) -> int:
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
            ``elastic/multiprocessing/errors``); the error files it names are kept.

    Example::

        >>> from ember.distributed.run import parse_args, run
        >>> run(parse_args(["--no-python", "true"]))
        0
    """
    from .elastic._rendezvous import RendezvousError, parse_nnodes
    from .elastic.multiprocessing.errors import ChildFailedError

    nmin, nmax = parse_nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    _warn_threads(nproc)
    run_id = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex[:12]
    rdzv = _rendezvous(args, nmin, nmax, run_id)
    # each worker's @record (elastic.multiprocessing.errors) writes its exception here
    error_dir = tempfile.mkdtemp(prefix=f"ember_run_{run_id}_")
    restarts = 0
    keep_errors = False
    try:
        while True:
            try:
                node_rank, nnodes, addr, port = rdzv.next_rendezvous()
            except (RendezvousError, OSError) as e:
                print(f"ember.distributed.run: rendezvous failed: {e}", file=sys.stderr)
                return 1
            group = _Group(args, nproc, node_rank, nnodes, addr, port, run_id, restarts,
                           error_dir)
            outcome = group.run(rdzv)
            if outcome is None:
                return 0
            kind, detail = outcome
            failures = None
            if kind == "failed":
                detail, failures = detail
            if kind == "membership":
                print(f"ember.distributed.run: {detail}; starting the worker group again",
                      file=sys.stderr)
                rdzv.restart()
                continue
            print(f"ember.distributed.run: {detail}", file=sys.stderr)
            if kind == "failed" and restarts < args.max_restarts:
                restarts += 1
                print(f"ember.distributed.run: restarting the worker group (restart "
                      f"{restarts} of {args.max_restarts})", file=sys.stderr)
                rdzv.restart()
                continue
            if kind == "failed":
                try:
                    rdzv.shutdown(f"node {node_rank}: {detail}")
                except (RendezvousError, OSError):
                    pass
                # the report names the error files @record wrote: kept for it (as
                # torchrun keeps its log folder); without any, nothing is left behind
                keep_errors = any(os.path.isfile(f.error_file) for f in failures.values())
                raise ChildFailedError(_job_name(args), failures)
            return 1
    finally:
        if not keep_errors:
            shutil.rmtree(error_dir, ignore_errors=True)


def _job_name(args) -> str:
    """The name the failure report gives the job: the script, module or program as the
    command line named it (PyTorch's launcher names it so)."""
    return args.training_script


class _Group:
    """One node's workers of one rendezvous round."""

    def __init__(self, args, nproc, node_rank, nnodes, addr, port, run_id, restarts,
                 error_dir):
        self.args, self.nproc, self.nnodes = args, nproc, nnodes
        self.node_rank = node_rank
        self.error_files = [os.path.join(error_dir, f"error_{restarts}_{i}.json")
                            for i in range(nproc)]
        for f in self.error_files:
            if os.path.exists(f):
                os.remove(f)
        self.envs = [{**_worker_env(args, i, nproc, nnodes, port, run_id, node_rank, addr,
                                    restarts),
                      "TORCHELASTIC_ERROR_FILE": self.error_files[i]} for i in range(nproc)]

    def run(self, rdzv):
        """None when every worker of every node succeeded, else ``(kind, message)``:
        ``"failed"`` (a worker here failed), ``"membership"`` (the group must form again)
        or ``"lost"`` (the rendezvous is gone)."""
        from .elastic._rendezvous import RendezvousError

        procs = [subprocess.Popen(_command(self.args, i), env=env)
                 for i, env in enumerate(self.envs)]

        def forward(signum, frame):
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signum)

        old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            while True:
                codes = [p.poll() for p in procs]
                bad = next(((i, c) for i, c in enumerate(codes) if c not in (None, 0)), None)
                if bad is not None:
                    seen = time.time()
                    _stop(procs)
                    return "failed", self._failure(procs, *bad, seen)
                if all(c == 0 for c in codes):
                    break
                try:
                    why = rdzv.should_stop(self.nnodes)
                except (RendezvousError, OSError) as e:
                    _stop(procs)
                    return "lost", f"stopping the workers: {e}"
                if why is not None:
                    _stop(procs)
                    return "membership", why
                time.sleep(self.args.monitor_interval)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            _stop(procs)
        try:
            why = rdzv.finish(self.nnodes)
        except (RendezvousError, OSError) as e:
            return "lost", f"stopping: {e}"
        return None if why is None else ("membership", why)

    def _failure(self, procs, i, code, seen):
        """The one-line account of local worker ``i``'s failure, and the failures of this
        node's workers by global rank (the first one first: it is the root cause, and
        workers stopped after it may have failed on their own too)."""
        from .elastic.multiprocessing.errors import ProcessFailure

        base = self.node_rank * self.nproc
        what = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        cause = ProcessFailure(i, procs[i].pid, code, self.error_files[i])
        if cause.error_file == self.error_files[i]:
            detail = f": {cause.summary()}"
        else:  # no @record: the time the launcher saw it exit
            detail, cause.timestamp = "", int(seen)
        failures = {base + i: cause}
        for j, p in enumerate(procs):
            if j != i and p.returncode not in (None, 0):
                failures[base + j] = ProcessFailure(j, p.pid, p.returncode, self.error_files[j])
        return (f"worker rank {base + i} (local_rank {i}, pid {procs[i].pid}) failed with "
                f"{what}{detail}; the other workers were stopped"), failures


def _stop(procs, grace=5.0):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(args=None) -> None:
    """The command-line entry point: parse, run, exit with the workers' status.

    Args:
        args: the command line after the program name (None: ``sys.argv[1:]``).

    Returns:
        Does not return: exits the process with the workers' status.

    Example::

        >>> from ember.distributed.run import main
        >>> main(["--no-python", "true"])
        Traceback (most recent call last):
        ...
        SystemExit: 0"""
    sys.exit(run(parse_args(args)))


if __name__ == "__main__":
    main()
