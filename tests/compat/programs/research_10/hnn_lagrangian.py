"""Physics-informed networks the way greydanus/hamiltonian-nn and
MilesCranmer/lagrangian_nns (in its PyTorch ports) write them: a pendulum's trajectories
from a hand RK4 with ``torch.stack``, an ``HNN`` whose ``time_derivative`` takes
``torch.autograd.grad(create_graph=True)`` of the learned Hamiltonian and applies the
symplectic matrix (``permutation_tensor``), a baseline MLP, leapfrog integration of the
learned field, energy drift; a Lagrangian network whose accelerations come from
``torch.func.hessian``/``jacrev`` of L under ``vmap`` and ``torch.linalg.pinv``; the
``argparse`` defaults of the repository and a ``torch.save`` of ``{'args', 'model',
'stats'}``."""
import argparse

import torch
import torch.nn as nn
from torch.func import grad, hessian, jacrev, vmap

parser = argparse.ArgumentParser(description=None)
parser.add_argument("--input_dim", default=2, type=int)
parser.add_argument("--hidden_dim", default=32, type=int)
parser.add_argument("--learn_rate", default=1e-2, type=float)
parser.add_argument("--nonlinearity", default="tanh", type=str)
parser.add_argument("--total_steps", default=60, type=int)
parser.add_argument("--field_type", default="solenoidal", type=str)
parser.add_argument("--baseline", dest="baseline", action="store_true")
parser.add_argument("--seed", default=0, type=int)
parser.set_defaults(feature=True)
args = parser.parse_args([])
torch.manual_seed(args.seed)
torch.set_default_dtype(torch.float64)


def hamiltonian_fn(coords):
    q, p = torch.split(coords, 1, dim=-1)
    return 3 * (1 - torch.cos(q)) + p ** 2


def dynamics_fn(t, coords):
    coords = coords.clone().requires_grad_(True)
    dH = torch.autograd.grad(hamiltonian_fn(coords).sum(), coords)[0]
    dqdt, dpdt = torch.split(dH, 1, dim=-1)
    return torch.cat([dpdt, -dqdt], dim=-1)


def rk4(fun, y0, t):
    ys = [y0]
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[-1]
        k1 = fun(t[i], y)
        k2 = fun(t[i] + h / 2, y + h / 2 * k1)
        k3 = fun(t[i] + h / 2, y + h / 2 * k2)
        k4 = fun(t[i] + h, y + h * k3)
        ys.append(y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return torch.stack(ys)


def get_dataset(samples=12, steps=20, noise_std=0.05):
    g = torch.Generator().manual_seed(1)
    y0 = torch.rand(samples, 2, generator=g) * 2 - 1
    radius = torch.rand(samples, 1, generator=g) + 1.3
    y0 = y0 / y0.norm(dim=1, keepdim=True) * radius
    t = torch.linspace(0, 3, steps)
    traj = rk4(dynamics_fn, y0, t)  # (steps, samples, 2)
    x = traj.reshape(-1, 2)
    dx = dynamics_fn(None, x)
    x = x + noise_std * torch.randn(x.shape, generator=g)
    return {"x": x, "dx": dx.detach()}


def choose_nonlinearity(name):
    return {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid,
            "softplus": torch.nn.functional.softplus}[name]


class MLP(torch.nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity="tanh"):
        super(MLP, self).__init__()
        self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
        self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)
        for l in [self.linear1, self.linear2, self.linear3]:
            torch.nn.init.orthogonal_(l.weight)
        self.nonlinearity = choose_nonlinearity(nonlinearity)

    def forward(self, x, separate_fields=False):
        h = self.nonlinearity(self.linear1(x))
        h = self.nonlinearity(self.linear2(h))
        return self.linear3(h)


class HNN(torch.nn.Module):
    def __init__(self, input_dim, differentiable_model, field_type="solenoidal",
                 baseline=False, assume_canonical_coords=True):
        super(HNN, self).__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model
        self.assume_canonical_coords = assume_canonical_coords
        self.M = self.permutation_tensor(input_dim)
        self.field_type = field_type

    def forward(self, x):
        if self.baseline:
            return self.differentiable_model(x)
        y = self.differentiable_model(x)
        assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
        return y.split(1, 1)

    def time_derivative(self, x, t=None, separate_fields=False):
        if self.baseline:
            return self.differentiable_model(x)
        F1, F2 = self.forward(x)
        conservative_field = torch.zeros_like(x)
        solenoidal_field = torch.zeros_like(x)
        if self.field_type != "solenoidal":
            dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[0]
            conservative_field = dF1 @ torch.eye(*self.M.shape)
        if self.field_type != "conservative":
            dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[0]
            solenoidal_field = dF2 @ self.M.t()
        if separate_fields:
            return [conservative_field, solenoidal_field]
        return conservative_field + solenoidal_field

    def permutation_tensor(self, n):
        M = None
        if self.assume_canonical_coords:
            M = torch.eye(n)
            M = torch.cat([M[n // 2:], -M[:n // 2]])
        return M


def train(args):
    output_dim = args.input_dim if args.baseline else 2
    nn_model = MLP(args.input_dim, args.hidden_dim, output_dim, args.nonlinearity)
    model = HNN(args.input_dim, differentiable_model=nn_model, field_type=args.field_type,
                baseline=args.baseline)
    optim = torch.optim.Adam(model.parameters(), args.learn_rate, weight_decay=1e-4)
    data = get_dataset()
    x = data["x"].clone().requires_grad_(True)
    dxdt = data["dx"]
    stats = {"train_loss": []}
    for step in range(args.total_steps + 1):
        dxdt_hat = model.time_derivative(x)
        loss = (dxdt - dxdt_hat).pow(2).mean()
        loss.backward()
        optim.step()
        optim.zero_grad()
        stats["train_loss"].append(loss.item())
        if step % 20 == 0:
            print("step {}, train_loss {:.4e}".format(step, loss.item()))
    return model, stats


hnn, hnn_stats = train(args)
args.baseline = True
base, base_stats = train(args)
args.baseline = False
print(hnn)
print("M", hnn.M.tolist())


def integrate(model, y0, steps=40, dt=0.1, leapfrog=True):
    y = y0.clone()
    energies = []
    for _ in range(steps):
        yv = y.clone().requires_grad_(True)
        if leapfrog and not model.baseline:
            q, p = yv[:, :1], yv[:, 1:]
            dp = model.time_derivative(torch.cat([q, p], 1))[:, 1:]
            p_half = p + dt / 2 * dp
            y_mid = torch.cat([q, p_half], 1).detach().requires_grad_(True)
            q_new = q + dt * model.time_derivative(y_mid)[:, :1]
            y_new = torch.cat([q_new, p_half], 1).detach().requires_grad_(True)
            p_new = p_half + dt / 2 * model.time_derivative(y_new)[:, 1:]
            y = torch.cat([q_new, p_new], 1).detach()
        else:
            y = (yv + dt * model.time_derivative(yv)).detach()
        energies.append(hamiltonian_fn(y).squeeze(-1))
    return y, torch.stack(energies)


y0 = torch.tensor([[1.0, 0.5], [0.3, -1.2]])
for name, model in (("hnn", hnn), ("baseline", base)):
    yT, E = integrate(model, y0)
    print(f"{name}: final state {yT.tolist()} energy drift {(E[-1] - E[0]).abs().max().item():.5f}")


class LNN(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Softplus(), nn.Linear(hidden, hidden),
                                 nn.Softplus(), nn.Linear(hidden, 1))

    def lagrangian(self, q, qdot):
        return self.net(torch.cat([q, qdot]).unsqueeze(0)).squeeze()

    def acceleration(self, q, qdot):
        Hm = hessian(self.lagrangian, argnums=1)(q, qdot)
        J = jacrev(jacrev(self.lagrangian, argnums=0), argnums=1)(q, qdot)
        dLdq = grad(self.lagrangian, argnums=0)(q, qdot)
        return torch.linalg.pinv(Hm) @ (dLdq - J @ qdot)

    def forward(self, state):
        q, qdot = state[:, :1], state[:, 1:]
        return vmap(self.acceleration)(q, qdot)


def true_lagrangian(q, qdot):
    return (0.5 * qdot ** 2 - 3 * (1 - torch.cos(q))).sum()


lnn = LNN()
print(lnn)
states = get_dataset(samples=6, steps=10, noise_std=0.0)["x"]
true_acc = -3 * torch.sin(states[:, :1])
opt = torch.optim.Adam(lnn.parameters(), lr=5e-3)
for step in range(30):
    acc = lnn(states)
    loss = (acc - true_acc).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"lnn step {step} loss {loss.item():.6f}")
q0, qd0 = torch.tensor([0.4]), torch.tensor([0.1])
Ht = hessian(true_lagrangian, argnums=1)(q0, qd0)
print("true mass matrix", Ht.tolist(), "true acc",
      (torch.linalg.pinv(Ht) @ grad(true_lagrangian, argnums=0)(q0, qd0)).tolist())
torch.save({"args": args, "model": hnn.state_dict(), "stats": hnn_stats}, "pend.tar")
ck = torch.load("pend.tar", weights_only=False)
print(sorted(ck), ck["args"].hidden_dim, len(ck["stats"]["train_loss"]),
      list(ck["model"].keys()))
