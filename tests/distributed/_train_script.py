"""A DDP training script written the torchrun way; the launcher tests run it.

Usage: python _train_script.py OUT_DIR   (under ember.distributed.run, mpiexec, or alone)
"""

import os
import pickle
import sys

import ember as torch
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tests.distributed._workers import _batches, _mlp  # noqa: E402


def main(out_dir):
    distributed = "RANK" in os.environ or "PMI_RANK" in os.environ
    if distributed:
        dist.init_process_group(backend="gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    net = _mlp(torch)
    model = DDP(net) if distributed else net
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    per = 8 // world
    for x, y in _batches(4):
        x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        ((model(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        opt.step()
    env = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                          "MASTER_ADDR", "MASTER_PORT")}
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump({"params": [p.detach().numpy() for p in net.parameters()], "env": env,
                     "rank": rank, "world": world}, f)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
