"""A mixture density network the way pytorch-mdn and "MDN with torch.distributions" posts
write it: a network emitting mixture logits, means and log-scales, the likelihood through
``MixtureSameFamily(Categorical, Independent(Normal))``, sampling and the mixture's
moments; then a Gaussian mixture fitted by EM with ``logsumexp`` responsibilities, a
``MixtureSameFamily`` of full-covariance ``MultivariateNormal`` components, its CDF for 1-D,
and the closed-form KL divergences the ``kl_divergence`` registry knows."""
import math

import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)


class MDN(nn.Module):
    def __init__(self, dim_in, dim_out, n_components, hidden=32):
        super().__init__()
        self.n_components, self.dim_out = n_components, dim_out
        self.backbone = nn.Sequential(nn.Linear(dim_in, hidden), nn.Tanh(),
                                      nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_components)
        self.mu = nn.Linear(hidden, n_components * dim_out)
        self.log_sigma = nn.Linear(hidden, n_components * dim_out)

    def forward(self, x):
        h = self.backbone(x)
        logits = self.pi(h)
        mu = self.mu(h).view(-1, self.n_components, self.dim_out)
        sigma = torch.exp(self.log_sigma(h).clamp(-7, 5)).view(-1, self.n_components,
                                                                 self.dim_out)
        mix = D.Categorical(logits=logits)
        comp = D.Independent(D.Normal(mu, sigma), 1)
        return D.MixtureSameFamily(mix, comp)


def mdn_loss_by_hand(pi_logits, mu, sigma, y):
    # the same negative log likelihood written out, as older MDN repos do
    y = y.unsqueeze(1).expand_as(mu)
    log_prob = -0.5 * ((y - mu) / sigma) ** 2 - torch.log(sigma) - 0.5 * math.log(2 * math.pi)
    log_prob = log_prob.sum(-1)
    return -torch.logsumexp(F.log_softmax(pi_logits, -1) + log_prob, dim=-1).mean()


# inverse problem: x = y + 0.3 sin(2 pi y) + noise, predict y from x (multi-modal)
n = 256
y_data = torch.rand(n, 1) * 2 - 1
x_data = y_data + 0.3 * torch.sin(2 * math.pi * y_data) + 0.05 * torch.randn(n, 1)

model = MDN(1, 1, n_components=4)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
for epoch in range(40):
    optimizer.zero_grad()
    dist = model(x_data)
    loss = -dist.log_prob(y_data).mean()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    if epoch % 10 == 0 or epoch == 39:
        print(f"epoch {epoch:3d}  nll {loss.item():.6f}")

with torch.no_grad():
    h = model.backbone(x_data)
    hand = mdn_loss_by_hand(model.pi(h), model.mu(h).view(-1, 4, 1),
                            torch.exp(model.log_sigma(h).clamp(-7, 5)).view(-1, 4, 1), y_data)
    dist = model(x_data)
    print(f"hand nll {hand.item():.6f}  dist nll {-dist.log_prob(y_data).mean().item():.6f}")
    print("batch_shape", tuple(dist.batch_shape), "event_shape", tuple(dist.event_shape))
    print("mean[:3]", [round(v, 5) for v in dist.mean[:3, 0].tolist()])
    print("var[:3] ", [round(v, 5) for v in dist.variance[:3, 0].tolist()])
    torch.manual_seed(0)
    s = dist.sample((5,))
    print("samples", tuple(s.shape), f"{s.mean().item():.6f}")
    grid = torch.linspace(-1, 1, 5).unsqueeze(-1)
    print("mixture weights at grid",
          [[round(p, 4) for p in row] for row in model(grid).mixture_distribution.probs.tolist()])
print(dist.mixture_distribution, dist.component_distribution.base_dist.__class__.__name__)

# EM for a 2-D Gaussian mixture, as in the "GMM in PyTorch" gists
K, N = 3, 300
true_means = torch.tensor([[-2.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
assign = torch.randint(0, K, (N,))
X = true_means[assign] + 0.5 * torch.randn(N, 2)
means = X[torch.randperm(N)[:K]].clone()
covs = torch.eye(2).repeat(K, 1, 1)
weights = torch.full((K,), 1.0 / K)
prev = -math.inf
for it in range(30):
    comp = D.MultivariateNormal(means, covariance_matrix=covs)
    log_p = comp.log_prob(X.unsqueeze(1)) + weights.log()
    ll = torch.logsumexp(log_p, dim=1)
    resp = torch.exp(log_p - ll.unsqueeze(1))
    Nk = resp.sum(0)
    weights = Nk / N
    means = (resp.T @ X) / Nk.unsqueeze(1)
    diff = X.unsqueeze(1) - means
    covs = torch.einsum("nk,nki,nkj->kij", resp, diff, diff) / Nk.view(K, 1, 1)
    covs = covs + 1e-6 * torch.eye(2)
    cur = ll.mean().item()
    if abs(cur - prev) < 1e-6:
        break
    prev = cur
order = means[:, 0].argsort()
print(f"EM stopped after {it + 1} iterations, mean log-likelihood {cur:.6f}")
print("weights", [round(w, 4) for w in weights[order].tolist()])
print("means  ", [[round(v, 4) for v in m] for m in means[order].tolist()])
gmm = D.MixtureSameFamily(D.Categorical(probs=weights),
                          D.MultivariateNormal(means, covariance_matrix=covs))
print(f"gmm log_prob {gmm.log_prob(X).mean().item():.6f}  labels",
      torch.bincount(resp.argmax(1), minlength=K)[order].tolist())

mix1d = D.MixtureSameFamily(D.Categorical(torch.tensor([0.3, 0.7])),
                            D.Normal(torch.tensor([-1.0, 2.0]), torch.tensor([0.5, 1.0])))
pts = torch.tensor([-1.0, 0.0, 2.0])
print("cdf", [round(v, 6) for v in mix1d.cdf(pts).tolist()],
      "log_prob", [round(v, 6) for v in mix1d.log_prob(pts).tolist()])
p = D.Normal(torch.tensor(0.0), torch.tensor(1.0))
q = D.Normal(torch.tensor(1.0), torch.tensor(2.0))
print("kl normal %.6f" % D.kl_divergence(p, q).item(),
      "kl categorical %.6f" % D.kl_divergence(D.Categorical(probs=weights),
                                               D.Categorical(logits=torch.zeros(K))).item())
try:
    D.kl_divergence(mix1d, p)
except NotImplementedError:
    print("no closed-form KL for a mixture")
