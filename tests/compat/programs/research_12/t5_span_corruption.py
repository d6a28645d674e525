"""A tiny T5 the way transformers' ``modeling_t5.py`` and nanoT5 write it: a config
dataclass, ``T5LayerNorm`` (RMS in float32, no bias, no mean), attention without the
``1/sqrt(d)`` scale, the bidirectional and causal ``_relative_position_bucket``
(``torch.where`` of exact and log-spaced buckets, ``torch.full_like`` caps), a position
bias computed by the first layer and shared by the rest, gated-GELU feed-forward, tied
embeddings rescaled by ``d_model ** -0.5``, ``_shift_right`` with -100 replaced by the pad
id, span-corruption inputs with sentinel ids, ``torch.optim.Adafactor`` and greedy
decoding."""
import copy
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@dataclass
class T5Config:
    vocab_size: int = 40
    d_model: int = 16
    d_kv: int = 4
    d_ff: int = 32
    num_layers: int = 2
    num_heads: int = 4
    relative_attention_num_buckets: int = 8
    relative_attention_max_distance: int = 16
    dropout_rate: float = 0.0
    layer_norm_epsilon: float = 1e-6
    pad_token_id: int = 0
    eos_token_id: int = 1
    decoder_start_token_id: int = 0
    is_decoder: bool = False


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class T5DenseGatedActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x):
        return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))


class T5Attention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.num_buckets = config.relative_attention_num_buckets
        self.max_distance = config.relative_attention_max_distance
        self.n_heads, self.key_value_proj_dim = config.num_heads, config.d_kv
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.q = nn.Linear(config.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(config.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(config.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, config.d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        buckets = self._relative_position_bucket(relative_position, bidirectional=not self.is_decoder,
                                                 num_buckets=self.num_buckets, max_distance=self.max_distance)
        values = self.relative_attention_bias(buckets)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        kv = hidden_states if key_value_states is None else key_value_states

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        q, k, v = shape(self.q(hidden_states)), shape(self.k(kv)), shape(self.v(kv))
        scores = torch.matmul(q, k.transpose(3, 2))
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, seq_length, k.shape[2]), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(seq_length, k.shape[2])
            if mask is not None:
                position_bias = position_bias + mask
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(attn_weights, v).transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        return self.o(out), position_bias


class T5Block(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.ln_sa = T5LayerNorm(config.d_model, config.layer_norm_epsilon)
        self.self_attn = T5Attention(config, has_relative_attention_bias)
        if self.is_decoder:
            self.ln_ca = T5LayerNorm(config.d_model, config.layer_norm_epsilon)
            cross_cfg = copy.deepcopy(config)
            self.cross_attn = T5Attention(cross_cfg, has_relative_attention_bias=False)
        self.ln_ff = T5LayerNorm(config.d_model, config.layer_norm_epsilon)
        self.ff = T5DenseGatedActDense(config)

    def forward(self, h, mask, position_bias, enc=None, enc_mask=None, enc_bias=None):
        a, position_bias = self.self_attn(self.ln_sa(h), mask=mask, position_bias=position_bias)
        h = h + a
        if self.is_decoder:
            a, enc_bias = self.cross_attn(self.ln_ca(h), mask=enc_mask, key_value_states=enc, position_bias=enc_bias)
            h = h + a
        return h + self.ff(self.ln_ff(h)), position_bias, enc_bias


class T5Stack(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.embed_tokens, self.is_decoder = embed_tokens, config.is_decoder
        self.block = nn.ModuleList([T5Block(config, has_relative_attention_bias=bool(i == 0))
                                    for i in range(config.num_layers)])
        self.final_layer_norm = T5LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, input_ids, attention_mask, enc=None, enc_attention_mask=None):
        h = self.embed_tokens(input_ids)
        seq = input_ids.shape[1]
        ext = attention_mask[:, None, None, :].to(h.dtype)
        if self.is_decoder:
            causal = torch.tril(torch.ones(seq, seq, dtype=h.dtype))
            ext = ext * causal[None, None]
        mask = (1.0 - ext) * torch.finfo(h.dtype).min
        enc_mask = None
        if enc_attention_mask is not None:
            enc_mask = (1.0 - enc_attention_mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        position_bias = enc_bias = None
        for blk in self.block:
            h, position_bias, enc_bias = blk(h, mask, position_bias, enc, enc_mask, enc_bias)
        return self.final_layer_norm(h)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        enc_cfg = copy.deepcopy(config)
        dec_cfg = copy.deepcopy(config)
        dec_cfg.is_decoder = True
        self.encoder = T5Stack(enc_cfg, self.shared)
        self.decoder = T5Stack(dec_cfg, self.shared)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        f = 1.0
        if isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=f * 1.0)
        elif isinstance(module, T5Attention):
            d, kv, n = self.config.d_model, self.config.d_kv, self.config.num_heads
            module.q.weight.data.normal_(mean=0.0, std=f * ((d * kv) ** -0.5))
            module.k.weight.data.normal_(mean=0.0, std=f * (d ** -0.5))
            module.v.weight.data.normal_(mean=0.0, std=f * (d ** -0.5))
            module.o.weight.data.normal_(mean=0.0, std=f * ((n * kv) ** -0.5))
            if module.has_relative_attention_bias:
                module.relative_attention_bias.weight.data.normal_(mean=0.0, std=f * (d ** -0.5))

    def _shift_right(self, input_ids):
        shifted = input_ids.new_zeros(input_ids.shape)
        shifted[..., 1:] = input_ids[..., :-1].clone()
        shifted[..., 0] = self.config.decoder_start_token_id
        shifted.masked_fill_(shifted == -100, self.config.pad_token_id)
        return shifted

    def forward(self, input_ids, attention_mask, labels=None, decoder_input_ids=None):
        enc = self.encoder(input_ids, attention_mask)
        if decoder_input_ids is None:
            decoder_input_ids = self._shift_right(labels)
        dec = self.decoder(decoder_input_ids, torch.ones_like(decoder_input_ids), enc, attention_mask)
        logits = self.lm_head(dec * (self.config.d_model ** -0.5))
        loss = None
        if labels is not None:
            loss = nn.CrossEntropyLoss(ignore_index=-100)(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits

    @torch.no_grad()
    def generate(self, input_ids, attention_mask, max_new_tokens=6):
        enc = self.encoder(input_ids, attention_mask)
        out = torch.full((input_ids.shape[0], 1), self.config.decoder_start_token_id, dtype=torch.long)
        for _ in range(max_new_tokens):
            dec = self.decoder(out, torch.ones_like(out), enc, attention_mask)
            nxt = self.lm_head(dec[:, -1] * (self.config.d_model ** -0.5)).argmax(-1, keepdim=True)
            out = torch.cat([out, nxt], dim=1)
        return out


cfg = T5Config()
buckets = T5Attention._relative_position_bucket(torch.arange(-20, 21), True, 8, 16)
print("bidirectional buckets", buckets.tolist())
print("causal buckets", T5Attention._relative_position_bucket(torch.arange(-20, 1), False, 8, 16).tolist())

SENTINEL0 = cfg.vocab_size - 1


def span_corrupt(tokens, g, noise_density=0.3, span=2):
    n = len(tokens)
    n_noise = max(1, round(n * noise_density))
    starts = sorted(torch.randperm(n - span, generator=g)[: max(1, n_noise // span)].tolist())
    keep, inp, tgt, sid, i = [], [], [], 0, 0
    while i < n:
        if starts and i == starts[0]:
            inp.append(SENTINEL0 - sid)
            tgt += [SENTINEL0 - sid] + tokens[i:i + span]
            sid += 1
            i += span
            starts = [s for s in starts[1:] if s >= i]
        else:
            inp.append(tokens[i])
            i += 1
    return inp + [cfg.eos_token_id], tgt + [cfg.eos_token_id]


g = torch.Generator().manual_seed(7)
corpus = [[2 + (3 * j + k) % 30 for k in range(10)] for j in range(8)]
pairs = [span_corrupt(s, g) for s in corpus]
print("example input ", pairs[0][0])
print("example target", pairs[0][1])


def batchify(pairs):
    li = max(len(p[0]) for p in pairs)
    lt = max(len(p[1]) for p in pairs)
    ids = torch.tensor([p[0] + [cfg.pad_token_id] * (li - len(p[0])) for p in pairs])
    labels = torch.tensor([p[1] + [-100] * (lt - len(p[1])) for p in pairs])
    return ids, (ids != cfg.pad_token_id).long(), labels


model = T5ForConditionalGeneration(cfg)
print("tied", model.lm_head.weight is model.shared.weight, "params", sum(p.numel() for p in model.parameters()))
opt = torch.optim.Adafactor(model.parameters(), lr=1e-2)
ids, mask, labels = batchify(pairs)
print("decoder inputs", model._shift_right(labels)[1].tolist())
for step in range(25):
    loss, logits = model(ids, mask, labels=labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 24:
        print(f"step {step:2d} loss {loss.item():.4f}")
print("adafactor state", sorted(opt.state[model.shared.weight]))
print("generated", model.generate(ids[:2], mask[:2]).tolist())
