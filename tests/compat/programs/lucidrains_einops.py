"""lucidrains-style models written with einops and einsum (PaLM: RMSNorm, rotary embeddings, SwiGLU, parallel attention/feed-forward blocks, tied embeddings; an MLP-mixer with einops layers). Runs only where einops is installed."""
import math
from functools import partial
import torch
from torch import nn, einsum
import torch.nn.functional as F
from einops import rearrange, repeat, reduce
from einops.layers.torch import Rearrange, Reduce
torch.manual_seed(0)
def exists(val): return val is not None
def default(val, d): return val if exists(val) else d
class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__(); self.scale = dim ** 0.5; self.gamma = nn.Parameter(torch.ones(dim))
    def forward(self, x): return F.normalize(x, dim=-1) * self.scale * self.gamma
class RotaryEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__(); inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)); self.register_buffer("inv_freq", inv_freq, persistent=False)
    def forward(self, max_seq_len, *, device):
        seq = torch.arange(max_seq_len, device=device, dtype=self.inv_freq.dtype); freqs = einsum("i , j -> i j", seq, self.inv_freq); return torch.cat((freqs, freqs), dim=-1)
def rotate_half(x):
    x = rearrange(x, "... (j d) -> ... j d", j=2); x1, x2 = x.unbind(dim=-2); return torch.cat((-x2, x1), dim=-1)
def apply_rotary_pos_emb(pos, t): return (t * pos.cos()) + (rotate_half(t) * pos.sin())
class SwiGLU(nn.Module):
    def forward(self, x): x, gate = x.chunk(2, dim=-1); return F.silu(gate) * x
class ParallelTransformerBlock(nn.Module):
    def __init__(self, dim, dim_head=16, heads=4, ff_mult=4):
        super().__init__(); self.norm = RMSNorm(dim)
        attn_inner_dim = dim_head * heads; ff_inner_dim = dim * ff_mult; self.fused_dims = (attn_inner_dim, dim_head, dim_head, (ff_inner_dim * 2))
        self.heads = heads; self.scale = dim_head**-0.5; self.rotary_emb = RotaryEmbedding(dim_head)
        self.fused_attn_ff_proj = nn.Linear(dim, sum(self.fused_dims), bias=False); self.attn_out = nn.Linear(attn_inner_dim, dim, bias=False)
        self.ff_out = nn.Sequential(SwiGLU(), nn.Linear(ff_inner_dim, dim, bias=False)); self.register_buffer("mask", None, persistent=False); self.register_buffer("pos_emb", None, persistent=False)
    def get_mask(self, n, device):
        if self.mask is not None and self.mask.shape[-1] >= n: return self.mask[:n, :n]
        mask = torch.ones((n, n), device=device, dtype=torch.bool).triu(1); self.register_buffer("mask", mask, persistent=False); return mask
    def get_rotary_embedding(self, n, device):
        if self.pos_emb is not None and self.pos_emb.shape[-2] >= n: return self.pos_emb[:n]
        pos_emb = self.rotary_emb(n, device=device); self.register_buffer("pos_emb", pos_emb, persistent=False); return pos_emb
    def forward(self, x):
        n, device, h = x.shape[1], x.device, self.heads
        x = self.norm(x); q, k, v, ff = self.fused_attn_ff_proj(x).split(self.fused_dims, dim=-1)
        q = rearrange(q, "b n (h d) -> b h n d", h=h); positions = self.get_rotary_embedding(n, device)
        q, k = map(lambda t: apply_rotary_pos_emb(positions, t), (q, k)); q = q * self.scale
        sim = einsum("b h i d, b j d -> b h i j", q, k); causal_mask = self.get_mask(n, device)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max); attn = sim.softmax(dim=-1)
        out = einsum("b h i j, b j d -> b h i d", attn, v); out = rearrange(out, "b h n d -> b n (h d)")
        return self.attn_out(out) + self.ff_out(ff)
class Residual(nn.Module):
    def __init__(self, fn): super().__init__(); self.fn = fn
    def forward(self, x): return self.fn(x) + x
def PaLM(*, dim, num_tokens, depth, dim_head=16, heads=4, ff_mult=4):
    net = nn.Sequential(nn.Embedding(num_tokens, dim), *[Residual(ParallelTransformerBlock(dim=dim, dim_head=dim_head, heads=heads, ff_mult=ff_mult)) for _ in range(depth)], RMSNorm(dim), nn.Linear(dim, num_tokens, bias=False))
    net[-1].weight = net[0].weight; nn.init.normal_(net[0].weight, std=0.02); return net
palm = PaLM(num_tokens=50, dim=32, depth=2); tokens = torch.randint(0, 50, (2, 12)); logits = palm(tokens); print(logits.shape, palm[-1].weight is palm[0].weight)
loss = F.cross_entropy(rearrange(logits[:, :-1], 'b n c -> b c n'), tokens[:, 1:]); loss.backward(); print(loss.dim(), palm[0].weight.grad.shape)
print(sum(p.numel() for p in palm.parameters()), len(list(palm.parameters())))
mixer = nn.Sequential(Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=4, p2=4), nn.Linear(48, 16), Reduce('b n c -> b c', 'mean'), nn.Linear(16, 10)); print(mixer(torch.randn(2, 3, 16, 16)).shape)
x = torch.randn(2, 3, 4); print(reduce(x, 'b c n -> b n', 'max').shape, repeat(x, 'b c n -> b c n r', r=2).shape, rearrange(x, 'b c n -> (b c) n').shape)
