"""A Hugging Face-style model written by hand, the way transformers' modeling files are: a
``PretrainedConfig``-like config with ``to_dict``/``from_dict`` through JSON, a
``PreTrainedModel`` base with ``post_init`` running ``_init_weights`` through
``module.apply`` and tying the LM head to the input embeddings, ``save_pretrained`` /
``from_pretrained`` over a folder, causal + padding masks built with
``masked_fill(torch.finfo(dtype).min)``, left padding with ``position_ids`` from a cumsum,
``past_key_values`` as tuples of tuples, and ``generate`` by greedy search, top-k and top-p
sampling through ``torch.multinomial`` with logits processors and an EOS stop."""
import json
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniConfig:
    model_type = "mini-gpt"

    def __init__(self, vocab_size=40, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                 initializer_range=0.02, layer_norm_epsilon=1e-5, eos_token_id=3,
                 pad_token_id=0, tie_word_embeddings=True, **kwargs):
        self.vocab_size, self.n_positions, self.n_embd = vocab_size, n_positions, n_embd
        self.n_layer, self.n_head = n_layer, n_head
        self.initializer_range, self.layer_norm_epsilon = initializer_range, layer_norm_epsilon
        self.eos_token_id, self.pad_token_id = eos_token_id, pad_token_id
        self.tie_word_embeddings = tie_word_embeddings
        for k, v in kwargs.items():
            setattr(self, k, v)

    def to_dict(self):
        d = dict(self.__dict__)
        d["model_type"] = self.model_type
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d.pop("model_type", None)
        return cls(**d)

    def __repr__(self):
        return f"{self.__class__.__name__} {json.dumps(self.to_dict(), indent=2, sort_keys=True)}"


class PreTrainedModel(nn.Module):
    config_class = MiniConfig
    base_model_prefix = "transformer"
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__()
        self.config = config

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        if getattr(self.config, "tie_word_embeddings", False) and hasattr(self, "lm_head"):
            self.lm_head.weight = self.get_input_embeddings().weight

    def num_parameters(self, exclude_embeddings=False):
        seen, total = set(), 0
        for name, p in self.named_parameters():
            if exclude_embeddings and "wte" in name:
                continue
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel()
        return total

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, "config.json"), "w") as f:
            json.dump(self.config.to_dict(), f, indent=2, sort_keys=True)
        sd = {k: v for k, v in self.state_dict().items() if k not in self._tied_weights_keys}
        torch.save(sd, os.path.join(save_directory, "pytorch_model.bin"))

    @classmethod
    def from_pretrained(cls, path):
        with open(os.path.join(path, "config.json")) as f:
            config = cls.config_class.from_dict(json.load(f))
        model = cls(config)
        sd = torch.load(os.path.join(path, "pytorch_model.bin"), map_location="cpu",
                        weights_only=True)
        missing, unexpected = model.load_state_dict(sd, strict=False)
        print("missing", missing, "unexpected", unexpected)
        model.tie_weights()
        model.eval()
        return model


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.n_embd // config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def _split_heads(self, x):
        b, t, _ = x.size()
        return x.view(b, t, self.n_head, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, layer_past=None, use_cache=False):
        q, k, v = self.c_attn(hidden_states).split(self.n_head * self.head_dim, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        if layer_past is not None:
            past_key, past_value = layer_past
            k = torch.cat((past_key, k), dim=-2)
            v = torch.cat((past_value, v), dim=-2)
        present = (k, v) if use_cache else None
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        if attention_mask is not None:
            w = w + attention_mask
        w = nn.functional.softmax(w, dim=-1)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        out = out.view(out.size(0), out.size(1), -1)
        return self.c_proj(out), present


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = Attention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd),
                                 nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * config.n_embd, config.n_embd))

    def forward(self, x, attention_mask=None, layer_past=None, use_cache=False):
        a, present = self.attn(self.ln_1(x), attention_mask, layer_past, use_cache)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class MiniGPTLMHeadModel(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        for name, p in module.named_parameters(recurse=False):
            if name == "weight" and isinstance(module, nn.Linear) and module.out_features == self.config.n_embd \
                    and module.in_features == 4 * self.config.n_embd:
                p.data.normal_(0.0, self.config.initializer_range / math.sqrt(2 * self.config.n_layer))

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None,
                labels=None, use_cache=False):
        b, t = input_ids.shape
        past_length = 0 if past_key_values is None else past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, past_length + t, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        dtype = x.dtype
        causal = torch.ones(t, past_length + t, dtype=torch.bool).tril(diagonal=past_length)
        mask = torch.zeros(b, 1, t, past_length + t, dtype=dtype)
        mask = mask.masked_fill(~causal, torch.finfo(dtype).min)
        if attention_mask is not None:
            pad = attention_mask[:, None, None, :].to(dtype)
            mask = mask + (1.0 - pad) * torch.finfo(dtype).min
            mask = mask.clamp(min=torch.finfo(dtype).min)
        presents = () if use_cache else None
        for i, block in enumerate(self.h):
            layer_past = None if past_key_values is None else past_key_values[i]
            x, present = block(x, mask, layer_past, use_cache)
            if use_cache:
                presents = presents + (present,)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)),
                                   shift_labels.view(-1), ignore_index=-100)
        return {"loss": loss, "logits": logits, "past_key_values": presents}

    @torch.no_grad()
    def generate(self, input_ids, attention_mask, max_new_tokens=6, do_sample=False,
                 top_k=0, top_p=1.0, temperature=1.0, generator=None):
        past, cur = None, input_ids
        position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        unfinished = torch.ones(input_ids.size(0), dtype=torch.long)
        out_ids = input_ids
        for _ in range(max_new_tokens):
            out = self(cur, attention_mask=attention_mask, position_ids=position_ids,
                       past_key_values=past, use_cache=True)
            past = out["past_key_values"]
            logits = out["logits"][:, -1, :] / temperature
            if top_k > 0:
                kth = torch.topk(logits, top_k)[0][..., -1, None]
                logits = logits.masked_fill(logits < kth, -float("inf"))
            if top_p < 1.0:
                sorted_logits, sorted_idx = torch.sort(logits, descending=False)
                cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
                remove_sorted = cum <= (1 - top_p)
                remove_sorted[..., -1:] = 0
                remove = remove_sorted.scatter(1, sorted_idx, remove_sorted)
                logits = logits.masked_fill(remove, -float("inf"))
            if do_sample:
                probs = F.softmax(logits, dim=-1)
                next_tokens = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
            else:
                next_tokens = torch.argmax(logits, dim=-1)
            next_tokens = next_tokens * unfinished + self.config.pad_token_id * (1 - unfinished)
            out_ids = torch.cat([out_ids, next_tokens[:, None]], dim=-1)
            unfinished = unfinished & (next_tokens != self.config.eos_token_id).long()
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
            position_ids = position_ids[:, -1:] + 1
            cur = next_tokens[:, None]
            if unfinished.max() == 0:
                break
        return out_ids


torch.manual_seed(0)
config = MiniConfig()
print(config)
model = MiniGPTLMHeadModel(config)
print(model.lm_head.weight is model.wte.weight, model.num_parameters(),
      model.num_parameters(exclude_embeddings=True))
print(f"init std linear {model.h[0].attn.c_attn.weight.std().item():.5f} "
      f"proj {model.h[1].mlp[2].weight.std().item():.5f}")

# train a little on a repeating pattern so the greedy continuation is well determined
seq = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12] * 3])
data = torch.cat([seq.roll(-s, 1) for s in range(8)])
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
model.train()
for step in range(60):
    out = model(data, labels=data)
    opt.zero_grad()
    out["loss"].backward()
    opt.step()
    if step % 15 == 0 or step == 59:
        print(f"step {step} loss {out['loss'].item():.5f}")
model.eval()

with tempfile.TemporaryDirectory() as d:
    model.save_pretrained(d)
    print(sorted(os.listdir(d)))
    reloaded = MiniGPTLMHeadModel.from_pretrained(d)
print("tied after load", reloaded.lm_head.weight is reloaded.wte.weight)

prompts = [[5, 6, 7], [9, 10, 11, 12, 5]]
width = max(map(len, prompts))
input_ids = torch.tensor([[config.pad_token_id] * (width - len(p)) + p for p in prompts])
attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
print("left padded", input_ids.tolist(), attention_mask.tolist())

full = reloaded(input_ids, attention_mask=attention_mask,
                position_ids=(attention_mask.cumsum(-1) - 1).clamp(min=0))["logits"]
print("last logits row", full[1, -1, :6])
greedy = reloaded.generate(input_ids, attention_mask, max_new_tokens=6)
print("greedy", greedy.tolist())
g = torch.Generator().manual_seed(42)
topk = reloaded.generate(input_ids, attention_mask, max_new_tokens=6, do_sample=True, top_k=3,
                         temperature=2.0, generator=g)
print("top-k", topk.shape, topk[:, width:].ge(0).all().item())
g = torch.Generator().manual_seed(42)
topp = reloaded.generate(input_ids, attention_mask, max_new_tokens=6, do_sample=True, top_p=0.9,
                         temperature=1.5, generator=g)
print("top-p", topp.tolist())

# incremental decoding with the cache equals one full forward pass
ids = torch.tensor([[5, 6, 7, 8, 9]])
full = reloaded(ids)["logits"]
past, steps = None, []
for t in range(ids.size(1)):
    o = reloaded(ids[:, t:t + 1], past_key_values=past, use_cache=True)
    past = o["past_key_values"]
    steps.append(o["logits"])
print("cache matches", torch.allclose(torch.cat(steps, 1), full, atol=1e-5),
      len(past), len(past[0]), tuple(past[0][0].shape))
print("mask min", torch.finfo(torch.float32).min, torch.finfo(torch.bfloat16).min)
