"""Driver programs for the third-party library tests (``test_third_party_libs_5.py``).

Each ``<library>_case(out)`` runs a library's typical use and stores the numbers it gives in
the dict ``out``. The test runs this file twice, once on PyTorch and once under ``python -m
ember.compat.run``, as ``python _library_drivers.py OUT.npz LIBRARY``; the two ``.npz``
files are then compared. The file imports nothing from ember or the tests, so that the run on
PyTorch is PyTorch's alone.
"""

import sys

import numpy as np


def captum_case(out):
    """captum's attribution methods on a small CNN and an MLP."""
    import torch
    from captum.attr import (LRP, DeepLift, DeepLiftShap, FeatureAblation, GradientShap,
                             GuidedBackprop, InputXGradient, IntegratedGradients, KernelShap,
                             LayerConductance, LayerGradCam, LayerIntegratedGradients, Lime,
                             NeuronIntegratedGradients, NoiseTunnel, Occlusion, Saliency,
                             ShapleyValueSampling)
    from torch import nn

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
    import torch
    from torch import nn
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
    import torch
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
    import torch
    import torchsde
    from torch import nn

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
    import torch
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


if __name__ == "__main__":
    results = {}
    globals()[sys.argv[2] + "_case"](results)
    np.savez(sys.argv[1], **results)
