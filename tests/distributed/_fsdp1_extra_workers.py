"""Workers for tests/distributed/test_fsdp1_extra.py: FSDP1 with communication hooks and with
a weight tied inside one wrapped unit, trained with SGD on half of the batch per rank; each
rank dumps its losses, the whole state dict and the parameter names it saw."""

import os
import pickle

import numpy as np

from ._workers import fill_normal

STEPS = 3
LR = 0.05

# (name, sharding strategy, use_orig_params, hook, tied model)
CASES = [("hook_reduce_scatter", "FULL_SHARD", False, "reduce_scatter", False),
         ("hook_allreduce", "NO_SHARD", False, "allreduce", False),
         ("hook_sum", "FULL_SHARD", True, "sum", False),
         ("hook_sum_noshard", "NO_SHARD", False, "sum", False),
         ("hook_fp16", "SHARD_GRAD_OP", False, "fp16", False),
         ("tied", "FULL_SHARD", False, None, True),
         ("tied_orig", "FULL_SHARD", True, None, True),
         ("tied_noshard", "NO_SHARD", False, None, True)]
# PyTorch's fp16 hook calls record_stream, which a CPU tensor refuses: no torch reference
TORCH_CASES = [c[0] for c in CASES if c[3] != "fp16"]


def model(torch, tied):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(4, 4, bias=False)
            self.mid = nn.Linear(4, 4)
            self.out = nn.Linear(4, 4, bias=False)
            if tied:
                self.out.weight = self.emb.weight

        def forward(self, x):
            return self.out(torch.tanh(self.mid(self.emb(x))))

    net = Net()
    fill_normal(torch, net, 0.5)
    return net


def data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((8, 4)).astype(np.float32),
            rng.standard_normal((8, 4)).astype(np.float32))


def _sum_hook(state, grad, output=None):
    """A hook of the user's own: the sum over the ranks, not the mean."""
    dist, group = state
    if output is None:
        dist.all_reduce(grad, group=group)
    else:
        dist.reduce_scatter_single(output, grad, group=group)


def _np(t):
    return t.detach().float().numpy().copy()


def _run(torch, dist, strategy, uop, hook, tied, rank):
    fsdp = __import__(torch.__name__ + ".distributed.fsdp", fromlist=["x"])
    dh = __import__(torch.__name__ + ".distributed.algorithms._comm_hooks.default_hooks",
                    fromlist=["x"])
    FSDP = fsdp.FullyShardedDataParallel
    m = FSDP(model(torch, tied), use_orig_params=uop,
             sharding_strategy=getattr(fsdp.ShardingStrategy, strategy),
             device_id=torch.device("cpu"))
    group = dist.group.WORLD
    if hook == "reduce_scatter":
        m.register_comm_hook(dh.DefaultState(group), dh.reduce_scatter_hook)
    elif hook == "allreduce":
        m.register_comm_hook(dh.DefaultState(group), dh.allreduce_hook)
    elif hook == "fp16":
        m.register_comm_hook(dh.LowPrecisionState(group), dh.fp16_compress_hook)
    elif hook == "sum":
        m.register_comm_hook((dist, group), _sum_hook)
    opt = torch.optim.SGD(m.parameters(), lr=LR)
    x, y = (torch.tensor(a) for a in data())
    rows = list(range(4 * rank, 4 * rank + 4))
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((m(x[rows]) - y[rows]) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    cfg = fsdp.FullStateDictConfig(rank0_only=False)
    with FSDP.state_dict_type(m, fsdp.StateDictType.FULL_STATE_DICT, cfg):
        full = {k: _np(v) for k, v in m.state_dict().items()}
    return {"losses": losses, "full": full, "names": [n for n, _ in m.named_parameters()]}


def worker(rank, fw, init_method, out_dir, which=None):
    import importlib

    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2)
    results = {}
    try:
        for name, strategy, uop, hook, tied in CASES:
            if which is None or name in which:
                results[name] = _run(torch, dist, strategy, uop, hook, tied, rank)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)
