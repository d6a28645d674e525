"""Stochastic weight averaging and EMA of models (Izmailov et al., 2018)."""

from __future__ import annotations

import copy
import itertools
import math

from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_avg_fn(decay=0.999):
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    def ema_update(ema_params, current_params, num_averaged):
        for e, c in zip(ema_params, current_params):
            e.lerp_(c, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn():
    def swa_update(averaged_params, current_params, num_averaged):
        n = float(num_averaged.item()) if hasattr(num_averaged, "item") else num_averaged
        for a, c in zip(averaged_params, current_params):
            a.add_((c - a) / (n + 1))

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are a running (or exponential) average of the
    model's over calls to ``update_parameters``."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        from .. import int64, tensor

        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        mine = itertools.chain(self.module.parameters(), self.module.buffers()) \
            if self.use_buffers else self.parameters()
        theirs = itertools.chain(model.parameters(), model.buffers()) \
            if self.use_buffers else model.parameters()
        mine = [p for p in mine if p is not self.n_averaged]
        theirs = list(theirs)
        with no_grad():
            if self.n_averaged.item() == 0:
                for a, c in zip(mine, theirs):
                    a.copy_(c.detach().to(a.device))
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([a.detach() for a in mine],
                                  [c.detach().to(a.device) for a, c in zip(mine, theirs)],
                                  self.n_averaged.to(mine[0].device) if mine else 0)
            else:
                fn = self.avg_fn or get_swa_avg_fn()
                n = self.n_averaged.to(mine[0].device) if mine else 0
                for a, c in zip(mine, theirs):
                    a.copy_(fn(a.detach(), c.detach().to(a.device), n))
            if not self.use_buffers:
                for a, c in zip(self.module.buffers(), model.buffers()):
                    a.copy_(c.detach().to(a.device))
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """Recompute BatchNorm running statistics with one pass over ``loader``."""
    from ..nn.modules.normalization import _BatchNorm

    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs``, then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(
            optimizer.param_groups)
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
