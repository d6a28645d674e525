"""An FSDP1 training script written as PyTorch's FSDP tutorial writes it (process group from
torchrun's environment, ``auto_wrap_policy``, ``device_id``, a full state dict saved by rank 0);
tests/distributed/test_fsdp1.py starts it with ``python -m ember.distributed.run``.

Usage: python _fsdp1_script.py OUT_FILE
"""

import functools
import os
import pickle
import sys

import ember as torch
import ember.distributed as dist
from ember.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel as FSDP,
                                    StateDictType)
from ember.distributed.fsdp.wrap import size_based_auto_wrap_policy

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tests.distributed import _fsdp1_workers as W  # noqa: E402


def main(out_file):
    dist.init_process_group("gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    net, _ = W.model(torch)
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=60)
    model = FSDP(net, auto_wrap_policy=policy, device_id=torch.device("cpu"),
                 sync_module_states=True)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    x, y = (torch.tensor(a) for a in W.data())
    per = 8 // world
    rows = list(range(rank * per, (rank + 1) * per))
    for _ in range(W.STEPS):
        opt.zero_grad()
        ((model(x[rows]) - y[rows]) ** 2).mean().backward()
        opt.step()
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    if rank == 0:
        with open(out_file, "wb") as f:
            pickle.dump({k: v.numpy() for k, v in state.items()}, f)
    dist.barrier()
    dist.destroy_process_group()
    assert local_rank == rank


if __name__ == "__main__":
    main(sys.argv[1])
