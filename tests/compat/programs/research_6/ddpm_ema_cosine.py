"""DDPM the way improved-diffusion and denoising-diffusion-pytorch write it: a cosine beta
schedule, buffers registered for every schedule term, extract() gathering per-timestep
coefficients, q_sample and the posterior mean/variance, a small time-conditioned denoiser with
sinusoidal embeddings, an EMA copy through swa_utils.AveragedModel with
get_ema_multi_avg_fn, p_sample_loop ancestral sampling and a strided DDIM sampler."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)


def cosine_beta_schedule(timesteps, s=0.008):
    steps = timesteps + 1
    t = torch.linspace(0, timesteps, steps, dtype=torch.float64) / timesteps
    alphas_cumprod = torch.cos((t + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999)


def extract(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim) * -emb)
        emb = x[:, None] * emb[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class Denoiser(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(16), nn.Linear(16, hidden), nn.GELU(),
                                      nn.Linear(hidden, hidden))
        self.inp = nn.Linear(dim, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden),
                                                   nn.SiLU()) for _ in range(2)])
        self.out = nn.Linear(hidden, dim)

    def forward(self, x, t):
        h = self.inp(x) + self.time_mlp(t.float())
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=50):
        super().__init__()
        self.model = model
        self.num_timesteps = timesteps
        betas = cosine_beta_schedule(timesteps)
        alphas = 1. - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.)
        register_buffer = lambda name, val: self.register_buffer(name, val.to(torch.float32))  # noqa: E731
        register_buffer("betas", betas)
        register_buffer("alphas_cumprod", alphas_cumprod)
        register_buffer("alphas_cumprod_prev", alphas_cumprod_prev)
        register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1. - alphas_cumprod))
        register_buffer("sqrt_recip_alphas_cumprod", torch.sqrt(1. / alphas_cumprod))
        register_buffer("sqrt_recipm1_alphas_cumprod", torch.sqrt(1. / alphas_cumprod - 1))
        posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
        register_buffer("posterior_variance", posterior_variance)
        register_buffer("posterior_log_variance_clipped",
                        torch.log(posterior_variance.clamp(min=1e-20)))
        register_buffer("posterior_mean_coef1",
                        betas * torch.sqrt(alphas_cumprod_prev) / (1. - alphas_cumprod))
        register_buffer("posterior_mean_coef2",
                        (1. - alphas_cumprod_prev) * torch.sqrt(alphas) / (1. - alphas_cumprod))

    def q_sample(self, x_start, t, noise=None):
        noise = torch.randn_like(x_start) if noise is None else noise
        return (extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start +
                extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def predict_start_from_noise(self, x_t, t, noise):
        return (extract(self.sqrt_recip_alphas_cumprod, t, x_t.shape) * x_t -
                extract(self.sqrt_recipm1_alphas_cumprod, t, x_t.shape) * noise)

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x = self.q_sample(x_start, t, noise)
        return F.mse_loss(self.model(x, t), noise)

    def forward(self, x):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],)).long()
        return self.p_losses(x, t)

    @torch.no_grad()
    def p_sample(self, model, x, t):
        b = x.shape[0]
        batched_times = torch.full((b,), t, dtype=torch.long)
        x_start = self.predict_start_from_noise(x, batched_times, model(x, batched_times))
        x_start.clamp_(-2., 2.)
        mean = (extract(self.posterior_mean_coef1, batched_times, x.shape) * x_start +
                extract(self.posterior_mean_coef2, batched_times, x.shape) * x)
        log_var = extract(self.posterior_log_variance_clipped, batched_times, x.shape)
        noise = torch.randn_like(x) if t > 0 else 0.
        return mean + (0.5 * log_var).exp() * noise

    @torch.no_grad()
    def p_sample_loop(self, model, shape):
        img = torch.randn(shape)
        for t in reversed(range(0, self.num_timesteps)):
            img = self.p_sample(model, img, t)
        return img

    @torch.no_grad()
    def ddim_sample(self, model, shape, sampling_timesteps=10, eta=0.0):
        times = torch.linspace(-1, self.num_timesteps - 1, steps=sampling_timesteps + 1)
        times = list(reversed(times.int().tolist()))
        img = torch.randn(shape)
        for time, time_next in zip(times[:-1], times[1:]):
            tc = torch.full((shape[0],), time, dtype=torch.long)
            pred_noise = model(img, tc)
            x_start = self.predict_start_from_noise(img, tc, pred_noise).clamp(-2., 2.)
            if time_next < 0:
                img = x_start
                continue
            alpha, alpha_next = self.alphas_cumprod[time], self.alphas_cumprod[time_next]
            sigma = eta * ((1 - alpha / alpha_next) * (1 - alpha_next) / (1 - alpha)).sqrt()
            c = (1 - alpha_next - sigma ** 2).sqrt()
            img = x_start * alpha_next.sqrt() + c * pred_noise + sigma * torch.randn_like(img)
        return img


diffusion = GaussianDiffusion(Denoiser())
ema = AveragedModel(diffusion.model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
opt = torch.optim.AdamW(diffusion.model.parameters(), lr=2e-3, betas=(0.9, 0.99))
angles = torch.rand(256) * 2 * math.pi
data = torch.stack([angles.cos(), angles.sin()], 1) + 0.05 * torch.randn(256, 2)
print("schedule", f"{diffusion.betas[0].item():.6f}", f"{diffusion.betas[-1].item():.6f}",
      f"{diffusion.posterior_variance[1].item():.7f}")
for step in range(40):
    batch = data[torch.randint(0, 256, (64,))]
    loss = diffusion(batch)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(diffusion.model.parameters(), 1.0)
    opt.step()
    ema.update_parameters(diffusion.model)
    if step % 10 == 9:
        print(f"step {step + 1} loss {loss.item():.5f}")
print("ema n_averaged", ema.n_averaged.item(),
      f"{(ema.module.out.weight - diffusion.model.out.weight).abs().max().item():.6f}")
samples = diffusion.p_sample_loop(ema.module, (8, 2))
print("ddpm", f"{samples.norm(dim=1).mean().item():.5f}", f"{samples.std().item():.5f}")
samples = diffusion.ddim_sample(ema.module, (8, 2))
print("ddim", f"{samples.norm(dim=1).mean().item():.5f}", f"{samples.std().item():.5f}")
