"""A VAE written with torch.distributions (as probabilistic-programming tutorials write it):
an encoder that returns an Independent Normal, a Bernoulli decoder on logits, the analytic
KL against a standard-normal prior, and an importance-weighted bound at evaluation."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Bernoulli, Independent, Normal, kl_divergence

torch.manual_seed(0)
D, H, Z = 64, 32, 4


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, H)
        self.mu = nn.Linear(H, Z)
        self.logvar = nn.Linear(H, Z)

    def forward(self, x):
        h = F.relu(self.fc(x))
        return Independent(Normal(self.mu(h), torch.exp(0.5 * self.logvar(h))), 1)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z, H), nn.Tanh(), nn.Linear(H, D))

    def forward(self, z):
        return Independent(Bernoulli(logits=self.net(z)), 1)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = Encoder(), Decoder()
        self.register_buffer("prior_loc", torch.zeros(Z))
        self.register_buffer("prior_scale", torch.ones(Z))

    def prior(self):
        return Independent(Normal(self.prior_loc, self.prior_scale), 1)

    def elbo(self, x, beta=1.0):
        q = self.enc(x)
        z = q.rsample()
        rec = self.dec(z).log_prob(x)
        kl = kl_divergence(q, self.prior())
        return (rec - beta * kl).mean(), rec.mean(), kl.mean()

    @torch.no_grad()
    def iwae(self, x, k=8):
        q = self.enc(x)
        z = q.rsample((k,))
        logw = self.dec(z).log_prob(x) + self.prior().log_prob(z) - q.log_prob(z)
        return (torch.logsumexp(logw, 0) - math.log(k)).mean()


protos = (torch.rand(4, D) > 0.5).float()
data = protos[torch.randint(0, 4, (256,))]
data = torch.where(torch.rand_like(data) < 0.05, 1 - data, data)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=32,
                                     shuffle=True)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(3):
    total = 0.0
    for step, (x,) in enumerate(loader):
        beta = min(1.0, (epoch * len(loader) + step + 1) / 10)
        elbo, rec, kl = model.elbo(x, beta)
        opt.zero_grad()
        (-elbo).backward()
        opt.step()
        total += elbo.item() * len(x)
    print(f"epoch {epoch} elbo {total / len(data):.4f} rec {rec.item():.4f} kl {kl.item():.4f}")
model.eval()
print(f"iwae bound {model.iwae(data[:64]).item():.4f}")
q = model.enc(data[:3])
print("batch_shape", tuple(q.batch_shape), "event_shape", tuple(q.event_shape))
print("entropy", [round(v, 4) for v in q.entropy().tolist()])
samples = model.dec(model.prior().sample((5,))).mean
print("sample means", samples.shape, f"{samples.mean().item():.4f}")
