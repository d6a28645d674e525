"""Neural processes the way deepmind/neural-processes' PyTorch ports and the (attentive)
NP tutorials write them: a GP curve generator drawing functions from an RBF kernel by
``torch.linalg.cholesky`` with jitter, random context/target splits, a deterministic
encoder aggregated by mean and a latent encoder giving ``Normal(mu, 0.1 + 0.9 *
sigmoid(log_sigma))``, ``rsample`` and ``kl_divergence(posterior, prior)``, a decoder whose
``softplus`` scale bounds the ``Normal`` log-likelihood, the ELBO, a dot-product attentive
variant (``torch.bmm`` cross-attention), and ``Independent`` over the output dimension."""
import collections

import torch
from torch import nn
from torch.distributions import Independent, Normal, kl_divergence

NPRegressionDescription = collections.namedtuple(
    "NPRegressionDescription", ("query", "target_y", "num_total_points", "num_context_points"))


class GPCurvesReader:
    def __init__(self, batch_size, max_num_context, x_size=1, y_size=1, l1_scale=0.4,
                 sigma_scale=1.0, testing=False):
        self.batch_size, self.max_num_context = batch_size, max_num_context
        self.x_size, self.y_size = x_size, y_size
        self.l1_scale, self.sigma_scale, self.testing = l1_scale, sigma_scale, testing

    def _gaussian_kernel(self, xdata, l1, sigma_f, sigma_noise=2e-2):
        num_total_points = xdata.shape[1]
        xdata1 = xdata.unsqueeze(1)
        xdata2 = xdata.unsqueeze(2)
        diff = xdata1 - xdata2
        norm = (diff[:, None, :, :, :] / l1[:, :, None, None, :]) ** 2
        norm = norm.sum(-1)
        kernel = (sigma_f ** 2)[:, :, None, None] * torch.exp(-0.5 * norm)
        kernel += (sigma_noise ** 2) * torch.eye(num_total_points)
        return kernel

    def generate_curves(self):
        num_context = int(torch.randint(3, self.max_num_context, ()))
        if self.testing:
            num_target = 20
            num_total_points = num_target
            x_values = torch.linspace(-2, 2, num_target).unsqueeze(0).repeat(self.batch_size, 1).unsqueeze(-1)
        else:
            num_target = int(torch.randint(2, self.max_num_context, ()))
            num_total_points = num_context + num_target
            x_values = torch.rand(self.batch_size, num_total_points, self.x_size) * 4 - 2
        l1 = torch.ones(self.batch_size, self.y_size, self.x_size) * self.l1_scale
        sigma_f = torch.ones(self.batch_size, self.y_size) * self.sigma_scale
        kernel = self._gaussian_kernel(x_values, l1, sigma_f).double()
        cholesky = torch.linalg.cholesky(kernel).float()
        y_values = torch.matmul(cholesky, torch.randn(self.batch_size, self.y_size, num_total_points, 1))
        y_values = y_values.squeeze(3).permute(0, 2, 1)
        if self.testing:
            target_x, target_y = x_values, y_values
            idx = torch.randperm(num_target)
            context_x, context_y = x_values[:, idx[:num_context]], y_values[:, idx[:num_context]]
        else:
            target_x = x_values[:, :num_target + num_context, :]
            target_y = y_values[:, :num_target + num_context, :]
            context_x, context_y = x_values[:, :num_context, :], y_values[:, :num_context, :]
        query = ((context_x, context_y), target_x)
        return NPRegressionDescription(query=query, target_y=target_y,
                                       num_total_points=target_x.shape[1],
                                       num_context_points=num_context)


def batch_mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class LatentEncoder(nn.Module):
    def __init__(self, hidden=16, latent=8):
        super().__init__()
        self.mlp = batch_mlp([2, hidden, hidden])
        self.penultimate = nn.Linear(hidden, (hidden + latent) // 2)
        self.mu = nn.Linear((hidden + latent) // 2, latent)
        self.log_sigma = nn.Linear((hidden + latent) // 2, latent)

    def forward(self, x, y):
        hidden = self.mlp(torch.cat([x, y], dim=-1)).mean(dim=1)
        hidden = torch.relu(self.penultimate(hidden))
        mu, log_sigma = self.mu(hidden), self.log_sigma(hidden)
        sigma = 0.1 + 0.9 * torch.sigmoid(log_sigma)
        return Normal(loc=mu, scale=sigma)


class DeterministicEncoder(nn.Module):
    def __init__(self, hidden=16, attention=False):
        super().__init__()
        self.mlp = batch_mlp([2, hidden, hidden])
        self.attention = attention
        if attention:
            self.q, self.k = nn.Linear(1, hidden), nn.Linear(1, hidden)

    def forward(self, context_x, context_y, target_x):
        hidden = self.mlp(torch.cat([context_x, context_y], dim=-1))
        if not self.attention:
            return hidden.mean(dim=1, keepdim=True).expand(-1, target_x.shape[1], -1)
        q, k = self.q(target_x), self.k(context_x)
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5, dim=-1)
        return torch.bmm(weights, hidden)


class Decoder(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.mlp = batch_mlp([in_dim, 16, 16, 2])

    def forward(self, representation, target_x):
        hidden = self.mlp(torch.cat([representation, target_x], dim=-1))
        mu, log_sigma = torch.split(hidden, 1, dim=-1)
        sigma = 0.1 + 0.9 * nn.functional.softplus(log_sigma)
        return Independent(Normal(loc=mu, scale=sigma), 1), mu, sigma


class LatentModel(nn.Module):
    def __init__(self, attention=False):
        super().__init__()
        self.latent_encoder = LatentEncoder()
        self.det_encoder = DeterministicEncoder(attention=attention)
        self.decoder = Decoder(16 + 8 + 1)

    def forward(self, query, num_targets, target_y=None):
        (context_x, context_y), target_x = query
        prior = self.latent_encoder(context_x, context_y)
        if target_y is None:
            latent_rep = prior.loc
        else:
            posterior = self.latent_encoder(target_x, target_y)
            latent_rep = posterior.rsample()
        latent_rep = latent_rep.unsqueeze(1).repeat(1, num_targets, 1)
        det = self.det_encoder(context_x, context_y, target_x)
        dist, mu, sigma = self.decoder(torch.cat([det, latent_rep], dim=-1), target_x)
        if target_y is not None:
            log_p = dist.log_prob(target_y)
            kl = kl_divergence(posterior, prior).sum(-1, keepdim=True)
            loss = -torch.mean(log_p - kl / num_targets)
        else:
            log_p = kl = loss = None
        return mu, sigma, log_p, kl, loss


torch.manual_seed(3)
train_reader = GPCurvesReader(batch_size=8, max_num_context=8)
test_reader = GPCurvesReader(batch_size=1, max_num_context=8, testing=True)
test_data = test_reader.generate_curves()
print("test curve:", tuple(test_data.target_y.shape), test_data.num_context_points,
      f"{test_data.target_y.std().item():.5f}")
for attention in (False, True):
    torch.manual_seed(4)
    model = LatentModel(attention=attention)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for it in range(6):
        data_train = train_reader.generate_curves()
        optimizer.zero_grad()
        _, _, log_prob, kl, loss = model(data_train.query, data_train.num_total_points,
                                         data_train.target_y)
        loss.backward()
        optimizer.step()
        print(f"attention={attention} it {it} points {data_train.num_total_points} "
              f"loss {loss.item():.5f} kl {kl.mean().item():.5f}")
    with torch.no_grad():
        mu, sigma, _, _, _ = model(test_data.query, test_data.num_total_points)
    print("predict:", tuple(mu.shape), f"mu {mu.mean().item():.5f} sigma {sigma.mean().item():.5f}")
