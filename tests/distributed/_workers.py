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
    dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    res["rank"], res["world_size"], res["backend"] = (dist.get_rank(), dist.get_world_size(),
                                                      str(dist.get_backend()))
    g = dist.new_group([1])
    res["new_group_rank"] = dist.get_rank(g)
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


def train_ddp(rank, fw, init_method, out_dir, steps=4, bucket_cap_mb=None, no_sync=False,
              find_unused=False):
    """DDP training of the MLP on this rank's half of each batch; dumps parameters."""
    torch, dist = _init(fw, rank, 2, init_method)
    DDP = torch.nn.parallel.DistributedDataParallel
    net = _mlp(torch)
    if rank == 1:  # different initial values: DDP must broadcast rank 0's
        with torch.no_grad():
            for p in net.parameters():
                p.add_(1.0)
    ddp = DDP(net, bucket_cap_mb=bucket_cap_mb, find_unused_parameters=find_unused)
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
    res = {"params": [p.detach().numpy().copy() for p in net.parameters()],
           "keys": list(ddp.state_dict().keys()),
           "module_is_net": ddp.module is net}
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


def unused_params(rank, fw, init_method, out_dir):
    """DDP with a branch only rank 1 uses and a layer nobody uses: grads after one step."""
    torch, dist = _init(fw, rank, 2, init_method)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a = torch.nn.Linear(3, 2)
            self.b = torch.nn.Linear(3, 2)
            self.never = torch.nn.Linear(3, 2)

        def forward(self, x, use_b):
            return self.a(x) + (self.b(x) if use_b else 0)

    ddp = torch.nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
    x = torch.ones(2, 3) * (rank + 1)
    ddp(x, rank == 1).sum().backward()
    res = {n: (None if p.grad is None else p.grad.numpy().copy())
           for n, p in ddp.module.named_parameters()}
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
