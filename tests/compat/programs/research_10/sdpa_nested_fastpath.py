"""The "(Beta) Implementing High-Performance Transformers with SDPA", "Using SDPA with
attn_bias subclasses", "Fast Transformer Inference with Better Transformer" and nested
jagged tensor tutorials' programs on CPU: ``F.scaled_dot_product_attention`` against the
written-out math (boolean and additive masks, ``is_causal``, ``scale``, dropout under a
seed, ``enable_gqa``), the ``sdpa_kernel`` context with ``SDPBackend.MATH``, the backend
flags of ``torch.backends.cuda``, ``causal_upper_left``/``causal_lower_right`` biases for
unequal query and key lengths, a causal self-attention module (nanoGPT-style) trained for
a few steps with its ``is_causal`` path, ``nn.TransformerEncoder`` in evaluation with a
``src_key_padding_mask`` (the fast path's nested-tensor output with zeros at padded
positions), and jagged nested tensors through ``to_padded_tensor``, ``unbind`` and a
``Linear``."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import CausalVariant, causal_lower_right, causal_upper_left

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
print("flash", torch.backends.cuda.flash_sdp_enabled(),
      "mem_efficient", torch.backends.cuda.mem_efficient_sdp_enabled(),
      "math", torch.backends.cuda.math_sdp_enabled())


def math_attention(q, k, v, mask=None, is_causal=False, scale=None):
    L, S = q.size(-2), k.size(-2)
    scale_factor = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=q.dtype)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    if mask is not None:
        if mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_bias + mask
    w = q @ k.transpose(-2, -1) * scale_factor + attn_bias
    return torch.softmax(w, dim=-1) @ v


q, k, v = (torch.randn(2, 3, 8, 16, device=device) for _ in range(3))
print("plain", (F.scaled_dot_product_attention(q, k, v) - math_attention(q, k, v)).abs().max() < 1e-5)
print("causal", (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                 - math_attention(q, k, v, is_causal=True)).abs().max() < 1e-5)
bmask = torch.rand(8, 8) > 0.3
bmask.fill_diagonal_(True)
fmask = torch.randn(8, 8)
print("bool mask", (F.scaled_dot_product_attention(q, k, v, attn_mask=bmask)
                    - math_attention(q, k, v, bmask)).abs().max() < 1e-5)
out = F.scaled_dot_product_attention(q, k, v, attn_mask=fmask, scale=0.1)
print("float mask + scale", out[0, 0, 0, :4], (out - math_attention(q, k, v, fmask, scale=0.1)).abs().max() < 1e-5)
with sdpa_kernel(SDPBackend.MATH):
    out_math = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print("math kernel", out_math.sum().item())
with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
    print("list of kernels", F.scaled_dot_product_attention(q, k, v).shape)
torch.manual_seed(3)
d1 = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
torch.manual_seed(3)
d2 = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
print("dropout repeatable", torch.equal(d1, d2))
kg, vg = torch.randn(2, 1, 8, 16), torch.randn(2, 1, 8, 16)
gqa = F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True)
ref = F.scaled_dot_product_attention(q, kg.expand(2, 3, 8, 16), vg.expand(2, 3, 8, 16))
print("gqa", torch.allclose(gqa, ref, atol=1e-6))

# NOTE: unequal lengths: upper-left keeps the top-left triangle, lower-right aligns the end
ql, kl = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 6, 8)
vl = torch.randn(1, 2, 6, 8)
ul, lr = causal_upper_left(3, 6), causal_lower_right(3, 6)
print(type(ul).__name__, ul.variant, lr.variant, CausalVariant.LOWER_RIGHT)
print(ul._materialize().int())
print(lr._materialize().int())
o_ul = F.scaled_dot_product_attention(ql, kl, vl, attn_mask=ul)
o_lr = F.scaled_dot_product_attention(ql, kl, vl, attn_mask=lr)
print("upper-left", torch.allclose(o_ul, math_attention(ql, kl, vl, ul._materialize()), atol=1e-6))
print("lower-right", torch.allclose(o_lr, math_attention(ql, kl, vl, lr._materialize()), atol=1e-6))
print(o_lr[0, 0])


class CausalSelfAttention(nn.Module):
    def __init__(self, num_heads, embed_dimension, bias=False, is_causal=False, dropout=0.0):
        super().__init__()
        assert embed_dimension % num_heads == 0
        self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, bias=bias)
        self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.num_heads = num_heads
        self.embed_dimension = embed_dimension
        self.is_causal = is_causal

    def forward(self, x):
        query_projected = self.c_attn(x)
        batch_size = query_projected.size(0)
        embed_dim = query_projected.size(2)
        head_dim = embed_dim // (self.num_heads * 3)
        query, key, value = query_projected.chunk(3, -1)
        query = query.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        if self.training:
            dropout = self.dropout
            is_causal = self.is_causal
        else:
            dropout = 0.0
            is_causal = False
        y = F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                           dropout_p=dropout, is_causal=is_causal)
        y = y.transpose(1, 2).contiguous().view(batch_size, -1, self.num_heads * head_dim)
        return self.resid_dropout(self.c_proj(y))


model = CausalSelfAttention(num_heads=4, embed_dimension=32, is_causal=True, dropout=0.1)
print(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(4, 10, 32)
target = torch.roll(x, 1, dims=1)
for step in range(4):
    loss = F.mse_loss(model(x), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f}")
model.eval()
with torch.no_grad():
    print("eval (non-causal) out", model(x)[0, 0, :4])

# Better Transformer: the encoder's fast path in inference
torch.manual_seed(1)
layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                   batch_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=True)
src = torch.randn(3, 6, 16)
lengths = torch.tensor([6, 4, 2])
pad = torch.arange(6)[None, :] >= lengths[:, None]
encoder.eval()
with torch.inference_mode():
    fast = encoder(src, src_key_padding_mask=pad)
print("fast path", tuple(fast.shape), fast.is_nested, fast[1, 4:].abs().sum().item(),
      fast[2, 2:].abs().sum().item())
slow = encoder(src, src_key_padding_mask=pad)  # autograd on: the regular path
print("valid positions agree", all(torch.allclose(fast[i, :n], slow[i, :n], atol=1e-5)
                                   for i, n in enumerate(lengths.tolist())))
print("regular path keeps pads", slow[1, 4:].abs().sum().item() > 0)

# nested jagged tensors
nt = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(5, 4), torch.randn(3, 4)],
                                layout=torch.jagged)
print(nt.is_nested, nt.dim(), nt.size(0), nt.size(2), [t.shape[0] for t in nt.unbind()])
padded = torch.nested.to_padded_tensor(nt, 0.0)
print("padded", tuple(padded.shape), padded[0, 2:].abs().sum().item())
lin = nn.Linear(4, 3)
out = lin(nt)
print("linear on jagged", [tuple(t.shape) for t in out.unbind()],
      torch.allclose(out.unbind()[1], lin(nt.unbind()[1])))
