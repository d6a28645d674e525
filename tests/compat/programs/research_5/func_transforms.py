"""The torch.func and forward-mode AD tutorials on small models: dual numbers with
torch.autograd.forward_ad (make_dual, unpack_dual, a module's forward-mode tangent via
functional_call), jvp/vjp/jacrev/jacfwd/hessian of a function, per-sample gradients with
vmap(grad(...)) over functional_call, model ensembling with stack_module_state, and an
empirical neural tangent kernel."""
import copy

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F
from torch.func import (functional_call, grad, hessian, jacfwd, jacrev, jvp, stack_module_state,
                        vjp, vmap)

torch.manual_seed(0)

# ---- forward-mode AD ----------------------------------------------------------------------
primal, tangent = torch.randn(4), torch.randn(4)


def fn(x, y):
    return x ** 2 + y.sin()


with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input, primal)
    jvp_out = fwAD.unpack_dual(dual_output).tangent
print("forward-ad", torch.allclose(jvp_out, 2 * primal * tangent))
model = nn.Linear(4, 3)
params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.rand_like(p) for name, p in params.items()}
with fwAD.dual_level():
    dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
    out = functional_call(model, dual_params, (primal,))
    jvp_mod = fwAD.unpack_dual(out).tangent
print("module jvp", [round(v, 4) for v in jvp_mod.tolist()])

# ---- jacobians and hessians ----------------------------------------------------------------


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 5
weight, bias, x = torch.randn(D, D), torch.randn(D), torch.randn(D)
jr = jacrev(predict, argnums=2)(weight, bias, x)
jf = jacfwd(predict, argnums=2)(weight, bias, x)
print("jacrev==jacfwd", jr.shape, torch.allclose(jr, jf, atol=1e-6))
jw, jb = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print("param jacobians", tuple(jw.shape), tuple(jb.shape), f"{jw.abs().sum().item():.4f}")
h = hessian(predict, argnums=2)(weight, bias, x)
print("hessian", tuple(h.shape), f"{h.abs().sum().item():.4f}")
_, jvp_out = jvp(lambda x: predict(weight, bias, x), (x,), (torch.ones(D),))
_, vjp_fn = vjp(lambda x: predict(weight, bias, x), x)
print("jvp/vjp", f"{jvp_out.sum().item():.4f}", f"{vjp_fn(torch.ones(D))[0].sum().item():.4f}")
batched = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias,
                                                                    torch.randn(3, D))
print("batched jacobians", tuple(batched.shape))


# ---- per-sample gradients ------------------------------------------------------------------
class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.fc1 = nn.Linear(4 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)


cnn = SimpleCNN()
data, targets = torch.randn(6, 1, 8, 8), torch.randint(10, (6,))
params = {k: v.detach() for k, v in cnn.named_parameters()}
buffers = {k: v.detach() for k, v in cnn.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(cnn, (params, buffers), (sample.unsqueeze(0),))
    return F.nll_loss(predictions, target.unsqueeze(0))


ft_per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data,
                                                                       targets)
manual = []
for i in range(len(data)):
    cnn.zero_grad()
    F.nll_loss(cnn(data[i:i + 1]), targets[i:i + 1]).backward()
    manual.append(cnn.fc1.weight.grad.clone())
print("per-sample", tuple(ft_per_sample["fc1.weight"].shape),
      torch.allclose(ft_per_sample["fc1.weight"], torch.stack(manual), atol=1e-6))

# ---- ensembling and the NTK ----------------------------------------------------------------
models = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)) for _ in range(3)]
ens_params, ens_buffers = stack_module_state(models)
base = copy.deepcopy(models[0]).to("meta")


def fmodel(params, buffers, x):
    return functional_call(base, (params, buffers), (x,))


xb = torch.randn(5, 4)
ens = vmap(fmodel, in_dims=(0, 0, None))(ens_params, ens_buffers, xb)
loop = torch.stack([m(xb) for m in models])
print("ensemble", tuple(ens.shape), torch.allclose(ens, loop, atol=1e-6))

net = models[0]
p0 = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk(params, x1, x2):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac1 = [j.flatten(2) for j in jac1.values()]
    jac2 = [j.flatten(2) for j in jac2.values()]
    return sum(torch.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2))


ntk = empirical_ntk(p0, xb[:3], xb[3:])
print("ntk", tuple(ntk.shape), f"{ntk.sum().item():.4f}", f"{ntk.diagonal(0, 2, 3).sum().item():.4f}")
