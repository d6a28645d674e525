# ruff: noqa: B007, E501, F401, F841, UP004, UP008, UP031, UP032
# The distributed checkpoint tutorial: an AppState (Stateful) around a fully_shard model and its
# optimizer, dcp.save by every rank, dcp.load into a fresh model, then a one-process load
# into a plain model and dcp_to_torch_save.
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
import torch.nn as nn
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp import fully_shard

CHECKPOINT_DIR = os.environ.get("CKPT", "checkpoint")


class AppState(Stateful):
    """Wraps model and optimizer so dcp.save/dcp.load call get/set_state_dict."""

    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {"model": model_state_dict, "optim": optimizer_state_dict}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(16, 16)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "12355")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


def run_fsdp_checkpoint_save_example(rank, world_size):
    print(f"Running basic FSDP checkpoint saving example on rank {rank}.")
    setup(rank, world_size)
    torch.manual_seed(0)
    model = ToyModel()
    model = fully_shard(model)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    model(torch.rand(8, 16) + rank).sum().backward()
    optimizer.step()
    state_dict = {"app": AppState(model, optimizer)}
    dcp.save(state_dict, checkpoint_id=CHECKPOINT_DIR)
    cleanup()


def run_fsdp_checkpoint_load_example(rank, world_size):
    print(f"Running basic FSDP checkpoint loading example on rank {rank}.")
    setup(rank, world_size)
    torch.manual_seed(1)
    model = ToyModel()
    model = fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    state_dict = {"app": AppState(model, optimizer)}
    dcp.load(state_dict=state_dict, checkpoint_id=CHECKPOINT_DIR)
    # one more step from the loaded state: the optimizer's moments came back too
    model(torch.rand(8, 16) + rank).sum().backward()
    optimizer.step()
    full, _ = get_state_dict(model, optimizer)
    full = {k: v.full_tensor() if hasattr(v, "full_tensor") else v for k, v in full.items()}
    if rank == 0:
        print("resumed: " + " ".join(f"{k}={v.sum().item():.5f}" for k, v in full.items()))
    cleanup()


def run_checkpoint_load_example():
    # the non-sharded model; with no process group, DCP does no collectives
    model = ToyModel()
    state_dict = {"app": {"model": model.state_dict()}}
    dcp.load(state_dict=state_dict, checkpoint_id=CHECKPOINT_DIR)
    model.load_state_dict(state_dict["app"]["model"])
    print("plain: " + " ".join(f"{k}={v.sum().item():.5f}" for k, v in model.state_dict().items()))
    dcp_to_torch_save(CHECKPOINT_DIR, "torch_save.pt")
    saved = torch.load("torch_save.pt", weights_only=False)
    print(f"torch_save: {sorted(saved['app'])} {len(saved['app']['optim']['state'])}")


if __name__ == "__main__":
    world_size = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    shutil.rmtree(CHECKPOINT_DIR, ignore_errors=True)
    mp.spawn(run_fsdp_checkpoint_save_example, args=(world_size,), nprocs=world_size, join=True)
    mp.spawn(run_fsdp_checkpoint_load_example, args=(world_size,), nprocs=world_size, join=True)
    run_checkpoint_load_example()
