"""Checkpoint loading and model surgery as large-model code (HF ``from_pretrained`` with
``low_cpu_mem_usage``, torchtune, timm's ``checkpoint_filter_fn``) writes it: a model
built under ``with torch.device("meta")``, ``to_empty`` then ``load_state_dict(...,
assign=True)``, ``skip_init``, a load pre-hook renaming an old checkpoint's keys and a
post-hook clearing expected missing keys, the ``_IncompatibleKeys`` a non-strict load
returns and the error text a strict one raises (missing, unexpected and size mismatch),
state-dict hooks, ``_metadata`` versions, non-persistent buffers, ``get_submodule``/
``set_submodule``/``get_parameter``, ``named_modules(remove_duplicate=False)``, swapping
every ``Linear`` for a LoRA wrapper by recursion over ``named_children``,
``parameters_to_vector``, ``keep_vars`` and dtype casts that keep integer buffers."""
import io
import math
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * dim, dim)
        self.norm = nn.BatchNorm1d(dim)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


class Net(nn.Module):
    def __init__(self, dim=6, classes=3):
        super().__init__()
        self.embed = nn.Linear(4, dim)
        self.blocks = nn.Sequential(Block(dim), Block(dim))
        self.head = nn.Linear(dim, classes)
        self.register_buffer("rope_cache", torch.arange(dim).float(), persistent=False)
        self.register_load_state_dict_pre_hook(self._rename_old_keys)

    @staticmethod
    def _rename_old_keys(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for k in list(state_dict):
            if k.startswith(prefix + "fc."):
                state_dict[prefix + "head." + k[len(prefix) + 3:]] = state_dict.pop(k)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


with torch.device("meta"):
    big = Net()
print("meta param:", big.embed.weight.device, big.embed.weight.shape, big.embed.weight.requires_grad,
      "is_meta", big.head.bias.is_meta)
print("meta buffer:", big.rope_cache.device, "numel", sum(p.numel() for p in big.parameters()))

reference = Net()
reference.train()
reference(torch.randn(8, 4))          # moves the batch-norm statistics
sd = reference.state_dict()
print("keys", list(sd)[:6], "...", len(sd))
print("metadata", dict(sd._metadata["blocks.0.norm"]), "rope_cache in sd:", "rope_cache" in sd)

big.to_empty(device="cpu")
print("after to_empty:", big.embed.weight.device, big.rope_cache.shape)
result = big.load_state_dict(sd, assign=True)
print("assign load:", result, "same storage:", big.head.weight.data_ptr() == sd["head.weight"].data_ptr(),
      "is Parameter:", isinstance(big.head.weight, nn.Parameter))
big.rope_cache = torch.arange(6).float()     # non-persistent buffers are not in the checkpoint
x = torch.randn(5, 4)
reference.eval(), big.eval()
print("outputs equal:", torch.equal(reference(x), big(x)))

old = OrderedDict((k.replace("head.", "fc."), v.clone()) for k, v in sd.items())
fresh = Net()
print("renamed by pre-hook:", fresh.load_state_dict(old))

partial = {k: v for k, v in sd.items() if not k.startswith("head")}
partial["extra.weight"] = torch.zeros(1)
print("non-strict:", fresh.load_state_dict(partial, strict=False))
try:
    fresh.load_state_dict(partial)
except RuntimeError as e:
    print("strict error:", str(e))
bad = dict(sd)
bad["head.weight"] = torch.zeros(5, 6)
try:
    fresh.load_state_dict(bad)
except RuntimeError as e:
    print("size error:", str(e))


def ignore_missing_head(module, incompatible_keys):
    for k in list(incompatible_keys.missing_keys):
        if k.startswith("head."):
            incompatible_keys.missing_keys.remove(k)


handle = fresh.register_load_state_dict_post_hook(ignore_missing_head)
print("post-hook cleared:", fresh.load_state_dict({k: v for k, v in sd.items() if not k.startswith("head")}))
handle.remove()

calls = []
fresh.register_state_dict_pre_hook(lambda module, prefix, keep_vars: calls.append(prefix))
bad_hook = fresh.blocks[0].register_state_dict_post_hook(
    lambda module, state_dict, prefix, local_metadata: state_dict.pop(prefix + "norm.num_batches_tracked"))
try:
    fresh.state_dict()
except RuntimeError as e:
    print("returning post-hook:", e)
bad_hook.remove()


def drop_counter(module, state_dict, prefix, local_metadata):
    del state_dict[prefix + "norm.num_batches_tracked"]


fresh.blocks[0].register_state_dict_post_hook(drop_counter)
sd2 = fresh.state_dict()
print("state-dict hooks:", calls, "blocks.0.norm.num_batches_tracked" in sd2, "blocks.1.norm.num_batches_tracked" in sd2)
kv = fresh.state_dict(keep_vars=True)
print("keep_vars:", type(kv["head.weight"]).__name__, kv["head.weight"].requires_grad, type(sd2["head.weight"]).__name__)

print("get_submodule:", fresh.get_submodule("blocks.1.fc2"))
print("get_parameter:", tuple(fresh.get_parameter("blocks.0.norm.weight").shape),
      "get_buffer:", fresh.get_buffer("blocks.0.norm.running_var").sum().item())
fresh.set_submodule("blocks.1.act", nn.SiLU())
print("set_submodule:", fresh.blocks[1])
try:
    fresh.get_submodule("blocks.2")
except AttributeError as e:
    print("AttributeError:", e)

shared = nn.Linear(2, 2)
tied = nn.Sequential(shared, nn.ReLU(), shared)
print("named_modules:", [n for n, _ in tied.named_modules()], [n for n, _ in tied.named_modules(remove_duplicate=False)])
print("parameters:", len(list(tied.parameters())), len(list(tied.named_parameters(remove_duplicate=False))))


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=2, alpha=4):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = alpha / r
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scaling


def inject_lora(module):
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            setattr(module, name, LoRALinear(child))
        else:
            inject_lora(child)
    return module


lora = inject_lora(fresh)
trainable = sum(p.numel() for p in lora.parameters() if p.requires_grad)
print("lora trainable", trainable, "of", sum(p.numel() for p in lora.parameters()))
print(lora.blocks[0].fc1)
opt = torch.optim.SGD([p for p in lora.parameters() if p.requires_grad], lr=0.1)
lora.train()
for _ in range(3):
    loss = lora(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("lora loss", loss.item(), "B norm", lora.head.lora_B.norm().item())

vec = parameters_to_vector(reference.head.parameters())
print("vector", vec.shape, vec.sum().item())
vector_to_parameters(torch.zeros_like(vec), reference.head.parameters())
print("zeroed head", reference.head.weight.abs().sum().item())

skip = nn.utils.skip_init(nn.Linear, 3, 2)
print("skip_init", skip, skip.weight.shape)
half = Net().to(torch.bfloat16)
print("dtypes", half.embed.weight.dtype, half.blocks[0].norm.num_batches_tracked.dtype, half.rope_cache.dtype)
buf = io.BytesIO()
torch.save(sd, buf)
buf.seek(0)
loaded = torch.load(buf, map_location="cpu", weights_only=True)
print("round trip", type(loaded).__name__, all(torch.equal(loaded[k], sd[k]) for k in sd),
      dict(loaded._metadata["blocks.0.norm"]))
