"""An echo state network the way reservoir-computing repositories (stefanonardo/pytorch-esn,
EchoTorch-style scripts) write it: a sparse random reservoir rescaled to a spectral radius
read from ``torch.linalg.eigvals``, leaky-integrator states collected under ``no_grad``
after a washout, a ridge-regression readout solved in closed form (``linalg.solve`` on the
normal equations, and ``linalg.lstsq`` to check it), generative mode fed back on its own
output, NRMSE on Mackey-Glass; float64 throughout as these repositories use."""
import numpy as np
import torch
from torch import nn

torch.set_default_dtype(torch.float64)
torch.manual_seed(42)
np.random.seed(42)


def mackey_glass(n, tau=17, beta=0.2, gamma=0.1, p=10, dt=1.0, x0=1.2):
    history = int(tau / dt)
    x = np.full(n + history, x0)
    for t in range(history, n + history - 1):
        xt = x[t - history]
        x[t + 1] = x[t] + dt * (beta * xt / (1 + xt ** p) - gamma * x[t])
    return x[history:]


class ESN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, spectral_radius=0.9,
                 density=0.2, leaking_rate=0.3, input_scaling=0.5, ridge=1e-6):
        super().__init__()
        self.hidden_size, self.leaking_rate, self.ridge = hidden_size, leaking_rate, ridge
        w = torch.rand(hidden_size, hidden_size) * 2 - 1
        w[torch.rand(hidden_size, hidden_size) > density] = 0.0
        eig = torch.linalg.eigvals(w)
        self.register_buffer("rho0", eig.abs().max())
        self.register_buffer("w_hh", w * (spectral_radius / self.rho0))
        self.register_buffer("w_ih", (torch.rand(hidden_size, input_size + 1) * 2 - 1) * input_scaling)
        self.readout = nn.Linear(hidden_size + input_size, output_size)

    def step(self, u, h):
        u1 = torch.cat([torch.ones(u.shape[0], 1), u], dim=1)
        pre = u1 @ self.w_ih.t() + h @ self.w_hh.t()
        return (1 - self.leaking_rate) * h + self.leaking_rate * torch.tanh(pre)

    @torch.no_grad()
    def harvest(self, inputs, h=None, washout=0):
        h = torch.zeros(inputs.shape[1], self.hidden_size) if h is None else h
        states = []
        for t in range(inputs.shape[0]):
            h = self.step(inputs[t], h)
            if t >= washout:
                states.append(torch.cat([torch.ones(inputs.shape[1], 1), inputs[t], h], dim=1))
        return torch.stack(states), h

    @torch.no_grad()
    def fit(self, states, targets):
        X = states.reshape(-1, states.shape[-1])
        Y = targets.reshape(-1, targets.shape[-1])
        A = X.t() @ X + self.ridge * torch.eye(X.shape[1])
        W = torch.linalg.solve(A, X.t() @ Y).t()
        self.readout.bias.copy_(W[:, 0])
        self.readout.weight.copy_(W[:, 1:])
        return W

    def forward(self, states):
        return self.readout(states[..., 1:])


series = torch.from_numpy(mackey_glass(1500))
series = torch.tanh(series - 1.0)
train_len, test_len, washout = 1000, 200, 100
u = series[:train_len].reshape(-1, 1, 1)
y = series[1:train_len + 1].reshape(-1, 1, 1)

esn = ESN(1, 60, 1)
print("reservoir:", tuple(esn.w_hh.shape), "nonzero:", int((esn.w_hh != 0).sum()),
      "dtype:", esn.w_hh.dtype)
print(f"spectral radius before {esn.rho0.item():.6f} after "
      f"{torch.linalg.eigvals(esn.w_hh).abs().max().item():.6f}")
states, h = esn.harvest(u, washout=washout)
W = esn.fit(states, y[washout:])
pred = esn(states)
train_nrmse = torch.sqrt(torch.mean((pred - y[washout:]) ** 2)) / y[washout:].std()
print(f"train NRMSE {train_nrmse.item():.6e}")
X = states.reshape(-1, states.shape[-1])
W_ls = torch.linalg.lstsq(X, y[washout:].reshape(-1, 1), driver="gelsd").solution.t()
print("ridge vs lstsq readout close:", torch.allclose(W, W_ls, atol=1e-2),
      f"max |W| {W.abs().max().item():.4f}")

# free-running generation from the last training state
with torch.no_grad():
    out = series[train_len].reshape(1, 1)
    preds = []
    for t in range(test_len):
        h = esn.step(out, h)
        out = esn(torch.cat([torch.ones(1, 1), out, h], dim=1).unsqueeze(0))[0]
        preds.append(out.item())
preds = torch.tensor(preds)
target = series[train_len + 1:train_len + 1 + test_len]
for horizon in (10, 50, 84):
    err = torch.sqrt(torch.mean((preds[:horizon] - target[:horizon]) ** 2)) / target.std()
    print(f"generative NRMSE@{horizon}: {err.item():.4e}")
print("first predictions:", [round(v, 5) for v in preds[:4].tolist()])
