"""Non-contrastive self-supervised learning the way lucidrains/byol-pytorch,
facebookresearch/simsiam, facebookresearch/barlowtwins and VICReg's reference code write
it: two augmented views (random resized crops by ``F.interpolate``, flips, colour jitter by
hand), BYOL's online/target networks with a ``copy.deepcopy`` target updated by an EMA whose
decay follows a cosine schedule (``@torch.no_grad()`` and ``requires_grad_(False)``),
SimSiam's predictor with stop-gradient ``.detach()`` and negative cosine similarity, Barlow
Twins' cross-correlation with the ``off_diagonal`` flatten/view trick and a ``BatchNorm1d``
without affine, VICReg's variance/invariance/covariance terms; a LARS-style optimizer
excluding biases and norms, and a k-NN monitor on frozen features."""
import copy
import math
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def singleton(cache_key):
    def inner_fn(fn):
        @wraps(fn)
        def wrapper(self, *args, **kwargs):
            instance = getattr(self, cache_key)
            if instance is not None:
                return instance
            instance = fn(self, *args, **kwargs)
            setattr(self, cache_key, instance)
            return instance
        return wrapper
    return inner_fn


def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val


def augment(x, g):
    n, c, h, w = x.shape
    out = []
    for i in range(n):
        s = int(torch.randint(h // 2, h + 1, (1,), generator=g))
        top = int(torch.randint(0, h - s + 1, (1,), generator=g))
        left = int(torch.randint(0, w - s + 1, (1,), generator=g))
        crop = x[i:i + 1, :, top:top + s, left:left + s]
        crop = F.interpolate(crop, size=(h, w), mode="bilinear", align_corners=False)
        if torch.rand(1, generator=g) < 0.5:
            crop = crop.flip(-1)
        b = 0.8 + 0.4 * torch.rand(1, generator=g)
        out.append((crop * b).clamp(0, 1))
    return torch.cat(out)


def encoder():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten())


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(nn.Linear(dim, hidden_size), nn.BatchNorm1d(hidden_size),
                         nn.ReLU(inplace=True), nn.Linear(hidden_size, projection_size))


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class EMA:
    def __init__(self, beta):
        self.beta = beta

    def update_average(self, old, new):
        return old * self.beta + (1 - self.beta) * new


@torch.no_grad()
def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        ma_params.data = ema_updater.update_average(ma_params.data, current_params.data)


class BYOL(nn.Module):
    def __init__(self, net, projection_size=8, moving_average_decay=0.99):
        super().__init__()
        self.online_encoder = nn.Sequential(net, MLP(8, projection_size))
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)
        self.online_predictor = MLP(projection_size, projection_size)

    @singleton("target_encoder")
    def _get_target_encoder(self):
        target_encoder = copy.deepcopy(self.online_encoder)
        set_requires_grad(target_encoder, False)
        return target_encoder

    def update_moving_average(self):
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def forward(self, one, two):
        images = torch.cat((one, two), dim=0)
        online_predictions = self.online_predictor(self.online_encoder(images))
        pred_one, pred_two = online_predictions.chunk(2, dim=0)
        with torch.no_grad():
            target_encoder = self._get_target_encoder()
            target_proj = target_encoder(images).detach()
            target_one, target_two = target_proj.chunk(2, dim=0)
        loss = loss_fn(pred_one, target_two.detach()) + loss_fn(pred_two, target_one.detach())
        return loss.mean()


def off_diagonal(x):
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class BarlowTwins(nn.Module):
    def __init__(self, lambd=0.0051):
        super().__init__()
        self.backbone = encoder()
        self.projector = nn.Sequential(nn.Linear(8, 16, bias=False), nn.BatchNorm1d(16),
                                       nn.ReLU(inplace=True), nn.Linear(16, 16, bias=False))
        self.bn = nn.BatchNorm1d(16, affine=False)
        self.lambd = lambd

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))
        c = self.bn(z1).T @ self.bn(z2)
        c.div_(y1.shape[0])
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        return on_diag + self.lambd * off_diag


def vicreg_loss(x, y, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0):
    repr_loss = F.mse_loss(x, y)
    x = x - x.mean(dim=0)
    y = y - y.mean(dim=0)
    std_x = torch.sqrt(x.var(dim=0) + 0.0001)
    std_y = torch.sqrt(y.var(dim=0) + 0.0001)
    std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2
    cov_x = (x.T @ x) / (x.shape[0] - 1)
    cov_y = (y.T @ y) / (y.shape[0] - 1)
    num_features = x.shape[1]
    cov_loss = off_diagonal(cov_x).pow_(2).sum().div(num_features) + \
        off_diagonal(cov_y).pow_(2).sum().div(num_features)
    return sim_coeff * repr_loss + std_coeff * std_loss + cov_coeff * cov_loss


class LARS(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                 weight_decay_filter=None, lars_adaptation_filter=None):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta,
                        weight_decay_filter=weight_decay_filter,
                        lars_adaptation_filter=lars_adaptation_filter)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                dp = p.grad
                if dp is None:
                    continue
                if g["weight_decay_filter"] is None or not g["weight_decay_filter"](p):
                    dp = dp.add(p, alpha=g["weight_decay"])
                if g["lars_adaptation_filter"] is None or not g["lars_adaptation_filter"](p):
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.,
                                    torch.where(update_norm > 0,
                                                (g["eta"] * param_norm / update_norm), one), one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if "mu" not in param_state:
                    param_state["mu"] = torch.zeros_like(p)
                mu = param_state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


def exclude_bias_and_norm(p):
    return p.ndim == 1


g = torch.Generator().manual_seed(3)
images = torch.rand(8, 3, 12, 12, generator=g)
labels = torch.arange(8) % 2
images[labels == 1, 0] += 0.5

learner = BYOL(encoder())
# the biases just before a BatchNorm get gradients that are zero in exact arithmetic; Adam
# would turn their rounding into full-size steps of random sign (on PyTorch too, between two
# thread counts), so the online network steps by SGD with momentum, as in BYOL's LARS
opt = torch.optim.SGD(learner.parameters(), lr=0.1, momentum=0.9)
total = 5
for step in range(total):
    loss = learner(augment(images, g), augment(images, g))
    opt.zero_grad()
    loss.backward()
    opt.step()
    learner.target_ema_updater.beta = 1 - (1 - 0.99) * (math.cos(math.pi * step / total) + 1) / 2
    learner.update_moving_average()
    print(f"byol {step} loss {loss.item():.5f} tau {learner.target_ema_updater.beta:.5f}")
print("target frozen:", all(not p.requires_grad for p in learner.target_encoder.parameters()),
      "target cached:", learner._get_target_encoder() is learner.target_encoder)

# SimSiam's symmetric stop-gradient loss
proj, pred = MLP(8, 8), MLP(8, 8)
backbone = encoder()
simsiam_opt = torch.optim.SGD([*backbone.parameters(), *proj.parameters()], lr=0.05,
                              momentum=0.9, weight_decay=1e-4)
simsiam_opt.add_param_group({"params": pred.parameters(), "fix_lr": True})
criterion = nn.CosineSimilarity(dim=1)
for step in range(3):
    z1, z2 = proj(backbone(augment(images, g))), proj(backbone(augment(images, g)))
    p1, p2 = pred(z1), pred(z2)
    loss = -(criterion(p1, z2.detach()).mean() + criterion(p2, z1.detach()).mean()) * 0.5
    simsiam_opt.zero_grad()
    loss.backward()
    simsiam_opt.step()
    print(f"simsiam {step} loss {loss.item():.5f} fix_lr {[g_.get('fix_lr', False) for g_ in simsiam_opt.param_groups]}")

bt = BarlowTwins()
param_weights = [p for p in bt.parameters() if p.ndim != 1]
param_biases = [p for p in bt.parameters() if p.ndim == 1]
lars = LARS([{"params": param_weights}, {"params": param_biases}], lr=0.05, weight_decay=1e-6,
            weight_decay_filter=exclude_bias_and_norm, lars_adaptation_filter=exclude_bias_and_norm)
print("off_diagonal:", off_diagonal(torch.arange(9.).view(3, 3)).tolist())
for step in range(3):
    y1, y2 = augment(images, g), augment(images, g)
    loss = bt(y1, y2)
    lars.zero_grad()
    loss.backward()
    lars.step()
    with torch.no_grad():
        v = vicreg_loss(bt.projector(bt.backbone(y1)), bt.projector(bt.backbone(y2)))
    print(f"barlow {step} loss {loss.item():.5f} vicreg {v.item():.5f}")

# k-NN monitor on frozen online features
learner.eval()
with torch.no_grad():
    feats = F.normalize(learner.online_encoder[0](images), dim=1)
    sim = feats @ feats.T
    sim.fill_diagonal_(-float("inf"))
    nn_idx = sim.topk(3, dim=1).indices
    votes = F.one_hot(labels[nn_idx], 2).sum(1)
print("knn acc:", (votes.argmax(1) == labels).float().mean().item(), tuple(votes.shape))
