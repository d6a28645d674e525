"""The Variational RNN (Chung et al.) the way emited/VariationalRecurrentNeuralNetwork
writes it: feature extractors ``phi_x``/``phi_z``, prior, encoder and decoder nets with
``Softplus`` standard deviations, the reparameterised sample by ``torch.empty(...).
normal_()``, a ``GRU`` stepped one time step at a time on ``torch.cat([phi_x, phi_z],
1).unsqueeze(0)``, the Gaussian KL written out (``_kld_gauss``) next to
``torch.distributions.kl_divergence`` of ``Normal``s, a Bernoulli likelihood through
``binary_cross_entropy`` with ``reduction="sum"``, KL annealing, ``clip_grad_norm_``,
a ``state_dict`` checkpoint every epoch with ``torch.save``, and ancestral sampling."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data
from torch.distributions import Normal, kl_divergence

torch.manual_seed(128)
EPS = torch.finfo(torch.float).eps


class VRNN(nn.Module):
    def __init__(self, x_dim, h_dim, z_dim, n_layers, bias=False):
        super().__init__()
        self.x_dim, self.h_dim, self.z_dim, self.n_layers = x_dim, h_dim, z_dim, n_layers
        self.phi_x = nn.Sequential(nn.Linear(x_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
        self.phi_z = nn.Sequential(nn.Linear(z_dim, h_dim), nn.ReLU())
        self.enc = nn.Sequential(nn.Linear(h_dim + h_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
        self.enc_mean = nn.Linear(h_dim, z_dim)
        self.enc_std = nn.Sequential(nn.Linear(h_dim, z_dim), nn.Softplus())
        self.prior = nn.Sequential(nn.Linear(h_dim, h_dim), nn.ReLU())
        self.prior_mean = nn.Linear(h_dim, z_dim)
        self.prior_std = nn.Sequential(nn.Linear(h_dim, z_dim), nn.Softplus())
        self.dec = nn.Sequential(nn.Linear(h_dim + h_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, h_dim), nn.ReLU())
        self.dec_std = nn.Sequential(nn.Linear(h_dim, x_dim), nn.Softplus())
        self.dec_mean = nn.Sequential(nn.Linear(h_dim, x_dim), nn.Sigmoid())
        self.rnn = nn.GRU(h_dim + h_dim, h_dim, n_layers, bias)

    def forward(self, x):
        kld_loss, nll_loss, kld_check = 0, 0, 0
        h = torch.zeros(self.n_layers, x.size(1), self.h_dim)
        for t in range(x.size(0)):
            phi_x_t = self.phi_x(x[t])
            enc_t = self.enc(torch.cat([phi_x_t, h[-1]], 1))
            enc_mean_t, enc_std_t = self.enc_mean(enc_t), self.enc_std(enc_t)
            prior_t = self.prior(h[-1])
            prior_mean_t, prior_std_t = self.prior_mean(prior_t), self.prior_std(prior_t)
            z_t = self._reparameterized_sample(enc_mean_t, enc_std_t)
            phi_z_t = self.phi_z(z_t)
            dec_t = self.dec(torch.cat([phi_z_t, h[-1]], 1))
            dec_mean_t = self.dec_mean(dec_t)
            _, h = self.rnn(torch.cat([phi_x_t, phi_z_t], 1).unsqueeze(0), h)
            kld_loss += self._kld_gauss(enc_mean_t, enc_std_t, prior_mean_t, prior_std_t)
            kld_check += kl_divergence(Normal(enc_mean_t, enc_std_t), Normal(prior_mean_t, prior_std_t)).sum()
            nll_loss += self._nll_bernoulli(dec_mean_t, x[t])
        return kld_loss, nll_loss, kld_check

    @torch.no_grad()
    def sample(self, seq_len):
        sample = torch.zeros(seq_len, self.x_dim)
        h = torch.zeros(self.n_layers, 1, self.h_dim)
        for t in range(seq_len):
            prior_t = self.prior(h[-1])
            prior_mean_t, prior_std_t = self.prior_mean(prior_t), self.prior_std(prior_t)
            z_t = self._reparameterized_sample(prior_mean_t, prior_std_t)
            phi_z_t = self.phi_z(z_t)
            dec_mean_t = self.dec_mean(self.dec(torch.cat([phi_z_t, h[-1]], 1)))
            phi_x_t = self.phi_x(dec_mean_t)
            _, h = self.rnn(torch.cat([phi_x_t, phi_z_t], 1).unsqueeze(0), h)
            sample[t] = dec_mean_t.data
        return sample

    def _reparameterized_sample(self, mean, std):
        eps = torch.empty(size=std.size(), device=mean.device, dtype=torch.float).normal_()
        return eps.mul(std).add_(mean)

    def _kld_gauss(self, mean_1, std_1, mean_2, std_2):
        kld_element = (2 * torch.log(std_2 + EPS) - 2 * torch.log(std_1 + EPS)
                       + (std_1.pow(2) + (mean_1 - mean_2).pow(2)) / std_2.pow(2) - 1)
        return 0.5 * torch.sum(kld_element)

    def _nll_bernoulli(self, theta, x):
        return F.binary_cross_entropy(theta, x, reduction="sum")


def bouncing_bits(n, T, W, g):
    seqs = torch.zeros(n, T, W)
    for i in range(n):
        pos = int(torch.randint(0, W, (1,), generator=g))
        vel = 1 if torch.rand(1, generator=g).item() > 0.5 else -1
        for t in range(T):
            seqs[i, t, pos] = 1.0
            if not 0 <= pos + vel < W:
                vel = -vel
            pos += vel
    return seqs


x_dim, h_dim, z_dim, n_layers = 8, 16, 4, 1
g = torch.Generator().manual_seed(0)
data = bouncing_bits(48, 10, x_dim, g)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=16, shuffle=True,
                                     generator=torch.Generator().manual_seed(1))
model = VRNN(x_dim, h_dim, z_dim, n_layers)
print(model.rnn, "bias" in dict(model.rnn.named_parameters()) or "no bias")
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
clip = 10
for epoch in range(1, 5):
    train_loss, kl_total, check_total = 0.0, 0.0, 0.0
    beta = min(1.0, epoch / 3)
    for batch_idx, (x,) in enumerate(loader):
        x = x.transpose(0, 1)          # (seq, batch, features)
        optimizer.zero_grad()
        kld_loss, nll_loss, kld_check = model(x)
        loss = beta * kld_loss + nll_loss
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        train_loss += loss.item()
        kl_total += kld_loss.item()
        check_total += kld_check.item()
    print(f"====> Epoch: {epoch} beta {beta:.3f} Average loss: {train_loss / len(loader.dataset):.4f} "
          f"KL {kl_total / len(loader.dataset):.4f} (distributions {check_total / len(loader.dataset):.4f})")
    torch.save(model.state_dict(), f"vrnn_state_dict_{epoch}.pth")

state = torch.load("vrnn_state_dict_4.pth")
print("checkpoint keys", len(state), list(state)[-4:])
fresh = VRNN(x_dim, h_dim, z_dim, n_layers)
fresh.load_state_dict(state)
torch.manual_seed(5)
sample = fresh.sample(10)
print("sample shape", tuple(sample.shape), "argmax per step", sample.argmax(1).tolist())
print("sample mass per step", [round(v, 4) for v in sample.sum(1).tolist()])
with torch.no_grad():
    torch.manual_seed(6)
    kld, nll, _ = fresh(data[:16].transpose(0, 1))
    print(f"held-in bound per sequence {(kld + nll).item() / 16:.4f} bits/step "
          f"{(kld + nll).item() / 16 / 10 / math.log(2):.4f}")
