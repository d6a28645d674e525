# printout rtol: 1e-2  (bfloat16 autocast training: a one-ulp float32 difference in a weight flips
# a bfloat16 rounding now and then; PyTorch differs from itself by thread count here too)
"""A small training script written the way many repositories' ``train.py`` files are: a
``@dataclass`` config overridden from ``argparse``, ``torch.backends`` flags
(``cudnn.benchmark``, ``cuda.matmul.allow_tf32``, ``set_float32_matmul_precision``), a
``torch.cuda.is_available()`` device branch, a guarded ``torch.compile`` (skipped unless
asked), a ``DataLoader`` with two workers, a ``worker_init_fn`` seeding NumPy and a
``collate_fn`` that pads, a ``tqdm`` progress bar (on stderr), real CPU bfloat16
``torch.autocast`` in training with a disabled ``GradScaler`` as the AMP boilerplate
writes it, gradient accumulation, ``clip_grad_norm_`` after ``scaler.unscale_``, a
per-epoch evaluation in float32 and bfloat16, and a checkpoint of model, optimizer, scaler
and config."""
import argparse
import dataclasses
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


@dataclass
class TrainConfig:
    epochs: int = 2
    batch_size: int = 8
    lr: float = 3e-3
    grad_accum: int = 2
    amp: bool = True
    compile: bool = False
    seed: int = 1337
    d_model: int = 16


parser = argparse.ArgumentParser()
for f in dataclasses.fields(TrainConfig):
    kind = (lambda s: s.lower() in ("1", "true")) if f.type is bool else f.type
    parser.add_argument(f"--{f.name}", type=kind, default=f.default)
cfg = TrainConfig(**vars(parser.parse_args([])))
print(cfg)
random.seed(cfg.seed)
np.random.seed(cfg.seed)
torch.manual_seed(cfg.seed)
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("high")
device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
amp_dtype = torch.bfloat16
print("device", device, "matmul precision", torch.get_float32_matmul_precision(),
      "bf16 supported", torch.cuda.is_bf16_supported() if torch.cuda.is_available() else "cpu")


class Sequences(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            length = int(torch.randint(3, 9, (1,), generator=g))
            x = torch.randn(length, 4, generator=g)
            self.items.append((x, int(x[:, 0].sum() > 0)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def pad_collate(batch):
    xs, ys = zip(*batch)
    lengths = torch.tensor([len(x) for x in xs])
    padded = nn.utils.rnn.pad_sequence(xs, batch_first=True)
    mask = torch.arange(padded.shape[1])[None, :] < lengths[:, None]
    return padded, mask, torch.tensor(ys)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class Classifier(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inp = nn.Linear(4, d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, 2)

    def forward(self, x, mask):
        h = self.inp(x)
        a, _ = self.attn(h, h, h, key_padding_mask=~mask, need_weights=False)
        h = self.norm(h + a)
        h = h + self.mlp(h)
        h = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return self.head(h)


g = torch.Generator()
g.manual_seed(0)
train_loader = DataLoader(Sequences(64, 1), batch_size=cfg.batch_size, shuffle=True,
                          num_workers=2, worker_init_fn=seed_worker, generator=g,
                          collate_fn=pad_collate)
val_loader = DataLoader(Sequences(32, 2), batch_size=16, collate_fn=pad_collate)
model = Classifier(cfg.d_model).to(device)
if cfg.compile and hasattr(torch, "compile"):
    print("compiling the model... (takes a ~minute)")
    model = torch.compile(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
scaler = torch.amp.GradScaler(device_type, enabled=(amp_dtype == torch.float16))
print("scaler enabled", scaler.is_enabled(), "scale", scaler.get_scale())


def evaluate(use_amp):
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, mask, y in val_loader:
            with torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=use_amp):
                logits = model(x, mask)
            total += F.cross_entropy(logits.float(), y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            n += len(y)
    model.train()
    return total / n, correct / n


for epoch in range(cfg.epochs):
    model.train()
    pbar = tqdm(train_loader, desc=f"epoch {epoch}", leave=False)
    running = []
    for step, (x, mask, y) in enumerate(pbar):
        x, mask, y = x.to(device), mask.to(device), y.to(device)
        with torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=cfg.amp):
            logits = model(x, mask)
            loss = F.cross_entropy(logits, y) / cfg.grad_accum
        if step == 0 and epoch == 0:
            print("autocast dtypes: logits", logits.dtype, "loss", loss.dtype)
        scaler.scale(loss).backward()
        if (step + 1) % cfg.grad_accum == 0:
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        running.append(loss.item() * cfg.grad_accum)
        pbar.set_postfix(loss=f"{running[-1]:.3f}")
    vl32, acc32 = evaluate(False)
    vl16, acc16 = evaluate(True)
    # (accuracies left out: a near-tie of two logits decides them, and bfloat16 moves ties)
    print(f"epoch {epoch}: train {np.mean(running):.4f} | val fp32 {vl32:.4f} "
          f"| val bf16 {vl16:.3f} | grad norm {norm.item():.4f}")

print("param dtypes", {p.dtype for p in model.parameters()},
      "grads", {p.grad is None for p in model.parameters()})
checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "scaler": scaler.state_dict(), "config": dataclasses.asdict(cfg),
              "epoch": cfg.epochs}
torch.save(checkpoint, "ckpt.pt")
ck = torch.load("ckpt.pt", map_location=device, weights_only=True)
print(sorted(ck), ck["scaler"], ck["config"]["lr"], len(ck["optimizer"]["state"]))
