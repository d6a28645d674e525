"""Newer PyTorch extension points the way recent tutorials and model repos use them: a
``torch.library.custom_op`` with ``register_fake`` and ``register_autograd`` (its
``setup_context``), an in-place op declared through ``mutates_args``, ``opcheck``; the
op inside ``torch.compile`` when available; ``torch.cond`` choosing a branch on data;
jagged nested tensors (``torch.nested.nested_tensor(..., layout=torch.jagged)``,
``offsets``, ``unbind``, ``to_padded_tensor``) for variable-length sequences fed through
a linear layer and a masked mean-pool compared with padding; ``torch.masked``'s
``MaskedTensor`` reductions; ``torch.func.functional_call`` with tied weights and
``torch.func.stack_module_state`` ensembles under ``vmap`` with ``randomness``."""
import copy
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.func import functional_call, stack_module_state, vmap

warnings.filterwarnings("ignore")
torch.manual_seed(0)


# --- custom ops ------------------------------------------------------------------------------
@torch.library.custom_op("hprog8::scaled_tanh", mutates_args=())
def scaled_tanh(x: Tensor, alpha: float) -> Tensor:
    return torch.from_numpy(np.tanh(x.detach().cpu().numpy() * alpha)).to(x.device)


@scaled_tanh.register_fake
def _(x, alpha):
    return torch.empty_like(x)


def _setup_context(ctx, inputs, output):
    x, alpha = inputs
    ctx.save_for_backward(output)
    ctx.alpha = alpha


def _backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return grad * ctx.alpha * (1 - y * y), None


scaled_tanh.register_autograd(_backward, setup_context=_setup_context)


@torch.library.custom_op("hprog8::clamp_", mutates_args={"x"})
def clamp_inplace(x: Tensor, lo: float, hi: float) -> None:
    x_np = x.numpy()
    np.clip(x_np, lo, hi, out=x_np)


x = torch.randn(5, requires_grad=True)
y = scaled_tanh(x, 2.0)
y.sum().backward()
print("custom op:", y, "grad ok:", torch.allclose(x.grad, 2 * (1 - torch.tanh(2 * x) ** 2), rtol=1e-3))
print("via torch.ops:", torch.allclose(torch.ops.hprog8.scaled_tanh(x, 2.0), y))
z = torch.linspace(-3, 3, 7)
clamp_inplace(z, -1.0, 2.0)
print("mutated:", z)
try:
    torch.library.opcheck(scaled_tanh, (torch.randn(3, requires_grad=True), 0.5),
                          test_utils=("test_schema", "test_autograd_registration"))
    print("opcheck passed")
except Exception as e:
    print("opcheck:", type(e).__name__)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return scaled_tanh(self.lin(x), 0.5)


gate = Gate()
inp = torch.randn(2, 4)
eager = gate(inp)
if hasattr(torch, "compile") and torch.cuda.is_available():
    compiled = torch.compile(gate)
else:
    compiled = gate
print("compiled == eager:", torch.allclose(compiled(inp), eager))


# --- torch.cond -------------------------------------------------------------------------------
def true_fn(x):
    return x.sin() * 2


def false_fn(x):
    return x.cos() - 1


for v in (torch.tensor([0.5, 1.0]), torch.tensor([-2.0, 0.1])):
    out = torch.cond(v.sum() > 0, true_fn, false_fn, (v,))
    print("cond:", out)

# --- jagged nested tensors ----------------------------------------------------------------------
lengths = [3, 1, 4]
seqs = [torch.randn(n, 6) for n in lengths]
nt = torch.nested.nested_tensor(seqs, layout=torch.jagged)
print("nested:", nt.is_nested, nt.dim(), nt.size(0), nt.size(2), "offsets:", nt.offsets())
proj = nn.Linear(6, 3)
out_nt = proj(nt)
print("unbind shapes:", [tuple(t.shape) for t in out_nt.unbind()])
padded = torch.nested.to_padded_tensor(out_nt, 0.0)
print("padded:", tuple(padded.shape), f"{padded.abs().sum().item():.5f}")
mask = torch.arange(4)[None, :] < torch.tensor(lengths)[:, None]
pad_in = nn.utils.rnn.pad_sequence(seqs, batch_first=True)
pooled = (proj(pad_in) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
pooled_nt = torch.stack([t.mean(0) for t in out_nt.unbind()])
print("pooled equal:", torch.allclose(pooled, pooled_nt, atol=1e-6), pooled_nt[1])
nt2 = torch.nested.as_nested_tensor(seqs, layout=torch.jagged)
print("relu on values:", torch.allclose(F.relu(nt2).values(), F.relu(torch.cat(seqs))))

# --- MaskedTensor ---------------------------------------------------------------------------------
from torch.masked import masked_tensor  # noqa: E402

data = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
m = torch.tensor([[True, False, True], [False, False, True]])
mt = masked_tensor(data, m)
print("masked sum:", mt.sum(), "masked amax dim 1:", mt.amax(1))
print("masked mean dim 0:", mt.mean(0))

# --- functional_call and ensembles -----------------------------------------------------------


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, idx):
        return self.out(self.emb(idx))


tied = Tied()
params = {"emb.weight": torch.zeros(10, 4)}
print("functional_call tied:", functional_call(tied, params, (torch.tensor([1, 2]),),
                                               tie_weights=True).abs().sum().item())
models = [nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 1)) for _ in range(4)]
p, b = stack_module_state(models)
base = copy.deepcopy(models[0]).to("meta")


def fmodel(params, buffers, x):
    return functional_call(base, (params, buffers), (x,))


xb = torch.randn(5, 3)
for m_ in models:
    m_.eval()
base.eval()
ens = vmap(fmodel, in_dims=(0, 0, None))(p, b, xb)
print("ensemble:", tuple(ens.shape), torch.allclose(ens[2], models[2](xb), atol=1e-6))
base.train()
torch.manual_seed(3)
r_diff = vmap(fmodel, in_dims=(0, 0, None), randomness="different")(p, b, xb)
torch.manual_seed(3)
r_same = vmap(fmodel, in_dims=(0, 0, None), randomness="same")(p, b, xb)
print("dropout masks: different ->", tuple(r_diff.shape), "same ->", tuple(r_same.shape))
try:
    vmap(fmodel, in_dims=(0, 0, None))(p, b, xb)
except RuntimeError as e:
    print("RuntimeError:", str(e)[:80])
