"""Worker functions run in spawned processes by the distributed tests.

Each takes the framework module name ("torch" or "ember") so the same code runs under
PyTorch's gloo backend and under ember, and writes its results (NumPy arrays) to a file.
"""

import datetime
import importlib
import os
import pickle

import numpy as np


def _init(fw, rank, world_size, init_method):
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=60))
    return torch, dist


def fill_normal(torch, module, scale, seed=0):
    """Overwrite ``module``'s parameters (in registration order) with ``scale`` times
    standard normal draws from a NumPy generator seeded with ``seed``: the same float32
    values under ember and under PyTorch."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * scale,
                                 dtype=torch.float32))
    return module


def _dump(out_dir, rank, results):
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)


def collectives(rank, fw, init_method, out_dir):
    """Every collective on small inputs that depend on the rank; results by name."""
    torch, dist = _init(fw, rank, 2, init_method)
    R = dist.ReduceOp
    res = {}
    base = torch.tensor([1.5, -2.0, 3.0, 0.25]) * (rank + 1)
    for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
        t = base.clone()
        dist.all_reduce(t, getattr(R, op))
        res[f"all_reduce_{op}"] = t.numpy().copy()
    ints = torch.tensor([6, 3, 12, 5]) + rank
    for op in ("SUM", "BAND", "BOR", "BXOR", "MAX"):
        t = ints.clone()
        dist.all_reduce(t, getattr(R, op))
        res[f"all_reduce_int_{op}"] = t.numpy().copy()
    b = torch.tensor([True, False, rank == 0])
    dist.all_reduce(b)
    res["all_reduce_bool"] = b.numpy().copy()
    h = (torch.arange(4.0) * (rank + 1)).to(torch.bfloat16)
    dist.all_reduce(h)
    res["all_reduce_bf16"] = h.float().numpy().copy()
    nc = torch.arange(8.0).reshape(2, 4)[:, ::2] * (rank + 1)
    dist.all_reduce(nc)
    res["all_reduce_noncontiguous"] = nc.numpy().copy()
    t = base.clone()
    dist.broadcast(t, src=1)
    res["broadcast"] = t.numpy().copy()
    t = base.clone()
    dist.reduce(t, dst=0)
    res["reduce"] = t.numpy().copy()
    outs = [torch.zeros(4), torch.zeros(4)]
    dist.all_gather(outs, base)
    res["all_gather"] = np.stack([o.numpy() for o in outs])
    out = torch.zeros(8)
    dist.all_gather_into_tensor(out, base)
    res["all_gather_into_tensor"] = out.numpy().copy()
    out = torch.zeros(2)
    dist.reduce_scatter(out, [base[:2].clone(), base[2:].clone()])
    res["reduce_scatter"] = out.numpy().copy()
    out = torch.zeros(2)
    dist.reduce_scatter_tensor(out, base)
    res["reduce_scatter_tensor"] = out.numpy().copy()
    gl = [torch.zeros(4), torch.zeros(4)] if rank == 0 else None
    dist.gather(base, gl, dst=0)
    res["gather"] = np.stack([g.numpy() for g in gl]) if rank == 0 else None
    t = torch.zeros(2)
    dist.scatter(t, [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])] if rank == 1 else None,
                 src=1)
    res["scatter"] = t.numpy().copy()
    outs = [torch.zeros(2), torch.zeros(2)]
    dist.all_to_all(outs, [base[:2].clone(), base[2:].clone()])
    res["all_to_all"] = np.stack([o.numpy() for o in outs])
    out = torch.zeros(4)
    dist.all_to_all_single(out, base)
    res["all_to_all_single"] = out.numpy().copy()
    if rank == 0:
        dist.send(base, dst=1)
        w = dist.irecv(t := torch.zeros(4), src=1)
        w.wait()
        res["send_recv"] = t.numpy().copy()
    else:
        t = torch.zeros(4)
        res["recv_src"] = dist.recv(t, src=0)
        res["send_recv"] = t.numpy().copy()
        dist.isend(base * 10, dst=0).wait()
    objs = [{"rank": rank}, "x" * rank]
    dist.broadcast_object_list(objs, src=1)
    res["broadcast_object_list"] = objs
    gathered = [None, None]
    dist.all_gather_object(gathered, {"r": rank, "s": [rank] * 2})
    res["all_gather_object"] = gathered
    t = base.clone()
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    res["async_all_reduce"] = t.numpy().copy()
    res["async_completed"] = w.is_completed()
    objs = [None, None]
    if rank == 0:
        dist.send_object_list([{"a": 1}, "x"], dst=1)
    else:
        dist.recv_object_list(objs, src=0)
    res["object_p2p"] = objs
    ts = [torch.ones(2) * (rank + 1), torch.ones(3) * (rank + 2)]
    dist.all_reduce_coalesced(ts)
    res["all_reduce_coalesced"] = [t.numpy().copy() for t in ts]
    sub, subs = dist.new_subgroups(1)
    res["subgroups"] = (dist.get_rank(sub), dist.get_world_size(sub), len(subs))
    mesh = dist.init_device_mesh("cpu", (2,), mesh_dim_names=("dp",))
    res["device_mesh"] = (mesh.get_group("dp").size(), mesh.get_local_rank(), tuple(mesh.shape),
                          mesh.mesh.tolist(), mesh.get_coordinate())
    inp = torch.arange(5.0) if rank == 0 else torch.arange(6.0).reshape(3, 2)[:, 0] + 10
    out = torch.zeros(3 if rank == 0 else 5)
    dist.all_to_all_single(out, inp, [2, 1] if rank == 0 else [3, 2],
                           [2, 3] if rank == 0 else [1, 2])
    res["all_to_all_single_uneven"] = out.numpy().copy()
    gl = [None, None] if rank == 1 else None
    dist.gather_object({"r": rank, "t": [rank] * 2}, gl, dst=1)
    res["gather_object"] = gl
    objs = [None, "kept"]
    dist.scatter_object_list(objs, [{"a": 1}, ("b", 2)] if rank == 0 else None, src=0)
    res["scatter_object_list"] = objs
    dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)
    res["rank"], res["world_size"], res["backend"] = (dist.get_rank(), dist.get_world_size(),
                                                      str(dist.get_backend()))
    g = dist.new_group([1])
    res["new_group_rank"] = dist.get_rank(g)
    from tests.distributed import _subgroup_workers

    res.update(_subgroup_workers.results(torch, dist, fw, rank))
    dist.destroy_process_group()
    res["initialized_after_destroy"] = dist.is_initialized()
    _dump(out_dir, rank, res)


def _mlp(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _batches(steps, n=8):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((n, 6)).astype(np.float32),
             rng.standard_normal((n, 3)).astype(np.float32)) for _ in range(steps)]


def train_single(fw, steps=4, accumulate=False):
    """Full-batch training of the MLP in this process: its final parameters."""
    torch = importlib.import_module(fw)
    net = _mlp(torch)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for x, y in _batches(steps):
        opt.zero_grad()
        if accumulate:  # two micro-batches per rank, mean over the whole batch
            for part in range(4):
                xs, ys = x[part * 2:(part + 1) * 2], y[part * 2:(part + 1) * 2]
                loss = ((net(torch.from_numpy(xs)) - torch.from_numpy(ys)) ** 2).mean() / 4
                loss.backward()
        else:
            loss = ((net(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
            loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in net.parameters()]


def train_ddp(rank, fw, init_method, out_dir):
    """DDP training of the MLP in several configurations; dumps each one's results."""
    torch, dist = _init(fw, rank, 2, init_method)
    res = {"default": _train_ddp(torch, rank),
           "small_buckets": _train_ddp(torch, rank, bucket_cap_mb=0.0001),
           "no_sync": _train_ddp(torch, rank, no_sync=True),
           "bucket_view_no_sync": _train_ddp(torch, rank, no_sync=True, as_view=True),
           "fsdp": _train_fsdp(torch, rank)}
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


def _train_fsdp(torch, rank, steps=4):
    """fully_shard training of the MLP (each Linear a unit) on this rank's half-batches."""
    fsdp = importlib.import_module(torch.__name__ + ".distributed.fsdp")
    net = _mlp(torch)
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            fsdp.fully_shard(layer)
    fsdp.fully_shard(net)
    shard_shapes = [tuple(p.to_local().shape) for p in net.parameters()]  # DTensor pieces
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for x, y in _batches(steps):
        opt.zero_grad()
        x, y = x[rank * 4:(rank + 1) * 4], y[rank * 4:(rank + 1) * 4]
        ((net(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        opt.step()
    full = fsdp.full_state_dict(net)
    return {"params": [v.numpy().copy() for v in full.values()], "shards": shard_shapes}


def _train_ddp(torch, rank, steps=4, bucket_cap_mb=None, no_sync=False, as_view=False):
    """DDP training of the MLP on this rank's half of each batch: parameters and keys."""
    DDP = torch.nn.parallel.DistributedDataParallel
    net = _mlp(torch)
    if rank == 1:  # different initial values: DDP must broadcast rank 0's
        with torch.no_grad():
            for p in net.parameters():
                p.add_(1.0)
    ddp = DDP(net, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=as_view)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for x, y in _batches(steps):
        opt.zero_grad()
        x, y = x[rank * 4:(rank + 1) * 4], y[rank * 4:(rank + 1) * 4]
        if no_sync:
            with ddp.no_sync():
                loss = ((ddp(torch.from_numpy(x[:2])) - torch.from_numpy(y[:2])) ** 2).mean() / 2
                loss.backward()
            loss = ((ddp(torch.from_numpy(x[2:])) - torch.from_numpy(y[2:])) ** 2).mean() / 2
            loss.backward()
        else:
            loss = ((ddp(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
            loss.backward()
        opt.step()
    return {"params": [p.detach().numpy().copy() for p in net.parameters()],
            "keys": list(ddp.state_dict().keys()),
            "module_is_net": ddp.module is net}


def _unused_grads(torch, rank):
    """DDP with a branch only rank 1 uses and a layer nobody uses: grads after one step."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Linear(3, 2)
            self.b = torch.nn.Linear(3, 2)
            self.never = torch.nn.Linear(3, 2)
            with torch.no_grad():
                for k, p in enumerate(self.parameters()):
                    p.copy_(torch.arange(float(p.numel())).reshape(p.shape) * 0.1 + k)

        def forward(self, x, use_b):
            return self.a(x) + (self.b(x) if use_b else 0)

    ddp = torch.nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
    x = torch.ones(2, 3) * (rank + 1)
    ddp(x, rank == 1).sum().backward()
    return {n: (None if p.grad is None else p.grad.numpy().copy())
            for n, p in ddp.module.named_parameters()}


# -- DDP features, compared with PyTorch's gloo DDP -------------------------------------------

def _feature_net(torch, unused=False, bn=False):
    """A small net with weights from NumPy (the same in both frameworks)."""
    rng = np.random.default_rng(7)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # registered out of use order, so the first iteration's ready order differs
            # from reverse registration order
            self.head = torch.nn.Linear(8, 3)
            self.body = torch.nn.Linear(6, 8)
            self.bn = torch.nn.BatchNorm1d(8) if bn else None
            self.never = torch.nn.Linear(3, 3) if unused else None

        def forward(self, x):
            h = torch.tanh(self.body(x))
            if self.bn is not None:
                h = self.bn(h)
            return self.head(h)

    net = Net()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def _feature_data(rank, steps):
    rng = np.random.default_rng(100 + rank)
    return [(rng.standard_normal((4, 6)).astype(np.float32),
             rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(steps)]


def _train(torch, ddp, batches, hook_state=None):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches:
        opt.zero_grad()
        loss = ((ddp(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        loss.backward()
        opt.step()


def _state(net):
    return [t.detach().float().numpy().copy() for t in
            list(net.parameters()) + list(net.buffers()) if t.dtype.is_floating_point]


def _zero(torch, DDP, optim, batches):
    """ZeroRedundancyOptimizer(Adam) under DDP: parameters, shares, consolidated state."""
    net = _feature_net(torch)
    ddp = DDP(net)
    zero = optim.ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.Adam, lr=0.01)
    for x, y in batches:
        zero.zero_grad()
        ((ddp(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        zero.step()
    out = {"zero": _state(net),
           "zero_share": sorted(tuple(p.shape) for g in zero.optim.param_groups
                                for p in g["params"])}
    try:
        zero.state_dict()
        out["zero_unconsolidated"] = None
    except RuntimeError as e:
        out["zero_unconsolidated"] = str(e)
    zero.consolidate_state_dict(to=0)
    if torch.distributed.get_rank() == 0:
        sd = zero.state_dict()
        out["zero_state"] = {k: {n: (v.numpy().copy() if hasattr(v, "numpy") else v)
                                 for n, v in st.items()} for k, st in sd["state"].items()}
        out["zero_groups"] = [{k: v for k, v in g.items() if k in ("lr", "params", "betas")}
                              for g in sd["param_groups"]]
        fresh = optim.ZeroRedundancyOptimizer(_feature_net(torch).parameters(),
                                              torch.optim.Adam, lr=0.5)
        fresh.load_state_dict(sd)
        out["zero_loaded_lr"] = fresh.param_groups[0]["lr"]
    else:  # the other rank loads a state too (every rank keeps its share)
        fresh = optim.ZeroRedundancyOptimizer(_feature_net(torch).parameters(),
                                              torch.optim.Adam, lr=0.5)
    return out


def ddp_features(rank, fw, init_method, out_dir):
    """Each DDP feature trains a few steps; final parameters (and buffers) by name."""
    torch, dist = _init(fw, rank, 2, init_method)
    DDP = torch.nn.parallel.DistributedDataParallel
    hooks = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.default_hooks")
    res = {}
    batches = _feature_data(rank, 3)
    for name, hook in [("hook_allreduce", hooks.allreduce_hook),
                       ("hook_fp16", hooks.fp16_compress_hook),
                       ("hook_bf16", hooks.bf16_compress_hook),
                       ("hook_fp16_wrapper", hooks.fp16_compress_wrapper(hooks.allreduce_hook)),
                       ("hook_bf16_wrapper", hooks.bf16_compress_wrapper(hooks.allreduce_hook)),
                       ("plain", None)]:
        net = _feature_net(torch)
        ddp = DDP(net)
        if hook is not None:
            try:
                ddp.register_comm_hook(None, hook)
            except TypeError:  # torch: bf16 hooks need CUDA and NCCL
                res[name] = None
                continue
        _train(torch, ddp, batches)
        res[name] = _state(net)
    net = _feature_net(torch)
    ddp = DDP(net, gradient_as_bucket_view=True, bucket_cap_mb=0.0001)
    _train(torch, ddp, batches)
    res["bucket_view"] = _state(net)
    res["bucket_view_grad_is_view"] = net.body.weight.grad._base is not None
    for name, kw in [("static_graph", {"static_graph": True}),
                     ("find_unused", {"find_unused_parameters": True})]:
        net = _feature_net(torch, unused=True)
        ddp = DDP(net, **kw)
        _train(torch, ddp, batches)
        res[name] = _state(net)
        res[name + "_never_grad"] = net.never.weight.grad
    res["unused_grads"] = _unused_grads(torch, rank)
    # uneven inputs: rank 0 has 2 batches, rank 1 has 4
    for name, kw in [("join", {}), ("join_active", {"divide_by_initial_world_size": False})]:
        net = _feature_net(torch, bn=True)
        ddp = DDP(net)
        with ddp.join(**kw):
            _train(torch, ddp, _feature_data(rank, 2 + 2 * rank))
        res[name] = _state(net)
    net = _feature_net(torch)
    ddp = DDP(net)
    try:
        with ddp.join(throw_on_early_termination=True):
            _train(torch, ddp, _feature_data(rank, 1 + rank))
        res["join_throw"] = None
    except RuntimeError as e:
        res["join_throw"] = str(e)
    res.update(_zero(torch, DDP, importlib.import_module(fw + ".distributed.optim"), batches))
    if fw == "ember":
        net = _feature_net(torch)
        ddp = DDP(net, bucket_cap_mb=0.0001)
        names = {id(p): n for n, p in net.named_parameters()}
        before = [[names[id(p)] for p in b.params] for b in ddp._buckets]
        _train(torch, ddp, batches[:1])
        res["buckets"] = (before, [[names[id(p)] for p in b.params] for b in ddp._buckets])
        ps = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.powerSGD_hook")
        for name, hook in [("powersgd", ps.powerSGD_hook),
                           ("batched_powersgd", ps.batched_powerSGD_hook)]:
            net = _feature_net(torch)
            ddp = DDP(net)
            state = ps.PowerSGDState(None, start_powerSGD_iter=2)
            ddp.register_comm_hook(state, hook)
            _train(torch, ddp, batches)
            res[name] = (_state(net), state.iter, state.compression_stats()[0])
    from tests.distributed import _averaging_workers, _ddp_logging_workers, _zero_overlap

    res.update(_averaging_workers.results(torch, dist, fw, rank))
    res.update(_zero_overlap.results(torch, dist, fw, rank))
    res.update(_ddp_logging_workers.results(torch, dist, fw, rank))
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


# -- faults -------------------------------------------------------------------------------------

def faults(rank, fw, init_method, out_dir):
    """Collectives called with different shapes/dtypes/ops on the two ranks, then a rank
    that dies: the errors each rank saw."""
    import logging
    import time

    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    records = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    logging.getLogger("ember.distributed").addHandler(handler)
    logging.getLogger("ember.distributed").setLevel(logging.INFO)
    torch, dist = _init(fw, rank, 2, init_method)
    res = {}
    cases = [("all_reduce_shape", lambda: dist.all_reduce(torch.ones(2 + rank))),
             ("broadcast_dtype", lambda: dist.broadcast(
                 torch.ones(2, dtype=torch.float64 if rank else torch.float32), src=0)),
             ("different_collectives", lambda: dist.all_reduce(torch.ones(2)) if rank == 0
              else dist.broadcast(torch.ones(2), src=0)),
             ("ddp_different_models", lambda: torch.nn.parallel.DistributedDataParallel(
                 torch.nn.Linear(2, 2 + rank)))]
    for name, fn in cases:
        t = time.monotonic()
        try:
            fn()
            res[name] = None
        except RuntimeError as e:
            res[name] = (type(e).__name__, str(e), time.monotonic() - t)
    t = torch.ones(3)
    dist.all_reduce(t)  # the group still works after the errors
    res["after"] = t.numpy().copy()
    res["log"] = records
    # rank 1 dies; rank 0's next collective must fail within the group's timeout
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=2))
    dist.barrier(group=g)
    _dump(out_dir, rank, res)
    if rank == 1:
        os._exit(0)
    time.sleep(0.2)
    t = time.monotonic()
    try:
        dist.all_reduce(torch.ones(2), group=g)
        res["death"] = None
    except RuntimeError as e:
        res["death"] = (type(e).__name__, str(e), time.monotonic() - t)
    try:
        dist.monitored_barrier(group=g, timeout=datetime.timedelta(seconds=0.5))
        res["monitored_barrier_dead"] = None
    except RuntimeError as e:
        res["monitored_barrier_dead"] = (type(e).__name__, str(e))
    _dump(out_dir, rank, res)
    os._exit(0)
