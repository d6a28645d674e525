"""Densities, moments and shapes of every distribution, against torch where installed."""

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

from ._cases import CASES, maker, value_for

try:
    import torch
    import torch.distributions as TD

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _np(x):
    if isinstance(x, (int, float)):
        return np.asarray(x)
    return x.detach().cpu().numpy()


def _rtol(case):
    return 1e-6 if case.dtype == "float64" else 2e-5


def _both(case):
    return case.build(ED, maker(ember, case.dtype)), case.build(TD, maker(torch, case.dtype))


def _outcome(fn):
    """The value of ``fn()``, or the type of the exception it raised."""
    try:
        return fn()
    except (NotImplementedError, ValueError) as e:
        return type(e)


def _assert_same(ours, theirs, what, rtol=1e-6):
    if isinstance(theirs, type):
        assert ours is theirs, f"{what}: expected {theirs.__name__}, got {ours!r}"
        return
    assert not isinstance(ours, type), f"{what}: raised {ours.__name__}, torch returned"
    atol = 1e-8 if rtol < 1e-5 else 1e-6
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=what)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("prop", ["mean", "variance", "stddev", "mode"])
def test_property_matches_torch(case, prop):
    if prop in case.skip:
        pytest.skip(f"torch's {prop} is wrong here (see _cases.py)")
    e, t = _both(case)
    _assert_same(_outcome(lambda: getattr(e, prop)), _outcome(lambda: getattr(t, prop)), prop,
                 _rtol(case))


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("method", ["log_prob", "cdf", "entropy"])
def test_method_matches_torch(case, method):
    e, t = _both(case)
    if method == "entropy":
        ours, theirs = _outcome(e.entropy), _outcome(t.entropy)
    else:
        ours = _outcome(lambda: getattr(e, method)(value_for(case, ember)))
        theirs = _outcome(lambda: getattr(t, method)(value_for(case, torch)))
    _assert_same(ours, theirs, method, _rtol(case))


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=str)
def test_icdf_matches_torch(case):
    e, t = _both(case)
    if len(t.event_shape) or t.support.is_discrete:
        pytest.skip("icdf is for univariate continuous distributions")
    q = [0.3] * (t.batch_shape[0] if t.batch_shape else 1)
    ours = _outcome(lambda: e.icdf(maker(ember, case.dtype)(q)))
    theirs = _outcome(lambda: t.icdf(maker(torch, case.dtype)(q)))
    _assert_same(ours, theirs, "icdf", _rtol(case))


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=str)
def test_shapes_flags_and_repr_match_torch(case):
    e, t = _both(case)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    assert e.has_enumerate_support == t.has_enumerate_support
    assert repr(e.support).replace("ember.", "torch.") == repr(t.support)
    assert repr(e).replace("ember.", "torch.") == repr(t)


@needs_torch
@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith(
    ("Categorical", "Bernoulli", "Binomial", "OneHot"))], ids=str)
def test_enumerate_support_matches_torch(case):
    e, t = _both(case)
    for expand in (True, False):
        np.testing.assert_array_equal(_np(e.enumerate_support(expand)),
                                      _np(t.enumerate_support(expand)))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sample_shape_and_support(case):
    d = case.build(ED, maker(ember, case.dtype))
    ember.manual_seed(0)
    s = d.sample((4, 2))
    assert tuple(s.shape) == (4, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert bool(d.support.check(s).all())
    assert tuple(d.log_prob(s).shape) == (4, 2) + tuple(d.batch_shape)
    if d.has_rsample:
        assert tuple(d.rsample((3,)).shape) == (3,) + tuple(d.batch_shape + d.event_shape)


@pytest.mark.parametrize("case", [c for c in CASES if c.moments], ids=str)
def test_sample_moments(case):
    d = case.build(ED, maker(ember, case.dtype))
    ember.manual_seed(1)
    n = 4000
    s = _np(d.sample((n,)))
    mean, var = _np(d.mean), _np(d.variance)
    tol = 6 * np.sqrt(var / n) + 1e-6
    np.testing.assert_array_less(np.abs(s.mean(0) - mean), tol)
    # the sample variance: loose, its own error depends on the fourth moment
    np.testing.assert_allclose(s.var(0), var, rtol=0.3, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_expand(case):
    d = case.build(ED, maker(ember, case.dtype))
    new = d.expand((3,) + tuple(d.batch_shape))
    assert type(new) is type(d)
    assert tuple(new.batch_shape) == (3,) + tuple(d.batch_shape)
    assert tuple(new.event_shape) == tuple(d.event_shape)
    s = new.sample()
    np.testing.assert_allclose(_np(new.log_prob(s)), _np(d.log_prob(s)), rtol=1e-6)
    assert tuple(new.sample((2,)).shape) == (2, 3) + tuple(d.batch_shape + d.event_shape)


def test_invalid_parameter_raises_value_error():
    with pytest.raises(ValueError, match="Expected parameter scale"):
        ED.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="Expected parameter probs"):
        ED.Bernoulli(probs=ember.tensor(1.5))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        ED.Categorical(probs=ember.ones(2), logits=ember.ones(2))
    with pytest.raises(ValueError, match="low"):
        ED.Uniform(1.0, 0.0)


def test_validate_args_false_skips_checks():
    d = ED.Normal(0.0, -1.0, validate_args=False)
    assert math.isnan(d.log_prob(ember.tensor(0.0)).item())


def test_set_default_validate_args():
    try:
        ED.Distribution.set_default_validate_args(False)
        ED.Normal(0.0, -1.0)
    finally:
        ED.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ED.Distribution.set_default_validate_args(2)


def test_log_prob_value_checks():
    with pytest.raises(ValueError, match="must be a Tensor"):
        ED.Normal(0.0, 1.0).log_prob(1.0)
    with pytest.raises(ValueError, match="within the support"):
        ED.Exponential(1.0).log_prob(ember.tensor(-1.0))
    with pytest.raises(ValueError, match="not broadcastable"):
        ED.Normal(ember.zeros(3), 1.0).log_prob(ember.zeros(2))
    with pytest.raises(ValueError, match="right-most size"):
        ED.MultivariateNormal(ember.zeros(2), ember.eye(2)).log_prob(ember.zeros(3))


@needs_torch
def test_error_messages_match_torch():
    def message(fn):
        with pytest.raises(ValueError) as info:
            fn()
        return str(info.value).replace("ember.", "torch.")

    # validation asked for explicitly: the process-wide default is global state
    v = {"validate_args": True}
    assert message(lambda: ED.Normal(0.0, -1.0, **v)) == message(lambda: TD.Normal(0.0, -1.0, **v))
    assert (message(lambda: ED.Exponential(1.0, **v).log_prob(ember.tensor(-1.0)))
            == message(lambda: TD.Exponential(1.0, **v).log_prob(torch.tensor(-1.0))))


def test_sample_n_warns_and_samples():
    with pytest.warns(UserWarning):
        s = ED.Normal(ember.zeros(2), 1.0).sample_n(3)
    assert tuple(s.shape) == (3, 2)


def test_perplexity_is_exp_entropy():
    d = ED.Categorical(probs=ember.ones(4))
    np.testing.assert_allclose(d.perplexity().item(), 4.0, rtol=1e-6)


def test_lazy_probs_logits():
    d = ED.Categorical(logits=ember.tensor([0.0, math.log(3.0)]))
    assert "probs" not in d.__dict__
    np.testing.assert_allclose(_np(d.probs), [0.25, 0.75], rtol=1e-6)
    assert "probs" in d.__dict__


def test_kumaraswamy_and_weibull_mode_are_the_density_peak():
    k = ED.Kumaraswamy(ember.tensor(3.0), ember.tensor(4.0))
    x = ember.linspace(0.01, 0.99, 981, dtype=ember.float64)
    peak = x[k.log_prob(x.float()).argmax()].item()
    assert abs(k.mode.item() - peak) < 2e-3
    assert ED.Weibull(ember.tensor(1.0), ember.tensor(0.5)).mode.item() == 0.0


def test_broadcast_all():
    a, b = ED.utils.broadcast_all(1.0, ember.zeros(3, dtype=ember.float64))
    assert a.dtype == ember.float64 and tuple(a.shape) == (3,)
    with pytest.raises(ValueError):
        ED.utils.broadcast_all("x", 1.0)


def test_tril_vec_round_trip():
    m = ember.tensor([[1.0, 0.0, 0.0], [2.0, 3.0, 0.0], [4.0, 5.0, 6.0]])
    v = ED.utils.tril_matrix_to_vec(m)
    assert v.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert ED.utils.vec_to_tril_matrix(v).tolist() == m.tolist()
    strict = ED.utils.tril_matrix_to_vec(m, diag=-1)
    assert ED.utils.vec_to_tril_matrix(strict, diag=-1).tolist() == m.tril(-1).tolist()


@needs_torch
def test_public_names_cover_torch():
    theirs = {n for n in dir(TD) if not n.startswith("_")}
    ours = {n for n in dir(ED) if not n.startswith("_")}
    assert not theirs - ours
