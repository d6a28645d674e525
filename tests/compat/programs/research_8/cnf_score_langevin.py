"""Continuous normalising flows and score-based sampling the way FFJORD-style notebooks and
yang-song's score-matching tutorials write them, with the solvers by hand: a time-
conditioned ``ConcatSquash`` field, the augmented dynamics ``[z, -tr(df/dz)]`` integrated
by a fixed-step RK4 written in Python, the trace exactly (one ``autograd.grad`` per
dimension) or by Hutchinson's estimator with Rademacher probes (``create_graph=True``),
``torch.func.jacrev`` + ``vmap`` for the exact trace, a ``MultivariateNormal`` base; then
denoising score matching over geometric noise levels, sliced score matching with random
projections, annealed Langevin dynamics with a seeded ``Generator``, and an EMA of the
score network through ``torch.optim.swa_utils.AveragedModel``."""
import math

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal
from torch.func import jacrev, vmap
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
np.random.seed(0)


def sample_two_moons(n, generator=None):
    t = torch.rand(n, generator=generator) * math.pi
    upper = torch.rand(n, generator=generator) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    pts = torch.stack([x, y], 1) + 0.08 * torch.randn(n, 2, generator=generator)
    return (pts - torch.tensor([0.5, 0.25])) * 1.5


class ConcatSquashLinear(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self._layer = nn.Linear(dim_in, dim_out)
        self._hyper_bias = nn.Linear(1, dim_out, bias=False)
        self._hyper_gate = nn.Linear(1, dim_out)

    def forward(self, t, x):
        tt = t.view(1, 1).expand(x.size(0), 1)
        return self._layer(x) * torch.sigmoid(self._hyper_gate(tt)) + self._hyper_bias(tt)


class ODEfunc(nn.Module):
    def __init__(self, dim=2, hidden=32):
        super().__init__()
        self.layers = nn.ModuleList([ConcatSquashLinear(dim, hidden),
                                     ConcatSquashLinear(hidden, hidden),
                                     ConcatSquashLinear(hidden, dim)])

    def velocity(self, t, z):
        for i, layer in enumerate(self.layers):
            z = layer(t, z)
            if i < len(self.layers) - 1:
                z = torch.tanh(z)
        return z


def divergence_exact(f, z):
    div = 0.0
    for i in range(z.shape[1]):
        div = div + torch.autograd.grad(f[:, i].sum(), z, create_graph=True)[0][:, i]
    return div


def divergence_hutchinson(f, z, e):
    e_dzdx = torch.autograd.grad(f, z, e, create_graph=True)[0]
    return (e_dzdx * e).sum(1)


class CNF(nn.Module):
    def __init__(self, odefunc, T=1.0, steps=6, estimator="exact"):
        super().__init__()
        self.odefunc, self.T, self.steps, self.estimator = odefunc, T, steps, estimator

    def dynamics(self, t, z, e=None):
        with torch.enable_grad():
            z = z.requires_grad_(True) if not z.requires_grad else z
            dz = self.odefunc.velocity(t, z)
            if self.estimator == "exact":
                div = divergence_exact(dz, z)
            else:
                div = divergence_hutchinson(dz, z, e)
        return dz, -div

    def rk4(self, z, logp, t0, t1, e=None):
        h = (t1 - t0) / self.steps
        t = torch.tensor(t0)
        for _ in range(self.steps):
            k1z, k1p = self.dynamics(t, z, e)
            k2z, k2p = self.dynamics(t + h / 2, z + h / 2 * k1z, e)
            k3z, k3p = self.dynamics(t + h / 2, z + h / 2 * k2z, e)
            k4z, k4p = self.dynamics(t + h, z + h * k3z, e)
            z = z + h / 6 * (k1z + 2 * k2z + 2 * k3z + k4z)
            logp = logp + h / 6 * (k1p + 2 * k2p + 2 * k3p + k4p)
            t = t + h
        return z, logp

    def forward(self, x, e=None):
        """data -> base: returns z(0) and the change of log-density."""
        zero = torch.zeros(x.shape[0], device=x.device)
        return self.rk4(x, zero, self.T, 0.0, e)


base = MultivariateNormal(torch.zeros(2), torch.eye(2))
data = sample_two_moons(256, torch.Generator().manual_seed(1))

# the exact trace against torch.func's Jacobian
func = ODEfunc()
z = torch.randn(5, 2, requires_grad=True)
t0 = torch.tensor(0.3)
f = func.velocity(t0, z)
div = divergence_exact(f, z)
jac = vmap(jacrev(lambda zz: func.velocity(t0, zz[None])[0]))(z.detach())
print("trace matches jacrev:", torch.allclose(div, jac.diagonal(dim1=-2, dim2=-1).sum(-1),
                                              atol=1e-6))
e = torch.randint(0, 2, (4096, 2), generator=torch.Generator().manual_seed(3)).float() * 2 - 1
zz = z[:1].detach().expand(4096, 2).clone().requires_grad_(True)
est = divergence_hutchinson(func.velocity(t0, zz), zz, e).mean()
print(f"hutchinson mean {est.item():.4f} exact {div[0].item():.4f}")

cnf = CNF(ODEfunc(), steps=4, estimator="exact")
opt = torch.optim.Adam(cnf.parameters(), lr=5e-3)
for itr in range(8):
    idx = torch.randint(0, 256, (64,))
    x = data[idx]
    if itr >= 4:
        cnf.estimator = "hutchinson"
        e = torch.randn_like(x).sign()
    else:
        e = None
    z0, delta_logp = cnf(x, e)
    logpx = base.log_prob(z0) - delta_logp
    loss = -logpx.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"cnf iter {itr} ({cnf.estimator}) nll {loss.item():.4f}")


# --- score matching and annealed Langevin dynamics --------------------------------------------
class ScoreNet(nn.Module):
    def __init__(self, n_sigmas, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(n_sigmas, hidden)
        self.fc1, self.fc2 = nn.Linear(2, hidden), nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, labels, sigmas):
        h = nn.functional.softplus(self.fc1(x) + self.embed(labels))
        h = nn.functional.softplus(self.fc2(h))
        return self.out(h) / sigmas[labels][:, None]


def anneal_dsm_score_estimation(scorenet, samples, sigmas, labels=None, anneal_power=2.0):
    if labels is None:
        labels = torch.randint(0, len(sigmas), (samples.shape[0],), device=samples.device)
    used_sigmas = sigmas[labels].view(samples.shape[0], *([1] * len(samples.shape[1:])))
    noise = torch.randn_like(samples) * used_sigmas
    perturbed_samples = samples + noise
    target = -1 / (used_sigmas ** 2) * noise
    scores = scorenet(perturbed_samples, labels, sigmas)
    target = target.view(target.shape[0], -1)
    scores = scores.view(scores.shape[0], -1)
    loss = 1 / 2. * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze() ** anneal_power
    return loss.mean(dim=0)


def sliced_score_estimation_vr(score_net, samples, n_particles=1):
    dup_samples = samples.unsqueeze(0).expand(n_particles, *samples.shape).contiguous().view(
        -1, *samples.shape[1:])
    dup_samples.requires_grad_(True)
    vectors = torch.randn_like(dup_samples)
    grad1 = score_net(dup_samples)
    gradv = torch.sum(grad1 * vectors)
    grad2 = torch.autograd.grad(gradv, dup_samples, create_graph=True)[0]
    loss1 = torch.sum(grad1 * grad1, dim=-1) / 2.
    loss2 = torch.sum(vectors * grad2, dim=-1)
    return (loss1 + loss2).mean()


sigmas = torch.tensor(np.exp(np.linspace(np.log(1.0), np.log(0.05), 6))).float()
print("sigmas:", sigmas)
score = ScoreNet(len(sigmas))
ema = AveragedModel(score, multi_avg_fn=get_ema_multi_avg_fn(0.9))
opt = torch.optim.Adam(score.parameters(), lr=3e-3)
for step in range(40):
    x = data[torch.randint(0, 256, (128,))]
    loss = anneal_dsm_score_estimation(score, x, sigmas)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(score)
    if step % 10 == 0:
        print(f"dsm step {step} loss {loss.item():.4f}")

label = torch.full((128,), len(sigmas) - 1, dtype=torch.long)  # 2 particles x 64
ssm = sliced_score_estimation_vr(lambda v: score(v, label, sigmas), data[:64], n_particles=2)
print(f"sliced score matching loss {ssm.item():.4f}")


@torch.no_grad()
def anneal_Langevin_dynamics(x_mod, scorenet, sigmas, n_steps_each=5, step_lr=0.0005,
                             generator=None):
    images = []
    for c, sigma in enumerate(sigmas):
        labels = torch.ones(x_mod.shape[0], dtype=torch.long) * c
        step_size = step_lr * (sigma / sigmas[-1]) ** 2
        for s in range(n_steps_each):
            images.append(x_mod.clone())
            noise = torch.randn(x_mod.shape, generator=generator) * torch.sqrt(step_size * 2)
            grad = scorenet(x_mod, labels, sigmas)
            x_mod = x_mod + step_size * grad + noise
    return images


g = torch.Generator().manual_seed(5)
x_init = torch.rand(200, 2, generator=g) * 4 - 2
traj = anneal_Langevin_dynamics(x_init, ema.module, sigmas, generator=g)
final = traj[-1]
print("trajectory:", len(traj), "final mean", final.mean(0), "std", final.std(0))
print("ema averaged:", int(ema.n_averaged), "differs from online:",
      not torch.equal(ema.module.fc1.weight, score.fc1.weight))
