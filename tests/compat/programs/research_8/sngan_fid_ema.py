"""A spectrally normalised GAN the way mimicry/pytorch-sngan-style repos write it: the
generator's ``ConvTranspose2d`` upsampling, a discriminator whose layers go through
``torch.nn.utils.parametrizations.spectral_norm`` (and the old hook-based
``spectral_norm`` on one layer), hinge losses, two-time-scale Adam with ``betas=(0.0,
0.9)`` and ``n_dis`` discriminator steps, an EMA generator updated with
``torch._foreach_lerp_``/``_foreach_mul_``/``_foreach_add_`` and ``_foreach_norm``,
``parameters_to_vector``, an ``orthogonal`` parametrization on a projection, and a
Fréchet distance on random-projection features (``torch.cov``, ``scipy.linalg.sqrtm``,
``torch.linalg.eigvals``); ``make_grid``-style tiling by ``unfold``/``permute`` and a
``fuse_conv_bn_eval`` check."""
# printout rtol: 2e-3
# (the Frechet distance's matrix square root amplifies the covariances' rounding,
# which the thread count changes (5e-4 apart between runs of one build))
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy import linalg
from torch.nn.utils import parameters_to_vector, vector_to_parameters
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torch.nn.utils.parametrizations import orthogonal, spectral_norm

torch.manual_seed(0)
np.random.seed(0)
nz, ngf, ndf = 16, 16, 16


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(nz, 4 * 4 * ngf * 2)
        self.main = nn.Sequential(
            nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 1, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.main(self.l1(z).view(-1, ngf * 2, 4, 4))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            spectral_norm(nn.Conv2d(1, ndf, 3, 1, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.Conv2d(ndf, ndf, 4, 2, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.Conv2d(ndf, ndf * 2, 4, 2, 1)), nn.LeakyReLU(0.1))
        self.linear = torch.nn.utils.spectral_norm(nn.Linear(ndf * 2 * 4 * 4, 1))

    def forward(self, x):
        return self.linear(self.main(x).flatten(1))


def hinge_loss_dis(output_fake, output_real):
    return F.relu(1.0 - output_real).mean() + F.relu(1.0 + output_fake).mean()


def hinge_loss_gen(output_fake):
    return -output_fake.mean()


def real_batch(n, g):
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    cx = torch.rand(n, 1, 1, generator=g) * 8 + 4
    cy = torch.rand(n, 1, 1, generator=g) * 8 + 4
    img = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 8) * 2 - 1
    return img[:, None]


netG, netD = Generator(), Discriminator()
print(netD.main[0])
print("parametrized:", torch.nn.utils.parametrize.is_parametrized(netD.main[0], "weight"),
      "old-style hooks:", hasattr(netD.linear, "weight_orig"))
w = netD.main[2].weight
sigma = torch.linalg.matrix_norm(w.flatten(1), ord=2)
print(f"sigma after one power iteration: {sigma.item():.4f}")
optD = torch.optim.Adam(netD.parameters(), lr=4e-4, betas=(0.0, 0.9))
optG = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.0, 0.9))
ema = copy.deepcopy(netG).eval()
for p in ema.parameters():
    p.requires_grad_(False)
ema_params, model_params = list(ema.parameters()), list(netG.parameters())
g = torch.Generator().manual_seed(1)
n_dis, decay = 2, 0.9
for it in range(6):
    for _ in range(n_dis):
        real = real_batch(16, g)
        z = torch.randn(16, nz)
        fake = netG(z).detach()
        errD = hinge_loss_dis(netD(fake), netD(real))
        optD.zero_grad()
        errD.backward()
        optD.step()
    z = torch.randn(16, nz)
    errG = hinge_loss_gen(netD(netG(z)))
    optG.zero_grad()
    errG.backward()
    optG.step()
    with torch.no_grad():
        torch._foreach_lerp_(ema_params, model_params, 1 - decay)
        for be, bm in zip(ema.buffers(), netG.buffers()):
            be.copy_(bm)
    norms = torch._foreach_norm([p.grad for p in netD.parameters() if p.grad is not None])
    print(f"iter {it} D {errD.item():.4f} G {errG.item():.4f} "
          f"|grad D| {torch.stack(norms).norm().item():.4f}")

sig = [torch.linalg.matrix_norm(m.weight.flatten(1), ord=2).item()
       for m in netD.main if isinstance(m, nn.Conv2d)]
print("conv sigmas ~ 1:", [round(s, 2) for s in sig])
vec = parameters_to_vector(ema.parameters())
print("ema params:", vec.numel(), f"{vec.norm().item():.4f}",
      f"distance to online {(vec - parameters_to_vector(netG.parameters())).norm().item():.4f}")
scaled = [p.clone() for p in ema_params[:2]]
torch._foreach_mul_(scaled, 0.5)
torch._foreach_add_(scaled, ema_params[:2], alpha=0.5)
print("foreach mul/add:", all(torch.allclose(a, b) for a, b in zip(scaled, ema_params[:2])))
vector_to_parameters(torch.zeros_like(vec), ema.parameters())
print("zeroed by vector_to_parameters:", all(p.abs().sum() == 0 for p in ema.parameters()))

# --- a Fréchet distance on random orthogonal projections ---------------------------------------
proj = orthogonal(nn.Linear(256, 8, bias=False))
Q = proj.weight
print("orthogonal rows:", torch.allclose(Q @ Q.T, torch.eye(8), atol=1e-5))


def features(x):
    with torch.no_grad():
        return proj(x.flatten(1)).double()


def frechet_distance(mu1, sigma1, mu2, sigma2, eps=1e-6):
    diff = mu1 - mu2
    covmean, _ = linalg.sqrtm(sigma1.dot(sigma2), disp=False)
    if not np.isfinite(covmean).all():
        offset = np.eye(sigma1.shape[0]) * eps
        covmean = linalg.sqrtm((sigma1 + offset).dot(sigma2 + offset))
    if np.iscomplexobj(covmean):
        covmean = covmean.real
    tr_covmean = np.trace(covmean)
    return diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * tr_covmean


real_f = features(real_batch(200, g))
netG.eval()
fake_f = features(netG(torch.randn(200, nz)))
mu_r, mu_f = real_f.mean(0), fake_f.mean(0)
cov_r, cov_f = torch.cov(real_f.T), torch.cov(fake_f.T)
fid = frechet_distance(mu_r.numpy(), cov_r.numpy(), mu_f.numpy(), cov_f.numpy())
ev = torch.linalg.eigvals(cov_r @ cov_f)
fid_eig = ((mu_r - mu_f) ** 2).sum() + cov_r.trace() + cov_f.trace() - 2 * ev.sqrt().real.sum()
print(f"FID-like {fid:.4f} via eigvals {fid_eig.item():.4f} dtype {ev.dtype}")

# --- tiling a sample grid and fusing conv + bn for inference ----------------------------------
samples = netG(torch.randn(16, nz)).detach()
grid = samples.view(4, 4, 16, 16).permute(0, 2, 1, 3).reshape(64, 64)
print("grid:", tuple(grid.shape), f"{grid.mean().item():.5f}",
      "tiles:", tuple(grid.unfold(0, 16, 16).unfold(1, 16, 16).shape))
conv, bn = nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4)
bn.running_mean.uniform_(-0.5, 0.5)
bn.running_var.uniform_(0.5, 1.5)
conv.eval(), bn.eval()
fused = fuse_conv_bn_eval(conv, bn)
x = torch.randn(2, 1, 8, 8)
print("fused == conv->bn:", torch.allclose(fused(x), bn(conv(x)), atol=1e-5))
