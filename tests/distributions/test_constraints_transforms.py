"""Constraints, transforms and the constraint registry, against torch where installed."""

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED
from ember.distributions import constraints as EC
from ember.distributions import transforms as ET

try:
    import torch
    import torch.distributions as TD
    from torch.distributions import constraints as TC
    from torch.distributions import transforms as TT

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _np(x):
    return x.detach().cpu().numpy()


def _pair(build, values):
    """(ember result, torch result) of ``build(module, T)`` with float64 tensors."""
    return (build(EC if values == "c" else ET, lambda v: ember.tensor(v, dtype=ember.float64)),
            build(TC if values == "c" else TT, lambda v: torch.tensor(v, dtype=torch.float64)))


_SPD = [[2.0, 0.5], [0.5, 1.0]]
_NOT_PD = [[1.0, 2.0], [2.0, 1.0]]

CONSTRAINTS = [
    ("real", lambda C, T: C.real, [1.0, math.nan, math.inf]),
    ("positive", lambda C, T: C.positive, [-1.0, 0.0, 2.0]),
    ("nonnegative", lambda C, T: C.nonnegative, [-1.0, 0.0, 2.0]),
    ("boolean", lambda C, T: C.boolean, [0.0, 1.0, 0.5]),
    ("nonnegative_integer", lambda C, T: C.nonnegative_integer, [-1.0, 0.0, 2.0, 2.5]),
    ("positive_integer", lambda C, T: C.positive_integer, [0.0, 1.0, 2.5]),
    ("integer_interval", lambda C, T: C.integer_interval(0, 3), [-1.0, 0.0, 3.0, 4.0, 1.5]),
    ("greater_than", lambda C, T: C.greater_than(1.0), [0.5, 1.0, 1.5]),
    ("greater_than_eq", lambda C, T: C.greater_than_eq(1.0), [0.5, 1.0, 1.5]),
    ("less_than", lambda C, T: C.less_than(1.0), [0.5, 1.0, 1.5]),
    ("interval", lambda C, T: C.interval(0.0, 2.0), [-0.1, 0.0, 2.0, 2.1]),
    ("half_open_interval", lambda C, T: C.half_open_interval(0.0, 2.0), [0.0, 1.0, 2.0]),
    ("unit_interval", lambda C, T: C.unit_interval, [0.0, 1.0, 1.1]),
    ("real_vector", lambda C, T: C.real_vector, [[1.0, 2.0], [1.0, math.nan]]),
    ("independent", lambda C, T: C.independent(C.positive, 1), [[1.0, 2.0], [1.0, -2.0]]),
    ("simplex", lambda C, T: C.simplex, [[0.5, 0.5], [0.5, 0.6], [-0.1, 1.1]]),
    ("one_hot", lambda C, T: C.one_hot, [[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]]),
    ("multinomial", lambda C, T: C.multinomial(3), [[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]]),
    ("lower_triangular", lambda C, T: C.lower_triangular,
     [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [2.0, 3.0]]]),
    ("lower_cholesky", lambda C, T: C.lower_cholesky,
     [[[1.0, 0.0], [2.0, 3.0]], [[-1.0, 0.0], [2.0, 3.0]]]),
    ("corr_cholesky", lambda C, T: C.corr_cholesky,
     [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.7]]]),
    ("square", lambda C, T: C.square, [[1.0, 2.0], [3.0, 4.0]]),
    ("symmetric", lambda C, T: C.symmetric, [_SPD, [[1.0, 2.0], [3.0, 1.0]]]),
    ("positive_definite", lambda C, T: C.positive_definite, [_SPD, _NOT_PD]),
    ("positive_semidefinite", lambda C, T: C.positive_semidefinite,
     [_SPD, _NOT_PD, [[1.0, 1.0], [1.0, 1.0]]]),
    ("cat", lambda C, T: C.cat([C.positive, C.real], 0, [1, 2]), [-1.0, -2.0, 3.0]),
    ("stack", lambda C, T: C.stack([C.positive, C.real], 0), [[-1.0, 2.0], [-2.0, 3.0]]),
    ("mixture", lambda C, T: C.MixtureSameFamilyConstraint(C.positive), [1.0, -1.0]),
]


@needs_torch
@pytest.mark.parametrize("name, build, value", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_constraint_matches_torch(name, build, value):
    e, t = _pair(build, "c")
    ours = e.check(ember.tensor(value, dtype=ember.float64))
    theirs = t.check(torch.tensor(value, dtype=torch.float64))
    np.testing.assert_array_equal(_np(ours), _np(theirs))
    assert e.is_discrete == t.is_discrete
    assert e.event_dim == t.event_dim
    assert repr(e) == repr(t)


def test_dependent_constraint_cannot_be_checked():
    assert EC.is_dependent(EC.dependent)
    with pytest.raises(ValueError, match="dependent"):
        EC.dependent.check(ember.zeros(1))
    with pytest.raises(NotImplementedError):
        _ = EC.dependent.is_discrete
    assert EC.dependent(is_discrete=True, event_dim=1).event_dim == 1
    assert EC.is_dependent(ED.Uniform.support)
    assert not EC.is_dependent(EC.real)


def test_independent_constraint_needs_enough_dims():
    with pytest.raises(ValueError, match="Expected value.dim"):
        EC.independent(EC.real, 2).check(ember.zeros(3))


_X = [[-0.7, 0.2, 1.3], [0.4, -1.1, 0.9]]
_X_POS = [[0.7, 0.2, 1.3], [0.4, 1.1, 0.9]]
_X_UNIT = [[0.7, 0.2, 0.3], [0.4, 0.1, 0.9]]

TRANSFORMS = [
    ("exp", lambda M, T: M.ExpTransform(), _X),
    ("power", lambda M, T: M.PowerTransform(T(2.5)), _X_POS),
    ("sigmoid", lambda M, T: M.SigmoidTransform(), _X),
    ("softplus", lambda M, T: M.SoftplusTransform(), _X),
    ("tanh", lambda M, T: M.TanhTransform(), _X),
    ("affine", lambda M, T: M.AffineTransform(T([1.0, 2.0, 3.0]), T([0.5, -2.0, 3.0])), _X),
    ("affine-float", lambda M, T: M.AffineTransform(1.0, -2.0), _X),
    ("affine-event", lambda M, T: M.AffineTransform(T(1.0), T([0.5, -2.0, 3.0]), event_dim=1),
     _X),
    ("stick_breaking", lambda M, T: M.StickBreakingTransform(), _X),
    ("corr_cholesky", lambda M, T: M.CorrCholeskyTransform(), _X),
    ("reshape", lambda M, T: M.ReshapeTransform((3,), (3, 1)), _X),
    ("independent", lambda M, T: M.IndependentTransform(M.ExpTransform(), 1), _X),
    ("compose", lambda M, T: M.ComposeTransform(
        [M.AffineTransform(0.5, 2.0), M.ExpTransform(), M.PowerTransform(T(0.5))]), _X),
    ("compose-event", lambda M, T: M.ComposeTransform(
        [M.ExpTransform(), M.StickBreakingTransform()]), _X),
    ("inverse", lambda M, T: M.SigmoidTransform().inv, _X_UNIT),
    ("cat", lambda M, T: M.CatTransform([M.ExpTransform(), M.AffineTransform(1.0, 3.0)],
                                        dim=-1, lengths=[1, 2]), _X),
    ("stack", lambda M, T: M.StackTransform([M.ExpTransform(), M.TanhTransform(),
                                             M.AffineTransform(1.0, 3.0)], dim=-1), _X),
    ("identity", lambda M, T: M.identity_transform, _X),
]


@needs_torch
@pytest.mark.parametrize("name, build, x", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform_matches_torch(name, build, x):
    e, t = _pair(build, "t")
    xe, xt = ember.tensor(x, dtype=ember.float64), torch.tensor(x, dtype=torch.float64)
    ye, yt = e(xe), t(xt)
    np.testing.assert_allclose(_np(ye), _np(yt), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(e.inv(ye)), _np(t.inv(yt)), rtol=1e-8, atol=1e-10)
    if name != "identity":  # torch returns zeros_like(x) there, ember too
        np.testing.assert_allclose(_np(e.log_abs_det_jacobian(xe, ye)),
                                   _np(t.log_abs_det_jacobian(xt, yt)), rtol=1e-8, atol=1e-10)
    assert tuple(e.forward_shape(xe.shape)) == tuple(t.forward_shape(xt.shape))
    assert tuple(e.inverse_shape(ye.shape)) == tuple(t.inverse_shape(yt.shape))
    assert e.bijective == t.bijective
    assert repr(e.domain) == repr(t.domain) and repr(e.codomain) == repr(t.codomain)
    assert repr(e) == repr(t)


@needs_torch
def test_non_bijective_transforms_match_torch():
    x = [[-0.7, 0.2, 1.3], [0.4, -1.1, 0.9]]
    pairs = [(ET.AbsTransform(), TT.AbsTransform()),
             (ET.SoftmaxTransform(), TT.SoftmaxTransform()),
             (ET.LowerCholeskyTransform(), TT.LowerCholeskyTransform()),
             (ET.PositiveDefiniteTransform(), TT.PositiveDefiniteTransform())]
    for e, t in pairs:
        xe, xt = ember.tensor(x, dtype=ember.float64), torch.tensor(x, dtype=torch.float64)
        if isinstance(e, (ET.LowerCholeskyTransform, ET.PositiveDefiniteTransform)):
            xe, xt = xe[:, :2], xt[:, :2]
        np.testing.assert_allclose(_np(e(xe)), _np(t(xt)), rtol=1e-10)
        np.testing.assert_allclose(_np(e.inv(e(xe))), _np(t.inv(t(xt))), rtol=1e-8)


def test_log_abs_det_jacobian_is_log_of_numeric_derivative():
    t = ET.ComposeTransform([ET.AffineTransform(0.3, 1.7), ET.SigmoidTransform()])
    x = ember.tensor([-0.5, 0.1, 2.0], dtype=ember.float64, requires_grad=True)
    y = t(x)
    (g,) = ember.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(_np(t.log_abs_det_jacobian(x, y)), np.log(np.abs(_np(g))),
                               rtol=1e-10)


def test_cache_returns_the_stored_pre_image():
    t = ET.SigmoidTransform(cache_size=1)
    x = ember.tensor([40.0])  # sigmoid saturates: the plain inverse would not recover x
    y = t(x)
    assert t(x) is y
    assert t.inv(y) is x
    with pytest.raises(ValueError, match="cache_size"):
        ET.ExpTransform(cache_size=2)


def test_inverse_of_inverse_is_the_transform():
    t = ET.ExpTransform()
    assert t.inv.inv is t
    assert t.inv == ET.ExpTransform().inv
    assert t.sign == 1
    with pytest.raises(NotImplementedError):
        _ = ET.AbsTransform().sign


def test_transformed_distribution_matches_change_of_variables():
    base = ED.Normal(ember.tensor(0.3), ember.tensor(0.7))
    d = ED.TransformedDistribution(base, [ET.ExpTransform()])
    ln = ED.LogNormal(ember.tensor(0.3), ember.tensor(0.7))
    v = ember.tensor([0.5, 2.0])
    np.testing.assert_allclose(_np(d.log_prob(v)), _np(ln.log_prob(v)), rtol=1e-6)
    np.testing.assert_allclose(_np(d.cdf(v)), _np(ln.cdf(v)), rtol=1e-6)
    # a decreasing transform flips the CDF
    neg = ED.TransformedDistribution(base, [ET.AffineTransform(0.0, -1.0)])
    np.testing.assert_allclose(_np(neg.cdf(ember.tensor(-0.3))), 0.5, rtol=1e-6)


CONSTRAINTS_FOR_REGISTRY = [
    ("real", lambda C: C.real),
    ("positive", lambda C: C.positive),
    ("nonnegative", lambda C: C.nonnegative),
    ("greater_than", lambda C: C.greater_than(2.0)),
    ("less_than", lambda C: C.less_than(-1.0)),
    ("unit_interval", lambda C: C.unit_interval),
    ("interval", lambda C: C.interval(-2.0, 3.0)),
    ("half_open_interval", lambda C: C.half_open_interval(-2.0, 3.0)),
    ("independent", lambda C: C.independent(C.positive, 1)),
    ("simplex", lambda C: C.simplex),
    ("corr_cholesky", lambda C: C.corr_cholesky),
    ("cat", lambda C: C.cat([C.positive, C.real], -1, [1, 2])),
    ("stack", lambda C: C.stack([C.positive, C.real, C.unit_interval], -1)),
]


@needs_torch
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name, build", CONSTRAINTS_FOR_REGISTRY,
                         ids=[c[0] for c in CONSTRAINTS_FOR_REGISTRY])
def test_registry_matches_torch(registry, name, build):
    e = getattr(ED, registry)(build(EC))
    t = getattr(TD, registry)(build(TC))
    x = [[-0.7, 0.2, 1.3], [0.4, -1.1, 0.9]]
    ye = e(ember.tensor(x, dtype=ember.float64))
    yt = t(torch.tensor(x, dtype=torch.float64))
    np.testing.assert_allclose(_np(ye), _np(yt), rtol=1e-10)
    c = build(EC)
    assert bool(c.check(ye).all())
    assert repr(e) == repr(t)


@needs_torch
@pytest.mark.parametrize("name, build", [("positive_definite", lambda C: C.positive_definite),
                                         ("lower_cholesky", lambda C: C.lower_cholesky)])
def test_transform_to_matrices(name, build):
    x = [[-0.7, 0.2], [0.4, -1.1]]
    ye = ED.transform_to(build(EC))(ember.tensor(x, dtype=ember.float64))
    yt = TD.transform_to(build(TC))(torch.tensor(x, dtype=torch.float64))
    np.testing.assert_allclose(_np(ye), _np(yt), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        ED.biject_to(build(EC))


def test_register_rejects_non_constraints():
    with pytest.raises(TypeError):
        ED.constraint_registry.ConstraintRegistry().register(int, lambda c: None)
