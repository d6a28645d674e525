"""Workers for the pipeline-with-data-parallel tests (test_pipelining_dp.py): 4 ranks as a
(pp=2, dp=2) mesh; each rank holds one stage of the chain of test_pipelining's 4-rank
workers cut in two, its module wrapped with ``fully_shard`` over the ``dp`` dimension or
with ``DistributedDataParallel`` on the ``dp`` group, and trains on its dp replica's half
of the batch (or, ``*_zbv``, four one-layer stages placed as a V with a split
backward). Each rank dumps its losses, its stages' first-step gradients and final
parameters (whole: the FSDP shards gathered), named as in the whole chain."""

import os
import pickle

import numpy as np

from ._workers import fill_normal

N_MB = 4
LR = 0.05
STEPS = 2

# (name, how the stage module is wrapped, schedule, keyword arguments of fully_shard)
CASES = [("fsdp_gpipe", "fsdp", "ScheduleGPipe", {}),
         ("fsdp_1f1b_keep", "fsdp", "Schedule1F1B", {"reshard_after_forward": False}),
         ("fsdp_layers_1f1b", "fsdp_layers", "Schedule1F1B", {}),
         ("fsdp_zbv", "fsdp_v", "ScheduleZBVZeroBubble", {}),
         ("ddp_gpipe", "ddp", "ScheduleGPipe", {}),
         ("ddp_1f1b", "ddp", "Schedule1F1B", {}),
         ("ddp_zbv", "ddp_v", "ScheduleZBVZeroBubble", {})]


def chain(torch):
    """Four small tanh layers: two stages of two, or four stages of one placed as a V."""
    nn = torch.nn
    net = nn.Sequential(*[nn.Sequential(nn.Linear(6, 6), nn.Tanh()) for _ in range(4)])
    fill_normal(torch, net, 0.5, seed=7)
    return net


def parts(torch, net):
    return [torch.nn.Sequential(net[0], net[1]), torch.nn.Sequential(net[2], net[3])]


def data():
    """The whole batch: 16 rows, dp replica ``d`` trains on rows ``8d:8d + 8``."""
    rng = np.random.default_rng(11)
    return (rng.standard_normal((16, 6)).astype(np.float32),
            rng.standard_normal((16, 6)).astype(np.float32))


def loss_fn(out, target):
    return ((out - target) ** 2).mean()


def _full(t):
    t = t.full_tensor() if hasattr(t, "full_tensor") else t
    return t.detach().float().numpy().copy()


def _run(torch, dist, case, wrap, schedule_name, fsdp_kwargs, mesh):
    schedules = __import__(torch.__name__ + ".distributed.pipelining.schedules", fromlist=["x"])
    pp = __import__(torch.__name__ + ".distributed.pipelining", fromlist=["x"])
    pp_rank, dp_rank = mesh["pp"].get_local_rank(), mesh["dp"].get_local_rank()
    net = chain(torch)
    if wrap.endswith("_v"):  # rank pp holds stages pp and 3 - pp
        idx, mods = [pp_rank, 3 - pp_rank], [net[pp_rank], net[3 - pp_rank]]
    else:
        idx, mods = [pp_rank], [parts(torch, net)[pp_rank]]
    names = {id(p): n for n, p in net.named_parameters()}  # named as in the whole chain
    ordered = [names[id(p)] for m in mods for p in m.parameters()]
    stage_mods = []
    for m in mods:
        if wrap.startswith("fsdp"):
            from importlib import import_module
            fully_shard = import_module(torch.__name__ + ".distributed.fsdp").fully_shard
            if wrap == "fsdp_layers":
                for layer in m:
                    fully_shard(layer, mesh=mesh["dp"], **fsdp_kwargs)
            stage_mods.append(fully_shard(m, mesh=mesh["dp"], **fsdp_kwargs))
        else:
            stage_mods.append(torch.nn.parallel.DistributedDataParallel(
                m, process_group=mesh["dp"].get_group()))
    num_stages = 2 * len(idx)
    stages = [pp.PipelineStage(sm, i, num_stages, torch.device("cpu"),
                               group=mesh["pp"].get_group()) for sm, i in zip(stage_mods, idx)]
    cls = getattr(schedules, schedule_name)
    looped = issubclass(cls, schedules.PipelineScheduleMulti)
    sched = cls(stages if looped else stages[0], n_microbatches=N_MB, loss_fn=loss_fn)
    params = [p for m in mods for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=LR)
    is_first = any(s.is_first for s in stages)
    is_last = any(s.is_last for s in stages)
    x, y = (torch.tensor(a[8 * dp_rank:8 * dp_rank + 8]) for a in data())
    res = {"losses": [], "grads": None}
    for _ in range(STEPS):
        opt.zero_grad()
        losses = [] if is_last else None
        kw = {"target": y, "losses": losses} if is_last else {}
        sched.step(*((x,) if is_first else ()), **kw)
        if is_last:
            res["losses"].append([float(v.detach()) for v in losses])
        if res["grads"] is None:
            res["grads"] = {n: _full(p.grad) for n, p in zip(ordered, params)}
        opt.step()
    res["params"] = {n: _full(p) for n, p in zip(ordered, params)}
    return res


def worker(rank, fw, init_method, out_dir, which=None):
    import importlib

    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=4)
    results = {}
    try:
        mesh = dist.init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
        for case, wrap, schedule, kw in CASES:
            if which is None or case in which:
                results[case] = _run(torch, dist, case, wrap, schedule, kw, mesh)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)
