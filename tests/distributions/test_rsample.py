"""Reparameterised gradients and the score-function idiom."""

import numpy as np
import pytest

import ember
import ember.distributions as ED
from ember.distributions._gamma_grads import standard_gamma_grad
from ember.distributions._sampling import standard_gamma_grad_numpy

from ._cases import CASES, maker

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _np(x):
    return x.detach().cpu().numpy()


def _leaf_maker():
    leaves = []

    def T(v):
        t = ember.tensor(v, dtype=ember.float64, requires_grad=True)
        leaves.append(t)
        return t

    return T, leaves


@pytest.mark.parametrize("case", [c for c in CASES if c.build(ED, maker(ember)).has_rsample],
                         ids=str)
def test_rsample_gradients_reach_every_parameter(case):
    T, leaves = _leaf_maker()
    d = case.build(ED, T)
    if not leaves:
        pytest.skip("no tensor parameters")
    ember.manual_seed(0)
    s = d.rsample((5,))
    assert s.requires_grad
    s.sum().backward()
    float_leaves = [t for t in leaves if t.grad is not None]
    assert float_leaves, "no gradient reached the parameters"
    for t in float_leaves:
        assert np.isfinite(_np(t.grad)).all()


def test_sample_has_no_gradient():
    loc = ember.zeros(2, requires_grad=True)
    assert not ED.Normal(loc, 1.0).sample().requires_grad


def test_normal_rsample_is_loc_plus_scale_noise():
    loc = ember.tensor([0.5, -1.0], requires_grad=True)
    scale = ember.tensor([2.0, 0.5], requires_grad=True)
    s = ED.Normal(loc, scale).rsample((7,))
    s.sum().backward()
    np.testing.assert_allclose(_np(loc.grad), [7.0, 7.0])
    eps = (s - loc) / scale  # the base noise the sample was built from
    np.testing.assert_allclose(_np(scale.grad), _np(eps.sum(0)), rtol=1e-5)


def test_mvn_rsample_is_loc_plus_tril_noise():
    L = ember.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    s = ED.MultivariateNormal(ember.zeros(2), scale_tril=L).rsample((3,))
    eps = ember.linalg.solve_triangular(L.detach(), s.detach().unsqueeze(-1),
                                        upper=False).squeeze(-1)
    s.sum().backward()
    # d sum(L eps) / dL_ij = sum_samples eps_j (the upper zeros are used as entries too)
    expected = np.ones((2, 1)) * _np(eps.sum(0))[None, :]
    np.testing.assert_allclose(_np(L.grad), expected, rtol=1e-5)


@needs_torch
@pytest.mark.parametrize("alpha", [0.05, 0.7, 1.0, 3.5, 40.0, 900.0])
def test_standard_gamma_grad_matches_torch(alpha):
    rng = np.random.default_rng(0)
    x = np.maximum(rng.standard_gamma(alpha, size=500), 1e-300)
    a = np.full_like(x, alpha)
    ours = standard_gamma_grad_numpy(a, x)
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    # torch approximates; ours is exact to ~1e-9, so agree to torch's accuracy
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-12)
    # and the approximation the draws' backward uses gives torch's values
    np.testing.assert_allclose(standard_gamma_grad(a, x), theirs, rtol=1e-12, atol=1e-300)


def test_standard_gamma_grad_matches_finite_difference_of_quantile():
    # dx/dalpha at fixed CDF level u, by differencing SciPy's quantile function
    from scipy import special

    a, u = 2.3, np.array([0.05, 0.3, 0.5, 0.8, 0.99])
    x = special.gammaincinv(a, u)
    h = 1e-6
    fd = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(standard_gamma_grad_numpy(np.full_like(x, a), x), fd,
                               rtol=1e-6)


def test_gamma_rsample_grad_is_the_implicit_derivative():
    alpha = ember.tensor([0.5, 2.0, 7.0], dtype=ember.float64, requires_grad=True)
    x = ED.Gamma(alpha, 2.0).rsample()
    x.sum().backward()
    # x = g / rate with g standard gamma: dx/dalpha = (dg/dalpha) / rate, dg/dalpha by
    # torch's approximation, itself within 2e-3 of the exact implicit derivative
    g = _np(x) * 2.0
    expected = standard_gamma_grad(_np(alpha), g) / 2.0
    np.testing.assert_allclose(_np(alpha.grad), expected, rtol=1e-12)
    np.testing.assert_allclose(expected, standard_gamma_grad_numpy(_np(alpha), g) / 2.0,
                               rtol=2e-3)


def test_gamma_mean_gradient_is_unbiased():
    ember.manual_seed(0)
    alpha = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    rate = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    ED.Gamma(alpha, rate).rsample((20000,)).mean().backward()
    # E[x] = alpha / rate
    np.testing.assert_allclose(alpha.grad.item(), 1 / 2.0, rtol=0.03)
    np.testing.assert_allclose(rate.grad.item(), -3.0 / 4.0, rtol=0.03)


def test_beta_mean_gradient_is_unbiased():
    ember.manual_seed(0)
    a = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    b = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    ED.Beta(a, b).rsample((20000,)).mean().backward()
    # E[x] = a / (a + b): d/da = b / (a+b)^2, d/db = -a / (a+b)^2
    np.testing.assert_allclose(a.grad.item(), 3.0 / 25.0, rtol=0.05)
    np.testing.assert_allclose(b.grad.item(), -2.0 / 25.0, rtol=0.05)


def test_dirichlet_mean_gradient_is_unbiased():
    ember.manual_seed(0)
    c = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    ED.Dirichlet(c).rsample((20000,))[:, 0].mean().backward()
    # E[x_0] = c_0 / sum(c): gradient (sum - c_0, -c_0, -c_0) / sum^2
    np.testing.assert_allclose(_np(c.grad), np.array([5.0, -1.0, -1.0]) / 36.0, rtol=0.06,
                               atol=2e-3)


def test_policy_gradient_idiom():
    ember.manual_seed(0)
    net = ember.nn.Linear(4, 3)
    x = ember.randn(8, 4)
    dist = ED.Categorical(logits=net(x))
    a = dist.sample()
    R = ember.randn(8)
    loss = (-dist.log_prob(a) * R).mean()
    loss.backward()
    assert net.weight.grad is not None and tuple(net.weight.grad.shape) == (3, 4)
    # the score-function gradient: d log softmax(z)_a / dz = onehot(a) - softmax(z)
    z = net(x).detach().requires_grad_()
    ED.Categorical(logits=z).log_prob(a).sum().backward()
    expected = np.eye(3)[_np(a)] - _np(ember.softmax(z.detach(), -1))
    np.testing.assert_allclose(_np(z.grad), expected, rtol=1e-5, atol=1e-6)


def test_straight_through_gradient_is_the_probs_gradient():
    logits = ember.tensor([0.2, -0.3, 0.5], requires_grad=True)
    d = ED.OneHotCategoricalStraightThrough(logits=logits)
    s = d.rsample()
    assert set(_np(s).tolist()) <= {0.0, 1.0}
    (s * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    p = ember.softmax(logits.detach(), -1)
    w = ember.tensor([1.0, 2.0, 3.0])
    expected = p * (w - (p * w).sum())  # d (p . w) / d logits
    np.testing.assert_allclose(_np(logits.grad), _np(expected), rtol=1e-5)


def test_transformed_rsample_log_prob_uses_cached_pre_image():
    # sigmoid saturates; log_prob(rsample()) must stay finite thanks to the cache
    d = ED.TransformedDistribution(ED.Normal(ember.tensor(30.0), ember.tensor(0.1)),
                                   [ED.SigmoidTransform(cache_size=1)])
    s = d.rsample()
    assert np.isfinite(d.log_prob(s).item())


def _leaves_for(lib, dtype):
    leaves = []

    def T(v):
        t = lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True)
        leaves.append(t)
        return t

    return T, leaves


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("method", ["log_prob", "entropy", "mean"])
def test_gradient_matches_torch(case, method):
    import torch.distributions as TD

    from ._cases import value_for

    grads = []
    for lib, D in ((ember, ED), (torch, TD)):
        T, leaves = _leaves_for(lib, case.dtype)
        d = case.build(D, T)
        if not leaves:
            pytest.skip("no tensor parameters")
        try:
            if method == "log_prob":
                out = d.log_prob(value_for(case, lib))
            else:
                out = d.entropy() if method == "entropy" else d.mean
        except NotImplementedError:
            pytest.skip(f"no {method}")
        if not out.requires_grad or not bool(out.isfinite().all()):
            pytest.skip(f"{method} is constant or not finite")
        out.sum().backward()
        grads.append([None if t.grad is None else t.grad.detach().numpy() for t in leaves])
    for ours, theirs in zip(*grads):
        if theirs is None:
            continue
        rtol = 1e-6 if case.dtype == "float64" else 1e-4
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-8)
