"""Speed-ups the way training scripts bolt them on: torch.compile of a small transformer
block (default backend, then mode="reduce-overhead" and dynamic=True) trained next to its eager
twin; torch.jit.script of a module with data-dependent control flow (a while loop, an
Optional argument, a List[Tensor] comprehension, a scripted helper function) and of a beam
pruning function; CPU autocast to bfloat16 with torch.autocast, its dtype rules (matmul in
bf16, softmax and losses in float32), custom_fwd/custom_bwd on an autograd Function, and
gradient accumulation over micro-batches."""
import copy
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.ln1(x)
        mask = torch.triu(torch.ones(x.size(1), x.size(1), dtype=torch.bool), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


eager = nn.Sequential(nn.Embedding(10, 16), Block(), nn.Linear(16, 10))
compiled_src = copy.deepcopy(eager)
compiled = torch.compile(compiled_src)
opt_e = torch.optim.AdamW(eager.parameters(), lr=3e-3)
opt_c = torch.optim.AdamW(compiled_src.parameters(), lr=3e-3)
data = torch.randint(0, 10, (8, 7))
for step in range(5):
    for model, opt in ((eager, opt_e), (compiled, opt_c)):
        logits = model(data[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 10), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"step {step} eager {F.cross_entropy(eager(data[:, :-1]).reshape(-1, 10), data[:, 1:].reshape(-1)).item():.5f}"
          f" compiled {loss.item():.5f}")
print("compiled wraps", type(compiled).__name__, compiled._orig_mod is compiled_src,
      list(compiled.state_dict())[0])


@torch.compile(dynamic=True)
def scaled_gelu(x, scale: float):
    return F.gelu(x) * scale + x.sin()


print("dynamic", [round(scaled_gelu(torch.linspace(-1, 1, n), 0.5).sum().item(), 5)
                  for n in (3, 5, 9)])
ro = torch.compile(nn.Linear(4, 2), mode="reduce-overhead")
print("reduce-overhead", tuple(ro(torch.randn(3, 4)).shape))


@torch.jit.script
def clip_norm(xs: List[torch.Tensor], max_norm: float) -> List[torch.Tensor]:
    total = torch.stack([x.norm() for x in xs]).norm()
    coef = max_norm / (total + 1e-6)
    if bool(coef < 1.0):
        return [x * coef for x in xs]
    return xs


class Refiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, max_iters: int = 10,
                tol: Optional[float] = None) -> torch.Tensor:
        t = 1e-3 if tol is None else tol
        i = 0
        delta = torch.ones(1)
        while i < max_iters and bool(delta.abs().max() > t):
            new = torch.tanh(self.step(x))
            delta = new - x
            x = new
            i += 1
        if i == max_iters:
            x = x * 0.5
        return torch.cat(clip_norm([x, delta], 2.0), 1)


refiner = Refiner()
scripted = torch.jit.script(refiner)
inp = torch.randn(3, 4)
print("script", torch.allclose(scripted(inp), refiner(inp)),
      torch.allclose(scripted(inp, 3, 0.5), refiner(inp, 3, 0.5)),
      f"{scripted(inp, 50).abs().sum().item():.5f}")


@torch.jit.script
def prune(scores: torch.Tensor, k: int):
    vals, idx = scores.topk(k)
    keep = vals > vals[0] - 2.0
    return idx[keep], vals[keep]


print("prune", [x.tolist() for x in prune(torch.tensor([0.1, 3.0, 2.5, -1.0, 1.2]), 3)])

# CPU autocast in bfloat16
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    out = net(x)
    probs = torch.softmax(out, 1)
    loss = F.cross_entropy(out, y)
    mm = x @ x.t()
print("autocast dtypes", out.dtype, probs.dtype, loss.dtype, mm.dtype,
      torch.is_autocast_enabled("cpu"))
loss.backward()
print("grad dtype", net[0].weight.grad.dtype, f"{loss.item():.2f}")


class ScaledTanh(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return 2 * y

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * 2 * (1 - y * y)


z = torch.randn(4, requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    w = ScaledTanh.apply(z.to(torch.bfloat16))
w.sum().backward()
print("custom_fwd", w.dtype, [round(v, 4) for v in z.grad.tolist()])

# gradient accumulation over micro-batches under autocast
net.zero_grad()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
accum = 4
for i, (xb, yb) in enumerate(zip(x.chunk(accum), y.chunk(accum))):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        loss = F.cross_entropy(net(xb), yb) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
print("accumulated", net[0].weight.grad is None, f"{F.cross_entropy(net(x), y).item():.5f}")
