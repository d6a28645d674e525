"""Image-classification training recipes the way timm's ``Mixup``/``SoftTargetCrossEntropy``
and the "bag of tricks" repositories write them: mixup and cutmix with ``np.random.beta``
lambdas and ``rand_bbox`` corrections, label smoothing in ``mixup_target``, random erasing,
the ``torch.optim`` zoo (Adafactor, RAdam and NAdam with decoupled weight decay, ASGD,
Rprop, Adamax, AMSGrad AdamW, centred RMSprop, Adadelta, Adagrad with ``lr_decay``) each
paired with a scheduler (``CyclicLR`` in ``exp_range`` and ``triangular2`` with momentum
cycling, ``CosineAnnealingWarmRestarts`` stepped with fractional epochs, ``PolynomialLR``,
``ConstantLR``, ``MultiplicativeLR``, three-phase ``OneCycleLR``), ``add_param_group``,
optimizer step hooks, ``state_dict``/``load_state_dict`` of both mid-run, and a table of the
runs' final losses."""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler

torch.manual_seed(0)
np.random.seed(0)


def one_hot(x, num_classes, on_value=1., off_value=0.):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1., smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1. - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1. - lam)


def rand_bbox(img_shape, lam, margin=0., count=None):
    ratio = np.sqrt(1 - lam)
    img_h, img_w = img_shape[-2:]
    cut_h, cut_w = int(img_h * ratio), int(img_w * ratio)
    margin_y, margin_x = int(margin * cut_h), int(margin * cut_w)
    cy = np.random.randint(0 + margin_y, img_h - margin_y, size=count)
    cx = np.random.randint(0 + margin_x, img_w - margin_x, size=count)
    yl = np.clip(cy - cut_h // 2, 0, img_h)
    yh = np.clip(cy + cut_h // 2, 0, img_h)
    xl = np.clip(cx - cut_w // 2, 0, img_w)
    xh = np.clip(cx + cut_w // 2, 0, img_w)
    return yl, yh, xl, xh


class Mixup:
    def __init__(self, mixup_alpha=1., cutmix_alpha=0., prob=1.0, switch_prob=0.5,
                 label_smoothing=0.1, num_classes=1000):
        self.mixup_alpha, self.cutmix_alpha = mixup_alpha, cutmix_alpha
        self.mix_prob, self.switch_prob = prob, switch_prob
        self.label_smoothing, self.num_classes = label_smoothing, num_classes

    def _params_per_batch(self):
        lam = 1.
        use_cutmix = False
        if np.random.rand() < self.mix_prob:
            if self.mixup_alpha > 0. and self.cutmix_alpha > 0.:
                use_cutmix = np.random.rand() < self.switch_prob
                lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha) if use_cutmix \
                    else np.random.beta(self.mixup_alpha, self.mixup_alpha)
            elif self.mixup_alpha > 0.:
                lam_mix = np.random.beta(self.mixup_alpha, self.mixup_alpha)
            else:
                use_cutmix = True
                lam_mix = np.random.beta(self.cutmix_alpha, self.cutmix_alpha)
            lam = float(lam_mix)
        return lam, use_cutmix

    def __call__(self, x, target):
        lam, use_cutmix = self._params_per_batch()
        if lam != 1.:
            if use_cutmix:
                yl, yh, xl, xh = rand_bbox(x.shape, lam)
                x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
                lam = 1. - (yh - yl) * (xh - xl) / float(x.shape[-2] * x.shape[-1])
            else:
                x_flipped = x.flip(0).mul_(1. - lam)
                x.mul_(lam).add_(x_flipped)
        return x, mixup_target(target, self.num_classes, lam, self.label_smoothing), \
            (lam, use_cutmix)


class SoftTargetCrossEntropy(nn.Module):
    def forward(self, x, target):
        loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
        return loss.mean()


def random_erasing(img, g, probability=0.5, sl=0.1, sh=0.3):
    if torch.rand(1, generator=g).item() > probability:
        return img
    area = img.shape[-1] * img.shape[-2]
    target = area * (sl + (sh - sl) * torch.rand(1, generator=g).item())
    h = w = max(1, int(round(target ** 0.5)))
    top = int(torch.randint(0, img.shape[-2] - h + 1, (1,), generator=g))
    left = int(torch.randint(0, img.shape[-1] - w + 1, (1,), generator=g))
    img = img.clone()
    img[..., top:top + h, left:left + w] = torch.randn(img.shape[0], h, w, generator=g)
    return img


NUM_CLASSES = 4
g = torch.Generator().manual_seed(1)
protos = torch.randn(NUM_CLASSES, 3, 8, 8, generator=g)
labels = torch.randint(0, NUM_CLASSES, (64,), generator=g)
images = protos[labels] + 0.5 * torch.randn(64, 3, 8, 8, generator=g)
images = torch.stack([random_erasing(im, g) for im in images])

mixup_fn = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1,
                 num_classes=NUM_CLASSES)
for i in range(3):
    x, y, (lam, cut) = mixup_fn(images[:8].clone(), labels[:8])
    print(f"mix {i}: lam {lam:.4f} cutmix {cut} target row {y[0].tolist()} x sum {x.sum().item():.4f}")
print(SoftTargetCrossEntropy()(torch.randn(4, NUM_CLASSES, generator=g), y[:4]))


def make_model():
    torch.manual_seed(3)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, NUM_CLASSES))


recipes = {
    "Adafactor": (lambda p: torch.optim.Adafactor(p, lr=0.02, weight_decay=0.01),
                  lambda o: lr_scheduler.PolynomialLR(o, total_iters=8, power=2.0)),
    "RAdam": (lambda p: torch.optim.RAdam(p, lr=0.01, weight_decay=0.05,
                                          decoupled_weight_decay=True),
              lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3)),
    "NAdam": (lambda p: torch.optim.NAdam(p, lr=0.01, momentum_decay=0.004,
                                          decoupled_weight_decay=True, weight_decay=0.05),
              lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda e: 0.9)),
    "ASGD": (lambda p: torch.optim.ASGD(p, lr=0.05, t0=3, lambd=1e-3),
             lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2,
                                                                 eta_min=1e-3)),
    "Rprop": (lambda p: torch.optim.Rprop(p, lr=0.005, etas=(0.4, 1.3)), None),
    "Adamax": (lambda p: torch.optim.Adamax(p, lr=0.02),
               lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=8,
                                                 three_phase=True, anneal_strategy="linear")),
    "AdamW-ams": (lambda p: torch.optim.AdamW(p, lr=0.01, amsgrad=True),
                  lambda o: lr_scheduler.CyclicLR(o, base_lr=0.002, max_lr=0.02,
                                                  step_size_up=2, mode="exp_range",
                                                  gamma=0.9, cycle_momentum=False)),
    "SGD-cyclic": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                   lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=2, mode="triangular2")),
    "RMSprop-c": (lambda p: torch.optim.RMSprop(p, lr=0.005, centered=True, momentum=0.5),
                  lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    "Adadelta": (lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.8), None),
    "Adagrad": (lambda p: torch.optim.Adagrad(p, lr=0.05, lr_decay=0.01,
                                              initial_accumulator_value=0.1), None),
}
criterion = SoftTargetCrossEntropy()
results = {}
for name, (make_opt, make_sched) in recipes.items():
    model = make_model()
    optimizer = make_opt(model.parameters())
    scheduler = make_sched(optimizer) if make_sched else None
    steps_seen = []
    optimizer.register_step_post_hook(lambda opt, a, kw: steps_seen.append(1))
    np.random.seed(5)
    lrs, momenta = [], []
    for step in range(8):
        x, y, _ = mixup_fn(images[step * 8:(step + 1) * 8].clone(), labels[step * 8:(step + 1) * 8])
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if isinstance(scheduler, lr_scheduler.CosineAnnealingWarmRestarts):
            scheduler.step(step / 2 + 0.5)
        elif scheduler is not None:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
        if "momentum" in optimizer.param_groups[0]:
            momenta.append(optimizer.param_groups[0]["momentum"])
        if step == 3:
            saved = copy.deepcopy(optimizer.state_dict())
            saved_sched = scheduler.state_dict() if scheduler is not None else None
    results[name] = loss.item()
    print(f"{name:<11} loss {loss.item():.4f} lrs {[round(v, 5) for v in lrs]} "
          f"hooks {len(steps_seen)}" + (f" momenta {[round(m, 3) for m in momenta[:4]]}"
                                        if name == "SGD-cyclic" else ""))
    fresh = make_opt(make_model().parameters())
    fresh.load_state_dict(saved)
    state0 = fresh.state_dict()["state"][0]
    print("   resumed state keys", sorted(state0.keys()),
          {k: (tuple(v.shape) if torch.is_tensor(v) and v.dim() else
               round(float(v), 5)) for k, v in sorted(state0.items())})
    if saved_sched is not None:
        print("   scheduler", sorted(k for k in saved_sched if not k.startswith("_")))

model = make_model()
optimizer = torch.optim.SGD(model[:3].parameters(), lr=0.1)
optimizer.add_param_group({"params": model[5].parameters(), "lr": 0.01, "momentum": 0.9})
print(optimizer)
print("best", min(results, key=results.get), "worst", max(results, key=results.get))
