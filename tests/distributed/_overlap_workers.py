"""Worker for test_ddp_overlap.py: profile DDP backward passes on 2 processes and report
when the first bucket's all-reduce ended against the backward ops around it."""

import datetime
import importlib
import os
import pickle

import numpy as np


def profile_overlap(rank, fw, init_method, out_dir, thread=True):
    """Three profiled DDP iterations of an MLP whose later backward ops are long GEMMs;
    for each, the first ``gloo:all_reduce`` event's end and thread, and the span of the
    middle layer's ``AddmmBackward0``. Also the averaged gradients of the last step."""
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    profiler = importlib.import_module(fw + ".profiler")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    if fw == "ember" and not thread:
        from ember.distributed import _progress

        _progress.ENABLED = False
    rng = np.random.default_rng(0)
    sizes = (512, 1024, 1024, 8)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.05, 0.05, tuple(p.shape))
                                     .astype(np.float32)))
    # ~10 KB buckets: the last layer's parameters (32 KB) make bucket 0, reduced while
    # the middle layer's backward (two 256x1024x1024 products) still runs
    ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.01)
    x = torch.from_numpy(np.random.default_rng(1 + rank).standard_normal(
        (256, sizes[0])).astype(np.float32))
    for _ in range(2):  # the first iteration rebuilds the buckets
        ddp.zero_grad()
        ddp(x).sum().backward()
    spans = []
    for _ in range(3):
        ddp.zero_grad()
        with profiler.profile() as prof:
            ddp(x).sum().backward()
        events = list(prof.events())
        comm = sorted((e for e in events if e.name == "gloo:all_reduce"),
                      key=lambda e: e.time_range.start)
        mm = sorted((e for e in events if e.name == "AddmmBackward0"),
                    key=lambda e: e.time_range.start)
        spans.append({"n_comm": len(comm), "comm_end": comm[0].time_range.end,
                      "comm_thread": comm[0].thread,
                      "mid_start": mm[1].time_range.start, "mid_end": mm[1].time_range.end})
    trace = os.path.join(out_dir, f"trace{rank}.json")
    prof.export_chrome_trace(trace)
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump({"spans": spans, "grads": grads, "trace": trace, "x": x.numpy().copy(),
                     "params": [p.detach().numpy().copy() for p in net.parameters()]}, f)


def _small_ddp(fw, rank, init_method, seconds):
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=seconds))
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.01)
    x = torch.ones(8, 64)
    for _ in range(2):
        ddp(x).sum().backward()
    return torch, dist, ddp, x


def _progress_threads():
    import threading

    return [t.name for t in threading.enumerate() if t.name == "ember_mpi_progress"]


def dead_peer(rank, fw, init_method, out_dir):
    """Rank 1 dies after two DDP iterations; rank 0's next backward must fail within the
    group's timeout (3 s), with its progress thread still answering."""
    import time

    torch, dist, ddp, x = _small_ddp(fw, rank, init_method, 3)
    dist.barrier()
    if rank == 1:
        os._exit(0)
    time.sleep(0.2)
    t = time.monotonic()
    try:
        ddp(x).sum().backward()
        res = {"error": None}
    except RuntimeError as e:
        res = {"error": (type(e).__name__, str(e)), "seconds": time.monotonic() - t}
    res["threads"] = _progress_threads()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(res, f)
    os._exit(0)  # MPI cannot finalize beside a dead peer (as in _workers.faults)


def exit_with_thread(rank, fw, init_method, out_dir):
    """Two DDP iterations, then leave without destroy_process_group: the interpreter's
    exit must stop the progress thread before MPI finalizes (the process exits, status 0)."""
    _small_ddp(fw, rank, init_method, 30)
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump({"threads": _progress_threads()}, f)


def world_of_one(rank, fw, init_method, out_dir):
    """DDP in a group of one process: no progress thread."""
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=0, world_size=1)
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    for _ in range(2):
        ddp(torch.ones(3, 4)).sum().backward()
    res = {"threads": _progress_threads(), "grad": ddp.module.weight.grad.numpy().copy()}
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(res, f)
