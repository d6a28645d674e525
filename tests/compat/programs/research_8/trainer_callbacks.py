"""A lightning-free ``Trainer`` the way small research repos write one: a dataclass config,
callbacks (early stopping on a monitored metric with ``min_delta`` and ``patience``, a
best-model checkpoint, a learning-rate monitor), gradient accumulation, ``torch.autocast``
and ``torch.amp.GradScaler`` both disabled on CPU but called as on a GPU, ``clip_grad_norm_``
after ``scaler.unscale_``, a tqdm progress bar with ``set_postfix``, a checkpoint written in
the middle of an epoch (model, optimizer, scheduler, scaler, RNG and sampler-generator
states, the batch index) and resumed by skipping batches with ``itertools.islice``, ending
where the uninterrupted run ends; ``torch.autograd.detect_anomaly`` naming the backward
that made a NaN."""
import copy
import itertools
import math
import sys
import warnings
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from tqdm import tqdm


@dataclass
class TrainConfig:
    epochs: int = 4
    batch_size: int = 8
    accumulate: int = 2
    lr: float = 3e-3
    weight_decay: float = 0.01
    clip: float = 1.0
    patience: int = 2
    min_delta: float = 1e-3
    seed: int = 1234
    amp: bool = False
    hidden: list = field(default_factory=lambda: [32, 16])


class Callback:
    def on_fit_start(self, trainer):
        pass

    def on_train_batch_end(self, trainer, loss, batch_idx):
        pass

    def on_validation_end(self, trainer, metrics):
        pass


class EarlyStopping(Callback):
    def __init__(self, monitor="val_loss", min_delta=0.0, patience=3, mode="min"):
        self.monitor, self.min_delta, self.patience, self.mode = monitor, min_delta, patience, mode
        self.wait = 0
        self.best = math.inf if mode == "min" else -math.inf

    def improved(self, value):
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def on_validation_end(self, trainer, metrics):
        value = metrics[self.monitor]
        if self.improved(value):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                trainer.should_stop = True
                print(f"EarlyStopping: {self.monitor} did not improve for {self.wait} epochs")


class BestCheckpoint(Callback):
    def __init__(self, monitor="val_acc"):
        self.monitor, self.best, self.state = monitor, -math.inf, None

    def on_validation_end(self, trainer, metrics):
        if metrics[self.monitor] > self.best:
            self.best = metrics[self.monitor]
            self.state = copy.deepcopy(trainer.model.state_dict())
            self.epoch = trainer.epoch


class LRMonitor(Callback):
    def __init__(self):
        self.history = []

    def on_train_batch_end(self, trainer, loss, batch_idx):
        self.history.append(trainer.optimizer.param_groups[0]["lr"])


class Trainer:
    def __init__(self, cfg, model, train_ds, val_ds, callbacks=(), stop_at=None):
        self.cfg, self.model, self.callbacks = cfg, model, list(callbacks)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.generator = torch.Generator().manual_seed(cfg.seed)
        self.train_loader = DataLoader(train_ds, batch_size=cfg.batch_size,
                                       sampler=RandomSampler(train_ds, generator=self.generator),
                                       pin_memory=self.device == "cuda", drop_last=True)
        self.val_loader = DataLoader(val_ds, batch_size=64)
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW([
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
        steps = cfg.epochs * (len(self.train_loader) // cfg.accumulate)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(
            self.optimizer, max_lr=cfg.lr, total_steps=steps, pct_start=0.3)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.amp)
        self.ctx = (torch.autocast(device_type=self.device, dtype=torch.bfloat16)
                    if cfg.amp else nullcontext())
        self.epoch, self.start_batch, self.should_stop, self.stop_at = 0, 0, False, stop_at

    def state_dict(self, batch_idx, sampler_state):
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "scaler": self.scaler.state_dict(),
                "rng": torch.get_rng_state(), "sampler_rng": sampler_state,
                "epoch": self.epoch, "batch_idx": batch_idx, "config": asdict(self.cfg)}

    def load_state_dict(self, ckpt):
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        self.scaler.load_state_dict(ckpt["scaler"])
        self.pending_rng = ckpt["rng"]
        self.generator.set_state(ckpt["sampler_rng"])
        self.epoch, self.start_batch = ckpt["epoch"], ckpt["batch_idx"] + 1

    def train_epoch(self):
        self.model.train()
        sampler_state = self.generator.get_state()  # the permutation of this epoch
        batches = enumerate(self.train_loader)  # (the iterator draws its base seed here)
        if getattr(self, "pending_rng", None) is not None:
            torch.set_rng_state(self.pending_rng)
            self.pending_rng = None
        if self.start_batch:
            batches = itertools.islice(batches, self.start_batch, None)
        bar = tqdm(batches, total=len(self.train_loader), initial=self.start_batch,
                   desc=f"epoch {self.epoch}", file=sys.stderr, leave=False)
        for batch_idx, (x, y) in bar:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            with self.ctx:
                logits = self.model(x)
                loss = F.cross_entropy(logits, y, label_smoothing=0.05) / self.cfg.accumulate
            self.scaler.scale(loss).backward()
            if (batch_idx + 1) % self.cfg.accumulate == 0:
                self.scaler.unscale_(self.optimizer)
                norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad(set_to_none=True)
                self.scheduler.step()
                bar.set_postfix(loss=f"{loss.item() * self.cfg.accumulate:.4f}",
                                norm=f"{norm.item():.3f}")
            for cb in self.callbacks:
                cb.on_train_batch_end(self, loss, batch_idx)
            if self.stop_at == (self.epoch, batch_idx):
                torch.save(self.state_dict(batch_idx, sampler_state), "mid_epoch.pt")
                print(f"checkpoint at epoch {self.epoch} batch {batch_idx}, "
                      f"lr {self.scheduler.get_last_lr()[0]:.6f}")
                return False
        self.start_batch = 0
        return True

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        total, correct, n = 0.0, 0, 0
        for x, y in self.val_loader:
            logits = self.model(x)
            total += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(-1) == y).sum().item()
            n += y.numel()
        return {"val_loss": total / n, "val_acc": correct / n}

    def fit(self, resume=None):
        if resume is not None:
            self.load_state_dict(torch.load(resume, weights_only=False))
            print(f"resumed at epoch {self.epoch} batch {self.start_batch}")
        else:
            for cb in self.callbacks:
                cb.on_fit_start(self)
        while self.epoch < self.cfg.epochs and not self.should_stop:
            if not self.train_epoch():
                return False
            metrics = self.validate()
            print(f"epoch {self.epoch}: val_loss {metrics['val_loss']:.4f} "
                  f"val_acc {metrics['val_acc']:.3f} scale {self.scaler.get_scale():.1f}")
            for cb in self.callbacks:
                cb.on_validation_end(self, metrics)
            self.epoch += 1
        return True


def make_model(cfg):
    layers, d = [], 10
    for h in cfg.hidden:
        layers += [nn.Linear(d, h), nn.LayerNorm(h), nn.GELU(), nn.Dropout(0.1)]
        d = h
    return nn.Sequential(*layers, nn.Linear(d, 3))


torch.manual_seed(0)
X = torch.randn(160, 10)
Y = (X[:, :3].argmax(1) + (X[:, 3] > 1.2).long()) % 3
train_ds, val_ds = TensorDataset(X[:128], Y[:128]), TensorDataset(X[128:], Y[128:])
cfg = TrainConfig()
print(cfg)

torch.manual_seed(cfg.seed)
early, best, lrs = EarlyStopping(min_delta=cfg.min_delta, patience=cfg.patience), \
    BestCheckpoint(), LRMonitor()
trainer = Trainer(cfg, make_model(cfg), train_ds, val_ds, [early, best, lrs])
trainer.fit()
full = {k: v.clone() for k, v in trainer.model.state_dict().items()}
print(f"best val_acc {best.best:.3f} at epoch {best.epoch}; lr peak {max(lrs.history):.6f} "
      f"steps {len(lrs.history)}")
print("scaler:", trainer.scaler.state_dict(), trainer.scaler.is_enabled())

# the same run, interrupted in the middle of epoch 1 and resumed in a fresh trainer
torch.manual_seed(cfg.seed)
t1 = Trainer(cfg, make_model(cfg), train_ds, val_ds,
             [EarlyStopping(min_delta=cfg.min_delta, patience=cfg.patience)], stop_at=(1, 9))
print("finished:", t1.fit())
torch.manual_seed(999)  # whatever the new process would have
t2 = Trainer(cfg, make_model(cfg), train_ds, val_ds,
             [EarlyStopping(min_delta=cfg.min_delta, patience=cfg.patience)])
print("finished:", t2.fit(resume="mid_epoch.pt"))
print("resumed run ends where the full run ends:",
      all(torch.allclose(full[k], v, atol=1e-6) for k, v in t2.model.state_dict().items()))
print("best model restored:", trainer.model.load_state_dict(best.state))

# anomaly detection names the backward that produced the NaN
x = torch.zeros(3, requires_grad=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with torch.autograd.detect_anomaly():
        try:
            (torch.sqrt(x) * torch.zeros(3)).sum().backward()
        except RuntimeError as e:
            print("RuntimeError:", e)
    print("anomaly enabled after:", torch.is_anomaly_enabled())
    torch.autograd.set_detect_anomaly(True, check_nan=False)
    y = torch.zeros(2, requires_grad=True)
    (torch.sqrt(y) * 0).sum().backward()
    print("check_nan off:", y.grad, torch.is_anomaly_check_nan_enabled())
    torch.autograd.set_detect_anomaly(False)
