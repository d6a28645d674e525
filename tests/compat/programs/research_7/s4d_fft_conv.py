"""A diagonal state-space model the way state-spaces/s4's standalone ``s4d.py`` and
``example.py`` write it: complex parameters stored through ``torch.view_as_real`` and read
back with ``view_as_complex``, a ``torch.randn(..., dtype=torch.cfloat)`` initialisation,
the Vandermonde kernel from complex ``exp`` and ``einsum`` taking ``.real``, an FFT
convolution (``torch.fft.rfft``/``irfft`` with ``n=2L``), a GLU output projection, per-
parameter ``_optim`` hyper-parameters gathered into optimizer groups, ``DropoutNd`` with a
tied mask, pre-norm residual layers trained on a sequence task, and the same layer run as a
recurrence (zero-order-hold discretisation) that must agree with the convolution."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange, repeat

torch.manual_seed(0)


class DropoutNd(nn.Module):
    def __init__(self, p: float = 0.5, tie=True, transposed=True):
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError("dropout probability has to be in [0, 1), "
                             "but got {}".format(p))
        self.p, self.tie, self.transposed = p, tie, transposed
        self.binomial = torch.distributions.binomial.Binomial(probs=1 - self.p)

    def forward(self, X):
        if self.training:
            if not self.transposed:
                X = rearrange(X, "b ... d -> b d ...")
            mask_shape = X.shape[:2] + (1,) * (X.ndim - 2) if self.tie else X.shape
            mask = torch.rand(*mask_shape, device=X.device) < 1. - self.p
            X = X * mask * (1.0 / (1 - self.p))
            if not self.transposed:
                X = rearrange(X, "b d ... -> b ... d")
            return X
        return X


class S4DKernel(nn.Module):
    def __init__(self, d_model, N=16, dt_min=0.001, dt_max=0.1, lr=None):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.register("log_dt", log_dt, lr)
        log_A_real = torch.log(0.5 * torch.ones(H, N // 2))
        A_imag = math.pi * repeat(torch.arange(N // 2), "n -> h n", h=H)
        self.register("log_A_real", log_A_real, lr)
        self.register("A_imag", A_imag, lr)

    def forward(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.) / A
        K = 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real
        return K

    def register(self, name, tensor, lr=None):
        if lr == 0.0:
            self.register_buffer(name, tensor)
        else:
            self.register_parameter(name, nn.Parameter(tensor))
            optim = {"weight_decay": 0.0}
            if lr is not None:
                optim["lr"] = lr
            setattr(getattr(self, name), "_optim", optim)


class S4D(nn.Module):
    def __init__(self, d_model, d_state=16, dropout=0.0, transposed=True, **kernel_args):
        super().__init__()
        self.h, self.n = d_model, d_state
        self.d_output = self.h
        self.transposed = transposed
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=self.n, **kernel_args)
        self.activation = nn.GELU()
        self.dropout = DropoutNd(dropout) if dropout > 0.0 else nn.Identity()
        self.output_linear = nn.Sequential(nn.Conv1d(self.h, 2 * self.h, kernel_size=1),
                                           nn.GLU(dim=-2))

    def forward(self, u, **kwargs):
        if not self.transposed:
            u = u.transpose(-1, -2)
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        y = y + u * self.D.unsqueeze(-1)
        y = self.dropout(self.activation(y))
        y = self.output_linear(y)
        if not self.transposed:
            y = y.transpose(-1, -2)
        return y, None

    @torch.no_grad()
    def recurrent(self, u):
        # x_{t+1} = exp(dt A) x_t + (exp(dt A) - 1)/A u_t ; y_t = 2 Re(C x_t) + D u_t
        dt = torch.exp(self.kernel.log_dt)
        A = -torch.exp(self.kernel.log_A_real) + 1j * self.kernel.A_imag
        dA = torch.exp(A * dt.unsqueeze(-1))
        dB = (dA - 1.0) / A
        C = torch.view_as_complex(self.kernel.C)
        x = torch.zeros(u.shape[0], self.h, self.n // 2, dtype=torch.cfloat)
        ys = []
        for t in range(u.shape[-1]):
            x = dA * x + dB * u[..., t].unsqueeze(-1)
            ys.append(2 * torch.einsum("hn,bhn->bh", C, x).real)
        y = torch.stack(ys, dim=-1) + u * self.D.unsqueeze(-1)
        return self.output_linear(self.activation(y))


class S4Model(nn.Module):
    def __init__(self, d_input, d_output=10, d_model=16, n_layers=2, dropout=0.1,
                 prenorm=False, lr=0.001):
        super().__init__()
        self.prenorm = prenorm
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers, self.norms, self.dropouts = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for _ in range(n_layers):
            self.s4_layers.append(S4D(d_model, dropout=dropout, transposed=True, lr=min(0.001, lr)))
            self.norms.append(nn.LayerNorm(d_model))
            self.dropouts.append(nn.Dropout1d(dropout))
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):
        x = self.encoder(x)
        x = x.transpose(-1, -2)
        for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
            z = x
            if self.prenorm:
                z = norm(z.transpose(-1, -2)).transpose(-1, -2)
            z, _ = layer(z)
            z = dropout(z)
            x = z + x
            if not self.prenorm:
                x = norm(x.transpose(-1, -2)).transpose(-1, -2)
        x = x.transpose(-1, -2)
        x = x.mean(dim=1)
        return self.decoder(x)


def setup_optimizer(model, lr, weight_decay, epochs):
    all_parameters = list(model.parameters())
    params = [p for p in all_parameters if not hasattr(p, "_optim")]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    hps = [getattr(p, "_optim") for p in all_parameters if hasattr(p, "_optim")]
    hps = [dict(s) for s in sorted(list(dict.fromkeys(frozenset(hp.items()) for hp in hps)),
                                   key=lambda s: sorted(s))]
    for hp in hps:
        params = [p for p in all_parameters if getattr(p, "_optim", None) == hp]
        optimizer.add_param_group({"params": params, **hp})
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
    keys = sorted(set([k for hp in hps for k in hp.keys()]))
    for i, g in enumerate(optimizer.param_groups):
        group_hps = {k: g.get(k, None) for k in keys}
        print(" | ".join([f"Optimizer group {i}", f"{len(g['params'])} tensors"]
                         + [f"{k} {v}" for k, v in group_hps.items()]))
    return optimizer, scheduler


# sequence task: which of 4 frequencies is hidden in a noisy sequence
L, B = 32, 24
t = torch.arange(L).float()
labels = torch.randint(0, 4, (B,))
freqs = torch.tensor([0.05, 0.1, 0.2, 0.3])[labels]
xs = torch.sin(2 * math.pi * freqs[:, None] * t[None, :]) + 0.3 * torch.randn(B, L)
xs = xs.unsqueeze(-1)

model = S4Model(d_input=1, d_output=4, d_model=8, n_layers=2, dropout=0.1, prenorm=True,
                lr=0.01)
print("complex C", model.s4_layers[0].kernel.C.shape, model.s4_layers[0].kernel.C.dtype)
optimizer, scheduler = setup_optimizer(model, lr=0.01, weight_decay=0.01, epochs=10)
for epoch in range(10):
    model.train()
    optimizer.zero_grad()
    outputs = model(xs)
    loss = F.cross_entropy(outputs, labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    if epoch % 3 == 0 or epoch == 9:
        acc = (outputs.argmax(1) == labels).float().mean().item()
        print(f"Epoch {epoch} | Loss {loss.item():.6f} | Acc {100 * acc:.3f}% | "
              f"lr {scheduler.get_last_lr()[0]:.6f}")
g = model.s4_layers[0].kernel.C.grad
print("grad of view_as_real param", tuple(g.shape), f"{g.abs().sum().item():.6f}")

model.eval()
layer = model.s4_layers[1]
u = torch.randn(2, 8, 12)
conv_y, _ = layer(u)
rec_y = layer.recurrent(u)
print("recurrence matches convolution:", torch.allclose(conv_y, rec_y, atol=1e-4),
      f"{conv_y.abs().mean().item():.6f}")
k = layer.kernel(L=6)
print("kernel[0]", [f"{v:.6f}" for v in k[0].tolist()])
z = torch.view_as_complex(layer.kernel.C)[:2, :2]
print("complex", z.dtype, z.abs().shape, f"{z.angle().sum().item():.6f}",
      f"{(z * z.conj()).real.sum().item():.6f}")
try:
    DropoutNd(1.5)
except ValueError as e:
    print("ValueError:", e)
