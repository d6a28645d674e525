"""Hamiltonian Monte Carlo by hand, as Bayesian-inference tutorials write it, in float64:
a Bayesian logistic regression posterior from ``torch.distributions`` (``Normal`` prior,
``Bernoulli(logits=...)`` likelihood), its gradient by ``torch.autograd.grad``, leapfrog
integration, the Metropolis correction with ``torch.rand``, step-size adaptation by dual
averaging during warmup, a diagonal mass matrix from warmup samples, split-R-hat and
effective sample sizes from an FFT autocorrelation, and a random-walk Metropolis baseline
on a ``MultivariateNormal`` target with ``Independent``."""
import math

import torch
import torch.distributions as dist

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)

N, D = 60, 3
X = torch.cat([torch.ones(N, 1), torch.randn(N, D - 1)], 1)
w_true = torch.tensor([-0.5, 1.5, -1.0])
y = dist.Bernoulli(logits=X @ w_true).sample()
prior = dist.Independent(dist.Normal(torch.zeros(D), 2.0 * torch.ones(D)), 1)
print("data mean", y.mean().item(), "prior event shape", prior.event_shape)


def log_prob(w):
    return prior.log_prob(w) + dist.Bernoulli(logits=X @ w).log_prob(y).sum()


def grad_log_prob(w):
    w = w.detach().requires_grad_(True)
    lp = log_prob(w)
    (g,) = torch.autograd.grad(lp, w)
    return lp.detach(), g


def leapfrog(w, p, eps, L, inv_mass):
    _, g = grad_log_prob(w)
    p = p + 0.5 * eps * g
    for i in range(L):
        w = w + eps * inv_mass * p
        lp, g = grad_log_prob(w)
        if i != L - 1:
            p = p + eps * g
    p = p + 0.5 * eps * g
    return w, p, lp


def hmc(w0, n_warmup=40, n_samples=60, L=6, target_accept=0.9):
    w, inv_mass = w0.clone(), torch.ones(D)
    eps = 0.05
    mu, h_bar, log_eps_bar, gamma, t0, kappa = math.log(10 * eps), 0.0, 0.0, 0.05, 10, 0.75
    samples, accepts, warm = [], 0, []
    lp_w, _ = grad_log_prob(w)
    for it in range(n_warmup + n_samples):
        p = torch.randn(D) / inv_mass.sqrt()
        h0 = -lp_w + 0.5 * (p * p * inv_mass).sum()
        w_new, p_new, lp_new = leapfrog(w, p, eps, L, inv_mass)
        h1 = -lp_new + 0.5 * (p_new * p_new * inv_mass).sum()
        accept_prob = torch.clamp(torch.exp(h0 - h1), max=1.0).item()
        if torch.rand(()) < accept_prob:
            w, lp_w = w_new, lp_new
            if it >= n_warmup:
                accepts += 1
        if it < n_warmup:
            m = it + 1
            h_bar = (1 - 1 / (m + t0)) * h_bar + (target_accept - accept_prob) / (m + t0)
            log_eps = mu - math.sqrt(m) / gamma * h_bar
            eta = m ** -kappa
            log_eps_bar = eta * log_eps + (1 - eta) * log_eps_bar
            eps = math.exp(log_eps)
            warm.append(w)
            if it == n_warmup // 2:
                inv_mass = torch.stack(warm[len(warm) // 2:]).var(0) + 1e-3
        elif it == n_warmup:
            eps = math.exp(log_eps_bar)
        if it >= n_warmup:
            samples.append(w)
    return torch.stack(samples), accepts / n_samples, eps, inv_mass


def autocorr(x):
    n = x.shape[0]
    x = x - x.mean()
    f = torch.fft.rfft(x, n=2 * n)
    ac = torch.fft.irfft(f * f.conj(), n=2 * n)[:n]
    return ac / ac[0]


def ess(chain):
    rho = autocorr(chain)
    s = 0.0
    for t in range(1, len(rho) - 1, 2):
        pair = rho[t] + rho[t + 1]
        if pair < 0:
            break
        s += pair.item()
    return len(chain) / (1 + 2 * s)


def split_rhat(chains):
    half = chains.shape[1] // 2
    c = torch.cat([chains[:, :half], chains[:, half:2 * half]])
    n = c.shape[1]
    W = c.var(1).mean()
    B = n * c.mean(1).var()
    return ((n - 1) / n * W + B / n).div(W).sqrt()


chains = []
for c in range(2):
    s, acc, eps, inv_mass = hmc(torch.randn(D) * 0.1)
    chains.append(s)
    print(f"chain {c} accept {acc:.3f} eps {eps:.5f} inv_mass {inv_mass.tolist()}")
    print("  posterior mean", s.mean(0), "sd", s.std(0))
chains = torch.stack(chains)
for d in range(D):
    print(f"w[{d}] rhat {split_rhat(chains[:, :, d]).item():.5f} "
          f"ess {ess(chains[0, :, d]):.3f}")

# random-walk Metropolis on a correlated Gaussian
target = dist.MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 0.8], [0.8, 1.0]]))
x, lp, acc, draws = torch.zeros(2), target.log_prob(torch.zeros(2)), 0, []
for i in range(300):
    prop = x + 0.7 * torch.randn(2)
    lp_prop = target.log_prob(prop)
    if torch.log(torch.rand(())) < lp_prop - lp:
        x, lp, acc = prop, lp_prop, acc + 1
    draws.append(x)
draws = torch.stack(draws)
print(f"rwm accept {acc / 300:.3f} mean {draws.mean(0).tolist()} corr "
      f"{torch.corrcoef(draws.T)[0, 1].item():.5f}")
