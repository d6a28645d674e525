# ruff: noqa: B007, E501, F401, F841, UP004, UP008, UP031, UP032
# Model parallelism across two processes: rank 0 holds the first layers and sends their
# activation to rank 1, which holds the rest, computes the loss and sends the activation's
# gradient back; started by torchrun (one process: the whole model in one place).
import os

import torch
import torch.distributed as dist
import torch.nn as nn


class Stage0(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.fc1(x))


class Stage1(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc2(x)


def main():
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group(backend="gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(0)
    stage0, stage1 = Stage0(), Stage1()  # every rank builds both, keeps its own
    x = torch.randn(8, 6)
    y = torch.randn(8, 3)
    local = {0: [stage0], 1: [stage1]}[rank] if world == 2 else [stage0, stage1]
    params = [p for m in local for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    for step in range(3):
        opt.zero_grad()
        if world == 1:
            loss = nn.functional.mse_loss(stage1(stage0(x)), y)
            loss.backward()
        elif rank == 0:
            h = stage0(x)
            dist.send(h.detach(), dst=1)
            grad = torch.empty_like(h)
            dist.recv(grad, src=1)
            h.backward(grad)
            loss = torch.empty(())
            dist.recv(loss, src=1)
        else:
            h = torch.empty(8, 12)
            dist.recv(h, src=0)
            h.requires_grad_()
            loss = nn.functional.mse_loss(stage1(h), y)
            loss.backward()
            req = dist.isend(h.grad, dst=0)
            req.wait()
            dist.send(loss.detach(), dst=0)
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}")
    if distributed:
        # gather the trained stages on rank 0 to print them in one place
        sums = [p.sum().item() for m in local for p in m.parameters()]
        everything = [None] * world
        dist.all_gather_object(everything, sums)
        if rank == 0:
            print("params: " + " ".join(f"{s:.6f}" for part in everything for s in part))
        dist.destroy_process_group()
    else:
        print("params: " + " ".join(f"{p.sum().item():.6f}" for m in local for p in m.parameters()))


if __name__ == "__main__":
    main()
