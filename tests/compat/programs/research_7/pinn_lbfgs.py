"""A physics-informed network the way PINN repositories (maziarraissi/PINNs ports,
"PINNs in PyTorch" tutorials) write it: collocation points with ``requires_grad``, the PDE
residual through nested ``torch.autograd.grad(..., create_graph=True)`` with
``grad_outputs=torch.ones_like``, Adam warm-up then ``torch.optim.LBFGS`` with a closure and
``line_search_fn="strong_wolfe"``; a SIREN (sine layers with its special initialisation)
fitted to an image-like signal with its gradient and Laplacian supervised; and
``torch.func`` Jacobians checked against the autograd ones."""
import math

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(1234)
np.random.seed(1234)
torch.set_default_dtype(torch.float64)


class PhysicsInformedNN(nn.Module):
    """u(x, t) for the 1-D heat equation u_t = nu * u_xx with u(x, 0) = sin(pi x)."""

    def __init__(self, layers, nu):
        super().__init__()
        self.nu = nu
        modules = []
        for i in range(len(layers) - 2):
            modules += [nn.Linear(layers[i], layers[i + 1]), nn.Tanh()]
        modules.append(nn.Linear(layers[-2], layers[-1]))
        self.net = nn.Sequential(*modules)
        for m in self.net:
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)
        self.iter = 0

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))

    def net_f(self, x, t):
        u = self(x, t)
        u_t = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True,
                                  create_graph=True)[0]
        u_x = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True,
                                  create_graph=True)[0]
        u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x),
                                   retain_graph=True, create_graph=True)[0]
        return u_t - self.nu * u_xx


nu = 0.1
N_u, N_f = 40, 200
x_ic = torch.rand(N_u, 1) * 2 - 1
t_ic = torch.zeros(N_u, 1)
u_ic = torch.sin(math.pi * x_ic)
t_bc = torch.rand(N_u, 1)
x_bc = torch.where(torch.rand(N_u, 1) < 0.5, -torch.ones(N_u, 1), torch.ones(N_u, 1))
u_bc = torch.zeros(N_u, 1)
X_u = torch.cat([torch.cat([x_ic, t_ic], 1), torch.cat([x_bc, t_bc], 1)])
U = torch.cat([u_ic, u_bc])
lb, ub = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 1.0])
X_f = lb + (ub - lb) * torch.rand(N_f, 2)
x_f = X_f[:, 0:1].clone().requires_grad_(True)
t_f = X_f[:, 1:2].clone().requires_grad_(True)

model = PhysicsInformedNN([2, 16, 16, 1], nu)


def loss_fn():
    u_pred = model(X_u[:, 0:1], X_u[:, 1:2])
    f_pred = model.net_f(x_f, t_f)
    return torch.mean((U - u_pred) ** 2), torch.mean(f_pred ** 2)


adam = torch.optim.Adam(model.parameters(), lr=1e-2)
for it in range(20):
    adam.zero_grad()
    loss_u, loss_f = loss_fn()
    loss = loss_u + loss_f
    loss.backward()
    adam.step()
    if it % 10 == 9:
        print("Adam It: %d, Loss: %.8e, Loss_u: %.8e, Loss_f: %.8e" % (
            it + 1, loss.item(), loss_u.item(), loss_f.item()))

optimizer = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=25, max_eval=40,
                              history_size=10, tolerance_grad=1e-9,
                              tolerance_change=1.0 * np.finfo(float).eps,
                              line_search_fn="strong_wolfe")


def closure():
    optimizer.zero_grad()
    loss_u, loss_f = loss_fn()
    loss = loss_u + loss_f
    loss.backward()
    model.iter += 1
    if model.iter % 10 == 0:
        print("LBFGS eval %d, Loss: %.6e, Loss_u: %.6e, Loss_f: %.6e" % (
            model.iter, loss.item(), loss_u.item(), loss_f.item()))
    return loss


optimizer.step(closure)
state = optimizer.state[optimizer._params[0]]
print("lbfgs func_evals", state["func_evals"], "n_iter", state["n_iter"])
x_star = torch.linspace(-1, 1, 9).unsqueeze(1)
t_star = torch.full_like(x_star, 0.5)
with torch.no_grad():
    u_star = model(x_star, t_star)
exact = torch.exp(-nu * math.pi ** 2 * t_star) * torch.sin(math.pi * x_star)
print("Error u: %.6e" % (torch.linalg.norm(exact - u_star, 2) / torch.linalg.norm(exact, 2)))


# SIREN
class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0, self.is_first, self.in_features = omega_0, is_first, in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                            np.sqrt(6 / self.in_features) / self.omega_0)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features,
                 first_omega_0=30, hidden_omega_0=30.0):
        super().__init__()
        net = [SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)]
        for _ in range(hidden_layers):
            net.append(SineLayer(hidden_features, hidden_features, omega_0=hidden_omega_0))
        final_linear = nn.Linear(hidden_features, out_features)
        with torch.no_grad():
            final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                         np.sqrt(6 / hidden_features) / hidden_omega_0)
        net.append(final_linear)
        self.net = nn.Sequential(*net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        return self.net(coords), coords


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    return torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]


def divergence(y, x):
    div = 0.0
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]),
                                   create_graph=True)[0][..., i:i + 1]
    return div


def laplace(y, x):
    return divergence(gradient(y, x), x)


def get_mgrid(sidelen, dim=2):
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    return mgrid.reshape(-1, dim)


torch.set_default_dtype(torch.float32)
coords = get_mgrid(12)
img = (torch.sin(3 * coords[:, :1]) * torch.cos(2 * coords[:, 1:])).float()
siren = Siren(2, 32, 2, 1, first_omega_0=10, hidden_omega_0=10.0)
optim = torch.optim.Adam(lr=1e-3, params=siren.parameters())
for step in range(15):
    out, c = siren(coords)
    loss = ((out - img) ** 2).mean()
    optim.zero_grad()
    loss.backward()
    optim.step()
    if step % 5 == 4:
        print("Step %d, Total loss %0.6f" % (step, loss.item()))
out, c = siren(coords)
g = gradient(out, c)
lap = laplace(out, c)
print("grad norm %.5f  laplacian mean %.5f" % (g.norm(dim=-1).mean().item(), lap.mean().item()))

# torch.func agrees with autograd for the per-point Jacobian
from torch.func import functional_call, jacrev, vmap  # noqa: E402

params = {k: v.detach() for k, v in siren.net.named_parameters()}


def f_single(p, x):
    return functional_call(siren.net, p, (x.unsqueeze(0),)).squeeze(0)


jac = vmap(jacrev(f_single, argnums=1), in_dims=(None, 0))(params, coords[:5])
print("jacrev vs autograd max diff < 1e-5:", (jac.squeeze(1) - g[:5]).abs().max().item() < 1e-5,
      tuple(jac.shape))
