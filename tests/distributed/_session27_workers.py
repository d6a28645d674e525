"""Workers for ``test_session27_idioms.py`` (2 processes, see ``conftest.spawn2``).

- ``regroup``: ``fully_shard`` without a mesh, in a process group, then again after
  ``destroy_process_group()`` and a new ``init_process_group()`` (NOTE [ The default mesh
  lives with its group ]).
- ``idioms``: what public DDP/FSDP scripts write, run under ember and under PyTorch's gloo:
  ``elastic.multiprocessing.errors.record``, ``init_device_mesh`` with DTensor basics,
  ``torch.distributed.checkpoint`` of a ``fully_shard`` model, ``ZeroRedundancyOptimizer.
  consolidate_state_dict``, ``DistributedSampler.set_epoch``, ``all_gather_object`` and
  ``torch.distributed.nn.functional.all_reduce`` under autograd.
- ``fsdp1``: ``FullyShardedDataParallel`` with an ``auto_wrap_policy`` and full and sharded
  ``StateDictType`` state dicts, after two SGD steps (ember only: PyTorch's FSDP1 wants an
  accelerator, and with ``device_id=cpu`` its gloo run hangs here).
"""

import functools
import importlib
import os

import numpy as np

from tests.distributed._workers import _dump, _init


def _mod(fw, name):
    return importlib.import_module(f"{fw}.{name}")


def regroup(rank, fw, init_method, out_dir, second_method):
    """Two rounds of group, ``fully_shard``, a step, DTensor gathers, teardown."""
    rounds = []
    for method in (init_method, second_method):
        torch, dist = _init(fw, rank, 2, method)
        fully_shard = _mod(fw, "distributed.fsdp").fully_shard
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 4)
        fully_shard(m)
        m(torch.ones(2, 4) * (rank + 1)).sum().backward()
        norm = float(torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0))
        rounds.append((m.weight.full_tensor().detach().numpy().copy(),
                       m.weight.grad.full_tensor().detach().numpy().copy(), norm,
                       m.state_dict()["bias"].full_tensor().detach().numpy().copy()))
        dist.destroy_process_group()
    _dump(out_dir, rank, rounds)


def idioms(rank, fw, init_method, out_dir):
    record = _mod(fw, "distributed.elastic.multiprocessing.errors").record
    _dump(out_dir, rank, record(_idioms)(rank, fw, init_method, out_dir))


def _idioms(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    nn, res = torch.nn, {}

    # init_device_mesh + DTensor basics
    mesh = _mod(fw, "distributed.device_mesh").init_device_mesh("cpu", (2,),
                                                                 mesh_dim_names=("dp",))
    dt = _mod(fw, "distributed.tensor")
    d = dt.distribute_tensor(torch.arange(8.0).reshape(4, 2), mesh, [dt.Shard(0)])
    local = dt.DTensor.from_local(torch.ones(2) * rank, mesh["dp"], [dt.Shard(0)])
    res["dtensor"] = (d.to_local().numpy().copy(),
                      d.redistribute(mesh, [dt.Replicate()]).to_local().numpy().copy(),
                      local.full_tensor().detach().numpy().copy(),
                      float((d * 2).sum().full_tensor()),
                      str(d.placements), tuple(d.shape))

    # distributed checkpoint of a fully_shard model: save, scramble, load
    fully_shard = _mod(fw, "distributed.fsdp").fully_shard
    dcp = _mod(fw, "distributed.checkpoint")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    for layer in (m[0], m[2]):
        fully_shard(layer)
    fully_shard(m)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    m(torch.ones(3, 4) * (rank + 1)).sum().backward()
    opt.step()
    ckpt = os.path.join(out_dir, "ckpt")
    dcp.save({"model": m.state_dict()}, checkpoint_id=ckpt)
    saved = {k: v.full_tensor().detach().numpy().copy() for k, v in m.state_dict().items()}
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
    sd = {"model": m.state_dict()}
    dcp.load(sd, checkpoint_id=ckpt)
    m.load_state_dict(sd["model"])
    res["dcp"] = (saved, {k: v.full_tensor().detach().numpy().copy()
                          for k, v in m.state_dict().items()})

    # ZeRO: consolidate the sharded optimizer state on rank 0
    ddp = _mod(fw, "nn.parallel").DistributedDataParallel
    zero_cls = _mod(fw, "distributed.optim").ZeroRedundancyOptimizer
    torch.manual_seed(0)
    net = ddp(nn.Linear(4, 3))
    zopt = zero_cls(net.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    net(torch.ones(2, 4) * (rank + 1)).sum().backward()
    zopt.step()
    zopt.consolidate_state_dict(to=0)
    if rank == 0:
        zsd = zopt.state_dict()
        res["zero"] = ({k: {n: np.asarray(v).copy() for n, v in s.items()}
                        for k, s in zsd["state"].items()},
                       [{k: v for k, v in g.items() if k != "params"} | {"params": g["params"]}
                        for g in zsd["param_groups"]])
    res["zero_params"] = [p.detach().numpy().copy() for p in net.parameters()]

    # DistributedSampler by epoch, with a DataLoader
    data = _mod(fw, "utils.data")
    ds = data.TensorDataset(torch.arange(10.0))
    sampler = _mod(fw, "utils.data.distributed").DistributedSampler(ds, shuffle=True, seed=3)
    epochs = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        epochs.append(list(sampler))
    batches = [b[0].tolist() for b in data.DataLoader(ds, batch_size=2, sampler=sampler)]
    res["sampler"] = (epochs, len(sampler), batches)

    # all_gather_object
    objs = [None] * 2
    dist.all_gather_object(objs, {"rank": rank, "v": [rank] * (rank + 1)})
    res["objects"] = objs

    # torch.distributed.nn.functional.all_reduce under autograd
    fnn = _mod(fw, "distributed.nn.functional")
    x = (torch.tensor([1.0, 2.0]) * (rank + 1)).requires_grad_()
    y = fnn.all_reduce(x * 1.0)
    (y * torch.tensor([1.0, 3.0])).sum().backward()
    res["nn_all_reduce"] = (y.detach().numpy().copy(), x.grad.numpy().copy())
    dist.destroy_process_group()
    return res


def fsdp1_model(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def fsdp1_batch(torch, rank):
    """Rank ``rank``'s 3 rows of the 6-row batch."""
    return torch.arange(24.0).reshape(6, 4)[3 * rank:3 * rank + 3] / 10.0


def fsdp1(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    F = _mod(fw, "distributed.fsdp")
    wrap = _mod(fw, "distributed.fsdp.wrap")
    policy = functools.partial(wrap.size_based_auto_wrap_policy, min_num_params=10)
    model = F.FullyShardedDataParallel(fsdp1_model(torch), auto_wrap_policy=policy)
    units = sum(isinstance(m, F.FullyShardedDataParallel) for m in model.modules())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(fsdp1_batch(torch, rank)).pow(2).mean().backward()
        opt.step()
    cfg = F.FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with F.FullyShardedDataParallel.state_dict_type(model, F.StateDictType.FULL_STATE_DICT,
                                                    cfg):
        full = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with F.FullyShardedDataParallel.state_dict_type(model,
                                                    F.StateDictType.SHARDED_STATE_DICT):
        sharded = {k: (tuple(v.shape), tuple(v.to_local().shape))
                   for k, v in model.state_dict().items()}
    dist.destroy_process_group()
    _dump(out_dir, rank, {"units": units, "full": full, "sharded": sharded})
