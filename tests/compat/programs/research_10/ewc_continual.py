"""Continual learning the way moskomule/ewc.pytorch, GMvandeVen/continual-learning and
Avalanche's strategies write it: permuted-input tasks (``torch.randperm`` pixel
permutations), elastic weight consolidation with the diagonal empirical Fisher computed
both by a per-sample loop and by ``torch.func`` (``functional_call`` + ``vmap(grad)``),
old parameters kept as registered buffers named ``{n}_mean``/``{n}_fisher`` (dots replaced),
online EWC's decayed Fisher, synaptic intelligence's path integral, and experience replay
from a reservoir-sampled buffer joined to each task's data by ``ConcatDataset``; an
accuracy matrix over tasks and the average forgetting, with a ``named_parameters`` table."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset

torch.manual_seed(0)
random.seed(0)
D, C, N_TASKS = 36, 4, 3

g = torch.Generator().manual_seed(1)
base_x = torch.randn(160, D, generator=g)
W_true = torch.randn(D, C, generator=g)
base_y = (base_x @ W_true).argmax(1)
perms = [torch.arange(D)] + [torch.randperm(D, generator=g) for _ in range(N_TASKS - 1)]
tasks = [TensorDataset(base_x[:, p], base_y) for p in perms]
train_sets = [torch.utils.data.Subset(t, range(120)) for t in tasks]
test_sets = [torch.utils.data.Subset(t, range(120, 160)) for t in tasks]


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, 48)
        self.fc2 = nn.Linear(48, 48)
        self.head = nn.Linear(48, C)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def print_parameter_table(model):
    print(f"{'name':<14}{'shape':<12}{'numel':>6}  requires_grad")
    for n, p in model.named_parameters():
        print(f"{n:<14}{str(tuple(p.shape)):<12}{p.numel():>6}  {p.requires_grad}")
    print("total", sum(p.numel() for p in model.parameters()))


class EWC(nn.Module):
    """Keeps the consolidated means and Fisher diagonals as buffers of a wrapper."""

    def __init__(self, model, online=False, gamma=0.8):
        super().__init__()
        self.model, self.online, self.gamma = model, online, gamma
        self.tasks_seen = 0

    def _names(self):
        return [(n.replace(".", "__"), p) for n, p in self.model.named_parameters()]

    def consolidate(self, fisher):
        for (n, p), f in zip(self._names(), fisher):
            if self.online and self.tasks_seen > 0:
                f = self.gamma * getattr(self, f"{n}_fisher") + f
                setattr(self, f"{n}_fisher", f.clone())
                setattr(self, f"{n}_mean", p.detach().clone())
            else:
                self.register_buffer(f"{n}_mean", p.detach().clone())
                self.register_buffer(f"{n}_fisher", f.clone())
        self.tasks_seen += 1

    def penalty(self):
        if self.tasks_seen == 0:
            return torch.zeros(())
        loss = 0
        for n, p in self._names():
            loss = loss + (getattr(self, f"{n}_fisher") * (p - getattr(self, f"{n}_mean")) ** 2).sum()
        return loss


def fisher_loop(model, dataset):
    model.eval()
    fisher = [torch.zeros_like(p) for p in model.parameters()]
    for x, y in DataLoader(dataset, batch_size=1):
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        for f, p in zip(fisher, model.parameters()):
            f += p.grad.detach() ** 2 / len(dataset)
    return fisher


def fisher_vmap(model, dataset):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(prm, x, y):
        out = functional_call(model, prm, (x.unsqueeze(0),))
        return F.cross_entropy(out, y.unsqueeze(0))

    xs, ys = next(iter(DataLoader(dataset, batch_size=len(dataset))))
    per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, xs, ys)
    return [(per_sample[k] ** 2).mean(0) for k in params]


def evaluate(model, k):
    model.eval()
    x, y = next(iter(DataLoader(test_sets[k], batch_size=40)))
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


class Reservoir:
    def __init__(self, size):
        self.size, self.seen, self.xs, self.ys = size, 0, [], []

    def add(self, x, y):
        for xi, yi in zip(x, y):
            if len(self.xs) < self.size:
                self.xs.append(xi)
                self.ys.append(yi)
            else:
                j = random.randint(0, self.seen)
                if j < self.size:
                    self.xs[j], self.ys[j] = xi, yi
            self.seen += 1

    def dataset(self):
        return TensorDataset(torch.stack(self.xs), torch.stack(self.ys))


def train_sequence(strategy, lam=0.0):
    torch.manual_seed(3)
    random.seed(3)
    model = MLP()
    ewc = EWC(model, online=(strategy == "online_ewc"))
    buffer = Reservoir(30)
    si_omega = [torch.zeros_like(p) for p in model.parameters()]
    si_prev = [p.detach().clone() for p in model.parameters()]
    acc = torch.zeros(N_TASKS, N_TASKS)
    for t in range(N_TASKS):
        data = train_sets[t]
        if strategy == "replay" and t > 0:
            data = ConcatDataset([data, buffer.dataset()])
        opt = torch.optim.Adam(model.parameters(), lr=5e-3)
        loader = DataLoader(data, batch_size=20, shuffle=True,
                            generator=torch.Generator().manual_seed(t))
        w_path = [torch.zeros_like(p) for p in model.parameters()]
        start = [p.detach().clone() for p in model.parameters()]
        for epoch in range(4):
            model.train()
            for x, y in loader:
                before = [p.detach().clone() for p in model.parameters()]
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                if strategy in ("ewc", "online_ewc"):
                    loss = loss + lam / 2 * ewc.penalty()
                if strategy == "si" and t > 0:
                    loss = loss + lam * sum((o * (p - q) ** 2).sum() for o, p, q in
                                            zip(si_omega, model.parameters(), si_prev))
                loss.backward()
                grads = [p.grad.detach().clone() for p in model.parameters()]
                opt.step()
                for w, g_, p, b in zip(w_path, grads, model.parameters(), before):
                    w -= g_ * (p.detach() - b)
        if strategy in ("ewc", "online_ewc"):
            ewc.consolidate(fisher_vmap(model, train_sets[t]))
        if strategy == "si":
            for o, w, p, s in zip(si_omega, w_path, model.parameters(), start):
                o += w / ((p.detach() - s) ** 2 + 0.1)
            si_prev = [p.detach().clone() for p in model.parameters()]
        if strategy == "replay":
            xs, ys = next(iter(DataLoader(train_sets[t], batch_size=120)))
            buffer.add(xs, ys)
        for k in range(N_TASKS):
            acc[t, k] = evaluate(model, k)
    forgetting = (acc.max(0).values[:-1] - acc[-1, :-1]).mean().item()
    print(f"{strategy:<11} final accs {[round(a, 4) for a in acc[-1].tolist()]} "
          f"avg {acc[-1].mean().item():.4f} forgetting {forgetting:.4f}")
    return model, ewc, acc


model = MLP()
print_parameter_table(model)
f1 = fisher_loop(model, train_sets[0])
f2 = fisher_vmap(model, train_sets[0])
print("fisher loop vs vmap", max((a - b).abs().max().item() for a, b in zip(f1, f2)) < 1e-6,
      [round(f.sum().item(), 6) for f in f2])

_, _, acc = train_sequence("finetune")
print(acc)
_, ewc, _ = train_sequence("ewc", lam=200.0)
print(sorted(k for k, _ in ewc.named_buffers())[:4], len(list(ewc.named_buffers())))
print("penalty now", round(ewc.penalty().item(), 5))
_, ewc_on, _ = train_sequence("online_ewc", lam=200.0)
print("online fisher total", round(sum(getattr(ewc_on, f"{n}_fisher").sum().item()
                                       for n, _ in ewc_on._names()), 5))
train_sequence("si", lam=1.0)
train_sequence("replay")
