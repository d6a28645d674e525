"""A Lightning-style training loop written by hand: a ``LitModel`` with ``training_step``,
``validation_step`` and ``configure_optimizers`` (a warmup ``LambdaLR`` for the first phase,
then ``OneCycleLR`` stepped per optimizer step), a ``fit`` loop with gradient accumulation,
``clip_grad_norm_`` after ``scaler.unscale_`` on a disabled ``GradScaler``, an EMA of the
weights by ``torch._foreach_lerp_`` under ``no_grad``, ``copy_`` into an evaluation copy,
and a checkpoint of model, optimizer, schedulers, scaler and EMA that resumes exactly."""
import copy
import math
import os
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class HParams:
    in_dim: int = 12
    hidden: int = 32
    classes: int = 3
    lr: float = 3e-3
    weight_decay: float = 0.05
    batch_size: int = 16
    accumulate_grad_batches: int = 2
    max_epochs: int = 4
    warmup_steps: int = 3
    gradient_clip_val: float = 0.5
    ema_decay: float = 0.9


class LitModel(nn.Module):
    def __init__(self, hparams: HParams):
        super().__init__()
        self.hparams = hparams
        self.net = nn.Sequential(
            nn.Linear(hparams.in_dim, hparams.hidden), nn.LayerNorm(hparams.hidden), nn.GELU(),
            nn.Dropout(0.1), nn.Linear(hparams.hidden, hparams.classes))
        self.global_step = 0
        self.logged = {}

    def forward(self, x):
        return self.net(x)

    def log(self, name, value, prog_bar=False):
        self.logged[name] = value.detach() if torch.is_tensor(value) else value

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y, label_smoothing=0.1)
        self.log("train_loss", loss, prog_bar=True)
        return {"loss": loss, "acc": (logits.argmax(-1) == y).float().mean()}

    @torch.no_grad()
    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        return F.cross_entropy(logits, y, reduction="sum"), (logits.argmax(-1) == y).sum()

    def configure_optimizers(self, steps_per_epoch):
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            (no_decay if p.ndim < 2 or name.endswith(".bias") else decay).append(p)
        opt = torch.optim.AdamW([
            {"params": decay, "weight_decay": self.hparams.weight_decay},
            {"params": no_decay, "weight_decay": 0.0}], lr=self.hparams.lr, betas=(0.9, 0.95))
        total = steps_per_epoch * self.hparams.max_epochs
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=[self.hparams.lr, self.hparams.lr * 0.5], total_steps=total,
            pct_start=0.3, anneal_strategy="cos", div_factor=10.0, final_div_factor=100.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step",
                                                   "frequency": 1}}


class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.shadow = [p.detach().clone() for p in model.parameters()]

    @torch.no_grad()
    def update(self, model):
        torch._foreach_lerp_(self.shadow, [p.detach() for p in model.parameters()],
                             1.0 - self.decay)

    @torch.no_grad()
    def copy_to(self, model):
        for s, p in zip(self.shadow, model.parameters()):
            p.copy_(s)

    def state_dict(self):
        return {"decay": self.decay, "shadow": self.shadow}

    def load_state_dict(self, sd):
        self.decay = sd["decay"]
        self.shadow = [t.clone() for t in sd["shadow"]]


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    w = torch.randn(12, 3, generator=g)
    y = (x @ w + 0.3 * torch.randn(n, 3, generator=g)).argmax(-1)
    return TensorDataset(x, y)


def fit(model, train_loader, val_loader, state=None, stop_after_epoch=None):
    hp = model.hparams
    steps_per_epoch = math.ceil(len(train_loader) / hp.accumulate_grad_batches)
    cfg = model.configure_optimizers(steps_per_epoch)
    opt, sched = cfg["optimizer"], cfg["lr_scheduler"]["scheduler"]
    warmup = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / hp.warmup_steps))
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    ema = EMA(model, hp.ema_decay)
    start_epoch = 0
    if state is not None:
        model.load_state_dict(state["state_dict"])
        opt.load_state_dict(state["optimizer_states"][0])
        sched.load_state_dict(state["lr_schedulers"][0])
        warmup.load_state_dict(state["lr_schedulers"][1])
        scaler.load_state_dict(state["scaler"])
        ema.load_state_dict(state["ema"])
        start_epoch, model.global_step = state["epoch"], state["global_step"]
    for epoch in range(start_epoch, hp.max_epochs):
        model.train()
        torch.manual_seed(100 + epoch)
        running = []
        for batch_idx, batch in enumerate(train_loader):
            out = model.training_step(batch, batch_idx)
            scaler.scale(out["loss"] / hp.accumulate_grad_batches).backward()
            running.append(out["loss"].item())
            if (batch_idx + 1) % hp.accumulate_grad_batches == 0 or batch_idx + 1 == len(train_loader):
                scaler.unscale_(opt)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), hp.gradient_clip_val)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
                sched.step()
                if model.global_step < hp.warmup_steps:
                    warmup.step()
                ema.update(model)
                model.global_step += 1
        model.eval()
        tot_loss, tot_correct, n = 0.0, 0, 0
        for batch_idx, batch in enumerate(val_loader):
            l, c = model.validation_step(batch, batch_idx)
            tot_loss += l.item()
            tot_correct += c.item()
            n += len(batch[0])
        ema_model = copy.deepcopy(model)
        ema.copy_to(ema_model)
        with torch.no_grad():
            ema_loss = sum(F.cross_entropy(ema_model(x), y, reduction="sum").item()
                           for x, y in val_loader) / n
        print(f"epoch {epoch} step {model.global_step} train_loss {sum(running)/len(running):.5f} "
              f"val_loss {tot_loss/n:.5f} val_acc {tot_correct/n:.4f} ema_val_loss {ema_loss:.5f} "
              f"grad_norm {norm.item():.5f} lr {[round(g['lr'], 7) for g in opt.param_groups]}")
        if stop_after_epoch is not None and epoch == stop_after_epoch:
            return {"epoch": epoch + 1, "global_step": model.global_step,
                    "state_dict": model.state_dict(), "optimizer_states": [opt.state_dict()],
                    "lr_schedulers": [sched.state_dict(), warmup.state_dict()],
                    "scaler": scaler.state_dict(), "ema": ema.state_dict(),
                    "hyper_parameters": asdict(hp)}
    return None


if __name__ == "__main__":
    torch.manual_seed(0)
    hp = HParams()
    print(hp)
    train_ds, val_ds = make_data(96, 1), make_data(48, 2)
    train_loader = DataLoader(train_ds, batch_size=hp.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(3), drop_last=False)
    val_loader = DataLoader(val_ds, batch_size=32)
    model = LitModel(hp)
    print(model)
    init = copy.deepcopy(model.state_dict())
    fit(model, train_loader, val_loader)
    final = {k: v.clone() for k, v in model.state_dict().items()}

    print("-- resume from epoch 2 checkpoint")
    model2 = LitModel(hp)
    model2.load_state_dict(init)
    train_loader.generator.manual_seed(3)
    ckpt = fit(model2, train_loader, val_loader, stop_after_epoch=1)
    torch.save(ckpt, "last.ckpt")
    print("checkpoint keys", sorted(ckpt), "scaler", ckpt["scaler"])
    print("scheduler keys", sorted(ckpt["lr_schedulers"][0])[:6])
    loaded = torch.load("last.ckpt", weights_only=False)
    model3 = LitModel(hp)
    fit(model3, train_loader, val_loader, state=loaded)
    print("resumed equals straight:", all(torch.allclose(final[k], v, atol=1e-6)
                                          for k, v in model3.state_dict().items()))
    os.remove("last.ckpt")
