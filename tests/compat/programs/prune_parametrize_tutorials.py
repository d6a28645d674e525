"""The pruning tutorial (torch.nn.utils.prune: random/l1/ln-structured/global pruning, a custom BasePruningMethod, remove) and the parametrizations tutorial (Symmetric, Skew, matrix_exp, cached, right_inverse, remove_parametrizations, orthogonal/weight_norm/spectral_norm)."""
import torch
from torch import nn
import torch.nn.utils.prune as prune
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils import parametrizations
torch.manual_seed(0)
class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3); self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120); self.fc2 = nn.Linear(120, 84); self.fc3 = nn.Linear(84, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2)); x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0])); x = F.relu(self.fc1(x)); x = F.relu(self.fc2(x)); return self.fc3(x)
model = LeNet()
module = model.conv1
print(list(module.named_parameters())[0][0], list(module.named_buffers()))
prune.random_unstructured(module, name="weight", amount=0.3)
print([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()])
print(module.weight.shape, int((module.weight_mask == 0).sum()))
print(len(module._forward_pre_hooks), [type(h).__name__ for h in module._forward_pre_hooks.values()])
prune.l1_unstructured(module, name="bias", amount=3)
print(int((module.bias_mask == 0).sum()))
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
print([type(h).__name__ for h in hook], type(hook).__name__)
print(model.state_dict().keys())
prune.remove(module, 'weight'); print([n for n, _ in module.named_parameters()])
new_model = LeNet()
for name, module in new_model.named_modules():
    if isinstance(module, torch.nn.Conv2d): prune.l1_unstructured(module, name='weight', amount=0.2)
    elif isinstance(module, torch.nn.Linear): prune.l1_unstructured(module, name='weight', amount=0.4)
print(dict(new_model.named_buffers()).keys())
model = LeNet()
parameters_to_prune = ((model.conv1, 'weight'), (model.conv2, 'weight'), (model.fc1, 'weight'), (model.fc2, 'weight'), (model.fc3, 'weight'))
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
tot = sum(float(torch.sum(m.weight == 0)) for m, _ in parameters_to_prune); n = sum(float(m.weight.nelement()) for m, _ in parameters_to_prune)
print("Global sparsity: {:.2f}%".format(100. * tot / n))
class FooBarPruningMethod(prune.BasePruningMethod):
    PRUNING_TYPE = 'unstructured'
    def compute_mask(self, t, default_mask):
        mask = default_mask.clone(); mask.view(-1)[::2] = 0; return mask
def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name); return module
model = LeNet(); foobar_unstructured(model.fc3, name='bias'); print(model.fc3.bias_mask)
print(model(torch.randn(2, 1, 28, 28)).shape)
# parametrizations tutorial
class Symmetric(nn.Module):
    def forward(self, X): return X.triu() + X.triu(1).transpose(-1, -2)
layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())
A = layer.weight; print(torch.allclose(A, A.T)); print(layer)
print(layer.parametrizations.weight.original.shape, parametrize.is_parametrized(layer), parametrize.is_parametrized(layer, "bias"))
class Skew(nn.Module):
    def forward(self, X): A = X.triu(1); return A - A.transpose(-1, -2)
cnn = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
parametrize.register_parametrization(cnn, "weight", Skew())
print(cnn.weight[0, 1].shape)
class MatrixExponential(nn.Module):
    def forward(self, X): return torch.matrix_exp(X)
layer_orthogonal = nn.Linear(3, 3)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
X = layer_orthogonal.weight; print(torch.dist(X.T @ X, torch.eye(3)) < 1e-5)
with parametrize.cached():
    print(layer.weight is layer.weight)
class NoisyParametrization(nn.Module):
    def forward(self, X): return X
    def right_inverse(self, A): return A
layer = nn.Linear(3, 3); parametrize.register_parametrization(layer, "weight", NoisyParametrization())
layer.weight = torch.eye(3); print(layer.weight)
parametrize.remove_parametrizations(layer, "weight"); print(type(layer.weight).__name__, layer)
lin = parametrizations.orthogonal(nn.Linear(4, 4)); W = lin.weight; print(torch.allclose(W @ W.T, torch.eye(4), atol=1e-5))
wn = parametrizations.weight_norm(nn.Linear(4, 2)); print(sorted(n for n, _ in wn.named_parameters()))
sn = parametrizations.spectral_norm(nn.Linear(4, 2)); print(sorted(n for n, _ in sn.named_buffers()))
old = nn.utils.weight_norm(nn.Linear(3, 2)); print(sorted(n for n, _ in old.named_parameters()))
