"""A Llama-3-style decoder the way meta-llama's reference ``model.py`` and its many
from-scratch copies write it: a ``ModelArgs`` dataclass, ``nn.RMSNorm``, rotary embeddings
as complex numbers (``torch.polar``, ``view_as_complex``/``view_as_real``), grouped-query
attention through ``scaled_dot_product_attention(enable_gqa=True)`` next to the
``repeat_kv`` form, a preallocated key/value cache written at ``start_pos``, SwiGLU feed
forward with ``multiple_of`` rounding, tied embeddings, ``sdpa_kernel`` restricting the
backend, weight-decay groups and a guarded fused AdamW (``inspect.signature``), top-p
sampling with a seeded ``Generator`` under ``torch.inference_mode``, and cached decoding
checked against full recomputation."""
import inspect
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel


@dataclass
class ModelArgs:
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: Optional[int] = 2
    vocab_size: int = 97
    multiple_of: int = 32
    ffn_dim_multiplier: Optional[float] = None
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    max_batch_size: int = 4
    max_seq_len: int = 32


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """torch.repeat_interleave(x, dim=2, repeats=n_rep)"""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class Attention(nn.Module):
    def __init__(self, args: ModelArgs, use_gqa_flag=True):
        super().__init__()
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.n_heads = args.n_heads
        self.n_rep = self.n_heads // self.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.use_gqa_flag = use_gqa_flag
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.register_buffer("cache_k", torch.zeros(
            (args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim)),
            persistent=False)
        self.register_buffer("cache_v", torch.zeros(
            (args.max_batch_size, args.max_seq_len, self.n_kv_heads, self.head_dim)),
            persistent=False)

    def forward(self, x, start_pos: int, freqs_cis, mask: Optional[torch.Tensor],
                use_cache: bool):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        if use_cache:
            self.cache_k[:bsz, start_pos: start_pos + seqlen] = xk
            self.cache_v[:bsz, start_pos: start_pos + seqlen] = xv
            keys = self.cache_k[:bsz, : start_pos + seqlen]
            values = self.cache_v[:bsz, : start_pos + seqlen]
        else:
            keys, values = xk, xv
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        if self.use_gqa_flag:
            output = F.scaled_dot_product_attention(xq, keys, values, attn_mask=mask,
                                                    enable_gqa=True)
        else:
            keys = repeat_kv(keys.transpose(1, 2), self.n_rep).transpose(1, 2)
            values = repeat_kv(values.transpose(1, 2), self.n_rep).transpose(1, 2)
            scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(xq)
            output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, multiple_of, ffn_dim_multiplier):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        if ffn_dim_multiplier is not None:
            hidden_dim = int(ffn_dim_multiplier * hidden_dim)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id: int, args: ModelArgs, use_gqa_flag=True):
        super().__init__()
        self.attention = Attention(args, use_gqa_flag)
        self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of,
                                        args.ffn_dim_multiplier)
        self.layer_id = layer_id
        self.attention_norm = nn.RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = nn.RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, start_pos, freqs_cis, mask, use_cache):
        h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask, use_cache)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params: ModelArgs, use_gqa_flag=True):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.layers = nn.ModuleList(TransformerBlock(i, params, use_gqa_flag)
                                    for i in range(params.n_layers))
        self.norm = nn.RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight
        self.register_buffer("freqs_cis", precompute_freqs_cis(
            params.dim // params.n_heads, params.max_seq_len * 2, params.rope_theta),
            persistent=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("wo.weight") or pn.endswith("w2.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * params.n_layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, start_pos: int = 0, use_cache: bool = False):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = self.freqs_cis[start_pos: start_pos + seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1)
            mask = torch.hstack([torch.zeros((seqlen, start_pos), device=tokens.device),
                                 mask]).type_as(h)
        for layer in self.layers:
            h = layer(h, start_pos, freqs_cis, mask, use_cache)
        return self.output(self.norm(h)).float()

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [{"params": decay_params, "weight_decay": weight_decay},
                        {"params": nodecay_params, "weight_decay": 0.0}]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, "
              f"with {num_decay_params:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, "
              f"with {num_nodecay_params:,} parameters")
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        print(f"using fused AdamW: {use_fused} (available: {fused_available})")
        return optimizer


def sample_top_p(probs, p, generator):
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1, generator=generator)
    return torch.gather(probs_idx, -1, next_token)


torch.manual_seed(1337)
args = ModelArgs()
model = Transformer(args)
print(f"parameters: {sum(p.numel() for p in model.parameters()):,}",
      "tied:", model.output.weight is model.tok_embeddings.weight)
print(model.layers[0].attention_norm, model.layers[0].feed_forward.w1)
print("freqs_cis:", model.freqs_cis.dtype, tuple(model.freqs_cis.shape),
      model.freqs_cis[1, :2])

# a periodic token stream
data = torch.arange(400) * 7 % args.vocab_size
device_type = "cuda" if torch.cuda.is_available() else "cpu"
optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95), device_type)
for it in range(12):
    ix = torch.randint(len(data) - 17, (4,))
    x = torch.stack([data[i: i + 16] for i in ix])
    y = torch.stack([data[i + 1: i + 17] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if it % 3 == 0:
        print(f"iter {it}: loss {loss.item():.4f} norm {norm.item():.4f}")

model.eval()
prompt = data[:5].unsqueeze(0).repeat(2, 1)
with torch.inference_mode():
    full = model(prompt)
    # repeat_kv against enable_gqa, and the math backend only
    ref = Transformer(args, use_gqa_flag=False)
    ref.load_state_dict(model.state_dict())
    ref.eval()
    with sdpa_kernel(SDPBackend.MATH):
        same = torch.allclose(ref(prompt), full, atol=1e-5)
    print("repeat_kv == enable_gqa:", same)

    # cached decoding: prefill then one token at a time, against recomputing everything
    g = torch.Generator().manual_seed(0)
    tokens = prompt.clone()
    logits = model(tokens, start_pos=0, use_cache=True)[:, -1]
    for pos in range(5, 12):
        probs = torch.softmax(logits / 0.8, dim=-1)
        next_token = sample_top_p(probs, 0.9, g)
        tokens = torch.cat([tokens, next_token], dim=1)
        logits = model(next_token, start_pos=pos, use_cache=True)[:, -1]
    recomputed = model(tokens)[:, -1]
    print("tokens:", tokens.tolist())
    print("cache == recompute:", torch.allclose(logits, recomputed, atol=1e-4),
          f"{(logits - recomputed).abs().max().item() < 1e-4}")
    print("greedy:", model(tokens).argmax(-1)[:, -4:].tolist())
print("inference tensor:", logits.is_inference(), "requires_grad:", logits.requires_grad)
