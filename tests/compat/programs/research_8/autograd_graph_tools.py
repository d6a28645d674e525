"""Tools built on the autograd graph the way torchviz, memory-saving recipes, optimizer-in-
backward tutorials and FLOP counters write them: a torchviz-style walk of ``grad_fn`` and
``next_functions`` naming each node (``AccumulateGrad`` leaves by ``.variable``, saved
tensors by ``_saved_*`` attributes), ``saved_tensors_hooks`` packing activations to
float16, ``save_on_cpu``, ``register_multi_grad_hook``, ``Node.register_hook`` and
``register_prehook``, per-parameter optimizers stepped in
``register_post_accumulate_grad_hook``, ``autograd.grad`` with ``is_grads_batched`` and
``materialize_grads``, ``torch.autograd.functional`` (jacobian, hessian, hvp, vhp), a
``__torch_function__`` tensor subclass carrying metadata, a ``TorchFunctionMode`` op
logger and ``FlopCounterMode`` on a small transformer layer."""
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

torch.manual_seed(0)


def walk(var, params):
    """Nodes of the backward graph, as torchviz's make_dot visits them."""
    param_map = {id(v): k for k, v in params.items()}
    seen, lines = set(), []

    def size_to_str(size):
        return "(" + ", ".join(["%d" % v for v in size]) + ")"

    def add_nodes(fn, depth):
        if fn in seen:
            return
        seen.add(fn)
        if hasattr(fn, "variable"):
            u = fn.variable
            lines.append("  " * depth + f"{param_map.get(id(u), '?')} {size_to_str(u.size())}")
        else:
            saved = sorted(a[len("_saved_"):] for a in dir(fn) if a.startswith("_saved_")
                           and isinstance(getattr(fn, a), torch.Tensor))
            lines.append("  " * depth + type(fn).__name__ + (f" saved={saved}" if saved else ""))
        for u, _ in fn.next_functions:
            if u is not None:
                add_nodes(u, depth + 1)

    add_nodes(var.grad_fn, 0)
    return lines


model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
x = torch.randn(5, 4)
y = model(x).pow(2).mean()
print("\n".join(walk(y, dict(model.named_parameters()))))
print("next_functions of mean:", [type(f).__name__ for f, _ in y.grad_fn.next_functions])
pw = y.grad_fn.next_functions[0][0]
print("pow exponent saved:", pw._saved_exponent, type(pw._saved_exponent).__name__)
cl = torch.randn(3, requires_grad=True).clamp(min=0.5).grad_fn
print(type(cl).__name__, "min:", cl._saved_min, "max:", cl._saved_max)

# --- saved tensor hooks ---------------------------------------------------------------------
packed = []


def pack_hook(t):
    packed.append((tuple(t.shape), t.dtype))
    return t.to(torch.float16), t.dtype


def unpack_hook(p):
    t, dtype = p
    return t.to(dtype)


w = torch.randn(6, 6, requires_grad=True)
a = torch.randn(3, 6)
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    out = torch.tanh(a @ w).sum()
out.backward()
ref = torch.randn(1)  # keep the random stream aligned with no hooks
w2 = w.detach().clone().requires_grad_(True)
(torch.tanh(a @ w2)).sum().backward()
print("packed:", packed, "fp16 grad close:", torch.allclose(w.grad, w2.grad, atol=1e-2),
      "exact:", torch.equal(w.grad, w2.grad))
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    out = (a @ w2).relu().sum()
w2.grad = None
out.backward()
print("save_on_cpu grad sum:", f"{w2.grad.sum().item():.5f}")

# --- graph hooks ------------------------------------------------------------------------------
p1 = torch.randn(3, requires_grad=True)
p2 = torch.randn(3, requires_grad=True)
fired = []
handle = torch.autograd.graph.register_multi_grad_hook(
    (p1, p2), lambda grads: fired.append([g is not None for g in grads]))
(p1 * 2 + p2.sin()).sum().backward()
(p1 * 3).sum().backward()
handle.remove()
print("multi grad hook:", fired)

z = torch.randn(4, requires_grad=True)
h = z.exp()
node = h.grad_fn
node.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
node.register_hook(lambda grad_inputs, grad_outputs: print(
    "node hook:", type(node).__name__, grad_outputs[0][:2], grad_inputs[0][:2]))
h.sum().backward()
print("z.grad == 10 exp(z):", torch.allclose(z.grad, 10 * z.exp()))

# --- optimizer in backward ------------------------------------------------------------------------
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
ref_net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
ref_net.load_state_dict(net.state_dict())
optimizer_dict = {p: torch.optim.AdamW([p], lr=1e-2) for p in net.parameters()}


def optimizer_hook(parameter) -> None:
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()


for p in net.parameters():
    p.register_post_accumulate_grad_hook(optimizer_hook)
ref_opt = torch.optim.AdamW(ref_net.parameters(), lr=1e-2)
xs, ys = torch.randn(16, 8), torch.randn(16, 1)
for step in range(3):
    F.mse_loss(net(xs), ys).backward()
    ref_opt.zero_grad()
    F.mse_loss(ref_net(xs), ys).backward()
    ref_opt.step()
print("optimizer in backward == step after:", all(
    torch.allclose(p, q, atol=1e-6) for p, q in zip(net.parameters(), ref_net.parameters())),
    "grads freed:", all(p.grad is None for p in net.parameters()))

# --- batched grads, functional API ----------------------------------------------------------------
xx = torch.randn(3, requires_grad=True)
yy = xx ** 2 * torch.arange(1.0, 4.0)
eye = torch.eye(3)
(jac,) = torch.autograd.grad(yy, xx, eye, is_grads_batched=True)
print("batched jacobian:", jac)
u = torch.randn(2, requires_grad=True)
unused = torch.randn(2, requires_grad=True)
g_u, g_unused = torch.autograd.grad((u * 2).sum(), (u, unused), materialize_grads=True)
print("materialized:", g_u, g_unused)


def energy(q):
    return (q[0] ** 2 * q[1] + torch.sin(q[2]) * q[0]).sum()


q0 = torch.tensor([1.0, 2.0, 0.5])
print("jacobian:", torch.autograd.functional.jacobian(lambda q: q.exp() * q.sum(), q0))
print("hessian:", torch.autograd.functional.hessian(energy, q0))
v = torch.tensor([1.0, 0.0, -1.0])
print("hvp:", torch.autograd.functional.hvp(energy, q0, v)[1],
      "vhp:", torch.autograd.functional.vhp(energy, q0, v)[1])
print("vjp:", torch.autograd.functional.vjp(lambda q: q ** 3, q0, v)[1],
      "jvp:", torch.autograd.functional.jvp(lambda q: q ** 3, q0, v)[1])


# --- a __torch_function__ subclass and a TorchFunctionMode -------------------------------------
class TaggedTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, data, tag="", *args, **kwargs):
        return super().__new__(cls, data, *args, **kwargs)

    def __init__(self, data, tag=""):
        self.tag = tag

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tags = [a.tag for a in args if isinstance(a, TaggedTensor)]
        out = super().__torch_function__(func, types, args, kwargs)
        if isinstance(out, TaggedTensor):
            out.tag = "+".join(t for t in tags if t) or getattr(out, "tag", "")
        return out


t1 = TaggedTensor([1.0, 2.0], tag="a")
t2 = TaggedTensor([3.0, 4.0], tag="b")
s = t1 + t2
print(type(s).__name__, s.tag, s.tolist(), type(s.sum()).__name__,
      isinstance(torch.cat([t1, t2]), TaggedTensor))


class OpLogger(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0,
                                   batch_first=True)
layer.eval()
src = torch.randn(2, 5, 16)
with OpLogger() as logger:
    F.gelu(torch.relu(src).sum(-1))
print("logged:", sorted(logger.calls.items()))

flop_counter = FlopCounterMode(display=False)
with flop_counter:
    out = nn.Linear(16, 8)(src).sum()
    out.backward()
print("linear flops:", flop_counter.get_total_flops(),
      {str(k): v for k, v in sorted(flop_counter.get_flop_counts()["Global"].items(),
                                   key=lambda kv: str(kv[0]))})
mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
with FlopCounterMode(display=False) as fc:
    mlp(src).sum().backward()
print("mlp flops fwd+bwd:", fc.get_total_flops())
