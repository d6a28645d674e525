"""Instant-NGP's multiresolution hash encoding as the pure-PyTorch ports (torch-ngp's
``HashEmbedder``, yashbhalgat/HashNeRF-pytorch) write it: per-level resolutions from a
geometric growth factor, corner offsets, a spatial hash by ``bitwise_xor`` of int64
coordinates times large primes with ``& (2**T - 1)``, bilinear weights, an ``nn.Embedding``
table per level initialised ``uniform_(-1e-4, 1e-4)``, a tiny MLP fitting a 2-D image,
Adam with ``eps=1e-15`` and a separate weight decay group, and PSNR reporting."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
device = "cuda" if torch.cuda.is_available() else "cpu"

PRIMES = [1, 2654435761]
BOX_OFFSETS = torch.tensor([[i, j] for i in (0, 1) for j in (0, 1)], device=device)


def hash(coords, log2_hashmap_size):
    """coords: (..., 2) int64 grid corners."""
    xor_result = torch.zeros_like(coords)[..., 0]
    for i in range(coords.shape[-1]):
        xor_result ^= coords[..., i] * PRIMES[i]
    return torch.tensor((1 << log2_hashmap_size) - 1).to(xor_result.device) & xor_result


class HashEmbedder(nn.Module):
    def __init__(self, n_levels=6, n_features_per_level=2, log2_hashmap_size=9, base_resolution=4,
                 finest_resolution=50):
        super().__init__()
        self.n_levels, self.n_features_per_level = n_levels, n_features_per_level
        self.log2_hashmap_size = log2_hashmap_size
        self.base_resolution = torch.tensor(base_resolution)
        self.finest_resolution = torch.tensor(finest_resolution)
        self.out_dim = n_levels * n_features_per_level
        self.b = torch.exp((torch.log(self.finest_resolution) - torch.log(self.base_resolution)) / (n_levels - 1))
        self.embeddings = nn.ModuleList([nn.Embedding(2 ** log2_hashmap_size, n_features_per_level)
                                         for _ in range(n_levels)])
        for emb in self.embeddings:
            nn.init.uniform_(emb.weight, a=-0.0001, b=0.0001)

    def bilinear_interp(self, x, v_min, v_max, corner_embeds):
        w = (x - v_min) / (v_max - v_min)
        c0 = corner_embeds[:, 0] * (1 - w[:, 1:2]) + corner_embeds[:, 1] * w[:, 1:2]
        c1 = corner_embeds[:, 2] * (1 - w[:, 1:2]) + corner_embeds[:, 3] * w[:, 1:2]
        return c0 * (1 - w[:, 0:1]) + c1 * w[:, 0:1]

    def get_voxel_vertices(self, xy, resolution):
        grid_size = 1.0 / resolution
        bottom_left_idx = torch.floor(xy / grid_size).int()
        voxel_min_vertex = bottom_left_idx * grid_size
        voxel_max_vertex = voxel_min_vertex + torch.tensor([1.0, 1.0]) * grid_size
        voxel_indices = bottom_left_idx.unsqueeze(1).long() + BOX_OFFSETS
        hashed_voxel_indices = hash(voxel_indices, self.log2_hashmap_size)
        return voxel_min_vertex, voxel_max_vertex, hashed_voxel_indices

    def forward(self, x):
        x_embedded_all = []
        for i in range(self.n_levels):
            resolution = torch.floor(self.base_resolution * self.b ** i)
            vmin, vmax, idx = self.get_voxel_vertices(x, resolution)
            x_embedded_all.append(self.bilinear_interp(x, vmin, vmax, self.embeddings[i](idx)))
        return torch.cat(x_embedded_all, dim=-1)


def target_image(res=24):
    ys, xs = torch.meshgrid(torch.linspace(0, 1, res), torch.linspace(0, 1, res), indexing="ij")
    r = torch.sin(6 * xs) * torch.cos(4 * ys)
    g = ((xs - 0.5) ** 2 + (ys - 0.5) ** 2 < 0.1).float()
    b = torch.sigmoid(10 * (xs - ys))
    return torch.stack([xs, ys], -1).reshape(-1, 2), torch.stack([r * 0.5 + 0.5, g, b], -1).reshape(-1, 3)


coords, colors = target_image()
coords = coords.clamp(0, 1 - 1e-6)
embedder = HashEmbedder().to(device)
print("growth factor", embedder.b.item(), "resolutions",
      [int(torch.floor(embedder.base_resolution * embedder.b ** i)) for i in range(embedder.n_levels)])
sample = torch.tensor([[0, 0], [1, 0], [0, 1], [7, 13], [123456, 654321]])
print("hash", hash(sample, 9).tolist(), hash(sample, 19).dtype)
mlp = nn.Sequential(nn.Linear(embedder.out_dim, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
opt = torch.optim.Adam([{"params": embedder.parameters(), "weight_decay": 0.0},
                        {"params": mlp.parameters(), "weight_decay": 1e-6}], lr=1e-2, betas=(0.9, 0.99), eps=1e-15)


def mse2psnr(x):
    return -10.0 * torch.log(x) / math.log(10.0)


gen = torch.Generator().manual_seed(1)
for it in range(40):
    sel = torch.randint(0, coords.shape[0], (256,), generator=gen)
    pred = torch.sigmoid(mlp(embedder(coords[sel].to(device))))
    loss = F.mse_loss(pred, colors[sel].to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 9:
        with torch.no_grad():
            full = F.mse_loss(torch.sigmoid(mlp(embedder(coords))), colors)
        print(f"iter {it + 1:3d} loss {loss.item():.6f} psnr {mse2psnr(full).item():.3f}")
used = [int((e.weight.grad.abs().sum(1) > 0).sum()) if e.weight.grad is not None else 0 for e in embedder.embeddings]
print("table rows touched by last batch", used)
print("table norms", np.round([e.weight.norm().item() for e in embedder.embeddings], 4).tolist())
