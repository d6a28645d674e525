"""``python -m ember.distributed.run``: start worker processes the way ``torchrun`` does.

Each worker gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, ...), so a script
calls ``init_process_group("gloo")`` with the default ``env://`` and joins the group.
SIGINT/SIGTERM are forwarded to the workers; when one worker fails, the others are
terminated and the launcher exits with status 1, naming the failed rank.

Example::

    python -m ember.distributed.run --nproc-per-node=2 train.py --epochs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
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

    Example::

        >>> from ember.distributed.run import parse_args
        >>> parse_args(["--nproc_per_node", "2", "t.py", "--lr", "1"]).training_script_args
        ['--lr', '1']
    """
    return get_args_parser().parse_args(args)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        raise ValueError("--nproc-per-node=gpu: ember's launcher runs CPU workers only")
    return int(value)


def _worker_env(args, local_rank, nproc, nnodes, port, run_id):
    env = dict(os.environ)
    rank = args.node_rank * nproc + local_rank
    world = nnodes * nproc
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(args.node_rank),
        "GROUP_WORLD_SIZE": str(nnodes), "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": args.role, "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    })
    if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"
    return env


def _command(args):
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.training_script, *args.training_script_args]
    return [sys.executable, "-u", args.training_script, *args.training_script_args]


def run(args: argparse.Namespace) -> int:
    """Start the workers described by ``args``, wait for them; the exit status (0 or 1).

    Example::

        >>> from ember.distributed.run import parse_args, run
        >>> run(parse_args(["--no-python", "true"]))
        0
    """
    nnodes = int(str(args.nnodes).split(":")[-1])
    nproc = _nproc(args.nproc_per_node)
    port = args.master_port
    if args.standalone:
        nnodes, args.node_rank, args.master_addr, port = 1, 0, "127.0.0.1", _free_port()
    elif args.rdzv_endpoint:
        host, _, p = args.rdzv_endpoint.rpartition(":")
        args.master_addr, port = host or args.master_addr, int(p or port)
    run_id = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex[:12]
    # each worker's @record (elastic.multiprocessing.errors) writes its exception here
    error_dir = tempfile.mkdtemp(prefix=f"ember_run_{run_id}_")
    error_files = [os.path.join(error_dir, f"error_{i}.json") for i in range(nproc)]
    procs = [subprocess.Popen(_command(args), env={
        **_worker_env(args, i, nproc, nnodes, port, run_id),
        "TORCHELASTIC_ERROR_FILE": error_files[i]}) for i in range(nproc)]

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    failed = None
    try:
        while True:
            codes = [p.poll() for p in procs]
            for i, c in enumerate(codes):
                if c not in (None, 0):
                    failed = (i, c)
                    break
            if failed or all(c == 0 for c in codes):
                break
            time.sleep(args.monitor_interval)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if failed:
            _stop(procs)
    if failed:
        i, code = failed
        rank = args.node_rank * nproc + i
        what = (f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}")
        from .elastic.multiprocessing.errors import ProcessFailure

        cause = ProcessFailure(i, procs[i].pid, code, error_files[i])
        detail = f": {cause.message}" if os.path.isfile(error_files[i]) else ""
        print(f"ember.distributed.run: worker rank {rank} (local_rank {i}, pid "
              f"{procs[i].pid}) failed with {what}{detail}; the other workers were stopped",
              file=sys.stderr)
        shutil.rmtree(error_dir, ignore_errors=True)
        return 1
    shutil.rmtree(error_dir, ignore_errors=True)
    return 0


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
    """The command-line entry point: parse, run, exit with the workers' status."""
    sys.exit(run(parse_args(args)))


if __name__ == "__main__":
    main()
