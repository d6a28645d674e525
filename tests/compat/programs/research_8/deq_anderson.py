"""A deep equilibrium model the way the implicit-layers tutorial (locuslab) writes it: a
GroupNorm residual cell ``f(z, x)``, forward and Anderson-accelerated fixed-point solvers
run under ``torch.no_grad()`` on batched flattened states (``bmm``, batched
``torch.linalg.solve`` of the bordered system), one differentiable step at the solution
and the implicit backward as a second fixed point inside a ``register_hook`` on the
output, ``autograd.grad`` vector-Jacobian products with ``retain_graph``; a small image
classifier trained on it, the implicit gradient checked against unrolled differentiation,
a Jacobian spectral-norm estimate by power iteration, and the solver's residual history."""
import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
device = "cuda" if torch.cuda.is_available() else "cpu"


class ResNetLayer(nn.Module):
    def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=4):
        super().__init__()
        self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size,
                               padding=kernel_size // 2, bias=False)
        self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size,
                               padding=kernel_size // 2, bias=False)
        self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
        self.norm2 = nn.GroupNorm(num_groups, n_channels)
        self.norm3 = nn.GroupNorm(num_groups, n_channels)
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)

    def forward(self, z, x):
        y = self.norm1(F.relu(self.conv1(z)))
        return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))


def forward_iteration(f, x0, max_iter=50, tol=1e-2):
    f0 = f(x0)
    res = []
    for k in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


def anderson(f, x0, m=5, lam=1e-4, max_iter=50, tol=1e-2, beta=1.0):
    """Anderson acceleration for fixed point iteration."""
    bsz, d, H, W = x0.shape
    X = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    F = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    X[:, 0], F[:, 0] = x0.view(bsz, -1), f(x0).view(bsz, -1)
    X[:, 1], F[:, 1] = F[:, 0], f(F[:, 0].view_as(x0)).view(bsz, -1)

    H = torch.zeros(bsz, m + 1, m + 1, dtype=x0.dtype, device=x0.device)
    H[:, 0, 1:] = H[:, 1:, 0] = 1
    y = torch.zeros(bsz, m + 1, 1, dtype=x0.dtype, device=x0.device)
    y[:, 0] = 1

    res = []
    for k in range(2, max_iter):
        n = min(k, m)
        G = F[:, :n] - X[:, :n]
        H[:, 1:n + 1, 1:n + 1] = torch.bmm(G, G.transpose(1, 2)) + lam * torch.eye(
            n, dtype=x0.dtype, device=x0.device)[None]
        alpha = torch.linalg.solve(H[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]

        X[:, k % m] = (beta * (alpha[:, None] @ F[:, :n])[:, 0]
                       + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0])
        F[:, k % m] = f(X[:, k % m].view_as(x0)).view(bsz, -1)
        res.append((F[:, k % m] - X[:, k % m]).norm().item()
                   / (1e-5 + F[:, k % m].norm().item()))
        if res[-1] < tol:
            break
    return X[:, k % m].view_as(x0), res


class DEQFixedPoint(nn.Module):
    def __init__(self, f, solver, **kwargs):
        super().__init__()
        self.f = f
        self.solver = solver
        self.kwargs = kwargs

    def forward(self, x):
        # compute forward pass and re-engage autograd tape
        with torch.no_grad():
            z, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x),
                                              **self.kwargs)
        z = self.f(z, x)

        # set up Jacobian vector product (without additional forward calls)
        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            g, self.backward_res = self.solver(
                lambda y: autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                grad, **self.kwargs)
            return g

        if z.requires_grad:
            z.register_hook(backward_hook)
        return z


# --- the solvers on one cell -------------------------------------------------------------
X = torch.randn(4, 8, 6, 6, device=device)
f = ResNetLayer(8, 16, kernel_size=3).to(device)
Z, res_fwd = forward_iteration(lambda Z: f(Z, X), torch.zeros_like(X), tol=1e-4)
print(f"forward iteration: {len(res_fwd)} steps, residual {res_fwd[-1]:.3e}")
Z2, res_and = anderson(lambda Z: f(Z, X), torch.zeros_like(X), tol=1e-4, beta=1.0)
print(f"anderson: {len(res_and)} steps, residuals", [f"{r:.3e}" for r in res_and[:4]])
print("same fixed point:", torch.allclose(Z, Z2, atol=1e-3),
      f"max diff {(Z - Z2).abs().max().item():.2e}")

# --- the implicit gradient against differentiating through the unrolled iterations -------
torch.manual_seed(1)
cell = ResNetLayer(4, 8, num_groups=2).double()
x = torch.randn(2, 4, 4, 4, dtype=torch.double, requires_grad=True)
deq = DEQFixedPoint(cell, anderson, tol=1e-9, max_iter=60, lam=1e-9)
w = torch.randn_like(x)
z = deq(x)
(z * w).sum().backward()
g_implicit = x.grad.clone()
print(f"implicit: fwd {len(deq.forward_res)} steps, bwd {len(deq.backward_res)} steps")

x.grad = None
zz = torch.zeros_like(x)
for _ in range(80):
    zz = cell(zz, x)
(zz * w).sum().backward()
rel = (g_implicit - x.grad).norm() / x.grad.norm()
print("implicit ~ unrolled:", rel.item() < 1e-3)
print("grad sample:", g_implicit.flatten()[:4])
print("residuals:", [f"{r:.1e}" for r in deq.forward_res[::4]])

# spectral norm of df/dz at the fixed point by power iteration on J^T J
z_star = z.detach().requires_grad_()
fz = cell(z_star, x.detach())
v = torch.randn_like(z_star)
v = v / v.norm()
for _ in range(20):
    Jv = autograd.grad(fz, z_star, v, retain_graph=True)[0]
    v = Jv / Jv.norm()
sigma = autograd.grad(fz, z_star, v, retain_graph=True)[0].norm()
print(f"||J|| estimate {sigma.item():.4f}")

# --- a DEQ classifier (the backward solve stops at max_iter far from converged, so a few
# epochs on: runs apart by rounding part as training goes on, on PyTorch too) ---------------------------------------------------------------------
torch.manual_seed(0)
chan = 8
model = nn.Sequential(
    nn.Conv2d(1, chan, kernel_size=3, bias=True, padding=1),
    nn.BatchNorm2d(chan),
    DEQFixedPoint(ResNetLayer(chan, 16, kernel_size=3), anderson, tol=1e-2, max_iter=25, m=5),
    nn.BatchNorm2d(chan),
    nn.AvgPool2d(4, 4),
    nn.Flatten(),
    nn.Linear(chan * 2 * 2, 3),
).to(device).double()  # the backward solve stops at max_iter: float64 keeps runs repeatable
print(model)

images = torch.randn(24, 1, 8, 8, dtype=torch.float64)
labels = torch.arange(24) % 3
images[labels == 1, :, :4] += 1.0
images[labels == 2, :, :, :4] -= 1.0
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 3, 1e-3)
for epoch in range(3):
    model.train()
    for i in range(0, 24, 8):
        xb, yb = images[i:i + 8].to(device), labels[i:i + 8].to(device)
        yp = model(xb)
        loss = nn.CrossEntropyLoss()(yp, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    scheduler.step()
    deq_layer = model[2]
    print(f"epoch {epoch} loss {loss.item():.4f} fwd steps {len(deq_layer.forward_res)} "
          f"bwd steps {len(deq_layer.backward_res)} lr {scheduler.get_last_lr()[0]:.5f}")

model.eval()
with torch.no_grad():
    acc = (model(images).argmax(dim=1) == labels).float().mean()
print(f"train accuracy {acc.item():.3f}")
