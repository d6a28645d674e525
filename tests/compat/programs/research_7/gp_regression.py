"""Exact Gaussian-process regression written by hand, the way GP tutorials and
"GPs from scratch" notebooks write it: an RBF + periodic kernel with softplus-constrained
hyper-parameters, the log marginal likelihood through ``torch.linalg.cholesky``,
``torch.cholesky_solve`` and ``torch.linalg.solve_triangular``, jitter retries on
``torch.linalg.LinAlgError``, type-II maximum likelihood with Adam, the predictive mean
and variance, posterior samples through ``MultivariateNormal(scale_tril=...)``, and a
sparse (inducing-point, DTC) approximation."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal

parser = argparse.ArgumentParser(description="GP regression")
parser.add_argument("--n-train", type=int, default=40)
parser.add_argument("--iters", type=int, default=30)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--seed", type=int, default=7)
args = parser.parse_args()

torch.manual_seed(args.seed)
torch.set_default_dtype(torch.float64)


def inv_softplus(x):
    return x + torch.log(-torch.expm1(-x))


class Kernel(nn.Module):
    def __init__(self, lengthscale=1.0, outputscale=1.0, period=None):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(inv_softplus(torch.tensor(lengthscale)))
        self.raw_outputscale = nn.Parameter(inv_softplus(torch.tensor(outputscale)))
        if period is not None:
            self.raw_period = nn.Parameter(inv_softplus(torch.tensor(period)))
        else:
            self.register_parameter("raw_period", None)

    @property
    def lengthscale(self):
        return F.softplus(self.raw_lengthscale)

    @property
    def outputscale(self):
        return F.softplus(self.raw_outputscale)

    def forward(self, x1, x2, diag=False):
        if diag:
            return self.outputscale.expand(x1.shape[0])
        if self.raw_period is None:
            d2 = torch.cdist(x1 / self.lengthscale, x2 / self.lengthscale).pow(2)
            return self.outputscale * torch.exp(-0.5 * d2)
        period = F.softplus(self.raw_period)
        d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs().sum(-1)
        return self.outputscale * torch.exp(
            -2.0 * torch.sin(math.pi * d / period).pow(2) / self.lengthscale.pow(2))

    def extra_repr(self):
        return f"periodic={self.raw_period is not None}"


class SumKernel(nn.Module):
    def __init__(self, *kernels):
        super().__init__()
        self.kernels = nn.ModuleList(kernels)

    def forward(self, x1, x2, diag=False):
        return sum(k(x1, x2, diag=diag) for k in self.kernels)


def psd_safe_cholesky(A, jitter=None, max_tries=4):
    L, info = torch.linalg.cholesky_ex(A)
    if not torch.any(info):
        return L
    jitter = jitter or (1e-6 if A.dtype == torch.float32 else 1e-8)
    Aprime = A.clone()
    jitter_prev = 0
    for i in range(max_tries):
        jitter_new = jitter * (10 ** i)
        Aprime.diagonal(dim1=-2, dim2=-1).add_(jitter_new - jitter_prev)
        jitter_prev = jitter_new
        L, info = torch.linalg.cholesky_ex(Aprime)
        if not torch.any(info):
            print(f"  added jitter of {jitter_new:.1e} to the diagonal")
            return L
    raise ValueError("not positive definite even with jitter")


class ExactGP(nn.Module):
    def __init__(self, train_x, train_y, kernel):
        super().__init__()
        self.train_x, self.train_y = train_x, train_y
        self.kernel = kernel
        self.mean_const = nn.Parameter(torch.zeros(()))
        self.raw_noise = nn.Parameter(inv_softplus(torch.tensor(0.1)))

    @property
    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def mll(self):
        n = self.train_x.shape[0]
        K = self.kernel(self.train_x, self.train_x)
        K = K + self.noise * torch.eye(n)
        L = torch.linalg.cholesky(K)
        r = (self.train_y - self.mean_const).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        data_fit = (r * alpha).sum()
        logdet = 2 * torch.log(torch.diagonal(L)).sum()
        return -0.5 * (data_fit + logdet + n * math.log(2 * math.pi)) / n

    @torch.no_grad()
    def predict(self, test_x, full_cov=False):
        n = self.train_x.shape[0]
        K = self.kernel(self.train_x, self.train_x) + self.noise * torch.eye(n)
        L = psd_safe_cholesky(K)
        Ks = self.kernel(self.train_x, test_x)
        alpha = torch.cholesky_solve((self.train_y - self.mean_const).unsqueeze(-1), L)
        mean = self.mean_const + (Ks.T @ alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        if full_cov:
            cov = self.kernel(test_x, test_x) - v.T @ v
            return mean, cov
        var = self.kernel(test_x, test_x, diag=True) - v.pow(2).sum(0)
        return mean, var.clamp_min(1e-10)


def f(x):
    return torch.sin(3 * x) + 0.3 * torch.cos(7 * x)


train_x = torch.rand(args.n_train, 1) * 4 - 2
train_y = f(train_x).squeeze(-1) + 0.1 * torch.randn(args.n_train)
test_x = torch.linspace(-2.5, 2.5, 11).unsqueeze(-1)

model = ExactGP(train_x, train_y, SumKernel(Kernel(0.5, 1.0), Kernel(1.0, 0.5, period=1.5)))
print(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
for i in range(args.iters):
    optimizer.zero_grad()
    loss = -model.mll()
    loss.backward()
    optimizer.step()
    if i % 10 == 0 or i == args.iters - 1:
        k0, k1 = model.kernel.kernels
        print("Iter %d/%d - Loss: %.6f   lengthscale: %.6f   period: %.6f   noise: %.6f" % (
            i + 1, args.iters, loss.item(), k0.lengthscale.item(),
            F.softplus(k1.raw_period).item(), model.noise.item()))

model.eval()
mean, var = model.predict(test_x)
lower, upper = mean - 2 * var.sqrt(), mean + 2 * var.sqrt()
print("mean ", " ".join(f"{m:.5f}" for m in mean.tolist()))
print("std  ", " ".join(f"{s:.5f}" for s in var.sqrt().tolist()))
covered = ((f(test_x).squeeze(-1) >= lower) & (f(test_x).squeeze(-1) <= upper)).sum().item()
print("covered", covered, "of", len(test_x), "rmse %.6f" % (mean - f(test_x).squeeze(-1))
      .pow(2).mean().sqrt().item())

mean, cov = model.predict(test_x, full_cov=True)
post = MultivariateNormal(mean, scale_tril=psd_safe_cholesky(cov, jitter=1e-8))
samples = post.rsample(torch.Size([3]))
print("samples", tuple(samples.shape), "log_prob %.4f" % post.log_prob(mean).item(),
      "entropy %.4f" % post.entropy().item())

# the same mll through MultivariateNormal, and its gradient, agree with the hand-written one
K = model.kernel(train_x, train_x) + model.noise * torch.eye(args.n_train)
mvn = MultivariateNormal(model.mean_const.expand(args.n_train), covariance_matrix=K)
print("mvn mll %.8f  hand mll %.8f" % (mvn.log_prob(train_y).item() / args.n_train,
                                       model.mll().item()))
g1 = torch.autograd.grad(model.mll(), model.raw_noise)[0]
g2 = torch.autograd.grad(mvn.log_prob(train_y) / args.n_train, model.raw_noise)[0]
print("d mll / d raw_noise %.8f %.8f" % (g1.item(), g2.item()))
try:
    torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
except torch.linalg.LinAlgError as e:
    print("LinAlgError:", str(e).splitlines()[0])

# subset-of-regressors / DTC sparse GP with 8 inducing points
Z = torch.linspace(-2, 2, 8).unsqueeze(-1)
kern = model.kernel
with torch.no_grad():
    Kuu = kern(Z, Z) + 1e-6 * torch.eye(8)
    Kuf = kern(Z, train_x)
    Luu = torch.linalg.cholesky(Kuu)
    A = torch.linalg.solve_triangular(Luu, Kuf, upper=False) / model.noise.sqrt()
    B = torch.eye(8) + A @ A.T
    LB = torch.linalg.cholesky(B)
    c = torch.linalg.solve_triangular(LB, A @ (train_y - model.mean_const).unsqueeze(-1),
                                      upper=False) / model.noise.sqrt()
    Kus = kern(Z, test_x)
    tmp = torch.linalg.solve_triangular(Luu, Kus, upper=False)
    tmp2 = torch.linalg.solve_triangular(LB, tmp, upper=False)
    sparse_mean = model.mean_const + (tmp2.T @ c).squeeze(-1)
print("sparse vs exact mean max diff %.5f" % (sparse_mean - mean).abs().max().item())
print("dtype", mean.dtype, torch.get_default_dtype())

torch.set_default_dtype(torch.float32)  # leave the process as found
