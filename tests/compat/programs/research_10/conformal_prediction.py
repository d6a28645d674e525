"""Conformal prediction the way aangelopoulos/conformal-prediction's notebooks and the RAPS
code (aangelopoulos/conformal_classification) write it, in PyTorch: a small classifier
trained on synthetic data, calibration and validation splits by ``random_split`` with a
seeded generator, temperature scaling by LBFGS on ``log T`` (float64 logits), split
conformal with the ``ceil((n + 1)(1 - alpha)) / n`` quantile (``interpolation="higher"``),
adaptive prediction sets (``sort(descending=True)``, ``cumsum``, ``gather`` of the true
label's rank, randomised ``u``), RAPS's penalties with ``kreg``/``lamda``, class-conditional
(Mondrian) thresholds, conformalised quantile regression with the pinball loss, and
coverage/set-size tables."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(0)
np.random.seed(0)
K, D = 5, 8

g = torch.Generator().manual_seed(3)
W = torch.randn(D, K, generator=g)
X = torch.randn(1200, D, generator=g)
logits_true = X @ W + 0.8 * torch.randn(1200, K, generator=g)
Y = logits_true.argmax(1)
full = TensorDataset(X, Y)
train_set, calib_set, val_set = random_split(full, [400, 400, 400],
                                             generator=torch.Generator().manual_seed(42))
print(len(train_set), len(calib_set), len(val_set), calib_set.indices[:5])

model = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Linear(32, K))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(15):
    for xb, yb in DataLoader(train_set, batch_size=50, shuffle=True,
                             generator=torch.Generator().manual_seed(epoch)):
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()


def get_logits_targets(model, dataset):
    model.eval()
    logits, labels = [], []
    with torch.no_grad():
        for x, y in DataLoader(dataset, batch_size=128):
            logits.append(model(x).double())
            labels.append(y)
    return torch.cat(logits), torch.cat(labels)


cal_logits, cal_labels = get_logits_targets(model, calib_set)
val_logits, val_labels = get_logits_targets(model, val_set)
print("val accuracy", (val_logits.argmax(1) == val_labels).double().mean().item())


class TemperatureScaling(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_T = nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, logits):
        return logits / self.log_T.exp()


ts = TemperatureScaling()
optimizer = torch.optim.LBFGS(ts.parameters(), lr=0.1, max_iter=50, line_search_fn="strong_wolfe")


def closure():
    optimizer.zero_grad()
    loss = F.cross_entropy(ts(cal_logits), cal_labels)
    loss.backward()
    return loss


optimizer.step(closure)
T = ts.log_T.exp().item()
print(f"temperature {T:.5f} nll before {F.cross_entropy(cal_logits, cal_labels).item():.5f} "
      f"after {F.cross_entropy(cal_logits / T, cal_labels).item():.5f}")
cal_smx = F.softmax(cal_logits / T, dim=1)
val_smx = F.softmax(val_logits / T, dim=1)
n, alpha = len(cal_labels), 0.1


def conformal_quantile(scores, alpha):
    n = scores.shape[0]
    q_level = math.ceil((n + 1) * (1 - alpha)) / n
    return torch.quantile(scores, q_level, interpolation="higher")


def report(name, sets):
    covered = sets[torch.arange(len(val_labels)), val_labels].double().mean().item()
    sizes = sets.sum(1).double()
    print(f"{name:<12} coverage {covered:.4f} mean size {sizes.mean().item():.4f} "
          f"size histogram {torch.bincount(sets.sum(1), minlength=K + 1).tolist()}")


# split conformal with the 1 - softmax score
cal_scores = 1 - cal_smx[torch.arange(n), cal_labels]
qhat = conformal_quantile(cal_scores, alpha)
print("qhat", qhat.item(), "sorted neighbours", cal_scores.sort().values[358:362].tolist())
report("lac", val_smx >= (1 - qhat))
for interp in ("linear", "lower", "nearest", "midpoint"):
    q_level = math.ceil((n + 1) * (1 - alpha)) / n
    print(interp, torch.quantile(cal_scores, q_level, interpolation=interp).item(),
          np.quantile(cal_scores.numpy(), q_level, method=interp).item())


def aps_scores(smx, labels, u, kreg=None, lamda=0.0):
    pi = smx.argsort(1, descending=True)
    srt = torch.gather(smx, 1, pi)
    if kreg is not None:
        penalty = torch.zeros(1, smx.shape[1], dtype=smx.dtype)
        penalty[:, kreg:] += lamda
        srt = srt + penalty
    cums = srt.cumsum(dim=1)
    rank = torch.where(pi == labels[:, None])[1]
    score = cums.gather(1, rank[:, None]).squeeze(1) - u * srt.gather(1, rank[:, None]).squeeze(1)
    return score


gu = torch.Generator().manual_seed(7)
u_cal = torch.rand(n, generator=gu, dtype=torch.float64)
u_val = torch.rand(len(val_labels), generator=gu, dtype=torch.float64)
for name, kreg, lamda in (("aps", None, 0.0), ("raps", 2, 0.05)):
    qhat = conformal_quantile(aps_scores(cal_smx, cal_labels, u_cal, kreg, lamda), alpha)
    all_scores = torch.stack([aps_scores(val_smx, torch.full_like(val_labels, k), u_val, kreg,
                                         lamda) for k in range(K)], 1)
    print(name, "qhat", round(qhat.item(), 8))
    report(name, all_scores <= qhat)

# Mondrian: one threshold per class
qhats = torch.stack([conformal_quantile(cal_scores[cal_labels == k], alpha) for k in range(K)])
print("class thresholds", qhats.tolist(), torch.bincount(cal_labels, minlength=K).tolist())
report("mondrian", val_smx >= (1 - qhats)[None, :])

# conformalised quantile regression
g = torch.Generator().manual_seed(11)
xr = torch.rand(600, 1, generator=g) * 4
yr = torch.sin(2 * xr) + (0.1 + 0.3 * xr) * torch.randn(600, 1, generator=g)
lo_q, hi_q = alpha / 2, 1 - alpha / 2
net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 2))
opt = torch.optim.Adam(net.parameters(), lr=2e-2)


def pinball(pred, y, qs=(lo_q, hi_q)):
    losses = []
    for i, q in enumerate(qs):
        errors = y[:, 0] - pred[:, i]
        losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(1))
    return torch.sum(torch.cat(losses, dim=1), dim=1).mean()


for step in range(150):
    opt.zero_grad()
    loss = pinball(net(xr[:200]), yr[:200])
    loss.backward()
    opt.step()
print("pinball", round(loss.item(), 5))
with torch.no_grad():
    p_cal, p_val = net(xr[200:400]), net(xr[400:])
scores = torch.max(p_cal[:, 0] - yr[200:400, 0], yr[200:400, 0] - p_cal[:, 1])
qhat = conformal_quantile(scores, alpha)
lo, hi = p_val[:, 0] - qhat, p_val[:, 1] + qhat
cover = ((yr[400:, 0] >= lo) & (yr[400:, 0] <= hi)).float().mean().item()
print(f"cqr qhat {qhat.item():.5f} coverage {cover:.4f} width {(hi - lo).mean().item():.4f}")
