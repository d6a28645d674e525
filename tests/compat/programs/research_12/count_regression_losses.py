"""Probabilistic regression heads the way demand-forecasting and tabular repositories
(bike-sharing notebooks, pytorch-forecasting's metrics, deep-ensemble baselines) write
them: a pandas-free feature pipeline in NumPy, ``PoissonNLLLoss(log_input=True, full=True)``,
a negative-binomial head through ``torch.distributions.NegativeBinomial`` with
``softplus`` dispersion, ``GaussianNLLLoss`` for a heteroscedastic head, ``HuberLoss`` and
``SmoothL1Loss`` next to each other, the pinball loss for several quantiles with a
``cummax`` fix of quantile crossing, ``MultiLabelSoftMarginLoss`` for multi-label
"busy-hour" tags, metrics with ``kthvalue`` medians and ``nanquantile`` over a
``nan``-padded matrix, and a deep ensemble's predictive mean and variance by ``torch.stack``."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import NegativeBinomial, Normal, Poisson

torch.manual_seed(0)
rng = np.random.RandomState(0)

N = 400
hour = rng.randint(0, 24, N)
temp = rng.normal(15, 8, N)
weekend = rng.rand(N) < 2 / 7
rate = np.exp(1.0 + 0.8 * np.sin(2 * np.pi * (hour - 6) / 24) + 0.03 * temp - 0.3 * weekend)
counts = rng.negative_binomial(5, 5 / (5 + rate))
feats = np.stack([np.sin(2 * np.pi * hour / 24), np.cos(2 * np.pi * hour / 24), (temp - temp.mean()) / temp.std(),
                  weekend.astype(float)], 1).astype(np.float32)
X, y = torch.from_numpy(feats), torch.from_numpy(counts.astype(np.float32))
tags = torch.stack([y > torch.quantile(y, 0.75), torch.from_numpy(weekend), torch.from_numpy(hour >= 17)], 1).float()
print(f"counts mean {y.mean().item():.3f} var {y.var().item():.3f} (overdispersed), tag rates {tags.mean(0).tolist()}")
train, test = slice(0, 300), slice(300, N)


class Head(nn.Module):
    def __init__(self, outputs):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, outputs))

    def forward(self, x):
        return self.net(x)


def fit(model, loss_fn, steps=80, lr=0.03):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = loss_fn(model(X[train]), train)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


poisson = Head(1)
pl = nn.PoissonNLLLoss(log_input=True, full=True)
print(pl, "final", round(fit(poisson, lambda out, s: pl(out.squeeze(-1), y[s])), 5))

negbin = Head(2)


def nb_dist(out):
    mu = F.softplus(out[:, 0]) + 1e-4
    alpha = F.softplus(out[:, 1]) + 1e-4                # dispersion
    total_count = 1.0 / alpha
    return NegativeBinomial(total_count=total_count, logits=torch.log(mu * alpha))


print("negative binomial final", round(fit(negbin, lambda out, s: -nb_dist(out).log_prob(y[s]).mean()), 5))
gauss = Head(2)
gl = nn.GaussianNLLLoss(full=True, eps=1e-6)
print(gl, "final", round(fit(gauss, lambda out, s: gl(out[:, 0], y[s], F.softplus(out[:, 1]))), 5))
huber, sl1 = Head(1), Head(1)
print("huber final", round(fit(huber, lambda out, s: nn.HuberLoss(delta=2.0)(out.squeeze(-1), y[s])), 5),
      "smooth-l1 final", round(fit(sl1, lambda out, s: nn.SmoothL1Loss(beta=2.0)(out.squeeze(-1), y[s])), 5))

quantiles = torch.tensor([0.1, 0.5, 0.9])


# quantiles of counts sit on integers, where a prediction ties with targets: jittered counts
# (Machado and Santos Silva) make them continuous
y_jit = y + torch.rand(y.shape, generator=torch.Generator().manual_seed(9))


def pinball(out, s):
    errors = y_jit[s][:, None] - out
    return torch.max((quantiles - 1) * errors, quantiles * errors).mean()


qhead = Head(3)
print("pinball final", round(fit(qhead, pinball, steps=120), 5))

with torch.no_grad():
    xt, yt = X[test], y[test]
    print("test poisson NLL", round(-Poisson(poisson(xt).squeeze(-1).exp()).log_prob(yt).mean().item(), 5),
          "negbin NLL", round(-nb_dist(negbin(xt)).log_prob(yt).mean().item(), 5))
    g_out = gauss(xt)
    print("test gaussian NLL", round(-Normal(g_out[:, 0], F.softplus(g_out[:, 1]).sqrt()).log_prob(yt).mean().item(), 5))
    q = qhead(xt)
    crossed = int((q[:, 1:] < q[:, :-1]).sum())
    q_fixed = torch.cummax(q, dim=1).values
    yj = y_jit[test]
    coverage = ((yj >= q_fixed[:, 0]) & (yj <= q_fixed[:, 2])).float().mean()
    print(f"quantile crossings {crossed} -> {int((q_fixed[:, 1:] < q_fixed[:, :-1]).sum())}, "
          f"80% interval coverage {coverage.item():.4f}, cummax indices row0 {torch.cummax(q, 1).indices[0].tolist()}")
    abs_err = (huber(xt).squeeze(-1) - yt).abs()
    med, where = torch.kthvalue(abs_err, (abs_err.numel() + 1) // 2)
    print(f"median abs error {med.item():.5f} at {where.item()}, equals median(): "
          f"{torch.isclose(med, abs_err.median()).item()}")
    by_hour = torch.full((24, 40), float("nan"))
    fill = torch.zeros(24, dtype=torch.long)
    for h, e in zip(torch.from_numpy(hour[test]).tolist(), abs_err.tolist()):
        by_hour[h, fill[h]] = e
        fill[h] += 1
    q90 = torch.nanquantile(by_hour, 0.9, dim=1)
    print("per-hour 90th pct of abs error (first 6 hours)", [round(v, 4) for v in q90[:6].tolist()],
          "hours without data", int(torch.isnan(q90).sum()))

tagger = Head(3)
ml = nn.MultiLabelSoftMarginLoss()
print(ml, "final", round(fit(tagger, lambda out, s: ml(out, tags[s])), 5))
with torch.no_grad():
    pred = (tagger(X[test]) > 0).float()
    print("tag accuracy per label", (pred == tags[test]).float().mean(0).tolist(),
          "equals BCE-with-logits mean:", torch.isclose(ml(tagger(X[test]), tags[test]),
                                                         F.binary_cross_entropy_with_logits(tagger(X[test]), tags[test])).item())

members = []
for seed in range(4):
    torch.manual_seed(100 + seed)
    m = Head(2)
    fit(m, lambda out, s: gl(out[:, 0], y[s], F.softplus(out[:, 1])), steps=50)
    members.append(m)
with torch.no_grad():
    outs = torch.stack([m(X[test]) for m in members])
    mus, vars_ = outs[..., 0], F.softplus(outs[..., 1])
    mean = mus.mean(0)
    var = (vars_ + mus.pow(2)).mean(0) - mean.pow(2)
    print(f"ensemble: mean abs error {(mean - y[test]).abs().mean().item():.5f}, mean predictive std "
          f"{var.sqrt().mean().item():.5f}, epistemic share {(mus.var(0, unbiased=False) / var).mean().item():.5f}")
