"""What tutorials and bug reports print and pickle: tensors of many dtypes and layouts
(integer, bool, half, bfloat16, complex, sparse COO/CSR, with ``grad_fn`` and
``requires_grad``), ``set_printoptions`` profiles and ``sci_mode``, ``torch.finfo``/
``iinfo``, a nested model's ``print`` with ``extra_repr``, an optimizer's and a scheduler's
printed state, a whole module pickled with ``torch.save`` and brought back with
``weights_only=False`` (and refused by the ``weights_only=True`` default, then allowed
through ``torch.serialization.safe_globals``), and a custom autograd Function with
``ctx.save_for_backward``, ``ctx.needs_input_grad``, ``mark_dirty`` and
``once_differentiable`` refusing double backward."""
import io
import pickle

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

torch.manual_seed(0)

print(torch.tensor([1, -2, 3], dtype=torch.int8), torch.tensor([0, 255], dtype=torch.uint8))
print(torch.tensor([True, False]), torch.tensor([[1, 2], [3, 4]], dtype=torch.int16))
print(torch.tensor([1.5, -2.25, 1e-4], dtype=torch.float16))
print(torch.tensor([1.5, 3.0, 100.125], dtype=torch.bfloat16))
print(torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64))
print(torch.tensor([1e-8, 1.0, 1e8]), torch.tensor([float("nan"), float("inf"), -1.0]))
print(torch.tensor([0.1, 0.25], dtype=torch.float64), torch.tensor(3.5), torch.tensor([]))
print(torch.zeros(2, 0), torch.arange(6).view(2, 3).t())
w = torch.randn(2, 2, requires_grad=True)
y = (w * 2).sum()
print(w.shape, w.dtype, w.device, y.grad_fn.name(), y)
print(type(F.cross_entropy(torch.randn(3, 4, requires_grad=True),
                            torch.tensor([0, 1, 2])).grad_fn).__name__)
print(nn.Parameter(torch.ones(2)))
print(torch.ones(2, 3).to_sparse())
print(torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr())
torch.set_printoptions(precision=2, sci_mode=False)
print(torch.tensor([1e-5, 12345.678, 0.5]))
torch.set_printoptions(profile="short")
print(torch.arange(40.0).view(4, 10) / 3)
torch.set_printoptions(threshold=5, edgeitems=2)
print(torch.arange(30))
torch.set_printoptions(profile="default")
print(torch.arange(30.0) ** 3)
print(torch.finfo(torch.float32), torch.iinfo(torch.int16))
print(torch.finfo(torch.bfloat16).eps, torch.finfo(torch.float16).max, torch.Size([2, 3]))


class Residual(nn.Module):
    def __init__(self, fn, scale=1.0):
        super().__init__()
        self.fn, self.scale = fn, scale

    def forward(self, x):
        return x + self.scale * self.fn(x)

    def extra_repr(self):
        return f"scale={self.scale}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8, padding_idx=0, max_norm=2.0)
        self.blocks = nn.Sequential(*[Residual(nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8),
                                                             nn.GELU(approximate="tanh")),
                                               scale=0.5) for _ in range(2)])
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.head = nn.ModuleDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1, bias=False)})
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self.extras = nn.ParameterList([nn.Parameter(torch.zeros(3)), nn.Parameter(torch.ones(2, 2))])

    def forward(self, tokens):
        h = self.blocks(self.embed(tokens))
        h = self.pool(h.transpose(1, 2)).squeeze(-1)
        self.step += 1
        return self.head["cls"](h) + self.extras[0], self.head["reg"](h)


model = Net()
print(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, amsgrad=True)
print(optimizer)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
tokens = torch.randint(1, 10, (4, 5))
for _ in range(3):
    cls, reg = model(tokens)
    loss = F.cross_entropy(cls, torch.tensor([0, 1, 2, 0])) + reg.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
print("scheduler", scheduler.state_dict())
print("step buffer", model.step, "loss", f"{loss.item():.6f}")
state = optimizer.state_dict()
print("optimizer state keys", sorted(state["state"][0].keys()), state["param_groups"][0]["lr"])

buffer = io.BytesIO()
torch.save(model, buffer)
buffer.seek(0)
try:
    torch.load(buffer)
except pickle.UnpicklingError as e:
    print("weights_only refused:", type(e).__name__, "Net" in str(e))
buffer.seek(0)
restored = torch.load(buffer, weights_only=False)
print(type(restored).__name__, restored.step, restored.training,
      all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                             restored.state_dict().values())))
with torch.no_grad():
    print("same output:", torch.equal(model(tokens)[0], restored(tokens)[0]))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


buffer = io.BytesIO()
torch.save({"pt": Point(1, 2), "t": torch.arange(3)}, buffer)
buffer.seek(0)
with torch.serialization.safe_globals([Point]):
    obj = torch.load(buffer)
print("safe_globals load", obj["pt"].x, obj["pt"].y, obj["t"])
print("safe globals now", Point in torch.serialization.get_safe_globals())


class ClampedExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, limit):
        out = torch.exp(x).clamp(max=limit)
        ctx.save_for_backward(out)
        ctx.limit = limit
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        out, = ctx.saved_tensors
        grad = grad_output * out * (out < ctx.limit)
        return (grad if ctx.needs_input_grad[0] else None), None


class AddOneInplace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


x = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
y = ClampedExp.apply(x, 5.0)
print(y, y.grad_fn.__class__.__name__)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
print("grad", g)
try:
    g.sum().backward()
except RuntimeError as e:
    print("double backward:", e)
g2, = torch.autograd.grad((ClampedExp.apply(x, 5.0) ** 2).sum(), x, create_graph=True)
print("grad of square", g2.requires_grad, type(g2.grad_fn).__name__)
try:
    g2.sum().backward()
except RuntimeError as e:
    print("double backward:", e)
a = torch.ones(3, requires_grad=True)
b = a.clone()
c = AddOneInplace.apply(b)
c.sum().backward()
print("mark_dirty", c, b is c, a.grad)
try:
    AddOneInplace.apply(a)
except RuntimeError as e:
    print("leaf:", str(e).split(".")[0])
