"""Fourier neural operators the way neuraloperator/neuraloperator's original scripts write
them: ``SpectralConv1d``/``2d`` with ``torch.cfloat`` parameters scaled at init, ``rfft``/
``rfft2`` of the input, complex ``einsum`` on the kept modes written into a zero complex
tensor, ``irfft(n=...)``; a grid channel appended with ``linspace``/``repeat``, a
``UnitGaussianNormalizer``, the relative ``LpLoss``, Adam over complex parameters with
``StepLR``, parameter counting over ``view_as_real``, and a checkpoint of a complex model
saved and loaded."""
import operator
from functools import reduce
from timeit import default_timer

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1):
        super(SpectralConv1d, self).__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.modes1 = modes1
        self.scale = (1 / (in_channels * out_channels))
        self.weights1 = nn.Parameter(
            self.scale * torch.rand(in_channels, out_channels, self.modes1, dtype=torch.cfloat))

    def compl_mul1d(self, input, weights):
        return torch.einsum("bix,iox->box", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(batchsize, self.out_channels, x.size(-1) // 2 + 1,
                             device=x.device, dtype=torch.cfloat)
        out_ft[:, :, :self.modes1] = self.compl_mul1d(x_ft[:, :, :self.modes1], self.weights1)
        x = torch.fft.irfft(out_ft, n=x.size(-1))
        return x


class FNO1d(nn.Module):
    def __init__(self, modes, width):
        super(FNO1d, self).__init__()
        self.modes1 = modes
        self.width = width
        self.padding = 2
        self.fc0 = nn.Linear(2, self.width)
        self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
        self.w0 = nn.Conv1d(self.width, self.width, 1)
        self.w1 = nn.Conv1d(self.width, self.width, 1)
        self.fc1 = nn.Linear(self.width, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        grid = self.get_grid(x.shape, x.device)
        x = torch.cat((x, grid), dim=-1)
        x = self.fc0(x)
        x = x.permute(0, 2, 1)
        x = F.pad(x, [0, self.padding])
        x1 = self.conv0(x)
        x2 = self.w0(x)
        x = F.gelu(x1 + x2)
        x1 = self.conv1(x)
        x2 = self.w1(x)
        x = x1 + x2
        x = x[..., :-self.padding]
        x = x.permute(0, 2, 1)
        x = F.gelu(self.fc1(x))
        return self.fc2(x)

    def get_grid(self, shape, device):
        batchsize, size_x = shape[0], shape[1]
        gridx = torch.tensor(np.linspace(0, 1, size_x), dtype=torch.float)
        gridx = gridx.reshape(1, size_x, 1).repeat([batchsize, 1, 1])
        return gridx.to(device)


class SpectralConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1, modes2):
        super(SpectralConv2d, self).__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.modes1, self.modes2 = modes1, modes2
        self.scale = (1 / (in_channels * out_channels))
        self.weights1 = nn.Parameter(self.scale * torch.rand(
            in_channels, out_channels, self.modes1, self.modes2, dtype=torch.cfloat))
        self.weights2 = nn.Parameter(self.scale * torch.rand(
            in_channels, out_channels, self.modes1, self.modes2, dtype=torch.cfloat))

    def compl_mul2d(self, input, weights):
        return torch.einsum("bixy,ioxy->boxy", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(batchsize, self.out_channels, x.size(-2), x.size(-1) // 2 + 1,
                             dtype=torch.cfloat, device=x.device)
        out_ft[:, :, :self.modes1, :self.modes2] = \
            self.compl_mul2d(x_ft[:, :, :self.modes1, :self.modes2], self.weights1)
        out_ft[:, :, -self.modes1:, :self.modes2] = \
            self.compl_mul2d(x_ft[:, :, -self.modes1:, :self.modes2], self.weights2)
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


class UnitGaussianNormalizer(object):
    def __init__(self, x, eps=0.00001):
        super(UnitGaussianNormalizer, self).__init__()
        self.mean = torch.mean(x, 0)
        self.std = torch.std(x, 0)
        self.eps = eps

    def encode(self, x):
        return (x - self.mean) / (self.std + self.eps)

    def decode(self, x, sample_idx=None):
        std = self.std + self.eps
        mean = self.mean
        return (x * std) + mean


class LpLoss(object):
    def __init__(self, d=2, p=2, size_average=True, reduction=True):
        super(LpLoss, self).__init__()
        assert d > 0 and p > 0
        self.d, self.p = d, p
        self.reduction, self.size_average = reduction, size_average

    def rel(self, x, y):
        num_examples = x.size()[0]
        diff_norms = torch.norm(x.reshape(num_examples, -1) - y.reshape(num_examples, -1),
                                self.p, 1)
        y_norms = torch.norm(y.reshape(num_examples, -1), self.p, 1)
        if self.reduction:
            if self.size_average:
                return torch.mean(diff_norms / y_norms)
            return torch.sum(diff_norms / y_norms)
        return diff_norms / y_norms

    def __call__(self, x, y):
        return self.rel(x, y)


def count_params(model):
    c = 0
    for p in list(model.parameters()):
        c += reduce(operator.mul, list(p.size() + (2,) if p.is_complex() else p.size()))
    return c


# Burgers-like data: the target is a smoothed, shifted copy of the input
ntrain, ntest, s = 32, 8, 64
x = torch.cumsum(torch.randn(ntrain + ntest, s), dim=1) / 8
x = x - x.mean(1, keepdim=True)
kernel = torch.exp(-torch.linspace(-2, 2, 9) ** 2)
y = F.conv1d(F.pad(x[:, None], (4, 4), mode="circular"), (kernel / kernel.sum())[None, None])
y = torch.roll(y[:, 0], shifts=3, dims=1) ** 2
x_train, y_train = x[:ntrain, :, None], y[:ntrain]
x_test, y_test = x[-ntest:, :, None], y[-ntest:]
y_normalizer = UnitGaussianNormalizer(y_train)
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(x_train, y_normalizer.encode(y_train)),
    batch_size=8, shuffle=True)

model = FNO1d(modes=8, width=16)
print(count_params(model), sum(p.numel() for p in model.parameters()))
print(model.conv0.weights1.dtype, model.conv0.weights1.is_complex(),
      torch.view_as_real(model.conv0.weights1).shape)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
myloss = LpLoss(size_average=False)
for ep in range(8):
    model.train()
    t1 = default_timer()
    train_mse = 0
    train_l2 = 0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        out = model(xb)
        mse = F.mse_loss(out.view(xb.shape[0], -1), yb.view(xb.shape[0], -1), reduction="mean")
        out = y_normalizer.decode(out.view(xb.shape[0], -1))
        l2 = myloss(out, y_normalizer.decode(yb))
        l2.backward()
        optimizer.step()
        train_mse += mse.item()
        train_l2 += l2.item()
    scheduler.step()
    model.eval()
    test_l2 = 0.0
    with torch.no_grad():
        out = y_normalizer.decode(model(x_test).view(ntest, -1))
        test_l2 += myloss(out, y_test).item()
    t2 = default_timer()
    assert t2 >= t1
    print(ep, round(train_mse / len(train_loader), 5), round(train_l2 / ntrain, 5),
          round(test_l2 / ntest, 5))

state = optimizer.state_dict()["state"]
print("adam state of a complex weight:", state[2]["exp_avg"].dtype,
      state[2]["exp_avg_sq"].dtype, tuple(state[2]["exp_avg_sq"].shape))
torch.save(model.state_dict(), "fno.pt")
m2 = FNO1d(8, 16)
m2.load_state_dict(torch.load("fno.pt"))
with torch.no_grad():
    print("reloaded:", torch.equal(m2(x_test), model(x_test)))

# 2-D spectral layer: resolution invariance and its gradients
torch.manual_seed(1)
layer = SpectralConv2d(3, 4, 4, 3)
u = torch.randn(2, 3, 16, 16, requires_grad=True)
v = layer(u)
print("2d out:", tuple(v.shape), f"{v.abs().mean().item():.6f}")
v.pow(2).sum().backward()
print("grads:", f"{u.grad.norm().item():.6f}", layer.weights1.grad.dtype,
      f"{layer.weights2.grad.abs().sum().item():.6f}")
u_fine = F.interpolate(u.detach(), size=(32, 32), mode="bicubic", align_corners=False)
print("fine grid:", tuple(layer(u_fine).shape))
