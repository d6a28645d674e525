"""Workers for tests/distributed/test_fsdp1.py: a model wrapped with FSDP1
(``FullyShardedDataParallel``) as PyTorch's FSDP tutorial writes it, trained on half of the
batch per rank; each rank dumps the whole parameters, losses and optimizer state it saw."""

import os
import pickle

import numpy as np

from ._workers import fill_normal

# (use_orig_params, sharding strategy name, what the run checks)
TRAIN = [(False, "FULL_SHARD", "train"), (True, "FULL_SHARD", "train"),
         (False, "SHARD_GRAD_OP", "train"), (True, "NO_SHARD", "train"),
         (False, "HYBRID_SHARD", "train")]
ACCUMULATE = [(False, "FULL_SHARD", "nosync"), (True, "SHARD_GRAD_OP", "nosync"),
              (False, "NO_SHARD", "nosync"), (False, "FULL_SHARD", "clip"),
              (True, "NO_SHARD", "clip")]
STEPS = 3


def model(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(4, 7)
            self.l2 = nn.Linear(7, 4)

        def forward(self, x):
            return x + self.l2(torch.tanh(self.l1(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(3, 4)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.out = nn.Linear(4, 2)

        def forward(self, x):
            h = self.inp(x)
            for b in self.blocks:
                h = b(h)
            return self.out(h)

    net = Net()
    fill_normal(torch, net, 0.5)
    return net, Block


def data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((8, 3)).astype(np.float32),
            rng.standard_normal((8, 2)).astype(np.float32))


def micro_rows(rank, k):
    """Rows of micro-batch ``k`` on ``rank`` (the ``nosync`` runs: two micro-batches)."""
    return [4 * rank + 2 * k, 4 * rank + 2 * k + 1]


def _np(t):
    return t.detach().float().numpy().copy()


def _run(torch, dist, uop, strategy, mode, rank):
    from ember.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel as FSDP,
                                        ShardingStrategy, StateDictType)
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy

    net, Block = model(torch)
    m = FSDP(net, auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=uop,
             sharding_strategy=getattr(ShardingStrategy, strategy),
             device_id=torch.device("cpu"))
    opt = torch.optim.Adam(m.parameters(), lr=0.05)
    x, y = (torch.tensor(a) for a in data())
    losses, clips = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        if mode == "nosync":
            with m.no_sync():
                r = micro_rows(rank, 0)
                ((m(x[r]) - y[r]) ** 2).mean().backward()
            r = micro_rows(rank, 1)
            loss = ((m(x[r]) - y[r]) ** 2).mean()
            loss.backward()
        else:
            r = list(range(4 * rank, 4 * rank + 4))
            loss = ((m(x[r]) - y[r]) ** 2).mean()
            loss.backward()
        if mode == "clip":
            clips.append(float(m.clip_grad_norm_(0.05)))
        opt.step()
        losses.append(float(loss.detach()))
    cfg = FullStateDictConfig(rank0_only=True)
    with FSDP.state_dict_type(m, StateDictType.FULL_STATE_DICT, cfg):
        full = {k: _np(v) for k, v in m.state_dict().items()}
    osd = FSDP.optim_state_dict(m, opt)
    out = {"full": full, "losses": losses, "clips": clips,
           "names": [n for n, _ in m.named_parameters()],
           "exp_avg": {k: _np(v["exp_avg"]) for k, v in osd["state"].items()},
           "group_params": osd["param_groups"][0]["params"]}
    if mode == "train":
        out["reload"] = _reload(torch, m, opt, osd, uop, strategy, x, y, rank)
    return out


def _reload(torch, m, opt, osd, uop, strategy, x, y, rank):
    """A fresh wrapper loading the sharded state dict and the optimizer state takes the same
    next step as the trained one."""
    from ember.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,
                                        StateDictType)
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy

    with FSDP.state_dict_type(m, StateDictType.SHARDED_STATE_DICT):
        sd = m.state_dict()
    net, Block = model(torch)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
    m2 = FSDP(net, auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=uop,
              sharding_strategy=getattr(ShardingStrategy, strategy))
    with FSDP.state_dict_type(m2, StateDictType.SHARDED_STATE_DICT):
        m2.load_state_dict(sd)
    opt2 = torch.optim.Adam(m2.parameters(), lr=0.05)
    opt2.load_state_dict(FSDP.optim_state_dict_to_load(m2, opt2, osd))
    for model_, o in ((m, opt), (m2, opt2)):
        o.zero_grad()
        r = list(range(4 * rank, 4 * rank + 4))
        ((model_(x[r]) - y[r]) ** 2).mean().backward()
        o.step()
    a, b = m.state_dict(), m2.state_dict()
    return max(float((a[k] - b[k]).abs().max()) for k in a) if a else 0.0


def _fsdp2_nosync(torch, rank):
    """The same accumulation with ``fully_shard`` (FSDP2) and
    ``set_requires_gradient_sync``: the whole parameters after training."""
    from ember.distributed.fsdp import full_state_dict, fully_shard

    net, _ = model(torch)
    for b in net.blocks:
        fully_shard(b)
    fully_shard(net)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    x, y = (torch.tensor(a) for a in data())
    for _ in range(STEPS):
        opt.zero_grad()
        for k in range(2):
            net.set_requires_gradient_sync(k == 1)
            r = micro_rows(rank, k)
            ((net(x[r]) - y[r]) ** 2).mean().backward()
        opt.step()
    return {k: _np(v) for k, v in full_state_dict(net).items()}


def worker(rank, fw, init_method, out_dir, which):
    import importlib

    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2)
    results = {}
    try:
        for uop, strategy, mode in globals()[which]:
            results[(uop, strategy, mode)] = _run(torch, dist, uop, strategy, mode, rank)
        if which == "ACCUMULATE":
            results["fsdp2_nosync"] = _fsdp2_nosync(torch, rank)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)
