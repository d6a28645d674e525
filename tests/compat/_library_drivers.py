"""Driver programs for the third-party library tests (``test_third_party_libs_5.py``).

Each ``<library>_case(out)`` runs a library's typical use and stores the numbers it gives in
the dict ``out``. The test runs this file twice, once on PyTorch and once under ``python -m
ember.compat.run``, as ``python _library_drivers.py OUT.npz LIBRARY``; the two ``.npz``
files are then compared. The file imports nothing from ember or the tests, so that the run on
PyTorch is PyTorch's alone.
"""

import io
import pickle
import sys

import numpy as np
import torch
from torch import nn


def captum_case(out):
    """captum's attribution methods on a small CNN and an MLP."""
    from captum.attr import (LRP, DeepLift, DeepLiftShap, FeatureAblation, GradientShap,
                             GuidedBackprop, InputXGradient, IntegratedGradients, KernelShap,
                             LayerConductance, LayerGradCam, LayerIntegratedGradients, Lime,
                             NeuronIntegratedGradients, NoiseTunnel, Occlusion, Saliency,
                             ShapleyValueSampling)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                          nn.Flatten(), nn.Linear(32, 3)).eval()
    x = torch.randn(2, 1, 8, 8)
    base = torch.zeros_like(x)
    groups = torch.arange(4).repeat_interleave(16).reshape(1, 1, 8, 8)  # four feature groups
    ig = IntegratedGradients(model)
    attr, delta = ig.attribute(x, base, target=1, n_steps=16, return_convergence_delta=True)
    out["ig"], out["ig_delta"] = attr.numpy(), delta.numpy()
    out["ig_riemann"] = ig.attribute(x, target=torch.tensor([0, 2]), n_steps=8,
                                     method="riemann_trapezoid").numpy()
    out["saliency"] = Saliency(model).attribute(x, target=2).numpy()
    out["saliency_signed"] = Saliency(model).attribute(x, target=0, abs=False).numpy()
    out["ixg"] = InputXGradient(model).attribute(x, target=1).detach().numpy()
    out["deeplift"] = DeepLift(model).attribute(x, base, target=1).detach().numpy()
    out["guided"] = GuidedBackprop(model).attribute(x, target=1).detach().numpy()
    torch.manual_seed(1)
    np.random.seed(1)  # GradientShap draws its baselines and coefficients with NumPy
    out["gshap"] = GradientShap(model).attribute(x, torch.randn(3, 1, 8, 8) * 0.1, target=1,
                                                  n_samples=4).detach().numpy()
    torch.manual_seed(2)
    out["nt"] = NoiseTunnel(Saliency(model)).attribute(x, nt_type="smoothgrad", nt_samples=3,
                                                       target=1, stdevs=0.1).numpy()
    out["occlusion"] = Occlusion(model).attribute(x, sliding_window_shapes=(1, 3, 3),
                                                  strides=(1, 2, 2), target=1).numpy()
    out["ablation"] = FeatureAblation(model).attribute(x, target=0, feature_mask=groups).numpy()
    out["gradcam"] = LayerGradCam(model, model[3]).attribute(x, target=1).detach().numpy()
    out["cond"] = LayerConductance(model, model[3]).attribute(
        x, target=1, n_steps=8).detach().numpy()
    out["lig"] = LayerIntegratedGradients(model, model[0]).attribute(
        x, target=1, n_steps=8).detach().numpy()
    out["neuron_ig"] = NeuronIntegratedGradients(model, model[3]).attribute(
        x, neuron_selector=(1, 1, 1), n_steps=8).detach().numpy()
    torch.manual_seed(3)
    out["svs"] = ShapleyValueSampling(model).attribute(x, target=1, n_samples=2,
                                                       feature_mask=groups).numpy()
    mlp = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 2)).eval()
    xs = torch.randn(3, 5)
    out["lrp"] = LRP(mlp).attribute(xs, target=1).detach().numpy()
    out["dlshap"] = DeepLiftShap(mlp).attribute(xs, torch.randn(4, 5), target=0).detach().numpy()
    # the surrogate models are fitted with scikit-learn
    torch.manual_seed(4)
    out["lime"] = Lime(model).attribute(x[:1], target=1, n_samples=20,
                                        feature_mask=groups).numpy()
    torch.manual_seed(5)
    out["kshap"] = KernelShap(model).attribute(x[:1], target=1, n_samples=20,
                                               feature_mask=groups).numpy()

def opacus_case(out):
    """opacus: per-sample gradients (hooks and functorch), the validator, DP-SGD
    training with the PrivacyEngine, ghost clipping."""
    from torch.utils.data import DataLoader, TensorDataset
    from opacus import PrivacyEngine, GradSampleModule
    from opacus.validators import ModuleValidator
    from opacus.accountants.utils import get_noise_multiplier

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 16), nn.LayerNorm(16), nn.Tanh(), nn.Linear(16, 3))
    x = torch.randn(5, 1, 8, 8)
    y = torch.tensor([0, 1, 2, 1, 0])
    # per-sample gradients through the hooks
    gsm = GradSampleModule(model)
    nn.functional.cross_entropy(gsm(x), y, reduction="sum").backward()
    for name, p in gsm.named_parameters():
        out["gs_" + name] = p.grad_sample.detach().numpy()
        out["g_" + name] = p.grad.detach().numpy()
    gsm.zero_grad(set_to_none=True)
    gsm._close()
    # per-sample gradients through functorch (an RNN-free custom module)
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))
        def forward(self, z):
            return z * self.w
    torch.manual_seed(1)
    sm = nn.Sequential(nn.Linear(4, 3), Scale())
    gsf = GradSampleModule(sm, force_functorch=True)
    gsf(torch.randn(6, 4)).pow(2).sum().backward()
    for name, p in gsf.named_parameters():
        out["fgs_" + name] = p.grad_sample.detach().numpy()
    gsf._close()
    # validator fixes BatchNorm
    bn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))
    out["errors"] = np.array(len(ModuleValidator.validate(bn, strict=False)))
    fixed = ModuleValidator.fix(bn)
    out["fixed"] = np.array(type(fixed[1]).__name__)
    out["sigma"] = np.array(get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5,
                                                 sample_rate=0.1, epochs=2))
    # DP-SGD training with the PrivacyEngine
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    data = TensorDataset(torch.randn(40, 6), torch.randint(0, 2, (40,)))
    loader = DataLoader(data, batch_size=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=1.1, max_grad_norm=1.0,
                                             poisson_sampling=False)
    losses = []
    for _ in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    out["losses"] = np.array(losses)
    for name, p in model.named_parameters():
        out["dp_" + name] = p.detach().numpy()
    out["eps"] = np.array(engine.get_epsilon(1e-5))
    # the clipped, un-noised per-sample mean: noise 0
    torch.manual_seed(3)
    m2 = nn.Linear(6, 2)
    o2 = torch.optim.SGD(m2.parameters(), lr=1.0)
    m2, o2, l2 = PrivacyEngine().make_private(module=m2, optimizer=o2, data_loader=DataLoader(
        data, batch_size=10), noise_multiplier=0.0, max_grad_norm=0.5, poisson_sampling=False)
    xb, yb = next(iter(l2))
    nn.functional.cross_entropy(m2(xb), yb).backward()
    o2.step()
    out["clipped_w"] = m2._module.weight.detach().numpy()
    # ghost clipping: norms without materialised per-sample gradients, Poisson batches
    torch.manual_seed(4)
    m3 = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    o3 = torch.optim.SGD(m3.parameters(), lr=0.5)
    m3, o3, crit, l3 = PrivacyEngine().make_private(
        module=m3, optimizer=o3, data_loader=DataLoader(data, batch_size=10),
        criterion=nn.CrossEntropyLoss(), noise_multiplier=0.3, max_grad_norm=0.7,
        grad_sample_mode="ghost")
    sizes = []
    for xb, yb in l3:
        o3.zero_grad()
        loss = crit(m3(xb), yb)
        loss.backward()
        o3.step()
        sizes.append(len(xb))
    out["ghost_sizes"] = np.array(sizes)
    for name, p in m3.named_parameters():
        out["ghost_" + name] = p.detach().numpy()


def pyro_case(out):
    """pyro: SVI with hand-written and automatic guides, Predictive, distributions,
    TraceEnum_ELBO over a discrete mixture, NUTS."""
    import pyro
    import pyro.distributions as dist
    from pyro.infer import (MCMC, NUTS, SVI, Predictive, Trace_ELBO, TraceEnum_ELBO,
                            TraceMeanField_ELBO, config_enumerate)
    from pyro.infer.autoguide import AutoNormal, AutoDiagonalNormal, AutoDelta
    from pyro.optim import Adam, ClippedAdam

    pyro.set_rng_seed(0)
    x = torch.linspace(-1, 1, 30)
    y = 1.5 * x - 0.3 + 0.2 * torch.randn(30)

    def model(x, y=None):
        w = pyro.sample("w", dist.Normal(0.0, 2.0))
        b = pyro.sample("b", dist.Normal(0.0, 2.0))
        sigma = pyro.sample("sigma", dist.HalfNormal(1.0))
        with pyro.plate("data", len(x)):
            return pyro.sample("obs", dist.Normal(w * x + b, sigma), obs=y)

    def guide(x, y=None):
        loc = pyro.param("w_loc", torch.tensor(0.0))
        scale = pyro.param("w_scale", torch.tensor(1.0), constraint=dist.constraints.positive)
        pyro.sample("w", dist.Normal(loc, scale))
        pyro.sample("b", dist.Normal(pyro.param("b_loc", torch.tensor(0.0)), 0.5))
        pyro.sample("sigma", dist.LogNormal(pyro.param("s_loc", torch.tensor(-1.0)), 0.3))

    for name, g, loss in (("manual", guide, Trace_ELBO()),
                          ("normal", AutoNormal(model), Trace_ELBO()),
                          ("diag", AutoDiagonalNormal(model), TraceMeanField_ELBO()),
                          ("delta", AutoDelta(model), Trace_ELBO(num_particles=2))):
        pyro.clear_param_store()
        pyro.set_rng_seed(1)
        svi = SVI(model, g, ClippedAdam({"lr": 0.05}) if name == "diag" else Adam({"lr": 0.05}),
                  loss)
        out[name + "_losses"] = np.array([svi.step(x, y) for _ in range(15)])
        for k, v in pyro.get_param_store().items():
            out[name + "_" + k] = v.detach().numpy()
        pyro.set_rng_seed(2)
        pred = Predictive(model, guide=g, num_samples=5)(x)
        out[name + "_pred"] = pred["obs"].detach().numpy()

    # distributions, transforms and the param store round trip
    pyro.set_rng_seed(3)
    d = dist.MultivariateNormal(torch.zeros(3), scale_tril=torch.tril(torch.ones(3, 3)))
    s = d.sample((4,))
    out["mvn_lp"] = d.log_prob(s).numpy()
    td = dist.TransformedDistribution(dist.Normal(0.0, 1.0), [dist.transforms.ExpTransform()])
    out["td_lp"] = td.log_prob(torch.tensor([0.5, 2.0])).numpy()
    out["dirichlet"] = dist.Dirichlet(torch.ones(4)).sample((3,)).numpy()
    out["beta_binom"] = dist.BetaBinomial(2.0, 3.0, total_count=5).log_prob(
        torch.arange(6.0)).numpy()
    out["zinb"] = dist.ZeroInflatedPoisson(torch.tensor(2.0), gate=torch.tensor(0.3)).log_prob(
        torch.arange(4.0)).numpy()
    out["mix"] = dist.MixtureSameFamily(dist.Categorical(torch.tensor([0.3, 0.7])),
                                        dist.Normal(torch.tensor([-1.0, 1.0]), 1.0)).log_prob(
        torch.tensor([0.0, 2.0])).numpy()

    # discrete enumeration: a two-component mixture, TraceEnum_ELBO
    data = torch.cat([torch.randn(10) - 2, torch.randn(10) + 2])

    @config_enumerate
    def gmm(data):
        weights = pyro.param("weights", torch.tensor([0.4, 0.6]),
                             constraint=dist.constraints.simplex)
        locs = pyro.param("locs", torch.tensor([-1.0, 1.0]))
        with pyro.plate("d", len(data)):
            z = pyro.sample("z", dist.Categorical(weights))
            pyro.sample("x", dist.Normal(locs[z], 1.0), obs=data)

    def gmm_guide(data):
        pass

    pyro.clear_param_store()
    pyro.set_rng_seed(4)
    svi = SVI(gmm, gmm_guide, Adam({"lr": 0.1}), TraceEnum_ELBO(max_plate_nesting=1))
    out["enum_losses"] = np.array([svi.step(data) for _ in range(10)])
    out["enum_locs"] = pyro.param("locs").detach().numpy()
    out["enum_weights"] = pyro.param("weights").detach().numpy()

    # MCMC with NUTS, a few samples
    pyro.set_rng_seed(5)
    mcmc = MCMC(NUTS(model, jit_compile=False), num_samples=10, warmup_steps=10,
                disable_progbar=True)
    mcmc.run(x, y)
    out["nuts_w"] = mcmc.get_samples()["w"].numpy()


def torchsde_case(out):
    """torchsde: sdeint with Ito and Stratonovich solvers, gradients, the adjoint,
    Brownian intervals, trees and paths, adaptive steps."""
    import torchsde

    class SDE(nn.Module):
        noise_type = "diagonal"
        sde_type = "ito"

        def __init__(self):
            super().__init__()
            self.mu = nn.Linear(3, 3)
            self.sigma = nn.Linear(3, 3)

        def f(self, t, y):
            return self.mu(y)

        def g(self, t, y):
            return torch.sigmoid(self.sigma(y))

    class Strat(SDE):
        sde_type = "stratonovich"

    class General(nn.Module):
        noise_type = "general"
        sde_type = "ito"

        def __init__(self):
            super().__init__()
            self.net = nn.Linear(3, 3 * 2)

        def f(self, t, y):
            return -y

        def g(self, t, y):
            return torch.tanh(self.net(y)).view(-1, 3, 2)

    torch.manual_seed(0)
    sde, strat, gen = SDE(), Strat(), General()
    y0 = torch.full((4, 3), 0.1, requires_grad=True)
    ts = torch.linspace(0, 1, 5)
    for method in ("euler", "milstein", "srk"):
        bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(4, 3), entropy=7,
                                       levy_area_approximation="space-time")
        ys = torchsde.sdeint(sde, y0, ts, bm=bm, method=method, dt=0.05)
        out["ys_" + method] = ys.detach().numpy()
    ys = torchsde.sdeint(sde, y0, ts, bm=torchsde.BrownianInterval(0.0, 1.0, (4, 3), entropy=8),
                         method="euler", dt=0.05)
    ys[-1].sum().backward()
    out["y0_grad"] = y0.grad.numpy()
    out["mu_grad"] = sde.mu.weight.grad.numpy()
    for method in ("midpoint", "heun", "reversible_heun"):
        bm = torchsde.BrownianInterval(0.0, 1.0, (4, 3), entropy=9)
        out["strat_" + method] = torchsde.sdeint(strat, y0, ts, bm=bm, method=method,
                                                 dt=0.05).detach().numpy()
    bm = torchsde.BrownianInterval(0.0, 1.0, (4, 2), entropy=10)
    out["general"] = torchsde.sdeint(gen, y0, ts, bm=bm, dt=0.05).detach().numpy()
    # adjoint method: gradients of the parameters through the reversed SDE
    y1 = torch.full((4, 3), 0.2)
    bm = torchsde.BrownianInterval(0.0, 1.0, (4, 3), entropy=11)
    ya = torchsde.sdeint_adjoint(strat, y1, ts, bm=bm, method="reversible_heun",
                                 adjoint_method="adjoint_reversible_heun", dt=0.05)
    ya[-1].pow(2).sum().backward()
    out["adj_ys"] = ya.detach().numpy()
    out["adj_mu"] = strat.mu.weight.grad.numpy()
    out["adj_sigma"] = strat.sigma.bias.grad.numpy()
    # Brownian motion objects themselves
    bi = torchsde.BrownianInterval(0.0, 2.0, (2, 3), entropy=12,
                                   levy_area_approximation="space-time")
    w, a = bi(0.3, 1.1, return_U=True)
    out["bi_w"], out["bi_u"] = w.numpy(), a.numpy()
    bt = torchsde.BrownianTree(t0=0.0, w0=torch.zeros(2, 3), t1=1.0, entropy=13, tol=1e-4)
    out["tree"] = bt(0.25, 0.75).numpy()
    np.random.seed(14)  # BrownianPath draws its entropy from NumPy
    bp = torchsde.BrownianPath(t0=0.0, w0=torch.zeros(2, 3))
    out["path"] = bp(0.0, 0.5).numpy()
    # adaptive stepping
    bm = torchsde.BrownianInterval(0.0, 1.0, (4, 3), entropy=15)
    out["adaptive"] = torchsde.sdeint(sde, y0.detach(), ts, bm=bm, method="euler", dt=0.1,
                                      adaptive=True, rtol=1e-3, atol=1e-3).detach().numpy()


def gpytorch_case(out):
    """gpytorch: exact GP regression with three kernels, predictions, linear
    operators, and the CG/Lanczos path."""
    import gpytorch
    from gpytorch.kernels import ScaleKernel, RBFKernel, MaternKernel, PeriodicKernel, LinearKernel

    torch.manual_seed(0)
    train_x = torch.linspace(0, 1, 25)
    train_y = torch.sin(train_x * 6.0) + 0.1 * torch.randn(25)
    test_x = torch.linspace(-0.1, 1.1, 11)

    class ExactGP(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood, kernel):
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = ScaleKernel(kernel)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    for name, kernel in (("rbf", RBFKernel()), ("matern", MaternKernel(nu=2.5)),
                         ("periodic", PeriodicKernel())):
        likelihood = gpytorch.likelihoods.GaussianLikelihood()
        model = ExactGP(train_x, train_y, likelihood, kernel)
        model.train()
        likelihood.train()
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            loss = -mll(model(train_x), train_y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[name + "_losses"] = np.array(losses)
        for pname, p in model.named_parameters():
            out[name + "_" + pname] = p.detach().numpy()
        model.eval()
        likelihood.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            pred = likelihood(model(test_x))
            out[name + "_mean"] = pred.mean.numpy()
            out[name + "_var"] = pred.variance.numpy()
            lo, hi = pred.confidence_region()
            out[name + "_ci"] = (hi - lo).numpy()
        with torch.no_grad():
            out[name + "_exact_var"] = model(test_x).variance.numpy()

    # kernels and the linear operators behind them
    x1 = torch.randn(6, 2)
    k = ScaleKernel(RBFKernel(ard_num_dims=2) + LinearKernel())
    K = k(x1)
    out["dense"] = K.to_dense().detach().numpy()
    out["diag"] = k(x1, diag=True).detach().numpy()
    v = torch.randn(6, 3)
    out["solve"] = (K.add_jitter(1e-2)).solve(v).detach().numpy()
    out["logdet"] = K.add_jitter(1e-2).logdet().detach().numpy()
    torch.manual_seed(1)
    mvn = gpytorch.distributions.MultivariateNormal(torch.zeros(6), K.add_jitter(1e-2))
    out["mvn_lp"] = mvn.log_prob(torch.ones(6)).detach().numpy()
    out["mvn_sample"] = mvn.rsample(torch.Size([2])).detach().numpy()
    # conjugate gradients and stochastic Lanczos quadrature instead of Cholesky
    torch.manual_seed(2)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = ExactGP(train_x, train_y, likelihood, RBFKernel())
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    with gpytorch.settings.max_cholesky_size(0), gpytorch.settings.num_trace_samples(4):
        loss = -mll(model(train_x), train_y)
        loss.backward()
    out["cg_loss"] = loss.detach().numpy()
    out["cg_grad"] = model.covar_module.base_kernel.raw_lengthscale.grad.numpy()


class SkorchNet(nn.Module):
    """skorch's module: at module level, so that pickled classifiers find it."""

    def __init__(self, hidden=8):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(5, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, X):
        return self.seq(X)


def skorch_case(out):
    """skorch: a classifier with callbacks and a validation split, pickling and saved
    parameters, a regressor in an sklearn pipeline, a grid search, early stopping."""
    from skorch import NeuralNetClassifier, NeuralNetRegressor
    from skorch.callbacks import EarlyStopping, EpochScoring, LRScheduler
    from skorch.dataset import ValidSplit
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.model_selection import GridSearchCV

    rng = np.random.RandomState(0)
    X = rng.randn(60, 5).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)

    torch.manual_seed(0)
    clf = NeuralNetClassifier(SkorchNet, criterion=nn.CrossEntropyLoss, max_epochs=5, lr=0.1,
                              batch_size=16, train_split=ValidSplit(4), verbose=0,
                              callbacks=[EpochScoring("accuracy", name="acc"),
                                         LRScheduler(policy=torch.optim.lr_scheduler.StepLR,
                                                     step_size=2)])
    clf.fit(X, y)
    out["train_loss"] = np.array(clf.history[:, "train_loss"])
    out["valid_loss"] = np.array(clf.history[:, "valid_loss"])
    out["acc"] = np.array(clf.history[:, "acc"])
    out["proba"] = clf.predict_proba(X[:10])
    out["pred"] = clf.predict(X[:10])
    out["score"] = np.array(clf.score(X, y))
    # pickling and param saving round trip
    clf2 = pickle.loads(pickle.dumps(clf))
    out["pickled"] = clf2.predict_proba(X[:5])
    buf = io.BytesIO()
    clf.save_params(f_params=buf)
    buf.seek(0)
    clf3 = NeuralNetClassifier(SkorchNet, max_epochs=1, verbose=0).initialize()
    clf3.load_params(f_params=buf)
    out["loaded"] = clf3.predict_proba(X[:5])
    # a regressor inside an sklearn pipeline, and a grid search
    torch.manual_seed(1)
    yr = (X @ np.arange(5, dtype=np.float32))[:, None]
    reg = Pipeline([("scale", StandardScaler()),
                    ("net", NeuralNetRegressor(nn.Linear, module__in_features=5,
                                               module__out_features=1, max_epochs=10, lr=0.05,
                                               optimizer=torch.optim.Adam, train_split=None,
                                               verbose=0))])
    reg.fit(X, yr)
    out["reg"] = reg.predict(X[:8])
    torch.manual_seed(2)
    gs = GridSearchCV(NeuralNetClassifier(SkorchNet, max_epochs=3, lr=0.1, train_split=None,
                                          verbose=0),
                      {"module__hidden": [4, 8]}, cv=2, scoring="accuracy", refit=False)
    gs.fit(X, y)
    out["gs"] = gs.cv_results_["mean_test_score"]
    # early stopping
    torch.manual_seed(3)
    es = NeuralNetClassifier(SkorchNet, max_epochs=30, lr=0.5, batch_size=60, verbose=0,
                             callbacks=[EarlyStopping(patience=2)])
    es.fit(X, y)
    out["es_epochs"] = np.array(len(es.history))


def monai_case(out):
    """MONAI: a few UNet training steps with DiceCE, sliding-window inference, metrics,
    losses, three more networks and seeded transforms."""
    from monai.networks.nets import UNet, BasicUNet, DenseNet121, SegResNet
    from monai.losses import DiceLoss, DiceCELoss, FocalLoss
    from monai.metrics import DiceMetric
    from monai.inferers import sliding_window_inference
    from monai.transforms import (Compose, ScaleIntensity, RandFlip, RandRotate90, Resize,
                                  NormalizeIntensity, AsDiscrete, Activations)
    from monai.utils import set_determinism

    set_determinism(seed=0)
    torch.manual_seed(0)
    net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(4, 8, 16), strides=(2, 2),
               num_res_units=1)
    x = torch.randn(2, 1, 16, 16)
    label = (torch.rand(2, 1, 16, 16) > 0.5).float()
    loss_fn = DiceCELoss(to_onehot_y=True, softmax=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = loss_fn(net(x), label)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["unet_losses"] = np.array(losses)
    net.eval()
    with torch.no_grad():
        y = net(x)
        out["unet_out"] = y.numpy()
        out["sliding"] = sliding_window_inference(x, roi_size=(8, 8), sw_batch_size=2,
                                                  predictor=net, overlap=0.25).numpy()
    post = Compose([Activations(softmax=True), AsDiscrete(argmax=True)])
    pred = torch.stack([post(p) for p in y])
    dm = DiceMetric(include_background=False, reduction="mean")
    dm(y_pred=torch.nn.functional.one_hot(pred[:, 0].long(), 2).permute(0, 3, 1, 2),
       y=torch.nn.functional.one_hot(label[:, 0].long(), 2).permute(0, 3, 1, 2))
    out["dice_metric"] = dm.aggregate().numpy()
    out["dice"] = DiceLoss(sigmoid=True)(y[:, :1], label).numpy()
    out["focal"] = FocalLoss(gamma=2.0)(y[:, :1], label).numpy()
    torch.manual_seed(1)
    b = BasicUNet(spatial_dims=2, in_channels=1, out_channels=1, features=(4, 4, 8, 8, 16, 4))
    out["basic"] = b(torch.randn(2, 1, 32, 32)).detach().numpy()
    torch.manual_seed(2)
    s = SegResNet(spatial_dims=2, init_filters=8, in_channels=1, out_channels=2, blocks_down=(1, 1),
                  blocks_up=(1,))
    out["segres"] = s(x).detach().numpy()
    torch.manual_seed(3)
    d = DenseNet121(spatial_dims=2, in_channels=1, out_channels=3, init_features=4, growth_rate=4,
                    block_config=(2, 2))
    out["dense"] = d(x).detach().numpy()
    tr = Compose([ScaleIntensity(), NormalizeIntensity(), Resize((8, 8)), RandFlip(prob=1.0,
                  spatial_axis=0), RandRotate90(prob=1.0)])
    tr.set_random_state(seed=4)
    out["transforms"] = np.asarray(tr(x[0]))


def tensordict_case(out):
    """tensordict: indexing, masking, stacking, reshaping, reductions, lazy stacks, padding,
    memory-mapped copies, a tensorclass, TensorDictModules with a probabilistic head and
    parameters swapped in from a TensorDict."""
    from tensordict import (LazyStackedTensorDict, TensorDict, from_module, pad_sequence,
                            tensorclass)
    from tensordict.nn import (ProbabilisticTensorDictModule, TensorDictModule,
                               TensorDictSequential)
    from tensordict.nn.distributions import NormalParamExtractor

    torch.manual_seed(0)
    td = TensorDict({"obs": torch.randn(4, 3), "reward": torch.randn(4, 1),
                     "nested": {"a": torch.arange(8.0).reshape(4, 2)}}, batch_size=[4])
    out["keys"] = np.array(sorted(str(k) for k in td.keys(include_nested=True)))
    out["idx"] = td[1:3]["obs"].numpy()
    out["mask"] = td[td["reward"].squeeze(-1) > 0]["nested", "a"].numpy()
    out["apply"] = td.apply(lambda x: x * 2)["nested", "a"].numpy()
    out["stack"] = torch.stack([td, td.clone()], 0)["obs"].numpy()
    out["cat"] = torch.cat([td, td], 0).batch_size
    out["reshape"] = td.reshape(2, 2)["obs"].shape
    out["flatten"] = np.array(sorted(td.flatten_keys(".").keys()))
    out["sum"] = td.sum(dim=0)["reward"].numpy()
    out["mean"] = td.mean(dim=0)["obs"].numpy()
    out["unbind"] = np.array([t["reward"].item() for t in td.unbind(0)])
    out["split"] = np.array([t.batch_size[0] for t in td.split(3, 0)])
    td2 = td.clone()
    td2["obs"] += 1
    td2.set_("reward", torch.zeros(4, 1))
    out["inplace"] = td2["obs"].numpy()
    out["update"] = td.update({"new": torch.ones(4)})["new"].numpy()
    out["to_dict_a"] = td.to_dict()["nested"]["a"].numpy()
    lazy = LazyStackedTensorDict.lazy_stack([TensorDict({"x": torch.ones(2)}, []),
                                             TensorDict({"x": torch.zeros(2)}, [])], 0)
    out["lazy"] = lazy["x"].numpy()
    out["padded"] = pad_sequence([TensorDict({"x": torch.ones(2)}, [2]),
                                  TensorDict({"x": torch.ones(3)}, [3])])["x"].numpy()
    out["memmap"] = td.memmap_like()["obs"].shape

    @tensorclass
    class Batch:
        images: torch.Tensor
        labels: torch.Tensor

    b = Batch(images=torch.randn(6, 2, 2), labels=torch.arange(6), batch_size=[6])
    out["tc_idx"] = b[2:4].images.numpy()
    out["tc_labels"] = b.reshape(2, 3).labels.numpy()
    # modules: a policy reading and writing keys
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 4), NormalParamExtractor())
    actor = TensorDictSequential(
        TensorDictModule(net, in_keys=["obs"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                      distribution_class=torch.distributions.Normal,
                                      return_log_prob=True))
    torch.manual_seed(2)
    res = actor(td.clone())
    out["loc"] = res["loc"].detach().numpy()
    out["action"] = res["action"].detach().numpy()
    loss = res.get("action_log_prob", None)
    if loss is None:
        loss = res["sample_log_prob"]
    out["logp"] = loss.detach().numpy()
    loss.sum().backward()
    out["grad"] = net[0].weight.grad.numpy()
    # functional call with parameters held in a TensorDict
    params = from_module(net)
    with (params * 0.5).to_module(net):
        out["half"] = net(td["obs"])[0].detach().numpy()
    out["restored"] = net(td["obs"])[0].detach().numpy()


if __name__ == "__main__":
    results = {}
    globals()[sys.argv[2] + "_case"](results)
    np.savez(sys.argv[1], **results)
