"""Hooks and training utilities as blog posts use them: forward/pre/full-backward hooks for feature extraction, tensor hooks, the WGAN-GP gradient penalty, torch.autograd.functional, parameters_to_vector, OneCycleLR / CosineAnnealingWarmRestarts / LambdaLR / ReduceLROnPlateau, and swa_utils (AveragedModel, EMA, SWALR, update_bn)."""
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
# hooks, gradient penalty, functional autograd, param vectors, schedulers, swa
feats = {}
def get_activation(name):
    def hook(model, input, output): feats[name] = output.detach()
    return hook
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
h1 = model[1].register_forward_hook(get_activation('relu')); grads = []
h2 = model[0].register_full_backward_hook(lambda m, gi, go: grads.append((len(gi), go[0].shape)))
h3 = model[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
out = model(torch.randn(3, 4)); out.sum().backward(); print(feats['relu'].shape, grads)
h1.remove(); h2.remove(); h3.remove()
xg = torch.randn(3, 4, requires_grad=True); xg.register_hook(lambda g: g * 0 + 1); (xg ** 2).sum().backward(); print(xg.grad)
D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
real = torch.randn(5, 4); fake = torch.randn(5, 4); alpha = torch.rand(5, 1)
interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True); d_interp = D(interp)
gradients = torch.autograd.grad(outputs=d_interp, inputs=interp, grad_outputs=torch.ones_like(d_interp), create_graph=True, retain_graph=True, only_inputs=True)[0]
gp = ((gradients.norm(2, dim=1) - 1) ** 2).mean(); gp.backward(); print(gp.dim(), D[0].weight.grad.shape)
from torch.autograd.functional import jacobian, hessian, vjp, jvp, hvp
def fn(x): return x ** 3 + x.sin()
print(jacobian(fn, torch.ones(3)).shape, hessian(lambda x: (x ** 3).sum(), torch.ones(2)), vjp(fn, torch.ones(2), torch.ones(2))[1], jvp(fn, torch.ones(2), torch.ones(2))[1])
vec = nn.utils.parameters_to_vector(model.parameters()); print(vec.shape); nn.utils.vector_to_parameters(torch.zeros_like(vec), model.parameters()); print(model[0].weight.abs().sum())
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10); lrs = []
for _ in range(10): opt.step(); sched.step(); lrs.append(round(sched.get_last_lr()[0], 6))
print(lrs)
opt = torch.optim.SGD(model.parameters(), lr=0.1); s2 = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2); l2 = []
for _ in range(7): opt.step(); s2.step(); l2.append(round(opt.param_groups[0]['lr'], 6))
print(l2)
opt = torch.optim.SGD(model.parameters(), lr=0.1); s3 = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lambda e: 0.5 ** e); opt.step(); s3.step(); print(s3.get_last_lr(), s3.state_dict()['base_lrs'])
opt = torch.optim.Adam(model.parameters(), lr=0.1); s4 = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, 'min', patience=1, factor=0.5)
for v in [1.0, 1.0, 1.0, 1.0]: s4.step(v)
print(opt.param_groups[0]['lr'], s4.get_last_lr())
from torch.optim.swa_utils import AveragedModel, SWALR, update_bn, get_ema_multi_avg_fn
bn_model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)); swa_model = AveragedModel(bn_model); ema = AveragedModel(bn_model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
opt = torch.optim.SGD(bn_model.parameters(), lr=0.1); swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2)
loader = [torch.randn(8, 4) for _ in range(3)]
for epoch in range(3):
    for xb in loader: opt.zero_grad(); bn_model(xb).sum().backward(); opt.step()
    swa_model.update_parameters(bn_model); ema.update_parameters(bn_model); swa_sched.step()
update_bn(loader, swa_model); print(swa_model.n_averaged, swa_model.module[1].running_mean.shape, round(opt.param_groups[0]['lr'], 6), list(swa_model.state_dict().keys())[-1])
print(torch.cdist(torch.ones(2, 3), torch.zeros(4, 3)).shape, torch.einsum('bij,bjk->bik', torch.ones(2, 3, 4), torch.ones(2, 4, 5)).shape)
