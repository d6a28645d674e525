"""A neural ODE as the torchdiffeq examples (``ode_demo.py``) write it, without torchdiffeq:
an ``ODEFunc`` with ``nfe`` counting, a fixed-step RK4 ``odeint`` returning the whole
trajectory, the spiral data set ``true_y0``/``true_A`` and ``get_batch`` with
``np.random.choice``, a ``RunningAverageMeter``, and the adjoint method written as an
``autograd.Function`` (augmented state integrated backwards, ``torch.autograd.grad`` with
``allow_unused`` for the parameter adjoints, ``ctx.save_for_backward``), checked against
backpropagating through the solver, plus ``torch.func.jvp`` of the flow map."""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
data_size, batch_time, batch_size = 60, 8, 10
true_y0 = torch.tensor([[2.0, 0.0]])
t = torch.linspace(0.0, 5.0, data_size)
true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])


def rk4_step(func, t0, dt, y):
    k1 = func(t0, y)
    k2 = func(t0 + dt / 2, y + dt * k1 / 2)
    k3 = func(t0 + dt / 2, y + dt * k2 / 2)
    k4 = func(t0 + dt, y + dt * k3)
    return y + dt * (k1 + 2 * (k2 + k3) + k4) / 6


def odeint(func, y0, t, substeps=2):
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        dt = (t[i + 1] - t[i]) / substeps
        for s in range(substeps):
            y = rk4_step(func, t[i] + s * dt, dt, y)
        ys.append(y)
    return torch.stack(ys)


class Lambda(nn.Module):
    def forward(self, t, y):
        return torch.mm(y ** 3, true_A)


with torch.no_grad():
    true_y = odeint(Lambda(), true_y0, t)
print("true_y", true_y.shape, true_y[-1])


def get_batch():
    s = torch.from_numpy(np.random.choice(np.arange(data_size - batch_time, dtype=np.int64),
                                          batch_size, replace=False))
    batch_y0 = true_y[s]
    batch_t = t[:batch_time]
    batch_y = torch.stack([true_y[s + i] for i in range(batch_time)], dim=0)
    return batch_y0, batch_t, batch_y


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 24), nn.Tanh(), nn.Linear(24, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y ** 3)


class RunningAverageMeter(object):
    def __init__(self, momentum=0.99):
        self.momentum = momentum
        self.reset()

    def reset(self):
        self.val = None
        self.avg = 0

    def update(self, val):
        self.avg = val if self.val is None else self.avg * self.momentum + val * (1 - self.momentum)
        self.val = val


class OdeintAdjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y0, t, func, *params):
        with torch.no_grad():
            ys = odeint(func, y0, t)
        ctx.func = func
        ctx.save_for_backward(t, ys, *params)
        return ys

    @staticmethod
    def backward(ctx, grad_ys):
        t, ys, *params = ctx.saved_tensors
        func = ctx.func

        def aug_dynamics(tt, state):
            y, a = state[0], state[1]
            with torch.enable_grad():
                y = y.detach().requires_grad_(True)
                f = func(tt, y)
                vjp = torch.autograd.grad(f, (y,) + tuple(params), -a, allow_unused=True)
            vjp_y = vjp[0]
            vjp_p = [torch.zeros_like(p) if g is None else g for g in vjp[1:] for p in [None]]
            return f, vjp_y, vjp_p

        adj_y = grad_ys[-1]
        adj_p = [torch.zeros_like(p) for p in params]
        y = ys[-1]
        for i in range(len(t) - 1, 0, -1):
            dt = (t[i - 1] - t[i]) / 2
            for s in range(2):
                t0 = t[i] + s * dt

                def stepfn(tt, st):
                    f, vy, vp = aug_dynamics(tt, st[:2])
                    return [f, vy] + vp

                state = [y, adj_y] + adj_p
                k1 = stepfn(t0, state)
                k2 = stepfn(t0 + dt / 2, [a + dt * b / 2 for a, b in zip(state, k1)])
                k3 = stepfn(t0 + dt / 2, [a + dt * b / 2 for a, b in zip(state, k2)])
                k4 = stepfn(t0 + dt, [a + dt * b for a, b in zip(state, k3)])
                state = [a + dt * (b + 2 * (c + d) + e) / 6 for a, b, c, d, e in zip(state, k1, k2, k3, k4)]
                y, adj_y, adj_p = state[0], state[1], state[2:]
            adj_y = adj_y + grad_ys[i - 1]
        return (adj_y, None, None, *adj_p)


func = ODEFunc()
optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-3)
loss_meter = RunningAverageMeter(0.97)
for itr in range(1, 31):
    optimizer.zero_grad()
    batch_y0, batch_t, batch_y = get_batch()
    pred_y = odeint(func, batch_y0, batch_t)
    loss = torch.mean(torch.abs(pred_y - batch_y))
    loss.backward()
    optimizer.step()
    loss_meter.update(loss.item())
    if itr % 10 == 0:
        with torch.no_grad():
            pred_y = odeint(func, true_y0, t)
            total = torch.mean(torch.abs(pred_y - true_y))
        print(f"Iter {itr:04d} | Total Loss {total.item():.6f} | running {loss_meter.avg:.6f} | nfe {func.nfe}")

# the adjoint gradient against backpropagation through the solver, in float64
f64 = ODEFunc().double()
y0 = torch.tensor([[1.0, 0.5], [0.2, -0.3]], dtype=torch.float64, requires_grad=True)
tt = torch.linspace(0, 1, 5, dtype=torch.float64)
target = torch.randn(5, 2, 2, dtype=torch.float64)
params = tuple(f64.parameters())
direct = odeint(f64, y0, tt)
g_direct = torch.autograd.grad(((direct - target) ** 2).sum(), (y0,) + params)
adj = OdeintAdjoint.apply(y0, tt, f64, *params)
g_adj = torch.autograd.grad(((adj - target) ** 2).sum(), (y0,) + params)
print("forward equal", torch.equal(direct.detach(), adj.detach()), adj.grad_fn.__class__.__name__)
print("max adjoint error", max((a - b).abs().max().item() for a, b in zip(g_direct, g_adj)) < 1e-6)
print("grad y0", g_adj[0])

flow = lambda y: odeint(f64, y, tt)[-1]
out, tangent = torch.func.jvp(flow, (y0.detach(),), (torch.ones_like(y0),))
print("jvp", tangent, torch.allclose(tangent, torch.autograd.functional.jvp(flow, y0.detach(), torch.ones_like(y0))[1]))
