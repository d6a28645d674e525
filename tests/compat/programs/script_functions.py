"""Scripted functions as blog posts write them (@torch.jit.script on fused activations and helpers: schema, code, argument errors, save/load, inside a scripted module) and torch.backends.python_native's switches."""
import warnings
from typing import List, Optional, Tuple
import io
import torch
import torch.nn as nn
import torch.nn.functional as F
warnings.simplefilter("ignore", DeprecationWarning)
torch.manual_seed(0)
@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))
@torch.jit.script
def swish(x, beta: float = 1.0):
    return x * torch.sigmoid(beta * x)
@torch.jit.script
def topk_mask(scores: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    vals, idx = scores.topk(k, dim=-1)
    return vals, idx
@torch.jit.script
def pad_to(xs: List[torch.Tensor], length: int, value: Optional[float] = None):
    v = 0.0 if value is None else value
    return torch.stack([F.pad(x, (0, length - x.size(0)), value=v) for x in xs])
print(type(fused_gelu).__name__, fused_gelu.name, fused_gelu.qualified_name)
print(fused_gelu.schema); print(swish.schema); print(topk_mask.schema); print(pad_to.schema)
print(fused_gelu.code)
print(swish.code.splitlines()[0])
x = torch.linspace(-2, 2, 5)
print(torch.allclose(fused_gelu(x), F.gelu(x), atol=1e-3), swish(x, 2.0).shape, swish(x, beta=1).shape)
print(topk_mask(torch.tensor([[1., 3., 2.]]), 2))
print(pad_to([torch.ones(2), torch.ones(3)], 4), pad_to([torch.ones(1)], 2, 5.0))
for bad in [lambda: fused_gelu(3), lambda: swish(x, "a"), lambda: topk_mask(x), lambda: swish(x, gamma=1.0)]:
    try:
        bad()
    except RuntimeError as e:
        print("RuntimeError:", str(e).splitlines()[0])
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.fc = nn.Linear(4, 4)
    def forward(self, x):
        return swish(self.fc(x))
net = torch.jit.script(Net()); print(net(torch.ones(2, 4)).shape, type(net).__name__)
buf = io.BytesIO(); torch.jit.save(net, buf); buf.seek(0); print(torch.jit.load(buf))
data = fused_gelu.save_to_buffer(); loaded = torch.jit.load(io.BytesIO(data))
print(loaded, torch.allclose(loaded(x), fused_gelu(x)))
import torch.backends.python_native as pn
print(pn.all_dsls, pn.available_dsls, pn.triton, pn.get_dsl_operations("triton"))
with pn.triton.disabled():
    print(pn.triton.enabled, pn.is_dsl_disabled("triton"))
with pn.operations_disabled("scaled_mm"):
    print(pn.is_operation_disabled("scaled_mm"))
pn.cutedsl.enabled = False; print(pn.cutedsl); pn.cutedsl.enabled = True
print(torch.backends.python_native.is_operation_disabled("scaled_mm"))
