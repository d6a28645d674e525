"""Probabilistic forecasting the way GluonTS-style PyTorch ports write it: DeepAR with an
LSTM over lagged, mean-scaled targets and time features, distribution heads for
``StudentT`` (``softplus`` scale, ``2 + softplus`` degrees of freedom), ``NegativeBinomial``
for counts (``total_count``/``logits``) and a GP-copula-style ``LowRankMultivariateNormal``
across series, the negative log-likelihood, ancestral sampling that feeds samples back as
inputs, ``torch.quantile`` prediction intervals and the weighted quantile loss; then
N-BEATS generic, trend (polynomial basis) and seasonality (Fourier basis) blocks with
backcast residual stacking, trained on sMAPE/MASE with ``unfold``-made windows."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import LowRankMultivariateNormal, NegativeBinomial, StudentT

torch.manual_seed(42)
np.random.seed(42)

# --- data: 4 series with trend, weekly season and noise; counts derived from them ---------------
T, n_series, context, horizon = 96, 4, 24, 8
t = torch.arange(T, dtype=torch.float32)
level = torch.tensor([10.0, 20.0, 5.0, 40.0])[:, None]
series = (level * (1 + 0.004 * t) + level * 0.2 * torch.sin(2 * np.pi * t / 7)
          + 0.5 * torch.randn(n_series, T) * level.sqrt())
counts = torch.poisson(series.clamp(min=0.1) / 4)
time_feat = torch.stack([torch.sin(2 * np.pi * t / 7), torch.cos(2 * np.pi * t / 7),
                         t / T - 0.5], -1)  # T, 3
print("series:", tuple(series.shape), "counts sample:", counts[0, :6].tolist())


class DeepAR(nn.Module):
    def __init__(self, num_feat=3, hidden=24, layers=2, likelihood="studentt"):
        super().__init__()
        self.likelihood = likelihood
        self.rnn = nn.LSTM(1 + num_feat, hidden, layers, batch_first=True, dropout=0.1)
        n_out = 3 if likelihood == "studentt" else 2
        self.proj = nn.Linear(hidden, n_out)

    def distribution(self, out, scale):
        p = self.proj(out)
        if self.likelihood == "studentt":
            df = 2.0 + F.softplus(p[..., 0])
            loc = p[..., 1] * scale
            sc = F.softplus(p[..., 2]) * scale + 1e-4
            return StudentT(df, loc, sc)
        total_count = F.softplus(p[..., 0]) * scale.sqrt() + 1e-3
        return NegativeBinomial(total_count=total_count, logits=p[..., 1] + scale.log())

    def forward(self, target, feats, hidden=None):
        scale = target[:, :context].abs().mean(1, keepdim=True).clamp(min=1.0)
        inputs = torch.cat([(target / scale)[..., None], feats], -1)
        out, hidden = self.rnn(inputs, hidden)
        return self.distribution(out, scale), hidden, scale

    @torch.no_grad()
    def sample(self, past, past_feat, fut_feat, num_samples=50):
        dist, hidden, scale = self(past, past_feat)
        b = past.shape[0]
        scale = scale.repeat_interleave(num_samples, 0)
        hidden = tuple(h.repeat_interleave(num_samples, 1) for h in hidden)
        last = dist.sample()[:, -1:].repeat_interleave(num_samples, 0)
        samples = []
        for k in range(fut_feat.shape[1]):
            x = torch.cat([(last / scale)[..., None],
                           fut_feat[:, k:k + 1].repeat_interleave(num_samples, 0)], -1)
            out, hidden = self.rnn(x, hidden)
            last = self.distribution(out, scale).sample()
            samples.append(last)
        return torch.cat(samples, 1).view(b, num_samples, -1)


def windows(x, length):
    return x.unfold(-1, length, 4)  # (n_series, n_windows, length)


def quantile_loss(target, forecast_q, q):
    return 2 * torch.sum(torch.abs((forecast_q - target) * ((target <= forecast_q).float() - q)))


for likelihood, data in (("studentt", series), ("negbin", counts)):
    torch.manual_seed(0)
    model = DeepAR(likelihood=likelihood)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    train = windows(data[:, :T - horizon], context + 1).reshape(-1, context + 1)
    feats = windows(time_feat[:T - horizon].T, context + 1).permute(1, 2, 0)
    feats = feats.repeat(n_series, 1, 1)
    for epoch in range(6):
        model.train()
        dist, _, _ = model(train[:, :-1], feats[:, :-1])
        nll = -dist.log_prob(train[:, 1:]).mean()
        opt.zero_grad()
        nll.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        if epoch % 2 == 1:
            print(f"{likelihood} epoch {epoch} nll {nll.item():.4f}")
    model.eval()
    past = data[:, T - horizon - context: T - horizon]
    past_feat = time_feat[T - horizon - context: T - horizon].expand(n_series, -1, -1)
    fut_feat = time_feat[T - horizon:].expand(n_series, -1, -1)
    torch.manual_seed(1)
    samples = model.sample(past, past_feat, fut_feat)
    qs = torch.tensor([0.1, 0.5, 0.9])
    forecast = torch.quantile(samples, qs, dim=1)  # 3, n_series, horizon
    target = data[:, T - horizon:]
    wql = sum(quantile_loss(target, forecast[i], q) for i, q in enumerate(qs.tolist()))
    wql = wql / target.abs().sum() / len(qs)
    coverage = ((target >= forecast[0]) & (target <= forecast[2])).float().mean()
    print(f"{likelihood}: samples {tuple(samples.shape)} median[0,:3] {forecast[1, 0, :3]} "
          f"wQL {wql.item():.4f} 80% coverage {coverage.item():.3f}")
    if likelihood == "studentt":
        print("df range:", f"{dist.df.min().item():.3f}", f"{dist.df.max().item():.3f}",
              "mean finite:", bool(torch.isfinite(dist.mean).all()))
    else:
        print("negbin mean/var:", f"{dist.mean.mean().item():.4f}",
              f"{dist.variance.mean().item():.4f}")

# a low-rank Gaussian across series (GP-copula style) on the scaled last step
torch.manual_seed(3)
rank = 2
head = nn.Linear(n_series * 3, n_series * (2 + rank))
opt = torch.optim.Adam(head.parameters(), lr=5e-2)
scaled = series / series.mean(1, keepdim=True)
x_in = torch.cat([scaled[:, :-1].T[:, :, None].expand(-1, -1, 3)[..., :1],
                  time_feat[:-1, None, :2].expand(-1, n_series, -1)], -1).reshape(T - 1, -1)
y = scaled[:, 1:].T
for step in range(30):
    p = head(x_in).view(T - 1, n_series, 2 + rank)
    dist = LowRankMultivariateNormal(loc=p[..., 0], cov_factor=p[..., 2:] * 0.1,
                                     cov_diag=F.softplus(p[..., 1]) + 1e-3)
    loss = -dist.log_prob(y).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"low-rank MVN nll {loss.item():.4f} cov shape {tuple(dist.covariance_matrix.shape)} "
      f"entropy {dist.entropy().mean().item():.4f}")


# --- N-BEATS ------------------------------------------------------------------------------------
class NBeatsBlock(nn.Module):
    def __init__(self, input_size, theta_size, basis_function, layers=2, layer_size=64):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(input_size, layer_size)]
                                    + [nn.Linear(layer_size, layer_size)
                                       for _ in range(layers - 1)])
        self.basis_parameters = nn.Linear(layer_size, theta_size)
        self.basis_function = basis_function

    def forward(self, x):
        block_input = x
        for layer in self.layers:
            block_input = torch.relu(layer(block_input))
        basis_parameters = self.basis_parameters(block_input)
        return self.basis_function(basis_parameters)


class GenericBasis(nn.Module):
    def __init__(self, backcast_size, forecast_size):
        super().__init__()
        self.backcast_size, self.forecast_size = backcast_size, forecast_size

    def forward(self, theta):
        return theta[:, :self.backcast_size], theta[:, -self.forecast_size:]


class TrendBasis(nn.Module):
    def __init__(self, degree_of_polynomial, backcast_size, forecast_size):
        super().__init__()
        self.polynomial_size = degree_of_polynomial + 1
        self.backcast_time = nn.Parameter(torch.tensor(np.concatenate(
            [np.power(np.arange(backcast_size, dtype=float) / backcast_size, i)[None, :]
             for i in range(self.polynomial_size)]), dtype=torch.float32), requires_grad=False)
        self.forecast_time = nn.Parameter(torch.tensor(np.concatenate(
            [np.power(np.arange(forecast_size, dtype=float) / forecast_size, i)[None, :]
             for i in range(self.polynomial_size)]), dtype=torch.float32), requires_grad=False)

    def forward(self, theta):
        backcast = torch.einsum("bp,pt->bt", theta[:, self.polynomial_size:], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, :self.polynomial_size], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(nn.Module):
    def __init__(self, harmonics, backcast_size, forecast_size):
        super().__init__()
        self.frequency = np.append(np.zeros(1, dtype=np.float32),
                                   np.arange(harmonics, harmonics / 2 * forecast_size,
                                             dtype=np.float32) / harmonics)[None, :]
        backcast_grid = -2 * np.pi * (np.arange(backcast_size, dtype=np.float32)[:, None]
                                      / forecast_size) * self.frequency
        forecast_grid = 2 * np.pi * (np.arange(forecast_size, dtype=np.float32)[:, None]
                                     / forecast_size) * self.frequency
        self.backcast_cos_template = nn.Parameter(torch.tensor(
            np.transpose(np.cos(backcast_grid)), dtype=torch.float32), requires_grad=False)
        self.backcast_sin_template = nn.Parameter(torch.tensor(
            np.transpose(np.sin(backcast_grid)), dtype=torch.float32), requires_grad=False)
        self.forecast_cos_template = nn.Parameter(torch.tensor(
            np.transpose(np.cos(forecast_grid)), dtype=torch.float32), requires_grad=False)
        self.forecast_sin_template = nn.Parameter(torch.tensor(
            np.transpose(np.sin(forecast_grid)), dtype=torch.float32), requires_grad=False)

    def forward(self, theta):
        params_per_harmonic = theta.shape[1] // 4
        backcast_harmonics_cos = torch.einsum(
            "bp,pt->bt", theta[:, 2 * params_per_harmonic:3 * params_per_harmonic],
            self.backcast_cos_template)
        backcast_harmonics_sin = torch.einsum(
            "bp,pt->bt", theta[:, 3 * params_per_harmonic:], self.backcast_sin_template)
        backcast = backcast_harmonics_sin + backcast_harmonics_cos
        forecast_harmonics_cos = torch.einsum(
            "bp,pt->bt", theta[:, :params_per_harmonic], self.forecast_cos_template)
        forecast_harmonics_sin = torch.einsum(
            "bp,pt->bt", theta[:, params_per_harmonic:2 * params_per_harmonic],
            self.forecast_sin_template)
        forecast = forecast_harmonics_sin + forecast_harmonics_cos
        return backcast, forecast


class NBeats(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x, input_mask):
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for i, block in enumerate(self.blocks):
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        return forecast


def smape_2_loss(forecast, target, mask):
    def divide_no_nan(a, b):
        result = a / b
        result[result != result] = .0
        result[result == np.inf] = .0
        return result

    return 200 * torch.mean(divide_no_nan(torch.abs(forecast - target),
                                          torch.abs(forecast.data) + torch.abs(target.data))
                            * mask)


def mase_loss(insample, freq, forecast, target, mask):
    masep = torch.mean(torch.abs(insample[:, freq:] - insample[:, :-freq]), dim=1)
    masked_masep_inv = 1.0 / masep[:, None]
    masked_masep_inv[masked_masep_inv != masked_masep_inv] = 0.0
    return torch.mean(torch.abs(target - forecast) * masked_masep_inv)


torch.manual_seed(7)
L, H = context, horizon
trend = NBeatsBlock(L, 2 * 4, TrendBasis(3, L, H), layer_size=32)
season_theta = 4 * int(np.ceil(2 / 2 * H) - (2 - 1))
seasonality = NBeatsBlock(L, season_theta, SeasonalityBasis(2, L, H), layer_size=32)
generic = NBeatsBlock(L, L + H, GenericBasis(L, H), layer_size=32)
nbeats = NBeats(nn.ModuleList([trend, seasonality, generic]))
print("trainable:", sum(p.numel() for p in nbeats.parameters() if p.requires_grad),
      "frozen:", sum(p.numel() for p in nbeats.parameters() if not p.requires_grad))
wins = series.unfold(1, L + H, 2).reshape(-1, L + H)
wins = wins / wins[:, :L].mean(1, keepdim=True)
x_w, y_w = wins[:, :L], wins[:, L:]
opt = torch.optim.Adam(filter(lambda p: p.requires_grad, nbeats.parameters()), lr=1e-3)
for it in range(25):
    forecast = nbeats(x_w, torch.ones_like(x_w))
    loss = smape_2_loss(forecast, y_w, torch.ones_like(y_w))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(nbeats.parameters(), 1.0)
    opt.step()
    if it % 8 == 0:
        with torch.no_grad():
            mase = mase_loss(x_w, 7, forecast, y_w, torch.ones_like(y_w))
        print(f"nbeats iter {it} sMAPE {loss.item():.4f} MASE {mase.item():.4f}")
