# ruff: noqa: B007, E501, F401, F841, UP004, UP008, UP031, UP032
# The ZeroRedundancyOptimizer recipe: the same DDP step with and without ZeRO (Adam), then the
# optimizer state consolidated on rank 0 and saved.
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP


def print_peak_memory(prefix, device):
    if device == 0 and torch.cuda.is_available():
        print(f"{prefix}: {torch.cuda.max_memory_allocated(device) // 1e6}MB ")


def example(rank, world_size, use_zero):
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29500")
    # create default process group
    dist.init_process_group("gloo", rank=rank, world_size=world_size)

    # create local model
    model = nn.Sequential(*[nn.Linear(20, 20) for _ in range(4)])
    print_peak_memory("Max memory allocated after creating local model", rank)

    # construct DDP model
    ddp_model = DDP(model)
    print_peak_memory("Max memory allocated after creating DDP", rank)

    # define loss function and optimizer
    loss_fn = nn.MSELoss()
    if use_zero:
        optimizer = ZeroRedundancyOptimizer(
            ddp_model.parameters(),
            optimizer_class=torch.optim.Adam,
            lr=0.01
        )
    else:
        optimizer = torch.optim.Adam(ddp_model.parameters(), lr=0.01)

    for _ in range(2):
        # forward pass
        outputs = ddp_model(torch.randn(20, 20) + rank)
        labels = torch.randn(20, 20)
        # backward pass
        loss_fn(outputs, labels).backward()

        # update parameters
        print_peak_memory("Max memory allocated before optimizer step()", rank)
        optimizer.step()
        optimizer.zero_grad()
        print_peak_memory("Max memory allocated after optimizer step()", rank)

    print(f"params sum is: {sum(model.parameters()).sum():.5f}")
    if use_zero:
        optimizer.consolidate_state_dict(to=0)
        if rank == 0:
            state = optimizer.state_dict()
            print(f"zero state: {len(state['state'])} {len(state['param_groups'])} "
                  f"{sum(s['exp_avg'].sum().item() for s in state['state'].values()):.6f}")
    dist.destroy_process_group()


def main():
    world_size = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print("=== Using ZeroRedundancyOptimizer ===")
    mp.spawn(example, args=(world_size, True), nprocs=world_size, join=True)

    print("=== Not Using ZeroRedundancyOptimizer ===")
    mp.spawn(example, args=(world_size, False), nprocs=world_size, join=True)


if __name__ == "__main__":
    main()
