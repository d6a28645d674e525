"""Less everyday machinery as tutorials use it: torch.jit.script/trace, activation
checkpointing, weight_norm/spectral_norm parametrizations, torch.func model ensembling
with vmap, einsum attention, and custom autograd Functions."""
import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, stack_module_state, vmap
from torch.nn.utils import parametrizations, parametrize
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)


class MyCell(torch.nn.Module):
    def __init__(self):
        super(MyCell, self).__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.linear(x) + h)
        return new_h, new_h


@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x - 1


x, h = torch.ones(3, 4), torch.zeros(3, 4)
my_cell = MyCell()
traced_cell = torch.jit.trace(my_cell, (x, h))
print("traced", torch.allclose(traced_cell(x, h)[0], my_cell(x, h)[0]))
scripted_gate = torch.jit.script(Gate())
print(scripted_gate(torch.ones(2)).tolist(), scripted_gate(-torch.ones(2)).tolist())
print(fused_gelu(torch.tensor([0.0, 1.0])).tolist()[0], torch.jit.is_scripting())
buf = io.BytesIO()
torch.jit.save(scripted_gate, buf)
buf.seek(0)
loaded = torch.jit.load(buf)
print('jit reload', loaded(torch.ones(2)).tolist())


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.Dropout(0.5), nn.GELU())

    def forward(self, x):
        return x + self.net(x)


blocks = nn.Sequential(*[Block(8) for _ in range(4)])
inp = torch.randn(5, 8, requires_grad=True)
torch.manual_seed(1)
ref = blocks(inp)
ref.sum().backward()
g_ref = inp.grad.clone()
inp.grad = None
torch.manual_seed(1)
out = inp
for b in blocks:
    out = checkpoint(b, out, use_reentrant=False)
out.sum().backward()
print('checkpoint matches:', torch.allclose(out, ref), torch.allclose(inp.grad, g_ref))
inp.grad = None
torch.manual_seed(1)
out2 = checkpoint_sequential(blocks, 2, inp, use_reentrant=False)
out2.sum().backward()
print('checkpoint_sequential matches:', torch.allclose(out2, ref),
      torch.allclose(inp.grad, g_ref))

lin = parametrizations.weight_norm(nn.Linear(6, 3))
print(sorted(n for n, _ in lin.named_parameters()))
print(parametrize.is_parametrized(lin), lin.parametrizations.weight.original0.shape)
w_norm = lin.weight.norm(dim=1)
print('weight_norm g == row norms:',
      torch.allclose(w_norm, lin.parametrizations.weight.original0.squeeze()))
sn = parametrizations.spectral_norm(nn.Linear(6, 6))
for _ in range(20):
    sn(torch.randn(2, 6))
sn.eval()
sigma = torch.linalg.matrix_norm(sn.weight, ord=2)
print('spectral norm ~1:', abs(sigma.item() - 1) < 0.05)


class Square(nn.Module):
    def forward(self, X):
        return X @ X.T


m = nn.Linear(3, 3)
parametrize.register_parametrization(m, "weight", Square())
print('symmetric:', torch.allclose(m.weight, m.weight.T))
with parametrize.cached():
    a, b = m.weight, m.weight
    print('cached same object:', a is b)
parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
print(type(m.weight).__name__, parametrize.is_parametrized(m))

num_models = 5
models = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)) for _ in range(num_models)]
params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0]).to('meta')


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


minibatch = torch.randn(16, 4)
predictions = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
expected = torch.stack([mdl(minibatch) for mdl in models])
print('ensemble', predictions.shape, torch.allclose(predictions, expected, atol=1e-6))


def loss_fn(p, xb, yb):
    return F.mse_loss(functional_call(models[0], p, (xb,)), yb)


p0 = {k: v.detach().requires_grad_() for k, v in models[0].named_parameters()}
targets = torch.randn(16, 2)
per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(p0, minibatch.unsqueeze(1),
                                                       targets.unsqueeze(1))
print('per-sample grads', {k: tuple(v.shape) for k, v in per_sample.items()})
full = torch.autograd.grad(loss_fn(p0, minibatch, targets), list(p0.values()))
print('mean of per-sample == full:',
      torch.allclose(per_sample['0.weight'].mean(0), full[0], atol=1e-6))

q = torch.randn(2, 3, 5, 4)
k = torch.randn(2, 3, 6, 4)
v = torch.randn(2, 3, 6, 4)
scores = torch.einsum('bhqd,bhkd->bhqk', q, k) / (4 ** 0.5)
attn = scores.softmax(dim=-1)
out = torch.einsum('bhqk,bhkd->bhqd', attn, v)
print('einsum attention == sdpa:',
      torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6))
print(torch.einsum('ii', torch.arange(9.).view(3, 3)).item(),
      torch.einsum('i,j->ij', torch.arange(2.), torch.arange(3.)).tolist())


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


t = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
MyReLU.apply(t).pow(2).sum().backward()
print('custom function grad', t.grad.tolist())
print(torch.autograd.gradcheck(MyReLU.apply, (torch.tensor([1.0, -2.0], dtype=torch.double,
                                                           requires_grad=True),)))
