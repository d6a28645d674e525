"""A sparse autoencoder for interpretability as SAELens/OpenAI's sparse_autoencoder code
writes it: synthetic "activations" as sparse superpositions of ground-truth features, a
pre-encoder bias initialised to the geometric median (Weiszfeld iterations), ReLU and TopK
encoders (``torch.topk`` then ``scatter``), decoder columns kept at unit norm (gradient
projection before the step and ``F.normalize`` after), the L1 coefficient warmup, dead
latent counts, normalised MSE and explained variance, an auxiliary-k loss on dead latents,
and feature recovery measured by max cosine similarity."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
d_model, n_true, d_sae, n_samples = 16, 24, 32, 512
true_feats = F.normalize(torch.randn(n_true, d_model), dim=-1)
mask = torch.rand(n_samples, n_true) < 0.08
coeffs = mask * torch.rand(n_samples, n_true) * 2
acts = coeffs @ true_feats + 0.01 * torch.randn(n_samples, d_model) + 0.3
print("mean active features", mask.float().sum(1).mean().item())


def geometric_median(points, iters=20, eps=1e-6):
    guess = points.mean(0)
    for _ in range(iters):
        d = (points - guess).norm(dim=1).clamp_min(eps)
        w = 1.0 / d
        guess = (w[:, None] * points).sum(0) / w.sum()
    return guess


class SAE(nn.Module):
    def __init__(self, d_in, d_sae, k=None):
        super().__init__()
        self.k = k
        self.W_enc = nn.Parameter(torch.empty(d_in, d_sae))
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(torch.empty(d_sae, d_in))
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        nn.init.kaiming_uniform_(self.W_dec)
        with torch.no_grad():
            self.W_dec.data = F.normalize(self.W_dec, dim=1)
            self.W_enc.data = self.W_dec.data.T.clone()

    def encode(self, x):
        pre = (x - self.b_dec) @ self.W_enc + self.b_enc
        if self.k is None:
            return F.relu(pre), pre
        vals, idx = torch.topk(pre, self.k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, idx, F.relu(vals)), pre

    def decode(self, f):
        return f @ self.W_dec + self.b_dec

    def forward(self, x):
        f, pre = self.encode(x)
        return self.decode(f), f, pre

    @torch.no_grad()
    def remove_parallel_grad(self):
        parallel = (self.W_dec.grad * self.W_dec.data).sum(-1, keepdim=True)
        self.W_dec.grad -= parallel * self.W_dec.data

    @torch.no_grad()
    def set_decoder_norm_to_unit_norm(self):
        self.W_dec.data = F.normalize(self.W_dec.data, dim=1)


def train(k=None, l1=3e-2, steps=60, batch=64):
    torch.manual_seed(1)
    sae = SAE(d_model, d_sae, k)
    with torch.no_grad():
        sae.b_dec.copy_(geometric_median(acts))
    print("b_dec init", sae.b_dec[:4])
    opt = torch.optim.Adam(sae.parameters(), lr=3e-3, betas=(0.9, 0.999))
    last_fired = torch.zeros(d_sae, dtype=torch.long)
    for step in range(steps):
        x = acts[torch.randint(0, n_samples, (batch,))]
        x_hat, f, pre = sae(x)
        mse = (x_hat - x).pow(2).sum(-1).mean()
        l1_coeff = l1 * min(1.0, (step + 1) / 20)
        sparsity = (f * sae.W_dec.norm(dim=1)).sum(-1).mean()
        loss = mse + (l1_coeff * sparsity if k is None else 0.0)
        fired = (f > 0).any(0)
        last_fired = torch.where(fired, torch.zeros_like(last_fired), last_fired + 1)
        dead = last_fired > 10
        if k is not None and dead.any():
            resid = (x - x_hat).detach()
            aux_k = min(int(dead.sum()), k)
            dead_pre = pre.masked_fill(~dead, float("-inf"))
            v, i = dead_pre.topk(aux_k, dim=-1)
            aux_recon = torch.zeros_like(pre).scatter(-1, i, F.relu(v)) @ sae.W_dec
            loss = loss + (aux_recon - resid).pow(2).sum(-1).mean() / resid.pow(2).sum(-1).mean() / 32
        opt.zero_grad()
        loss.backward()
        sae.remove_parallel_grad()
        opt.step()
        sae.set_decoder_norm_to_unit_norm()
        if step % 20 == 19:
            print(f"  step {step} loss {loss.item():.5f} mse {mse.item():.5f} L0 {(f > 0).float().sum(-1).mean().item():.3f} dead {int(dead.sum())}")
    with torch.no_grad():
        x_hat, f, _ = sae(acts)
        nmse = ((x_hat - acts).pow(2).sum(-1) / (acts - acts.mean(0)).pow(2).sum(-1)).mean()
        ev = 1 - (acts - x_hat).var(0).sum() / acts.var(0).sum()
        cos = F.normalize(sae.W_dec, dim=1) @ true_feats.T
        recovered = cos.max(0).values
    print(f"  nmse {nmse.item():.5f} explained variance {ev.item():.5f} "
          f"decoder norms {sae.W_dec.norm(dim=1).mean().item():.6f}")
    print(f"  mean max cos {recovered.mean().item():.5f} recovered>0.9 {int((recovered > 0.9).sum())}")
    return sae


print("ReLU SAE")
relu_sae = train()
print("TopK SAE")
topk_sae = train(k=4)
with torch.no_grad():
    f, _ = topk_sae.encode(acts[:3])
print("topk codes per row", (f > 0).sum(-1).tolist(), f.sum(-1))
