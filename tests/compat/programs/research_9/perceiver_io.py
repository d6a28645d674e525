"""Perceiver / Perceiver IO the way lucidrains/perceiver-pytorch and the Perceiver IO
tutorials write it: Fourier-feature position encodings concatenated to the input
(``torch.linspace`` grids stacked by ``meshgrid(indexing="ij")``), a learned latent array
cross-attending to a padded byte sequence through ``nn.MultiheadAttention`` with
``key_padding_mask`` and ``need_weights=False``, latent self-attention blocks with weight
sharing, a decoder whose output queries cross-attend to the latents, trained with argparse
options, ``torch.backends`` flags, a guarded ``torch.compile`` and disabled AMP."""
import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser(description="Perceiver IO toy")
parser.add_argument("--latents", type=int, default=8)
parser.add_argument("--dim", type=int, default=16)
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--compile", action="store_true")
args = parser.parse_args([])

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def fourier_encode(x, max_freq, num_bands=4):
    x = x.unsqueeze(-1)
    dtype, orig_x = x.dtype, x
    scales = torch.linspace(1.0, max_freq / 2, num_bands, device=x.device, dtype=dtype)
    scales = scales[(*((None,) * (len(x.shape) - 1)), Ellipsis)]
    x = x * scales * math.pi
    x = torch.cat([x.sin(), x.cos()], dim=-1)
    return torch.cat((x, orig_x), dim=-1)


class PreNorm(nn.Module):
    def __init__(self, dim, fn, context_dim=None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.norm_context = nn.LayerNorm(context_dim) if context_dim is not None else None

    def forward(self, x, **kwargs):
        x = self.norm(x)
        if self.norm_context is not None:
            kwargs["context"] = self.norm_context(kwargs["context"])
        return self.fn(x, **kwargs)


class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult * 2), GEGLU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, context_dim=None, heads=2):
        super().__init__()
        context_dim = context_dim or dim
        self.attn = nn.MultiheadAttention(dim, heads, kdim=context_dim, vdim=context_dim,
                                          batch_first=True)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        out, _ = self.attn(x, context, context, key_padding_mask=mask, need_weights=False)
        return out


class PerceiverIO(nn.Module):
    def __init__(self, *, depth, dim, queries_dim, logits_dim, num_latents, latent_dim,
                 num_tokens, max_seq_len, weight_tie_layers=True):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.cross_attend = nn.ModuleList([
            PreNorm(latent_dim, Attention(latent_dim, dim), context_dim=dim),
            PreNorm(latent_dim, FeedForward(latent_dim))])
        get_attn = lambda: PreNorm(latent_dim, Attention(latent_dim))  # noqa: E731
        get_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim))  # noqa: E731
        self.layers = nn.ModuleList([])
        block = nn.ModuleList([get_attn(), get_ff()])
        for i in range(depth):
            self.layers.append(block if weight_tie_layers else nn.ModuleList([get_attn(), get_ff()]))
        self.decoder_cross_attn = PreNorm(queries_dim, Attention(queries_dim, latent_dim),
                                          context_dim=latent_dim)
        self.to_logits = nn.Linear(queries_dim, logits_dim)

    def forward(self, data, mask=None, queries=None):
        b, n = data.shape
        x = self.token_emb(data) + self.pos_emb(torch.arange(n, device=data.device))
        lat = self.latents.unsqueeze(0).expand(b, -1, -1)
        cross_attn, cross_ff = self.cross_attend
        lat = cross_attn(lat, context=x, mask=mask) + lat
        lat = cross_ff(lat) + lat
        for self_attn, self_ff in self.layers:
            lat = self_attn(lat) + lat
            lat = self_ff(lat) + lat
        if queries is None:
            return lat
        if queries.ndim == 2:
            queries = queries.unsqueeze(0).expand(b, -1, -1)
        latents = self.decoder_cross_attn(queries, context=lat)
        return self.to_logits(latents)


# the 2-D image form of the position encoding, as the image Perceiver builds it
axis_pos = [torch.linspace(-1.0, 1.0, steps=s) for s in (4, 5)]
pos = torch.stack(torch.meshgrid(*axis_pos, indexing="ij"), dim=-1)
enc = fourier_encode(pos, max_freq=10.0, num_bands=3)
print("fourier enc:", tuple(enc.shape), [round(v, 4) for v in enc[1, 2, 0].tolist()])

SEQ, VOCAB = 12, 10
model = PerceiverIO(depth=2, dim=args.dim, queries_dim=args.dim, logits_dim=VOCAB,
                    num_latents=args.latents, latent_dim=args.dim, num_tokens=VOCAB,
                    max_seq_len=SEQ).to(device)
print("shared layers:", model.layers[0] is model.layers[1],
      "params:", sum(p.numel() for p in model.parameters()))
if args.compile and hasattr(torch, "compile"):
    model = torch.compile(model)
queries = nn.Parameter(torch.randn(SEQ, args.dim) * 0.1)
opt = torch.optim.AdamW(list(model.parameters()) + [queries], lr=args.lr, weight_decay=0.01)
scaler = torch.cuda.amp.GradScaler(enabled=False)

g = torch.Generator().manual_seed(1)
lengths = torch.tensor([12, 9, 7, 12])
data = torch.randint(1, VOCAB, (4, SEQ), generator=g)
mask = torch.arange(SEQ)[None, :] >= lengths[:, None]
data = data.masked_fill(mask, 0)
target = data.flip(1)  # reverse the sequence, pads included
for step in range(args.steps):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=False):
        logits = model(data, mask=mask, queries=queries)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(f"step {step} loss {loss.item():.5f}")

model.eval()
with torch.no_grad():
    lat = model(data, mask=mask)
    out = model(data, mask=mask, queries=queries)
    padded = data.clone()
    padded[1, 9:] = 7  # tokens under the padding mask must not matter
    out2 = model(padded, mask=mask, queries=queries)
print("latents:", tuple(lat.shape), f"{lat.std().item():.5f}")
print("masked tokens ignored:", torch.allclose(out[1], out2[1], atol=1e-5),
      "others unchanged:", torch.equal(out[0], out2[0]))
print("pred:", out.argmax(-1)[0].tolist())
