"""Workers for tests/distributed/test_distributed_nn.py: gradients through the collectives of
``distributed.nn.functional``, the same code under PyTorch's gloo and under ember."""

import importlib

from ._workers import _dump, _init


def differentiable(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    F = importlib.import_module(fw + ".distributed.nn.functional")
    res = {}
    w = torch.arange(1.0, 7.0).reshape(2, 3)

    def leaf():
        return (torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]) * (rank + 1)).requires_grad_()

    x = leaf()
    parts = F.all_gather(x)
    loss = sum((p * w * (i + 1)).sum() for i, p in enumerate(parts)) + (x * x).sum()
    loss.backward()
    res["all_gather"] = (torch.cat(parts).detach().numpy(), x.grad.numpy())

    x = leaf()
    y = F.all_reduce(x * 2)
    (y * w).sum().backward()
    res["all_reduce"] = (y.detach().numpy(), x.grad.numpy())

    x = leaf()
    y = F.broadcast(x, src=1)
    (y * w * (rank + 2)).sum().backward()
    res["broadcast"] = (y.detach().numpy(), x.grad.numpy())

    x = leaf()
    y = F.reduce_scatter(torch.zeros(3), list(x.unbind(0)))
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    res["reduce_scatter"] = (y.detach().numpy(), x.grad.numpy())

    x = leaf()
    y = F.all_to_all_single(torch.zeros(2, 3), x)
    (y * w).sum().backward()
    res["all_to_all_single"] = (y.detach().numpy(), x.grad.numpy())

    x = leaf()
    outs = F.all_to_all([torch.zeros(3), torch.zeros(3)], list(x.unbind(0)))
    sum((o * (i + 2)).sum() for i, o in enumerate(outs)).backward()
    res["all_to_all"] = (torch.stack(outs).detach().numpy(), x.grad.numpy())
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


def scaler_and_sync(rank, fw, init_method, out_dir):
    """ShardedGradScaler agreeing on an overflow seen by one rank; _sync_module_states."""
    torch, dist = _init(fw, rank, 2, init_method)
    sgs = importlib.import_module(fw + ".distributed.fsdp.sharded_grad_scaler")
    utils = importlib.import_module(fw + ".distributed.utils")
    res = {}
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = sgs.ShardedGradScaler("cpu", init_scale=8.0)
    loss = p.sum() * (float("inf") if rank == 1 else 1.0)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    res["after_overflow"] = (p.detach().numpy().copy(), scaler.get_scale())
    m = torch.nn.Linear(2, 2)
    torch.nn.init.constant_(m.weight, float(rank + 1))
    torch.nn.init.constant_(m.bias, float(rank + 5))
    utils._sync_module_states(m, dist.group.WORLD, 1024, 1, {"bias"})
    res["synced"] = (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
