"""functorch's API as 2022-era programs use it (run under the compat hook, compared with
PyTorch's output in functorch_legacy_program.expected)."""
import warnings

import torch
from functorch import (combine_state_for_ensemble, grad, make_functional,
                       make_functional_with_buffers, vmap)
from functorch.experimental import chunk_vmap, replace_all_batch_norm_modules_

warnings.simplefilter("ignore")
torch.manual_seed(0)
m = torch.nn.Linear(3, 2)
f, p = make_functional(m)
x = torch.ones(4, 3)
print(torch.allclose(f(p, x), m(x)), type(f).__name__, type(p).__name__, len(p))


def loss(params, x):
    return f(params, x).sum()


g = grad(loss)(p, x)
print([t.shape for t in g])
ms = [torch.nn.Linear(3, 2) for _ in range(4)]
fm, ps, bs = combine_state_for_ensemble(ms)
out = vmap(fm, in_dims=(0, 0, None))(ps, bs, x)
print(out.shape, torch.allclose(out[2], ms[2](x)), [t.requires_grad for t in ps])
bn = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
fb, pb, bb = make_functional_with_buffers(bn)
print(len(pb), len(bb), torch.allclose(fb(pb, bb, x), bn(x)))
try:
    make_functional(bn)
except RuntimeError as e:
    print(e)
print(chunk_vmap(torch.sin, chunks=3)(torch.zeros(7, 2)).shape)
replace_all_batch_norm_modules_(bn)
print(bn[1].running_mean)
print(type(f.stateless_model).__name__, f.stateless_model.weight.device)
