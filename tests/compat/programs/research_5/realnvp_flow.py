"""A RealNVP normalizing flow on two-moons data, written the way flow tutorials build it on
torch.distributions: a custom Transform subclass per affine coupling (its _call, _inverse and
log_abs_det_jacobian, a cached forward), composed with library transforms in a
TransformedDistribution over an Independent Normal base, trained by maximum likelihood."""
import math

import torch
import torch.nn as nn
from torch.distributions import (Independent, Normal, TransformedDistribution, constraints,
                                 transforms as T)

torch.manual_seed(0)


def two_moons(n):
    t = torch.rand(n) * math.pi
    upper = torch.stack([torch.cos(t), torch.sin(t)], 1)
    lower = torch.stack([1 - torch.cos(t), 0.5 - torch.sin(t)], 1)
    which = torch.rand(n) < 0.5
    x = torch.where(which[:, None], upper, lower)
    return x + 0.05 * torch.randn(n, 2)


class CouplingTransform(T.Transform):
    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self, net, mask):
        super().__init__(cache_size=1)
        self.net, self.mask = net, mask

    def __eq__(self, other):
        return self is other

    def _params(self, x_masked):
        s, t = self.net(x_masked).chunk(2, dim=-1)
        s = torch.tanh(s) * (1 - self.mask)
        return s, t * (1 - self.mask)

    def _call(self, x):
        s, t = self._params(x * self.mask)
        return x * self.mask + (1 - self.mask) * (x * torch.exp(s) + t)

    def _inverse(self, y):
        s, t = self._params(y * self.mask)
        return y * self.mask + (1 - self.mask) * ((y - t) * torch.exp(-s))

    def log_abs_det_jacobian(self, x, y):
        s, _ = self._params(x * self.mask)
        return s.sum(-1)


class RealNVP(nn.Module):
    def __init__(self, n_layers=4, hidden=32):
        super().__init__()
        self.nets = nn.ModuleList(
            nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(), nn.Linear(hidden, hidden),
                          nn.LeakyReLU(), nn.Linear(hidden, 4)) for _ in range(n_layers))
        masks = torch.tensor([[1.0, 0.0], [0.0, 1.0]] * (n_layers // 2))
        self.register_buffer("masks", masks)
        self.register_buffer("loc", torch.zeros(2))
        self.register_buffer("scale", torch.ones(2))

    def flow(self):
        base = Independent(Normal(self.loc, self.scale), 1)
        parts = [CouplingTransform(net, m) for net, m in zip(self.nets, self.masks)]
        # data -> latent is the inverse: the flow maps base samples to data
        return TransformedDistribution(base, [T.AffineTransform(0.0, 1.5, event_dim=1)] +
                                       parts + [T.AffineTransform(torch.tensor([0.5, 0.25]),
                                                                  1.0, event_dim=1)])


model = RealNVP()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
data = two_moons(512)
for step in range(60):
    x = data[torch.randint(0, len(data), (128,))]
    loss = -model.flow().log_prob(x).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 15 == 14:
        print(f"step {step + 1} nll {loss.item():.4f}")

with torch.no_grad():
    dist = model.flow()
    samples = dist.sample((256,))
    print("samples", tuple(samples.shape), [round(v, 4) for v in samples.mean(0).tolist()])
    y = dist.rsample((4,))
    print("rsample log_prob", [round(v, 4) for v in dist.log_prob(y).tolist()])
    print("held-out nll", f"{-dist.log_prob(two_moons(256)).mean().item():.4f}")
    z = T.ComposeTransform(dist.transforms).inv(data[:3])
    print("latent", [[round(v, 4) for v in r] for r in z.tolist()])
    print("event_shape", tuple(dist.event_shape), "batch_shape", tuple(dist.batch_shape))
    print(type(T.ComposeTransform(dist.transforms).inv).__name__)
