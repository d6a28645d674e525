"""LoRA the way minLoRA and the parametrize tutorial write it: a LoRAParametrization module
registered on nn.Linear and nn.Embedding weights with parametrize.register_parametrization,
a model.apply() walk that adds it, every non-LoRA parameter frozen through name matching,
lora-only state_dict filtering, a cached parametrize.cached() evaluation, enabling and
disabling the adapters, and merging back with remove_parametrizations(leave_parametrized=True)."""
import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize

torch.manual_seed(0)


class LoRAParametrization(nn.Module):
    def __init__(self, fan_in, fan_out, fan_in_fan_out=False, rank=4, lora_dropout_p=0.0,
                 lora_alpha=1):
        super().__init__()
        self.swap = (lambda x: (x[1], x[0])) if fan_in_fan_out else (lambda x: x)
        self.lora_A = nn.Parameter(torch.zeros(self.swap((rank, fan_in))))
        self.lora_B = nn.Parameter(torch.zeros(self.swap((fan_out, rank))))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_alpha, self.rank = lora_alpha, rank
        self.scaling = lora_alpha / rank
        self.lora_dropout = nn.Dropout(p=lora_dropout_p) if lora_dropout_p > 0 else (lambda x: x)
        self.dropout_fn = self._dropout if lora_dropout_p > 0 else (lambda x: x)
        self.register_buffer("lora_dropout_mask", torch.ones(self.swap((1, fan_in)),
                                                             dtype=self.lora_A.dtype))
        self.forward_fn = self.lora_forward

    def _dropout(self, A):
        return A * self.lora_dropout(self.lora_dropout_mask)

    def lora_forward(self, X):
        return X + torch.matmul(*self.swap((self.lora_B, self.dropout_fn(self.lora_A)))).view(
            X.shape) * self.scaling

    def forward(self, X):
        return self.forward_fn(X)

    def disable_lora(self):
        self.forward_fn = lambda x: x

    def enable_lora(self):
        self.forward_fn = self.lora_forward

    @classmethod
    def from_linear(cls, layer, rank=4, lora_dropout_p=0.0, lora_alpha=1):
        fan_out, fan_in = layer.weight.shape
        return cls(fan_in, fan_out, fan_in_fan_out=False, rank=rank,
                   lora_dropout_p=lora_dropout_p, lora_alpha=lora_alpha)

    @classmethod
    def from_embedding(cls, layer, rank=4, lora_dropout_p=0.0, lora_alpha=1):
        fan_in, fan_out = layer.weight.shape
        return cls(fan_in, fan_out, fan_in_fan_out=True, rank=rank,
                   lora_dropout_p=lora_dropout_p, lora_alpha=lora_alpha)


default_lora_config = {
    nn.Embedding: {"weight": partial(LoRAParametrization.from_embedding, rank=4, lora_alpha=8)},
    nn.Linear: {"weight": partial(LoRAParametrization.from_linear, rank=4, lora_alpha=8)},
}


def apply_lora(layer, register=True, merge=False, lora_config=default_lora_config):
    if register:
        if type(layer) in lora_config:
            for attr_name, parametrization in lora_config[type(layer)].items():
                parametrize.register_parametrization(layer, attr_name, parametrization(layer))
    else:
        if hasattr(layer, "parametrizations"):
            for attr_name in list(layer.parametrizations.keys()):
                parametrize.remove_parametrizations(layer, attr_name, leave_parametrized=merge)


def add_lora(model, lora_config=default_lora_config):
    model.apply(partial(apply_lora, lora_config=lora_config))


def merge_lora(model):
    model.apply(partial(apply_lora, register=False, merge=True))


def name_is_lora(name):
    return len(name.split(".")) >= 4 and name.split(".")[-4] == "parametrizations" and \
        name.split(".")[-1] in ["lora_A", "lora_B"]


def get_lora_params(model):
    for n, p in model.named_parameters():
        if name_is_lora(n):
            yield p


def get_lora_state_dict(model):
    return {k: v for k, v in model.state_dict().items() if name_is_lora(k)}


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(dim, 32)
        self.fc2 = nn.Linear(32, vocab)

    def forward(self, idx):
        return self.fc2(F.gelu(self.fc1(self.emb(idx))))


base = TinyLM()
pre = torch.optim.Adam(base.parameters(), lr=1e-2)
seq = torch.randint(0, 20, (8, 12))
for _ in range(10):
    loss = F.cross_entropy(base(seq[:, :-1]).reshape(-1, 20), seq[:, 1:].reshape(-1))
    pre.zero_grad()
    loss.backward()
    pre.step()
print("pretrained", f"{loss.item():.5f}")

ref = {k: v.clone() for k, v in base.state_dict().items()}
add_lora(base)
for n, p in base.named_parameters():
    p.requires_grad = name_is_lora(n)
trainable = sum(p.numel() for p in base.parameters() if p.requires_grad)
print("lora params", trainable, sorted(get_lora_state_dict(base))[:2])
print("identity at init", torch.allclose(base.fc1.weight, ref["fc1.weight"]),
      parametrize.is_parametrized(base.emb, "weight"))
new_task = (seq * 3 + 1) % 20
opt = torch.optim.AdamW(get_lora_params(base), lr=2e-2)
for step in range(15):
    loss = F.cross_entropy(base(new_task[:, :-1]).reshape(-1, 20), new_task[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("adapted", f"{loss.item():.5f}", f"{base.fc1.parametrizations.weight[0].lora_B.abs().mean().item():.6f}")
with parametrize.cached():
    cached_out = base(new_task[:2, :-1])
print("cached same", torch.allclose(cached_out, base(new_task[:2, :-1]), atol=1e-6))
for m in base.modules():
    if isinstance(m, LoRAParametrization):
        m.disable_lora()
off = F.cross_entropy(base(new_task[:, :-1]).reshape(-1, 20), new_task[:, 1:].reshape(-1))
for m in base.modules():
    if isinstance(m, LoRAParametrization):
        m.enable_lora()
print("disabled", f"{off.item():.5f}")
lora_sd = get_lora_state_dict(base)
with torch.no_grad():
    before = base(new_task[:, :-1])
merge_lora(base)
after = base(new_task[:, :-1])
print("merged", type(base.fc1).__name__, torch.allclose(before, after, atol=1e-5),
      sorted(k for k in base.state_dict()), f"{(base.fc2.weight - ref['fc2.weight']).norm().item():.5f}")

fresh = TinyLM()
fresh.load_state_dict(ref)
add_lora(fresh)
missing, unexpected = fresh.load_state_dict(lora_sd, strict=False)
print("reloaded", len(missing), len(unexpected),
      torch.allclose(fresh(new_task[:, :-1]), before, atol=1e-5))
