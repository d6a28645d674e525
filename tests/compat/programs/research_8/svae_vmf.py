"""A hyperspherical VAE the way nicola-decao/s-vae-pytorch writes it, next to the less
common distributions such models lean on: a von Mises-Fisher ``Distribution`` subclass
with Wood's rejection sampler (a ``Beta`` proposal in a while loop over a mask), a
Householder reflection onto the mean direction, the exponentially scaled Bessel function
as a custom autograd ``Function`` over ``scipy.special.ive``, its entropy and the KL to the
uniform on the sphere registered with ``register_kl``; a ``ContinuousBernoulli`` decoder,
``torch.special`` Bessel and error functions against scipy, circular regression with
``VonMises``, a Kumaraswamy stick-breaking posterior, and ``LKJCholesky``/``Wishart``
priors' log-densities and samples."""
import math

import numpy as np
import scipy.special
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (Beta, ContinuousBernoulli, Kumaraswamy, LKJCholesky,
                                 VonMises, Wishart, constraints)
from torch.distributions.kl import register_kl

torch.manual_seed(0)
np.random.seed(0)


class IveFunction(torch.autograd.Function):
    @staticmethod
    def forward(self, v, z):
        assert isinstance(v, (int, float)), v
        self.save_for_backward(z)
        self.v = v
        z_cpu = z.data.cpu().numpy()
        if np.isclose(v, 0):
            output = scipy.special.i0e(z_cpu, dtype=z_cpu.dtype)
        elif np.isclose(v, 1):
            output = scipy.special.i1e(z_cpu, dtype=z_cpu.dtype)
        else:
            output = scipy.special.ive(v, z_cpu, dtype=z_cpu.dtype)
        return torch.Tensor(output).to(z.device)

    @staticmethod
    def backward(self, grad_output):
        z = self.saved_tensors[-1]
        return None, grad_output * (ive(self.v - 1, z) - ive(self.v, z) * (self.v + z) / z)


ive = IveFunction.apply


class HypersphericalUniform(torch.distributions.Distribution):
    support = constraints.real
    has_rsample = False
    _mean_carrier_measure = 0

    def __init__(self, dim, validate_args=None, device="cpu"):
        super().__init__(torch.Size([dim]), validate_args=validate_args)
        self._dim = dim
        self.device = device

    def entropy(self):
        return self.__log_surface_area()

    def log_prob(self, x):
        return -torch.ones(x.shape[:-1], device=self.device) * self.__log_surface_area()

    def __log_surface_area(self):
        lgamma = torch.lgamma(torch.tensor([(self._dim + 1) / 2]).to(self.device))
        return math.log(2) + ((self._dim + 1) / 2) * math.log(math.pi) - lgamma


class VonMisesFisher(torch.distributions.Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.loc * (ive(self.__m / 2, self.scale) / ive(self.__m / 2 - 1, self.scale))

    def __init__(self, loc, scale, validate_args=None, k=1):
        self.dtype = loc.dtype
        self.loc = loc
        self.scale = scale
        self.device = loc.device
        self.__m = loc.shape[-1]
        self.__e1 = (torch.Tensor([1.0] + [0] * (loc.shape[-1] - 1))).to(self.device)
        self.k = k
        super().__init__(self.loc.size(), validate_args=validate_args)

    def rsample(self, shape=torch.Size()):
        shape = shape if isinstance(shape, torch.Size) else torch.Size([shape])
        w = (self.__sample_w3(shape=shape) if self.__m == 3
             else self.__sample_w_rej(shape=shape))
        v = (torch.distributions.Normal(0, 1).sample(shape + torch.Size(self.loc.shape))
             .to(self.device).transpose(0, -1)[1:]).transpose(0, -1)
        v = v / v.norm(dim=-1, keepdim=True)
        w_ = torch.sqrt(torch.clamp(1 - (w ** 2), 1e-10))
        x = torch.cat((w, w_ * v), -1)
        z = self.__householder_rotation(x)
        return z.type(self.dtype)

    def __sample_w3(self, shape):
        shape = shape + torch.Size(self.scale.shape)
        u = torch.distributions.Uniform(0, 1).sample(shape).to(self.device)
        self.__w = 1 + torch.stack([torch.log(u), torch.log(1 - u) - 2 * self.scale],
                                   dim=0).logsumexp(0) / self.scale
        return self.__w

    def __sample_w_rej(self, shape):
        c = torch.sqrt((4 * (self.scale ** 2)) + (self.__m - 1) ** 2)
        b_true = (-2 * self.scale + c) / (self.__m - 1)
        b_app = (self.__m - 1) / (4 * self.scale)
        s = torch.min(torch.max(torch.tensor([0.0], dtype=self.dtype, device=self.device),
                                self.scale - 10),
                      torch.tensor([1.0], dtype=self.dtype, device=self.device))
        b = b_app * s + b_true * (1 - s)
        a = (self.__m - 1 + 2 * self.scale + c) / 4
        d = (4 * a * b) / (1 + b) - (self.__m - 1) * math.log(self.__m - 1)
        self.__b, (self.__e, self.__w) = b, self.__while_loop(b, a, d, shape, k=self.k)
        return self.__w

    @staticmethod
    def first_nonzero(x, dim, invalid_val=-1):
        mask = x > 0
        idx = torch.where(mask.any(dim=dim), mask.float().argmax(dim=1).squeeze(),
                          torch.tensor(invalid_val, device=x.device))
        return idx

    def __while_loop(self, b, a, d, shape, k=20, eps=1e-20):
        b, a, d = [e.repeat(*shape, *([1] * len(self.scale.shape))).reshape(-1, 1)
                   for e in (b, a, d)]
        w, e, bool_mask = torch.zeros_like(b), torch.zeros_like(b), (torch.ones_like(b) == 1)
        sample_shape = torch.Size([b.shape[0], k])
        shape = shape + torch.Size(self.scale.shape)
        while bool_mask.sum() != 0:
            con1 = torch.tensor((self.__m - 1) / 2, dtype=torch.float64)
            con2 = torch.tensor((self.__m - 1) / 2, dtype=torch.float64)
            e_ = (torch.distributions.Beta(con1, con2).sample(sample_shape)
                  .to(self.device).type(self.dtype))
            u = torch.distributions.Uniform(0 + eps, 1 - eps).sample(sample_shape).to(
                self.device).type(self.dtype)
            w_ = (1 - (1 + b) * e_) / (1 - (1 - b) * e_)
            t = (2 * a * b) / (1 - (1 - b) * e_)
            accept = ((self.__m - 1.0) * t.log() - t + d) > torch.log(u)
            accept_idx = self.first_nonzero(accept, dim=-1, invalid_val=-1).unsqueeze(1)
            accept_idx_clamped = accept_idx.clamp(0)
            w_ = w_.gather(1, accept_idx_clamped.view(-1, 1))
            e_ = e_.gather(1, accept_idx_clamped.view(-1, 1))
            reject = accept_idx < 0
            accept = ~reject if torch.__version__ >= "1.2.0" else 1 - reject
            w[bool_mask * accept] = w_[bool_mask * accept]
            e[bool_mask * accept] = e_[bool_mask * accept]
            bool_mask[bool_mask * accept] = reject[bool_mask * accept]
        return e.reshape(shape), w.reshape(shape)

    def __householder_rotation(self, x):
        u = self.__e1 - self.loc
        u = u / (u.norm(dim=-1, keepdim=True) + 1e-5)
        z = x - 2 * (x * u).sum(-1, keepdim=True) * u
        return z

    def entropy(self):
        output = (-self.scale * ive(self.__m / 2, self.scale)
                  / ive((self.__m / 2) - 1, self.scale))
        return output.view(*(output.shape[:-1])) + self._log_normalization()

    def log_prob(self, x):
        return self._log_unnormalized_prob(x) - self._log_normalization()

    def _log_unnormalized_prob(self, x):
        output = self.scale * (self.loc * x).sum(-1, keepdim=True)
        return output.view(*(output.shape[:-1]))

    def _log_normalization(self):
        output = -((self.__m / 2 - 1) * torch.log(self.scale) - (self.__m / 2) * math.log(
            2 * math.pi) - (self.scale + torch.log(ive(self.__m / 2 - 1, self.scale))))
        return output.view(*(output.shape[:-1]))


@register_kl(VonMisesFisher, HypersphericalUniform)
def _kl_vmf_uniform(vmf, hyu):
    return -vmf.entropy() + hyu.entropy()


class ModelVAE(nn.Module):
    def __init__(self, h_dim, z_dim, activation=F.relu, distribution="vmf"):
        super(ModelVAE, self).__init__()
        self.z_dim, self.activation, self.distribution = z_dim, activation, distribution
        self.fc_e0 = nn.Linear(16, h_dim * 2)
        self.fc_e1 = nn.Linear(h_dim * 2, h_dim)
        self.fc_mean = nn.Linear(h_dim, z_dim)
        self.fc_var = nn.Linear(h_dim, 1)
        self.fc_d0 = nn.Linear(z_dim, h_dim)
        self.fc_d1 = nn.Linear(h_dim, h_dim * 2)
        self.fc_logits = nn.Linear(h_dim * 2, 16)

    def encode(self, x):
        x = self.activation(self.fc_e0(x))
        x = self.activation(self.fc_e1(x))
        z_mean = self.fc_mean(x)
        z_mean = z_mean / z_mean.norm(dim=-1, keepdim=True)
        z_var = F.softplus(self.fc_var(x)) + 1
        return z_mean, z_var

    def decode(self, z):
        x = self.activation(self.fc_d0(z))
        x = self.activation(self.fc_d1(x))
        return self.fc_logits(x)

    def reparameterize(self, z_mean, z_var):
        q_z = VonMisesFisher(z_mean, z_var)
        p_z = HypersphericalUniform(self.z_dim - 1)
        return q_z, p_z

    def forward(self, x):
        z_mean, z_var = self.encode(x)
        q_z, p_z = self.reparameterize(z_mean, z_var)
        z = q_z.rsample()
        x_ = self.decode(z)
        return (z_mean, z_var), (q_z, p_z), z, x_


# --- Bessel functions: the custom Function, torch.special and scipy ---------------------------
z = torch.tensor([0.5, 1.0, 4.0, 20.0], dtype=torch.float64)
print("i0e:", torch.special.i0e(z), np.allclose(torch.special.i0e(z).numpy(),
                                                 scipy.special.i0e(z.numpy())))
try:  # torch.Tensor(output) made the Function's result float32
    torch.allclose(torch.special.i1e(z), ive(1, z))
except RuntimeError as e:
    print("RuntimeError:", e)
print("i1e:", torch.allclose(torch.special.i1e(z).float(), ive(1, z)),
      "ive(1.5):", ive(1.5, z.float()))
zz = z.clone().float().requires_grad_(True)
ive(2.5, zz).sum().backward()
print("d ive / dz:", zz.grad)
print("special:", torch.special.ndtri(torch.tensor([0.1, 0.5, 0.975])),
      torch.special.log_ndtr(torch.tensor([-10.0, 0.0, 3.0])),
      torch.special.erfcx(torch.tensor([0.5, 5.0, 30.0])),
      torch.special.modified_bessel_k0(torch.tensor([0.5, 2.0])))

# --- the vMF VAE --------------------------------------------------------------------------------
protos = F.normalize(torch.randn(4, 16), dim=-1)
data = torch.sigmoid(3 * (protos[torch.arange(64) % 4] + 0.3 * torch.randn(64, 16)))
binary = torch.bernoulli(data)
model = ModelVAE(h_dim=32, z_dim=5)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(6):
    for i in range(0, 64, 16):
        x_mb = binary[i:i + 16]
        optimizer.zero_grad()
        _, (q_z, p_z), z, x_mb_ = model(x_mb)
        loss_recon = nn.BCEWithLogitsLoss(reduction="none")(x_mb_, x_mb).sum(-1).mean()
        loss_KL = torch.distributions.kl.kl_divergence(q_z, p_z).mean()
        loss = loss_recon + loss_KL
        loss.backward()
        optimizer.step()
    print(f"vmf epoch {epoch} recon {loss_recon.item():.4f} KL {loss_KL.item():.4f}")
print("on the sphere:", torch.allclose(z.norm(dim=-1), torch.ones(16), atol=1e-4),
      "kappa:", q_z.scale[:3].squeeze(-1))
vmf3 = VonMisesFisher(F.normalize(torch.tensor([[1.0, 2.0, 2.0]]), dim=-1), torch.tensor([[8.0]]))
s3 = vmf3.rsample(torch.Size([2000]))
print("vmf3 mean direction:", s3.mean(0), "analytic:", vmf3.mean)

# --- a continuous-Bernoulli decoder ------------------------------------------------------------
dec = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 16))
opt = torch.optim.Adam(dec.parameters(), lr=1e-2)
codes = F.normalize(torch.randn(64, 5), dim=-1)
for step in range(20):
    cb = ContinuousBernoulli(logits=dec(codes))
    loss = -cb.log_prob(data).sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# (mean and variance cancel most float32 digits near p = 1/2: read them in float64)
cb64 = ContinuousBernoulli(logits=dec(codes).double())
print(f"continuous bernoulli nll {loss.item():.4f} mean {cb64.mean.mean().item():.4f} "
      f"var {cb64.variance.mean().item():.5f} sample in [0,1]: "
      f"{bool(((cb.rsample() >= 0) & (cb.rsample() <= 1)).all())}")

# --- circular regression with VonMises -------------------------------------------------------
angles = torch.remainder(torch.linspace(0, 3, 50) * 1.5 + 0.2 * torch.randn(50) + math.pi,
                         2 * math.pi) - math.pi
xs = torch.linspace(0, 3, 50)[:, None]
reg = nn.Linear(1, 2)
log_kappa = nn.Parameter(torch.zeros(()))
opt = torch.optim.Adam(list(reg.parameters()) + [log_kappa], lr=5e-2)
for step in range(40):
    direction = reg(xs)
    loc = torch.atan2(direction[:, 1], direction[:, 0])
    dist = VonMises(loc, log_kappa.exp())
    loss = -dist.log_prob(angles).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"von Mises nll {loss.item():.4f} kappa {log_kappa.exp().item():.4f}",
      "sample:", VonMises(torch.tensor([0.0, 3.0]), torch.tensor([2.0, 50.0])).sample())

# --- a Kumaraswamy stick-breaking posterior (as a Dirichlet-process VAE uses) -----------------
a = torch.tensor([[1.5, 2.0, 0.8]], requires_grad=True)
b = torch.tensor([[3.0, 1.2, 2.5]], requires_grad=True)
q = Kumaraswamy(a, b)
v = q.rsample(torch.Size([4]))
remaining = torch.cumprod(torch.cat([torch.ones(4, 1, 1), 1 - v[..., :-1]], -1), -1)
pi = v * remaining
kl = (q.log_prob(v) - Beta(torch.ones(1), torch.full((1,), 2.0)).log_prob(
    v.clamp(1e-6, 1 - 1e-6))).sum(-1).mean()
kl.backward()
print("sticks:", pi[0], f"kl {kl.item():.4f}", "grad a:", a.grad, "mean:", q.mean)

# --- LKJ and Wishart priors ------------------------------------------------------------------
lkj = LKJCholesky(3, concentration=2.0)
L = lkj.sample()
corr = L @ L.T
print("LKJ corr diag:", torch.diagonal(corr).round(decimals=4), f"log_prob {lkj.log_prob(L).item():.4f}")
W = Wishart(df=torch.tensor(5.0), covariance_matrix=torch.eye(3) * 0.5)
S = W.sample(torch.Size([2]))
print("Wishart:", tuple(S.shape), "symmetric:", torch.allclose(S, S.transpose(-1, -2)),
      f"log_prob {W.log_prob(S).mean().item():.4f} mean trace {W.mean.trace().item():.2f}",
      f"entropy {W.entropy().item():.4f}")
