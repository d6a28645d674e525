"""A diffusion transformer trained by flow matching, as DiT and rectified-flow repositories
write it: patchify/unpatchify with ``unfold``-free reshapes, sin-cos 2-D position tables from
NumPy, a ``TimestepEmbedder`` with the sinusoidal frequency embedding, a ``LabelEmbedder``
with classifier-free-guidance dropout (an extra null class), adaLN-Zero blocks
(``modulate``, gates initialised to zero, ``nn.init.constant_`` on the final layer),
the rectified-flow loss on ``x_t = (1 - t) x0 + t noise`` with logit-normal timesteps,
an Euler sampler with classifier-free guidance, and a ``requires_grad_(False)`` EMA."""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    omega = np.arange(embed_dim // 2, dtype=np.float64)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000 ** omega
    out = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def get_2d_sincos_pos_embed(embed_dim, grid_size):
    grid_h = np.arange(grid_size, dtype=np.float32)
    grid = np.meshgrid(grid_h, grid_h)
    grid = np.stack(grid, axis=0).reshape([2, 1, grid_size, grid_size])
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])
    return np.concatenate([emb_h, emb_w], axis=1)


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden_size, frequency_embedding_size=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(frequency_embedding_size, hidden_size, bias=True),
                                 nn.SiLU(), nn.Linear(hidden_size, hidden_size, bias=True))
        self.frequency_embedding_size = frequency_embedding_size

    @staticmethod
    def timestep_embedding(t, dim, max_period=10000):
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, t):
        return self.mlp(self.timestep_embedding(t * 1000, self.frequency_embedding_size))


class LabelEmbedder(nn.Module):
    def __init__(self, num_classes, hidden_size, dropout_prob):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + int(dropout_prob > 0), hidden_size)
        self.num_classes, self.dropout_prob = num_classes, dropout_prob

    def token_drop(self, labels, force_drop_ids=None):
        if force_drop_ids is None:
            drop_ids = torch.rand(labels.shape[0]) < self.dropout_prob
        else:
            drop_ids = force_drop_ids == 1
        return torch.where(drop_ids, self.num_classes, labels)

    def forward(self, labels, train, force_drop_ids=None):
        if (train and self.dropout_prob > 0) or (force_drop_ids is not None):
            labels = self.token_drop(labels, force_drop_ids)
        return self.embedding_table(labels)


class DiTBlock(nn.Module):
    def __init__(self, hidden_size, num_heads, mlp_ratio=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(hidden_size, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, int(hidden_size * mlp_ratio)),
                                 nn.GELU(approximate="tanh"),
                                 nn.Linear(int(hidden_size * mlp_ratio), hidden_size))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 6 * hidden_size, bias=True))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        h = modulate(self.norm1(x), shift_msa, scale_msa)
        x = x + gate_msa.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))


class FinalLayer(nn.Module):
    def __init__(self, hidden_size, patch_size, out_channels):
        super().__init__()
        self.norm_final = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden_size, patch_size * patch_size * out_channels, bias=True)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 2 * hidden_size, bias=True))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class DiT(nn.Module):
    def __init__(self, input_size=8, patch_size=2, in_channels=1, hidden_size=32, depth=2,
                 num_heads=4, class_dropout_prob=0.1, num_classes=3):
        super().__init__()
        self.in_channels = self.out_channels = in_channels
        self.patch_size = patch_size
        self.x_embedder = nn.Conv2d(in_channels, hidden_size, patch_size, stride=patch_size)
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size, class_dropout_prob)
        num_patches = (input_size // patch_size) ** 2
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, hidden_size), requires_grad=False)
        self.blocks = nn.ModuleList([DiTBlock(hidden_size, num_heads) for _ in range(depth)])
        self.final_layer = FinalLayer(hidden_size, patch_size, self.out_channels)
        self.initialize_weights()

    def initialize_weights(self):
        def _basic_init(module):
            if isinstance(module, nn.Linear):
                torch.nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.constant_(module.bias, 0)
        self.apply(_basic_init)
        pe = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], int(self.pos_embed.shape[1] ** 0.5))
        self.pos_embed.data.copy_(torch.from_numpy(pe).float().unsqueeze(0))
        w = self.x_embedder.weight.data
        nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
        nn.init.constant_(self.x_embedder.bias, 0)
        nn.init.normal_(self.y_embedder.embedding_table.weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)
        for block in self.blocks:
            nn.init.constant_(block.adaLN_modulation[-1].weight, 0)
            nn.init.constant_(block.adaLN_modulation[-1].bias, 0)
        nn.init.constant_(self.final_layer.adaLN_modulation[-1].weight, 0)
        nn.init.constant_(self.final_layer.adaLN_modulation[-1].bias, 0)
        nn.init.constant_(self.final_layer.linear.weight, 0)
        nn.init.constant_(self.final_layer.linear.bias, 0)

    def unpatchify(self, x):
        c, p = self.out_channels, self.patch_size
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(shape=(x.shape[0], c, h * p, h * p))

    def forward(self, x, t, y, force_drop_ids=None):
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y, self.training, force_drop_ids)
        for block in self.blocks:
            x = block(x, c)
        return self.unpatchify(self.final_layer(x, c))

    def forward_with_cfg(self, x, t, y, cfg_scale):
        half = x[: len(x) // 2]
        combined = torch.cat([half, half], dim=0)
        model_out = self.forward(combined, t, y)
        cond, uncond = torch.split(model_out, len(model_out) // 2, dim=0)
        guided = uncond + cfg_scale * (cond - uncond)
        return torch.cat([guided, guided], dim=0)


def make_batch(n, gen):
    y = torch.randint(0, 3, (n,), generator=gen)
    img = torch.zeros(n, 1, 8, 8)
    for i in range(n):
        if y[i] == 0:
            img[i, :, 2:6, 2:6] = 1.0
        elif y[i] == 1:
            img[i, :, :, 3:5] = 1.0
        else:
            img[i, :, 3:5, :] = 1.0
    return img * 2 - 1, y


torch.manual_seed(0)
model = DiT()
ema = copy.deepcopy(model).requires_grad_(False)
print(f"DiT Parameters: {sum(p.numel() for p in model.parameters()):,}",
      sum(p.numel() for p in model.parameters() if p.requires_grad))
print("zero-init output", model(torch.randn(2, 1, 8, 8), torch.rand(2), torch.tensor([0, 1])).abs().max().item())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0)
gen = torch.Generator().manual_seed(1)


@torch.no_grad()
def update_ema(ema_model, model, decay=0.99):
    ema_params = dict(ema_model.named_parameters())
    for name, param in model.named_parameters():
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)


for step in range(30):
    x0, y = make_batch(16, gen)
    noise = torch.randn_like(x0)
    t = torch.sigmoid(torch.randn(x0.shape[0]))
    texp = t.view(-1, 1, 1, 1)
    xt = (1 - texp) * x0 + texp * noise
    pred = model(xt, t, y)
    loss = F.mse_loss(pred, noise - x0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    update_ema(ema, model)
    if step % 10 == 9:
        print(f"step {step} loss {loss.item():.5f} gate {model.blocks[0].adaLN_modulation[-1].weight.abs().mean().item():.6f}")

ema.eval()
n = 3
z = torch.randn(n, 1, 8, 8)
y = torch.tensor([0, 1, 2])
z = torch.cat([z, z], 0)
y = torch.cat([y, torch.full((n,), 3)], 0)
steps = 8
with torch.no_grad():
    for i in range(steps, 0, -1):
        t = torch.full((2 * n,), i / steps)
        v = ema.forward_with_cfg(z, t, y, cfg_scale=2.0)
        z = z - v / steps
samples = z[:n]
print("samples mean per class", samples.mean(dim=(1, 2, 3)))
print("sample 0 center vs corner", samples[0, 0, 3:5, 3:5].mean().item(), samples[0, 0, 0, 0].item())
forced = ema.y_embedder(torch.tensor([0, 1]), False, force_drop_ids=torch.tensor([1, 0]))
print("forced drop equals null row", torch.equal(forced[0], ema.y_embedder.embedding_table.weight[3]))
