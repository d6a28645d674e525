"""A script written for DDP, run as one process: nanoGPT-style ``ddp = int(os.environ.get(
'RANK', -1)) != -1`` decides the branch; here the program also sets up a world of one itself
through a ``file://`` rendezvous (as single-node debugging recipes do), wraps the model in
``DistributedDataParallel``, trains with gradient accumulation toggling
``model.require_backward_grad_sync`` and also with ``no_sync()``, all-reduces the loss for
logging, uses a ``DistributedSampler`` with ``set_epoch``, saves ``raw_model =
model.module``'s state on the master process behind a ``barrier``, and destroys the group."""
import math
import os
import tempfile
import time
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

gradient_accumulation_steps = 2
batch_size = 8
max_iters = 8
learning_rate = 1e-2
min_lr = 1e-3
warmup_iters = 2
lr_decay_iters = 8
backend = "gloo"
out_dir = "out"

ddp = int(os.environ.get("RANK", -1)) != -1
print("launched under torchrun:", ddp)
rendezvous = tempfile.mkdtemp()
if ddp:
    dist.init_process_group(backend=backend)
else:
    dist.init_process_group(backend=backend, init_method="file://" + os.path.join(rendezvous, "store"),
                            rank=0, world_size=1)
ddp_rank, ddp_world_size = dist.get_rank(), dist.get_world_size()
master_process = ddp_rank == 0
seed_offset = ddp_rank
print("initialized", dist.is_initialized(), "backend", dist.get_backend(), "rank", ddp_rank,
      "world", ddp_world_size)
torch.manual_seed(1337 + seed_offset)
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 24)
        self.fc2 = nn.Linear(24, 3)
        self.unused_in_eval = nn.Parameter(torch.zeros(1))

    def forward(self, x, targets=None):
        logits = self.fc2(F.gelu(self.fc1(x))) + self.unused_in_eval
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss


g = torch.Generator().manual_seed(0)
X = torch.randn(64, 10, generator=g)
Y = (X[:, :3] * torch.tensor([1.0, -2.0, 0.5])).argmax(1)
dataset = TensorDataset(X, Y)
sampler = DistributedSampler(dataset, num_replicas=ddp_world_size, rank=ddp_rank, shuffle=True,
                             seed=7, drop_last=True)
loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, pin_memory=True)
print("sampler length", len(sampler), "loader length", len(loader))

model = MLP().to(device)
model = DDP(model, device_ids=None, broadcast_buffers=True, gradient_as_bucket_view=True)
raw_model = model.module
print(type(model).__name__, type(raw_model).__name__, model.device_ids, model.dim)
optimizer = torch.optim.AdamW(raw_model.parameters(), lr=learning_rate, weight_decay=0.1)


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


it = 0
epoch = 0
data_iter = iter(loader)
t0 = time.time()
while it < max_iters:
    lr = get_lr(it)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    for micro_step in range(gradient_accumulation_steps):
        try:
            xb, yb = next(data_iter)
        except StopIteration:
            epoch += 1
            sampler.set_epoch(epoch)
            data_iter = iter(loader)
            xb, yb = next(data_iter)
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        with ctx:
            logits, loss = model(xb, yb)
            loss = loss / gradient_accumulation_steps
        loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    lossf = loss.detach() * gradient_accumulation_steps
    dist.all_reduce(lossf, op=dist.ReduceOp.AVG)
    if master_process:
        print(f"iter {it}: loss {lossf.item():.5f}, lr {lr:.5f}, norm {norm.item():.5f}, epoch {epoch}")
    it += 1

# accumulation the other way: no_sync() on all but the last micro-batch
model.train()
for i, (xb, yb) in enumerate(loader):
    if i >= 3:
        break
    cm = model.no_sync() if i < 2 else nullcontext()
    with cm:
        _, loss = model(xb, yb)
        (loss / 3).backward()
print("accumulated grad norm", torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item())
optimizer.zero_grad(set_to_none=True)

t = torch.tensor([float(ddp_rank + 1)])
dist.all_reduce(t)
gathered = [torch.zeros(2) for _ in range(ddp_world_size)]
dist.all_gather(gathered, torch.tensor([1.5, -2.0]))
obj = [None]
if master_process:
    obj = [{"step": it, "lr": get_lr(it)}]
dist.broadcast_object_list(obj, src=0)
print("all_reduce", t, "all_gather", gathered, "broadcast", obj)

if master_process:
    os.makedirs(out_dir, exist_ok=True)
    checkpoint = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                  "iter_num": it, "config": {"batch_size": batch_size}}
    print("saving checkpoint keys", sorted(checkpoint["model"]))
    torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
dist.barrier()
ck = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
fresh = MLP()
fresh.load_state_dict(ck["model"])
with torch.no_grad():
    print("eval loss of saved model", F.cross_entropy(fresh(X)[0], Y).item())
dist.destroy_process_group()
print("initialized after destroy", dist.is_initialized())
