"""Group ``ddp``: DistributedDataParallel's per-step overhead, ember against PyTorch's gloo DDP.

    python -m bench ddp            # or: python -m bench.ddp [--steps K] [--samples S]

Two processes, one thread each, each holding both frameworks' groups (ember over MPI,
PyTorch over gloo), train the same MLP (256-1024-1024-10, 1.3 M parameters, so DDP makes
two buckets) on their own batches. Each process cycles through samples of K *local* steps
(the bare module: forward, backward, SGD step) and K *DDP* steps (the module wrapped in
DistributedDataParallel, so backward also averages the gradients), ember's then PyTorch's,
interleaved so that a change of machine load falls on all four alike; a barrier separates
samples. The DDP overhead is (DDP step - local step), medians over samples, on rank 0; the
figure of merit is ember's overhead divided by PyTorch's, each measured against its own
local step. On a loaded machine re-run and compare ratios, not times. The CPU columns are
the process's CPU time per step (PyTorch's gloo moves data on its own threads, so the
calling thread's CPU time would leave that out): steadier than wall time on a busy machine.

This group needs 2 processes, so it has its own runner instead of the in-process registry
(importing this module registers nothing).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time

import numpy as np

SIZES = (256, 1024, 1024, 10)
BATCH = 32


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(fw):
    rng = np.random.default_rng(0)
    layers = []
    for i, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(fw.nn.Linear(a, b))
        if i < len(SIZES) - 2:
            layers.append(fw.nn.ReLU())
    net = fw.nn.Sequential(*layers)
    with fw.no_grad():
        for p in net.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1])
            p.copy_(fw.from_numpy(rng.uniform(-bound, bound, tuple(p.shape))
                                  .astype(np.float32)))
    return net


def _steppers(fw, rank):
    """``{"local": step, "ddp": step}`` for framework ``fw`` (its group already formed)."""
    rng = np.random.default_rng(10 + rank)
    x = fw.from_numpy(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = fw.from_numpy(rng.integers(0, SIZES[-1], BATCH).astype(np.int64))
    loss_fn = fw.nn.CrossEntropyLoss()

    def stepper(model):
        opt = fw.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()

        return step

    return {"local": stepper(_model(fw)),
            "ddp": stepper(fw.nn.parallel.DistributedDataParallel(_model(fw)))}


def _without_progress_thread(step):
    """``step`` with ember's DDP progress thread off (NOTE [ MPI progress thread ])."""
    from ember.distributed import _progress

    def run():
        _progress.ENABLED = False
        try:
            step()
        finally:
            _progress.ENABLED = True

    return run


def _worker(rank, fw_names, init_methods, out_path, steps, samples):
    """One rank: every framework's group, then samples of each framework's local and DDP
    steps interleaved (so a change of machine load hits all of them alike). A name
    ``ember:nothread`` is ember with DDP's progress thread off, in the same group."""
    runs = {}
    groups = {}
    for fw_name, init_method in zip(fw_names, init_methods):
        base = fw_name.split(":")[0]
        fw = importlib.import_module(base)
        dist = importlib.import_module(base + ".distributed")
        if base not in groups:
            fw.set_num_threads(1)
            dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                                    timeout=datetime.timedelta(seconds=120))
            groups[base] = dist
        steppers = _steppers(fw, rank)
        if fw_name == "ember:nothread":
            steppers = {k: _without_progress_thread(f) for k, f in steppers.items()}
        runs[fw_name] = (dist, steppers)
    for _, steppers in runs.values():  # warm-up (DDP's first iteration rebuilds buckets)
        for fn in steppers.values():
            for _ in range(3):
                fn()
    times = {fw: {"local": [], "ddp": [], "local_cpu": [], "ddp_cpu": []} for fw in runs}
    for _ in range(samples):
        for fw_name, (dist, steppers) in runs.items():
            for name, fn in steppers.items():
                dist.barrier()
                t, cpu = time.perf_counter(), time.process_time()
                for _ in range(steps):
                    fn()
                times[fw_name][name].append((time.perf_counter() - t) / steps)
                times[fw_name][name + "_cpu"].append((time.process_time() - cpu) / steps)
    for dist in groups.values():
        dist.barrier()
    with open(f"{out_path}.{rank}", "w") as f:
        json.dump(times, f)
    for dist in groups.values():
        dist.destroy_process_group()


def measure(fw_names, steps=10, samples=7, rank=0):
    """Per-step medians (ms) of each framework's local and DDP step on ``rank``, measured
    in the same 2 processes, samples interleaved: wall time, and the process's CPU time.
    With ``rank=None``, a list of both ranks' results."""
    import ember.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "times.json")
        inits = [f"tcp://127.0.0.1:{_free_port()}" for _ in fw_names]
        mp.spawn(_worker, args=(list(fw_names), inits, out, steps, samples), nprocs=2)
        per_rank = []
        for r in range(2):
            with open(f"{out}.{r}") as f:
                per_rank.append(json.load(f))
    if rank is None:
        return [_medians(t) for t in per_rank]
    return _medians(per_rank[rank])


def _medians(times):
    results = {}
    for fw, t in times.items():
        local, ddp = statistics.median(t["local"]), statistics.median(t["ddp"])
        local_cpu, ddp_cpu = statistics.median(t["local_cpu"]), statistics.median(t["ddp_cpu"])
        results[fw] = {"local_ms": local * 1e3, "ddp_ms": ddp * 1e3,
                       "overhead_ms": (ddp - local) * 1e3,
                       "overhead_pct": 100 * (ddp - local) / local,
                       "local_cpu_ms": local_cpu * 1e3, "ddp_cpu_ms": ddp_cpu * 1e3,
                       "overhead_cpu_ms": (ddp_cpu - local_cpu) * 1e3}
    return results


def _print_table(results):
    print(f"{'framework':<16}{'local ms':>10}{'DDP ms':>10}{'overhead ms':>13}{'overhead':>10}"
          f"{'CPU: local':>12}{'DDP':>8}{'overhead ms':>13}")
    for fw, r in results.items():
        print(f"{fw:<16}{r['local_ms']:>10.2f}{r['ddp_ms']:>10.2f}{r['overhead_ms']:>13.2f}"
              f"{r['overhead_pct']:>9.1f}%{r['local_cpu_ms']:>12.2f}{r['ddp_cpu_ms']:>8.2f}"
              f"{r['overhead_cpu_ms']:>13.2f}")
    if "torch" in results:
        t = results["torch"]
        for fw in (f for f in results if f != "torch"):
            e = results[fw]

            def ratio(key, e=e):
                # a median overhead at or below zero (a loaded machine's noise) has no ratio
                if t[key] <= 0 or e[key] <= 0:
                    return "n/a (an overhead <= 0: noise, re-run)"
                return f"{e[key] / t[key]:.2f}"

            print(f"{fw} overhead / torch overhead: {ratio('overhead_ms')} "
                  f"(CPU time: {ratio('overhead_cpu_ms')})")


def main(argv=None):
    """Run the group and print a table; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench ddp", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per sample")
    parser.add_argument("--samples", type=int, default=7, help="samples per framework")
    parser.add_argument("--ab", action="store_true",
                        help="also run ember with DDP's progress thread off (ember:nothread), "
                             "interleaved in the same processes; print both ranks")
    args = parser.parse_args(argv)
    frameworks = ["ember"] + (["ember:nothread"] if args.ab else [])
    if importlib.util.find_spec("torch") is not None:
        frameworks.append("torch")
    load = os.getloadavg()[0]
    results = measure(frameworks, args.steps, args.samples, rank=None if args.ab else 0)
    print(f"DDP overhead per step, 2 processes x 1 thread, MLP {'-'.join(map(str, SIZES))}, "
          f"batch {BATCH} per rank (load average {load:.1f} -> {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs{'; machine busy' if load > (os.cpu_count() or 1) else ''})")
    for r, res in enumerate(results if args.ab else [results]):
        if args.ab:
            print(f"rank {r}:")
        _print_table(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
