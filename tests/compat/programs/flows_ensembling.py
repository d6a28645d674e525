"""A RealNVP-style normalizing flow on 2-D points with torch.distributions (MultivariateNormal prior, transforms, TransformedDistribution, Independent, MixtureSameFamily, kl_divergence, constraints, validate_args) and the model-ensembling / per-sample-gradients tutorials with torch.func."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, MultivariateNormal, TransformedDistribution, Independent, Categorical, kl_divergence
from torch.distributions.transforms import AffineTransform, SigmoidTransform, ExpTransform, ComposeTransform, TanhTransform
import torch.distributions as D
from torch.func import stack_module_state, functional_call, vmap, grad
import copy
torch.manual_seed(0)
# normalizing flow: RealNVP-ish coupling on 2-D points
class Coupling(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer('mask', mask)
        self.s = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
        self.t = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    def forward(self, x):
        xm = x * self.mask; s = self.s(xm) * (1 - self.mask); t = self.t(xm) * (1 - self.mask)
        y = xm + (1 - self.mask) * (x * torch.exp(s) + t); return y, s.sum(dim=1)
    def inverse(self, y):
        ym = y * self.mask; s = self.s(ym) * (1 - self.mask); t = self.t(ym) * (1 - self.mask)
        return ym + (1 - self.mask) * (y - t) * torch.exp(-s)
prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
flows = nn.ModuleList([Coupling(torch.tensor([1., 0.])), Coupling(torch.tensor([0., 1.]))])
opt = torch.optim.Adam(flows.parameters(), lr=1e-2)
data = torch.randn(256, 2) * torch.tensor([2.0, 0.5]) + torch.tensor([1.0, -1.0])
losses = []
for it in range(30):
    z, logdet = data, torch.zeros(data.shape[0])
    for f in flows:
        z, ld = f(z); logdet = logdet + ld
    loss = -(prior.log_prob(z) + logdet).mean()
    opt.zero_grad(); loss.backward(); opt.step(); losses.append(loss.item())
print('flow loss decreased', losses[-1] < losses[0])
x = torch.randn(5, 2); y = x
for f in flows: y, _ = f(y)
for f in reversed(flows): y = f.inverse(y)
print('invertible', torch.allclose(x, y, atol=1e-5))
base = Normal(torch.zeros(3), torch.ones(3))
logit_normal = TransformedDistribution(base, [SigmoidTransform()])
s = logit_normal.sample((4,)); print(s.shape, bool(((s > 0) & (s < 1)).all()))
lognormal = TransformedDistribution(Normal(0., 1.), [ExpTransform()])
print(torch.allclose(lognormal.log_prob(torch.tensor(2.0)), D.LogNormal(0., 1.).log_prob(torch.tensor(2.0))))
aff = TransformedDistribution(Normal(torch.zeros(2), torch.ones(2)), ComposeTransform([AffineTransform(1., 2.), TanhTransform(cache_size=1)]))
v = aff.rsample((3,)); print(v.shape, aff.log_prob(v).shape)
ind = Independent(Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1); print(ind.batch_shape, ind.event_shape, ind)
print(kl_divergence(Normal(0., 1.), Normal(1., 2.)))
print(Categorical(logits=torch.tensor([0., 1., 2.])).entropy())
mix = D.MixtureSameFamily(D.Categorical(torch.ones(3)), D.Normal(torch.tensor([-1., 0., 1.]), torch.ones(3)))
print(mix.log_prob(torch.tensor([0.0, 0.5])))
print(D.Beta(2., 3.).mean, D.Gamma(2., 1.).variance, D.Dirichlet(torch.ones(3)).mean)
print(D.constraints.positive.check(torch.tensor([-1., 1.])), D.biject_to(D.constraints.positive)(torch.tensor(0.)))
try:
    Normal(torch.tensor(0.), torch.tensor(-1.))
except ValueError as e:
    print('ValueError', str(e)[:60])
# model ensembling tutorial
class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(784, 128); self.fc2 = nn.Linear(128, 128); self.fc3 = nn.Linear(128, 10)
    def forward(self, x):
        x = x.flatten(1); x = self.fc1(x); x = F.relu(x); x = self.fc2(x); x = F.relu(x); return self.fc3(x)
num_models = 4
data = torch.randn(16, 64, 1, 28, 28); targets = torch.randint(10, (6400,))
models = [SimpleMLP() for _ in range(num_models)]
minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
minibatch = data[0]
predictions2 = [model(minibatch) for model in models]
params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0]); base_model = base_model.to('meta')
def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))
print([p.size(0) for p in params.values()])
minibatches = data[:num_models]
predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5)
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
print('ensembling ok', predictions2_vmap.shape)
# per-sample-grads
model = SimpleMLP()
def loss_fn(predictions, targets): return F.nll_loss(predictions, targets)
params = {k: v.detach() for k, v in model.named_parameters()}; buffers = {k: v.detach() for k, v in model.named_buffers()}
def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0); targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,)); return loss_fn(predictions, targets)
ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft = ft_compute_sample_grad(params, buffers, data[0][:8], targets[:8])
print({k: tuple(v.shape) for k, v in ft.items()})
