"""Random DDP configurations run the same way under PyTorch's gloo and under ember.

``random_ddp(rank, fw, init_method, out_dir, seeds)`` trains one small random model per
seed (layers, shared/unused/frozen parameters, buffers, DDP options, a comm hook, no_sync,
join with uneven inputs, SyncBatchNorm, SGD or Adam) for a few steps on 2 processes and
dumps, per step, every gradient and parameter by name, plus the logging record's bucket
layout and the warnings seen. ``ddp_misuse`` records what misusing DDP raises or warns.
The test compares the two frameworks' dumps (``tests/distributed/test_ddp_random.py``).
"""

import importlib
import os
import random
import warnings

import numpy as np

from tests.distributed._workers import _dump, _init

# (no bf16_compress_hook: PyTorch refuses it without CUDA and NCCL, ember runs it on CPU)
_HOOKS = ("none", "allreduce", "fp16", "fp16_wrapper", "powersgd", "user_future")
_CAPS = (None, 1e-6, 2e-5, 1e-4, 5e-4, 25)


def config(seed):
    """The random configuration of ``seed`` (plain values: both frameworks read it)."""
    r = random.Random(seed)
    cfg = {
        "seed": seed,
        "emb": r.random() < 0.4,
        "conv": r.random() < 0.4,
        "norm": r.choice(["none", "layer", "batch", "sync_batch"]),
        "tied": r.random() < 0.3,
        "unused": r.random() < 0.3,
        "frozen": r.random() < 0.3,
        "bucket_cap_mb": r.choice(_CAPS),
        "static_graph": r.random() < 0.25,
        "as_view": r.random() < 0.3,
        "broadcast_buffers": r.choice([True, False]),
        "no_sync": r.random() < 0.3,
        "join": r.random() < 0.25,
        "hook": r.choice(_HOOKS),
        "optim": r.choice(["sgd", "sgd_momentum", "adam"]),
        "steps": r.randint(3, 5),
        "batch": r.randint(2, 5),
    }
    cfg["find_unused"] = cfg["unused"] or r.random() < 0.2
    if cfg["hook"] == "powersgd" and (cfg["find_unused"] or cfg["static_graph"]):
        cfg["hook"] = "allreduce"  # PyTorch's gloo aborts on PowerSGD with unused parameters
    if cfg["join"]:
        # a joined rank shadows the built-in all-reduce only, and PyTorch's gloo aborts on
        # a joined rank's collectives under find_unused_parameters / static_graph
        if cfg["hook"] not in ("none", "allreduce"):
            cfg["hook"] = "none"
        cfg["unused"] = cfg["find_unused"] = cfg["static_graph"] = False
    if cfg["static_graph"] or cfg["join"]:
        cfg["no_sync"] = False  # keeps the step count the same on every rank
    return cfg


def _net(torch, cfg, rank):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(8, 3)  # registered first, used last
            self.emb = nn.Embedding(10, 6) if cfg["emb"] else None
            self.l1 = nn.Linear(6, 8, bias=not cfg["frozen"] or cfg["seed"] % 2 == 0)
            self.conv = nn.Conv1d(1, 2, 3, padding=1) if cfg["conv"] else None
            norm = cfg["norm"]
            self.norm = (nn.LayerNorm(8) if norm == "layer" else
                         nn.BatchNorm1d(8) if norm in ("batch", "sync_batch") else None)
            self.l2 = nn.Linear(8, 8)
            self.l3 = nn.Linear(8, 8) if cfg["tied"] else None
            if self.l3 is not None:
                self.l3.weight = self.l2.weight  # shared: one parameter, used twice
            self.never = nn.Linear(4, 4) if cfg["unused"] else None
            if cfg["frozen"]:
                self.l1.weight.requires_grad_(False)

        def forward(self, x, idx):
            if self.emb is not None:
                x = x + self.emb(idx).sum(1)
            h = self.l1(x)
            if self.conv is not None:
                h = torch.tanh(self.conv(h.unsqueeze(1))).sum(1)
            if self.norm is not None:
                h = self.norm(h)
            h = self.l2(torch.tanh(h))
            if self.l3 is not None:
                h = self.l3(torch.tanh(h))
            return self.head(torch.tanh(h))

    net = Net()
    # rank-dependent values: DDP's initial broadcast has to make them rank 0's
    rng = np.random.default_rng(cfg["seed"] * 10 + rank)
    with torch.no_grad():
        for name, t in list(net.named_parameters()) + list(net.named_buffers()):
            if t.dtype.is_floating_point:
                vals = rng.standard_normal(tuple(t.shape)) * 0.5
                if name.endswith("running_var"):
                    vals = np.abs(vals) + 0.5
                t.copy_(torch.from_numpy(vals.astype(np.float32)))
    if cfg["norm"] == "sync_batch":
        net = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    return net


def _data(cfg, rank, steps):
    rng = np.random.default_rng(cfg["seed"] * 100 + rank)
    b = cfg["batch"]
    return [(rng.standard_normal((b, 6)).astype(np.float32),
             rng.integers(0, 10, size=(b, 3)),
             rng.standard_normal((b, 3)).astype(np.float32)) for _ in range(steps)]


def _user_future_hook(torch, dist):
    def hook(state, bucket):
        t = bucket.buffer()
        fut = dist.all_reduce(t, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0] / dist.get_world_size())
    return hook


def _register_hook(torch, dist, fw, ddp, cfg):
    name = cfg["hook"]
    if name == "none":
        return None
    hooks = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.default_hooks")
    if name == "powersgd":
        ps = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.powerSGD_hook")
        state = ps.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                 use_error_feedback=True, warm_start=True, random_seed=0)
        ddp.register_comm_hook(state, ps.powerSGD_hook)
        return state
    hook = {"allreduce": hooks.allreduce_hook, "fp16": hooks.fp16_compress_hook,
            "bf16": hooks.bf16_compress_hook,
            "fp16_wrapper": hooks.fp16_compress_wrapper(hooks.allreduce_hook),
            "user_future": _user_future_hook(torch, dist)}[name]
    try:
        ddp.register_comm_hook(None, hook)
    except TypeError as e:  # torch's bf16 hook asks for NCCL; record and go on without
        return f"TypeError: {e}"
    return None


def _run(torch, dist, fw, rank, cfg):
    DDP = torch.nn.parallel.DistributedDataParallel
    out = {"warnings": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = _net(torch, cfg, rank)
        kw = {"find_unused_parameters": cfg["find_unused"], "static_graph": cfg["static_graph"],
              "gradient_as_bucket_view": cfg["as_view"],
              "broadcast_buffers": cfg["broadcast_buffers"]}
        if cfg["bucket_cap_mb"] is not None:
            kw["bucket_cap_mb"] = cfg["bucket_cap_mb"]
        ddp = DDP(net, **kw)
        out["hook"] = _register_hook(torch, dist, fw, ddp, cfg)
        names = {id(p): n for n, p in net.named_parameters()}
        params = [p for p in net.parameters() if p.requires_grad]
        opt = (torch.optim.Adam(params, lr=0.01) if cfg["optim"] == "adam" else
               torch.optim.SGD(params, lr=0.05,
                               momentum=0.9 if cfg["optim"] == "sgd_momentum" else 0))
        steps = cfg["steps"] - (rank if cfg["join"] else 0)
        batches = _data(cfg, rank, steps * (2 if cfg["no_sync"] else 1))
        per_step, logs = [], []

        def one(x, idx, y):
            loss = ((ddp(torch.from_numpy(x), torch.from_numpy(idx)) - torch.from_numpy(y))
                    ** 2).mean()
            loss.backward()

        def train():
            it = iter(batches)
            for _ in range(steps):
                opt.zero_grad()
                if cfg["no_sync"]:
                    with ddp.no_sync():
                        one(*next(it))
                one(*next(it))
                per_step.append({
                    "grads": {names[id(p)]: (None if p.grad is None else
                                             p.grad.detach().numpy().copy())
                              for p in net.parameters()},
                })
                opt.step()
                per_step[-1]["params"] = {n: p.detach().numpy().copy()
                                          for n, p in net.named_parameters()}
                per_step[-1]["buffers"] = {n: b.detach().numpy().copy()
                                           for n, b in net.named_buffers()}
                data = ddp._get_ddp_logging_data()
                logs.append({k: data.get(k) for k in (
                    "bucket_sizes", "rebuilt_bucket_sizes", "rebuilt_per_bucket_param_indices",
                    "has_rebuilt_buckets", "num_parameter_tensors",
                    "total_parameter_size_bytes", "bucket_cap_bytes")})

        if cfg["join"]:
            with ddp.join():
                train()
        else:
            train()
        # one more forward makes the record show the last iteration's rebuild
        with torch.no_grad():
            ddp(torch.from_numpy(batches[0][0]), torch.from_numpy(batches[0][1]))
        data = ddp._get_ddp_logging_data()
        logs.append({k: data.get(k) for k in ("rebuilt_bucket_sizes",
                                              "rebuilt_per_bucket_param_indices")})
    out["steps"] = per_step
    out["logs"] = logs
    out["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:60]}" for w in caught})
    return out


def random_ddp(rank, fw, init_method, out_dir, seeds):
    """Each seed's configuration trained on 2 processes; the results by seed."""
    torch, dist = _init(fw, rank, 2, init_method)
    res = {}
    for seed in seeds:
        cfg = config(seed)
        with open(os.path.join(out_dir, f"progress{rank}.txt"), "a") as f:
            f.write(f"{cfg}\n")  # where a hang or an abort happened
        try:
            res[seed] = _run(torch, dist, fw, rank, cfg)
        except Exception as e:  # noqa: BLE001 - the other framework must fail alike
            res[seed] = {"error": f"{type(e).__name__}: {str(e)[:80]}"}
            dist.barrier()
        if not isinstance(res[seed].get("hook"), (str, type(None))):
            # a PowerSGDState unpickles only inside a process group (as PyTorch's): its name
            res[seed]["hook"] = type(res[seed]["hook"]).__name__
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
