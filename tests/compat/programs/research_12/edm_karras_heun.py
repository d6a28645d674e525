"""Diffusion the way NVlabs/edm (``training/networks.py``, ``generate.py``) and
k-diffusion write it, on 2-D data: ``EDMPrecond`` with ``c_skip``/``c_out``/``c_in``/
``c_noise``, the log-normal sigma sampler and loss weight ``(sigma^2 + sd^2)/(sigma sd)^2``,
the Karras sigma schedule (``rho = 7``, a final zero via ``torch.cat``), the stochastic
Heun sampler with ``S_churn`` and a second-order correction, an EMA whose half-life is
given in samples, ``torch.float64`` sampling of a float32 net, and a consistency-training
loss between adjacent sigmas against a ``copy.deepcopy``'d target."""
import copy
import math

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


def two_moons(n, g):
    t = torch.rand(n, generator=g) * math.pi
    upper = torch.rand(n, generator=g) > 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) * 0.8 + 0.05 * torch.randn(n, 2, generator=g)


class FourierEmbedding(nn.Module):
    def __init__(self, num_channels, scale=4):
        super().__init__()
        self.register_buffer("freqs", torch.randn(num_channels // 2) * scale)

    def forward(self, x):
        x = x.ger((2 * np.pi * self.freqs).to(x.dtype))
        return torch.cat([x.cos(), x.sin()], dim=1)


class MLPNet(nn.Module):
    def __init__(self, dim=2, hidden=64, emb=16):
        super().__init__()
        self.emb = FourierEmbedding(emb)
        self.net = nn.Sequential(nn.Linear(dim + emb, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, dim))

    def forward(self, x, noise_labels):
        return self.net(torch.cat([x, self.emb(noise_labels)], dim=1))


class EDMPrecond(nn.Module):
    def __init__(self, sigma_min=0.002, sigma_max=80, sigma_data=0.5):
        super().__init__()
        self.sigma_min, self.sigma_max, self.sigma_data = sigma_min, sigma_max, sigma_data
        self.model = MLPNet()

    def forward(self, x, sigma, force_fp32=False):
        x = x.to(torch.float32)
        sigma = sigma.to(torch.float32).reshape(-1, 1)
        c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
        c_out = sigma * self.sigma_data / (sigma ** 2 + self.sigma_data ** 2).sqrt()
        c_in = 1 / (self.sigma_data ** 2 + sigma ** 2).sqrt()
        c_noise = sigma.log() / 4
        F_x = self.model((c_in * x), c_noise.flatten())
        D_x = c_skip * x + c_out * F_x.to(torch.float32)
        return D_x

    def round_sigma(self, sigma):
        return torch.as_tensor(sigma)


class EDMLoss:
    def __init__(self, P_mean=-1.2, P_std=1.2, sigma_data=0.5):
        self.P_mean, self.P_std, self.sigma_data = P_mean, P_std, sigma_data

    def __call__(self, net, images):
        rnd_normal = torch.randn([images.shape[0], 1], device=images.device)
        sigma = (rnd_normal * self.P_std + self.P_mean).exp()
        weight = (sigma ** 2 + self.sigma_data ** 2) / (sigma * self.sigma_data) ** 2
        n = torch.randn_like(images) * sigma
        D_yn = net(images + n, sigma)
        return weight * ((D_yn - images) ** 2)


def karras_sigmas(num_steps, sigma_min, sigma_max, rho=7, dtype=torch.float64):
    step_indices = torch.arange(num_steps, dtype=dtype)
    t_steps = (sigma_max ** (1 / rho) + step_indices / (num_steps - 1)
               * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
    return torch.cat([t_steps, torch.zeros_like(t_steps[:1])])


def edm_sampler(net, latents, num_steps=12, sigma_min=0.002, sigma_max=80, rho=7,
                S_churn=0, S_min=0, S_max=float("inf"), S_noise=1, generator=None):
    t_steps = karras_sigmas(num_steps, max(sigma_min, net.sigma_min), min(sigma_max, net.sigma_max), rho)
    x_next = latents.to(torch.float64) * t_steps[0]
    for i, (t_cur, t_next) in enumerate(zip(t_steps[:-1], t_steps[1:])):
        x_cur = x_next
        gamma = min(S_churn / num_steps, np.sqrt(2) - 1) if S_min <= t_cur <= S_max else 0
        t_hat = net.round_sigma(t_cur + gamma * t_cur)
        eps = S_noise * torch.randn(x_cur.shape, generator=generator, dtype=torch.float64)
        x_hat = x_cur + (t_hat ** 2 - t_cur ** 2).sqrt() * eps
        denoised = net(x_hat, t_hat.expand(x_hat.shape[0])).to(torch.float64)
        d_cur = (x_hat - denoised) / t_hat
        x_next = x_hat + (t_next - t_hat) * d_cur
        if i < num_steps - 1:
            denoised = net(x_next, t_next.expand(x_hat.shape[0])).to(torch.float64)
            d_prime = (x_next - denoised) / t_next
            x_next = x_hat + (t_next - t_hat) * (0.5 * d_cur + 0.5 * d_prime)
    return x_next


g = torch.Generator().manual_seed(3)
data = two_moons(512, g)
print("sigmas", [round(s, 4) for s in karras_sigmas(6, 0.002, 80).tolist()])
net = EDMPrecond()
ema = copy.deepcopy(net).eval().requires_grad_(False)
opt = torch.optim.Adam(net.parameters(), lr=2e-3, betas=(0.9, 0.999), eps=1e-8)
loss_fn = EDMLoss()
batch_size, ema_halflife_kimg = 64, 0.5
for step in range(60):
    idx = torch.randint(0, data.shape[0], (batch_size,), generator=g)
    loss = loss_fn(net, data[idx])
    opt.zero_grad(set_to_none=True)
    loss.sum().mul(1 / batch_size).backward()
    for param in net.parameters():
        if param.grad is not None:
            torch.nan_to_num(param.grad, nan=0, posinf=1e5, neginf=-1e5, out=param.grad)
    opt.step()
    ema_beta = 0.5 ** (batch_size / max(ema_halflife_kimg * 1000, 1e-8))
    for p_ema, p_net in zip(ema.parameters(), net.parameters()):
        p_ema.copy_(p_net.detach().lerp(p_ema, ema_beta))
    if step % 15 == 14:
        print(f"step {step + 1} loss {loss.mean().item():.5f} ema_beta {ema_beta:.5f}")

with torch.no_grad():
    sg = torch.Generator().manual_seed(11)
    latents = torch.randn(256, 2, generator=sg)
    for churn in (0, 10):
        x = edm_sampler(ema, latents, S_churn=churn, generator=sg)
        print(f"churn {churn}: dtype {x.dtype} mean {x.mean(0).tolist()} std {x.std(0).tolist()}")

# consistency training between adjacent Karras sigmas, online net against a frozen target
student = copy.deepcopy(ema).requires_grad_(True).train()
target = copy.deepcopy(student).requires_grad_(False)
copt = torch.optim.RAdam(student.parameters(), lr=5e-4)
sig = karras_sigmas(10, 0.002, 80, dtype=torch.float32).flip(0)[1:]
for step in range(20):
    idx = torch.randint(0, data.shape[0], (64,), generator=g)
    x0 = data[idx]
    n = torch.randint(0, len(sig) - 1, (64,), generator=g)
    z = torch.randn(x0.shape, generator=g)
    s_lo, s_hi = sig[n], sig[n + 1]
    pred = student(x0 + s_hi[:, None] * z, s_hi)
    with torch.no_grad():
        tgt = target(x0 + s_lo[:, None] * z, s_lo)
    closs = (pred - tgt).pow(2).sum(1).div(s_hi - s_lo).mean()
    copt.zero_grad()
    closs.backward()
    copt.step()
    with torch.no_grad():
        torch._foreach_lerp_(list(target.parameters()), list(student.parameters()), 0.05)
    if step % 5 == 4:
        print(f"consistency step {step + 1} loss {closs.item():.5f}")
with torch.no_grad():
    one_step = student(latents * 80.0, torch.full((256,), 80.0))
    print("one-step sample mean", one_step.mean(0).tolist(), "std", one_step.std(0).tolist())
