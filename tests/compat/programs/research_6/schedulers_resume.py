"""Learning-rate schedules and a mid-training resume the way training scripts write them:
SequentialLR of LinearLR warmup into CosineAnnealingLR, OneCycleLR stepped per batch with
cycle_momentum on SGD, ReduceLROnPlateau on a validation loss, ChainedScheduler of
ExponentialLR and MultiStepLR over two param groups, a checkpoint dict
(model/optimizer/scheduler/scaler-free/RNG states) saved with torch.save to a BytesIO and a
file, reloaded into fresh objects, training continued, and compared with an uninterrupted run."""
import io
import os
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)

X = torch.randn(96, 6)
Y = X @ torch.randn(6, 1) + 0.1 * torch.randn(96, 1)


def make():
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
    opt = torch.optim.SGD([{"params": model[0].parameters()},
                           {"params": model[3].parameters(), "lr": 0.05}],
                          lr=0.1, momentum=0.9, weight_decay=1e-4)
    warm = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=9, eta_min=1e-4)
    sched = lr_scheduler.SequentialLR(opt, schedulers=[warm, cos], milestones=[3])
    return model, opt, sched


def run_epoch(model, opt):
    model.train()
    perm = torch.randperm(96)
    for i in range(0, 96, 32):
        idx = perm[i:i + 32]
        loss = F.mse_loss(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


torch.manual_seed(1)
model, opt, sched = make()
lrs = []
for epoch in range(12):
    loss = run_epoch(model, opt)
    sched.step()
    lrs.append(round(sched.get_last_lr()[0], 6))
print("sequential", lrs)
print("uninterrupted", f"{loss:.6f}")
reference = model.state_dict()

torch.manual_seed(1)
model, opt, sched = make()
for epoch in range(5):
    run_epoch(model, opt)
    sched.step()
checkpoint = {"epoch": 5, "model_state_dict": model.state_dict(),
              "optimizer_state_dict": opt.state_dict(), "scheduler": sched.state_dict(),
              "rng": torch.get_rng_state(), "py_rng": random.getstate(),
              "np_rng": np.random.get_state()}
buffer = io.BytesIO()
torch.save(checkpoint, buffer)
torch.save(checkpoint, "ckpt.pt")
print("saved", os.path.getsize("ckpt.pt") > 1000, sorted(checkpoint["scheduler"])[:4])
del model, opt, sched
buffer.seek(0)
ckpt = torch.load(buffer, weights_only=False)
model, opt, sched = make()
model.load_state_dict(ckpt["model_state_dict"])
opt.load_state_dict(ckpt["optimizer_state_dict"])
sched.load_state_dict(ckpt["scheduler"])
torch.set_rng_state(ckpt["rng"])
random.setstate(ckpt["py_rng"])
np.random.set_state(ckpt["np_rng"])
print("resumed at", ckpt["epoch"], "lr", [round(g["lr"], 6) for g in opt.param_groups],
      "momentum buffers", len(opt.state))
for epoch in range(ckpt["epoch"], 12):
    loss = run_epoch(model, opt)
    sched.step()
print("resumed", f"{loss:.6f}", all(torch.equal(reference[k], v)
                                     for k, v in model.state_dict().items()))
file_ckpt = torch.load("ckpt.pt", map_location="cpu", weights_only=False)
print("file ok", torch.equal(file_ckpt["rng"], ckpt["rng"]),
      file_ckpt["optimizer_state_dict"]["param_groups"][1]["lr"])

# OneCycleLR per batch, with momentum cycling
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
sched = lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=3, steps_per_epoch=3,
                                pct_start=0.3, anneal_strategy="cos")
trace = []
for epoch in range(3):
    for i in range(0, 96, 32):
        loss = F.mse_loss(model(X[i:i + 32]), Y[i:i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        trace.append((round(opt.param_groups[0]["lr"], 6),
                      round(opt.param_groups[0]["momentum"], 5)))
print("onecycle", trace[:4], trace[-1], f"{loss.item():.6f}")

# ReduceLROnPlateau on a validation metric
opt = torch.optim.Adam(model.parameters(), lr=0.05)
plateau = lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1,
                                         threshold=1e-3, cooldown=1, min_lr=1e-3)
val_losses = [1.0, 0.9, 0.91, 0.92, 0.93, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
history = []
for v in val_losses:
    plateau.step(v)
    history.append(round(opt.param_groups[0]["lr"], 5))
print("plateau", history, plateau.num_bad_epochs, plateau.best)

# ChainedScheduler over two groups
net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
opt = torch.optim.Adam([{"params": net[0].parameters(), "lr": 0.1},
                        {"params": net[1].parameters(), "lr": 0.01}])
chain = lr_scheduler.ChainedScheduler([lr_scheduler.ExponentialLR(opt, gamma=0.9),
                                       lr_scheduler.MultiStepLR(opt, milestones=[2, 4],
                                                                gamma=0.5)])
for _ in range(6):
    opt.step()
    chain.step()
print("chained", [round(x, 7) for x in chain.get_last_lr()])

# optimizer in backward: one optimizer per parameter, stepped from a post-accumulate-grad
# hook, all sharing one Tensor learning rate that is decayed in place
net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
shared_lr = torch.tensor(0.02)
optimizer_dict = {p: torch.optim.Adam([p], lr=shared_lr) for p in net.parameters()}


def optimizer_hook(parameter):
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()


handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in net.parameters()]
for step in range(6):
    loss = F.mse_loss(net(X), Y)
    loss.backward()
    shared_lr.mul_(0.8)
for h in handles:
    h.remove()
print("in-backward", f"{loss.item():.6f}", f"{shared_lr.item():.6f}",
      all(p.grad is None for p in net.parameters()),
      int(optimizer_dict[net[0].weight].state[net[0].weight]["step"]))
