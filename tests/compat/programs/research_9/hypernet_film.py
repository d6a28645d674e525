"""Hypernetworks and feature-wise modulation the way the hypernetwork repositories
(g1910/HyperNetworks' ``HyperNetwork`` emitting conv kernels from layer embeddings, the
"HyperNetworks for implicit neural representations" code) and ethanjperez/film write them:
a hypernetwork mapping a learned ``z`` per layer to kernel weights used through
``F.conv2d`` and ``F.linear`` with ``torch.func.functional_call`` for a target network, FiLM
layers (``gamma * x + beta`` from a conditioning vector, broadcast by ``unsqueeze``), a
conditional sine-activated (SIREN) coordinate network fitted per task by a hypernetwork
over task embeddings, gradients flowing into the hypernetwork only, and ``torch.func.vmap``
over tasks."""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

torch.manual_seed(0)


class HyperNetwork(nn.Module):
    def __init__(self, f_size=3, z_dim=8, out_size=4, in_size=4):
        super().__init__()
        self.z_dim, self.f_size, self.out_size, self.in_size = z_dim, f_size, out_size, in_size
        self.w1 = nn.Parameter(torch.fmod(torch.randn((self.z_dim, self.out_size * self.f_size * self.f_size)), 2))
        self.b1 = nn.Parameter(torch.fmod(torch.randn((self.out_size * self.f_size * self.f_size)), 2))
        self.w2 = nn.Parameter(torch.fmod(torch.randn((self.z_dim, self.in_size * self.z_dim)), 2))
        self.b2 = nn.Parameter(torch.fmod(torch.randn((self.in_size * self.z_dim)), 2))

    def forward(self, z):
        h_in = torch.matmul(z, self.w2) + self.b2
        h_in = h_in.view(self.in_size, self.z_dim)
        h_final = torch.matmul(h_in, self.w1) + self.b1
        return h_final.view(self.out_size, self.in_size, self.f_size, self.f_size)


class Embedding(nn.Module):
    def __init__(self, z_num, z_dim):
        super().__init__()
        self.z_list = nn.ParameterList()
        self.z_num, self.z_dim = z_num, z_dim
        h, k = self.z_num
        for i in range(h * k):
            self.z_list.append(nn.Parameter(torch.fmod(torch.randn(self.z_dim), 2)))

    def forward(self, hyper_net):
        ww = []
        h, k = self.z_num
        for i in range(h):
            w = []
            for j in range(k):
                w.append(hyper_net(self.z_list[i * k + j]))
            ww.append(torch.cat(w, dim=1))
        return torch.cat(ww, dim=0)


class FiLM(nn.Module):
    def forward(self, x, gammas, betas):
        gammas = gammas.unsqueeze(2).unsqueeze(3).expand_as(x)
        betas = betas.unsqueeze(2).unsqueeze(3).expand_as(x)
        return (gammas * x) + betas


class FiLMedNet(nn.Module):
    def __init__(self, cond_dim=3, channels=8):
        super().__init__()
        self.hyper = HyperNetwork(z_dim=8, out_size=4, in_size=4)
        self.emb = Embedding((2, 1), 8)  # an 8 x 4 x 3 x 3 kernel from two z's
        self.stem = nn.Conv2d(4, 4, 1)
        self.film_gen = nn.Linear(cond_dim, 2 * channels)
        self.film = FiLM()
        self.bn = nn.BatchNorm2d(channels, affine=False)
        self.head = nn.Linear(channels, 2)

    def forward(self, x, cond):
        w = self.emb(self.hyper)
        x = F.conv2d(self.stem(x), w, padding=1)
        film = self.film_gen(cond)
        gammas, betas = film[:, :8], film[:, 8:]
        x = F.relu(self.film(self.bn(x), gammas, betas))
        return self.head(x.mean((2, 3)))


net = FiLMedNet()
print("generated kernel:", tuple(net.emb(net.hyper).shape),
      "hyper params:", sum(p.numel() for p in net.hyper.parameters()) +
      sum(p.numel() for p in net.emb.parameters()))
g = torch.Generator().manual_seed(1)
x = torch.randn(16, 4, 6, 6, generator=g)
cond = F.one_hot(torch.arange(16) % 3, 3).float()
y = ((x.mean((1, 2, 3)) > 0).long() + (torch.arange(16) % 3 == 1).long()) % 2
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
for it in range(5):
    loss = F.cross_entropy(net(x, cond), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"film it {it} loss {loss.item():.5f} z0 grad {net.emb.z_list[0].grad.norm().item():.5f}")


class Sine(nn.Module):
    def __init__(self, w0=30.0):
        super().__init__()
        self.w0 = w0

    def forward(self, x):
        return torch.sin(self.w0 * x)


class Siren(nn.Module):
    def __init__(self, hidden=16, w0=30.0):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(1, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, 1)
        self.act1, self.act2 = Sine(w0), Sine(1.0)
        with torch.no_grad():
            self.l1.weight.uniform_(-1, 1)
            bound = math.sqrt(6 / hidden) / w0
            self.l2.weight.uniform_(-bound * w0, bound * w0)

    def forward(self, x):
        return self.l3(self.act2(self.l2(self.act1(self.l1(x)))))


target = Siren()
shapes = {n: p.shape for n, p in target.named_parameters()}
numels = {n: p.numel() for n, p in target.named_parameters()}


class TaskHyper(nn.Module):
    def __init__(self, tasks=3, emb=6):
        super().__init__()
        self.task_emb = nn.Embedding(tasks, emb)
        self.net = nn.Sequential(nn.Linear(emb, 32), nn.ReLU(), nn.Linear(32, sum(numels.values())))
        with torch.no_grad():
            self.net[-1].weight.mul_(0.01)
            base = torch.cat([p.detach().flatten() for p in target.parameters()])
            self.net[-1].bias.copy_(base)

    def forward(self, task):
        flat = self.net(self.task_emb(task))
        params, offset = {}, 0
        for n in shapes:
            params[n] = flat[offset:offset + numels[n]].view(shapes[n])
            offset += numels[n]
        return params


hyper = TaskHyper()
coords = torch.linspace(-1, 1, 24).unsqueeze(-1)
signals = torch.stack([torch.sin(math.pi * (k + 1) * coords) for k in range(3)])
opt = torch.optim.Adam(hyper.parameters(), lr=1e-3)
for it in range(5):
    losses = []
    for task in range(3):
        params = hyper(torch.tensor(task))
        pred = functional_call(target, params, (coords,))
        losses.append(F.mse_loss(pred, signals[task]))
    loss = torch.stack(losses).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"siren it {it} loss {loss.item():.5f} per task {[round(l.item(), 4) for l in losses]}")
print("target untouched:", all(p.grad is None for p in target.parameters()))
with torch.no_grad():
    all_params = vmap(hyper)(torch.arange(3))
    preds = vmap(lambda p: functional_call(target, p, (coords,)))(all_params)
    loop = torch.stack([functional_call(target, hyper(torch.tensor(t)), (coords,)) for t in range(3)])
print("vmap over tasks:", tuple(preds.shape), torch.allclose(preds, loop, atol=1e-5))
