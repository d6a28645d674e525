"""Uncertainty the way the Bayes-by-Backprop blog implementations, MC-dropout snippets and
gpleiss/temperature_scaling write it: Gaussian variational layers with ``softplus``/
``log1p(exp(rho))`` scales and the reparameterisation trick, a scale-mixture prior through
``torch.distributions.Normal(...).log_prob`` and ``logsumexp``, the closed-form
``kl_divergence`` for a Gaussian prior, the ELBO with minibatch KL weighting, MC dropout
switched on per module at test time, predictive entropy and mutual information, expected
calibration error with ``torch.bucketize``/``histc``, and temperature scaling fitted by
LBFGS on held-out logits; a ``DataLoader`` over a ``TensorDataset`` with a seeded
generator."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence
from torch.utils.data import DataLoader, TensorDataset

SEED = 0
torch.manual_seed(SEED)
np.random.seed(SEED)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
PI = 0.5
SIGMA_1 = torch.FloatTensor([math.exp(-0)])
SIGMA_2 = torch.FloatTensor([math.exp(-6)])


class Gaussian(object):
    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.normal = torch.distributions.Normal(0, 1)

    @property
    def sigma(self):
        return torch.log1p(torch.exp(self.rho))

    def sample(self):
        epsilon = self.normal.sample(self.rho.size()).to(DEVICE)
        return self.mu + self.sigma * epsilon

    def log_prob(self, input):
        return (-math.log(math.sqrt(2 * math.pi))
                - torch.log(self.sigma)
                - ((input - self.mu) ** 2) / (2 * self.sigma ** 2)).sum()


class ScaleMixtureGaussian(object):
    def __init__(self, pi, sigma1, sigma2):
        super().__init__()
        self.pi = pi
        self.gaussian1 = torch.distributions.Normal(0, sigma1)
        self.gaussian2 = torch.distributions.Normal(0, sigma2)

    def log_prob(self, input):
        prob1 = self.gaussian1.log_prob(input) + math.log(self.pi)
        prob2 = self.gaussian2.log_prob(input) + math.log(1 - self.pi)
        return torch.logsumexp(torch.stack([prob1, prob2]), dim=0).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
        self.weight = Gaussian(self.weight_mu, self.weight_rho)
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
        self.bias = Gaussian(self.bias_mu, self.bias_rho)
        self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, input, sample=False, calculate_log_probs=False):
        if self.training or sample:
            weight = self.weight.sample()
            bias = self.bias.sample()
        else:
            weight = self.weight.mu
            bias = self.bias.mu
        if self.training or calculate_log_probs:
            self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
            self.log_variational_posterior = (self.weight.log_prob(weight)
                                              + self.bias.log_prob(bias))
        else:
            self.log_prior, self.log_variational_posterior = 0, 0
        return F.linear(input, weight, bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


class BayesianNetwork(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.l1 = BayesianLinear(n_in, n_hidden)
        self.l2 = BayesianLinear(n_hidden, n_out)

    def forward(self, x, sample=False):
        x = F.relu(self.l1(x, sample))
        return F.log_softmax(self.l2(x, sample), dim=1)

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior

    def log_variational_posterior(self):
        return self.l1.log_variational_posterior + self.l2.log_variational_posterior

    def sample_elbo(self, input, target, num_batches, samples=2):
        outputs = torch.zeros(samples, input.size(0), 3, device=DEVICE)
        log_priors = torch.zeros(samples, device=DEVICE)
        log_variational_posteriors = torch.zeros(samples, device=DEVICE)
        for i in range(samples):
            outputs[i] = self(input, sample=True)
            log_priors[i] = self.log_prior()
            log_variational_posteriors[i] = self.log_variational_posterior()
        log_prior = log_priors.mean()
        log_variational_posterior = log_variational_posteriors.mean()
        negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction="sum")
        loss = (log_variational_posterior - log_prior) / num_batches + negative_log_likelihood
        return loss, log_prior, log_variational_posterior, negative_log_likelihood


def make_data(n, generator):
    centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y = torch.randint(0, 3, (n,), generator=generator)
    x = centers[y] + 1.1 * torch.randn(n, 2, generator=generator)
    return x, y


g = torch.Generator().manual_seed(1)
x_train, y_train = make_data(96, g)
x_val, y_val = make_data(64, g)
x_test, y_test = make_data(64, g)
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True,
                    generator=torch.Generator().manual_seed(2), drop_last=False)
NUM_BATCHES = len(loader)

net = BayesianNetwork(2, 16, 3).to(DEVICE)
print(net)
optimizer = torch.optim.Adam(net.parameters(), lr=0.03)
for epoch in range(8):
    net.train()
    for data, target in loader:
        net.zero_grad()
        loss, log_prior, log_vp, nll = net.sample_elbo(data, target, NUM_BATCHES)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f} log prior {log_prior.item():.2f} "
          f"log q {log_vp.item():.2f} nll {nll.item():.3f}")

net.eval()
with torch.no_grad():
    outputs = torch.stack([net(x_test, sample=True) for _ in range(10)])
    mean_probs = outputs.exp().mean(0)
    ensemble_acc = (mean_probs.argmax(1) == y_test).float().mean()
    mean_acc = (net(x_test).argmax(1) == y_test).float().mean()
print(f"ensemble acc {ensemble_acc.item():.3f}  posterior-mean acc {mean_acc.item():.3f}")
sigmas = net.l1.weight.sigma
print("posterior sigma range:", f"{sigmas.min().item():.5f}", f"{sigmas.max().item():.5f}")

# a closed-form KL to a unit Gaussian prior for the same posterior
q = Normal(net.l1.weight_mu, net.l1.weight.sigma)
p = Normal(torch.zeros_like(q.loc), torch.ones_like(q.scale))
print(f"closed-form KL {kl_divergence(q, p).sum().item():.3f}")


# --- MC dropout ---------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, p=0.2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Dropout(p),
                                 nn.Linear(32, 32), nn.ReLU(), nn.Dropout(p), nn.Linear(32, 3))

    def forward(self, x):
        return self.net(x)


def enable_dropout(model):
    """Function to enable the dropout layers during test-time"""
    for m in model.modules():
        if m.__class__.__name__.startswith("Dropout"):
            m.train()


torch.manual_seed(3)
mlp = MLP()
opt = torch.optim.SGD(mlp.parameters(), lr=0.1, momentum=0.9, nesterov=True)
for epoch in range(15):
    for data, target in loader:
        opt.zero_grad()
        F.cross_entropy(mlp(data), target).backward()
        opt.step()
mlp.eval()
enable_dropout(mlp)
print("dropout modes:", [m.training for m in mlp.modules()])
with torch.no_grad():
    probs = torch.stack([F.softmax(mlp(x_test), dim=-1) for _ in range(20)])
mean = probs.mean(0)
entropy = -(mean * torch.log(mean + 1e-12)).sum(-1)
expected_entropy = -(probs * torch.log(probs + 1e-12)).sum(-1).mean(0)
mutual_info = entropy - expected_entropy
print(f"predictive entropy {entropy.mean().item():.4f} mutual information "
      f"{mutual_info.mean().item():.4f}")
print("most uncertain:", torch.topk(mutual_info, 3).indices.tolist())


# --- calibration: ECE and temperature scaling -----------------------------------------------
class _ECELoss(nn.Module):
    def __init__(self, n_bins=10):
        super().__init__()
        bin_boundaries = torch.linspace(0, 1, n_bins + 1)
        self.bin_lowers = bin_boundaries[:-1]
        self.bin_uppers = bin_boundaries[1:]

    def forward(self, logits, labels):
        softmaxes = F.softmax(logits, dim=1)
        confidences, predictions = torch.max(softmaxes, 1)
        accuracies = predictions.eq(labels)
        ece = torch.zeros(1, device=logits.device)
        for bin_lower, bin_upper in zip(self.bin_lowers, self.bin_uppers):
            in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())
            prop_in_bin = in_bin.float().mean()
            if prop_in_bin.item() > 0:
                accuracy_in_bin = accuracies[in_bin].float().mean()
                avg_confidence_in_bin = confidences[in_bin].mean()
                ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
        return ece


class ModelWithTemperature(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.temperature = nn.Parameter(torch.ones(1) * 1.5)

    def forward(self, input):
        return self.temperature_scale(self.model(input))

    def temperature_scale(self, logits):
        temperature = self.temperature.unsqueeze(1).expand(logits.size(0), logits.size(1))
        return logits / temperature

    def set_temperature(self, logits, labels):
        nll_criterion = nn.CrossEntropyLoss()
        ece_criterion = _ECELoss()
        before_nll = nll_criterion(logits, labels).item()
        before_ece = ece_criterion(logits, labels).item()
        print("Before temperature - NLL: %.3f, ECE: %.3f" % (before_nll, before_ece))
        optimizer = torch.optim.LBFGS([self.temperature], lr=0.01, max_iter=50)

        def eval():
            optimizer.zero_grad()
            loss = nll_criterion(self.temperature_scale(logits), labels)
            loss.backward()
            return loss

        optimizer.step(eval)
        after_nll = nll_criterion(self.temperature_scale(logits), labels).item()
        after_ece = ece_criterion(self.temperature_scale(logits), labels).item()
        print("Optimal temperature: %.3f" % self.temperature.item())
        print("After temperature - NLL: %.3f, ECE: %.3f" % (after_nll, after_ece))
        return self


mlp.eval()
with torch.no_grad():
    val_logits = mlp(x_val) * 3.0  # an over-confident model
scaled = ModelWithTemperature(mlp).set_temperature(val_logits, y_val)

conf = F.softmax(val_logits / scaled.temperature.detach(), 1).max(1).values
edges = torch.linspace(0, 1, 6)
bins = torch.bucketize(conf, edges[1:-1], right=True)
print("bin counts:", torch.bincount(bins, minlength=5).tolist(),
      "histc:", torch.histc(conf, bins=5, min=0, max=1).tolist())
