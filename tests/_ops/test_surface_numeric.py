"""torch-namespace names composed from other ops: gradient, histogramdd, cond, and the shell
unsigned dtypes uint16/uint32/uint64 -- compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

F = np.array([1.0, 4.0, 9.0, 16.0, 25.0], dtype=np.float32)
G = (np.arange(12, dtype=np.float32).reshape(3, 4) ** 2)


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype.name == str(y.dtype).split(".")[1]
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {}, {"spacing": 2.0}, {"edge_order": 2}, {"dim": 0}, {"spacing": [2.0, 3.0]},
    {"dim": (1,), "spacing": 0.5, "edge_order": 2}, {"dim": -1},
])
def test_gradient_uniform_matches_torch(kwargs):
    _same(ember.gradient(ember.tensor(G), **kwargs), torch.gradient(torch.tensor(G), **kwargs))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates_match_torch(edge_order):
    x = np.array([0.0, 1.0, 1.5, 3.5, 4.0], dtype=np.float32)
    _same(ember.gradient(ember.tensor(F), spacing=(ember.tensor(x),), edge_order=edge_order),
          torch.gradient(torch.tensor(F), spacing=(torch.tensor(x),), edge_order=edge_order))


def test_gradient_of_integers_is_float():
    _same(ember.gradient(ember.tensor([1, 2, 4])), torch.gradient(torch.tensor([1, 2, 4])))


def test_gradient_backward_matches_torch():
    e = ember.tensor([1.0, 2.0, 3.0, 5.0], requires_grad=True)
    t = torch.tensor([1.0, 2.0, 3.0, 5.0], requires_grad=True)
    (ember.gradient(e * e, edge_order=2)[0] * ember.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    (torch.gradient(t * t, edge_order=2)[0] * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_gradient_too_short_raises():
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        ember.gradient(ember.tensor([1.0]))


def test_gradient_spacing_length_mismatch_raises():
    with pytest.raises(RuntimeError):
        ember.gradient(ember.tensor(G), spacing=[1.0, 2.0, 3.0])


PTS = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]], dtype=np.float32)


@pytest.mark.parametrize("kwargs", [
    {"bins": [3, 3]}, {"bins": 2}, {"bins": [2, 4], "range": [0.0, 1.0, 0.0, 2.0]},
    {"bins": [3, 3], "density": True}, {"bins": [3, 3], "weight": [1.0, 2.0, 4.0, 8.0]},
])
def test_histogramdd_matches_torch(kwargs):
    ek = dict(kwargs)
    tk = dict(kwargs)
    if "weight" in kwargs:
        ek["weight"], tk["weight"] = ember.tensor(kwargs["weight"]), torch.tensor(kwargs["weight"])
    e, t = ember.histogramdd(ember.tensor(PTS), **ek), torch.histogramdd(torch.tensor(PTS), **tk)
    _same([e.hist], [t.hist])
    _same(e.bin_edges, t.bin_edges)


def test_histogramdd_with_edges_matches_torch():
    edges = ([0.0, 1.0, 2.0], [0.0, 2.0])
    e = ember.histogramdd(ember.tensor(PTS), bins=[ember.tensor(x) for x in edges])
    t = torch.histogramdd(torch.tensor(PTS), bins=[torch.tensor(x) for x in edges])
    _same([e.hist], [t.hist])


def test_histogramdd_integer_input_raises():
    with pytest.raises(RuntimeError):
        ember.histogramdd(ember.tensor([[1, 2]]), bins=2)


@pytest.mark.parametrize("pred", [True, False])
def test_cond_runs_the_chosen_branch(pred):
    e = ember.cond(ember.tensor(pred), lambda x: x + 1, lambda x: x - 1, (ember.ones(2),))
    t = torch.cond(torch.tensor(pred), lambda x: x + 1, lambda x: x - 1, (torch.ones(2),))
    assert e.tolist() == t.tolist()


def test_cond_rejects_multi_element_pred():
    with pytest.raises(RuntimeError):
        ember.cond(ember.ones(2), lambda: 1, lambda: 0)


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_shell_unsigned_dtypes_make_cast_and_print(name):
    e = ember.tensor([1, 2, 300], dtype=getattr(ember, name))
    t = torch.tensor([1, 2, 300], dtype=getattr(torch, name))
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert e.is_signed() == t.is_signed() is False
    assert e.float().tolist() == t.float().tolist()
    assert ember.iinfo(getattr(ember, name)).max == torch.iinfo(getattr(torch, name)).max


@pytest.mark.parametrize("other", ["int8", "int32", "uint8", "int64"])
def test_shell_unsigned_promotion_raises_as_torch(other):
    with pytest.raises(RuntimeError) as ee:
        ember.promote_types(ember.uint16, getattr(ember, other))
    with pytest.raises(RuntimeError) as te:
        torch.promote_types(torch.uint16, getattr(torch, other))
    assert str(ee.value) == str(te.value)


def test_shell_unsigned_promotes_with_float():
    assert ember.promote_types(ember.uint32, ember.float32) is ember.float32


def _spd(m=12, seed=0):
    a = np.random.default_rng(seed).standard_normal((m, m))
    return a @ a.T + m * np.eye(m)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_eigenvalues_match_torch(largest):
    a = _spd()
    e, x = ember.lobpcg(ember.tensor(a), k=2, largest=largest)
    t, _ = torch.lobpcg(torch.tensor(a), k=2, largest=largest)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    r = ember.tensor(a) @ x - x * e
    assert float(r.abs().max()) < 1e-8


def test_lobpcg_generalized_matches_torch():
    a, b = _spd(), _spd(seed=1)
    e, _ = ember.lobpcg(ember.tensor(a), k=1, B=ember.tensor(b))
    t, _ = torch.lobpcg(torch.tensor(a), k=1, B=torch.tensor(b))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5)


def test_lobpcg_eigenvalue_gradient_matches_torch():
    a = _spd()
    ea = ember.tensor(a, requires_grad=True)
    ta = torch.tensor(a, requires_grad=True)
    ember.lobpcg(ea, k=2)[0].sum().backward()
    torch.lobpcg(ta, k=2)[0].sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-5)


def test_lobpcg_too_many_pairs_raises_as_torch():
    with pytest.raises(ValueError, match="smaller than 3 x the number"):
        ember.lobpcg(ember.tensor(_spd()), k=5)


def test_grad_scaler_at_top_level():
    assert ember.GradScaler is ember.amp.GradScaler


def test_binomial_edges_match_torch():
    count, prob = [10.0, 5.0, 0.0, 7.0], [0.0, 1.0, 1.0, 0.0]
    e = ember.binomial(ember.tensor(count), ember.tensor(prob))
    t = torch.binomial(torch.tensor(count), torch.tensor(prob))
    assert e.tolist() == t.tolist() and e.dtype is ember.float32


def test_binomial_draws_within_range_and_seeded():
    count = ember.full((1000,), 20.0, dtype=ember.float64)
    ember.manual_seed(3)
    a = ember.binomial(count, ember.full((1000,), 0.25, dtype=ember.float64))
    ember.manual_seed(3)
    b = ember.binomial(count, ember.full((1000,), 0.25, dtype=ember.float64))
    assert a.dtype is ember.float64 and a.tolist() == b.tolist()
    assert 0 <= float(a.min()) and float(a.max()) <= 20 and abs(float(a.mean()) - 5.0) < 0.5


def test_binomial_integer_count_raises_as_torch():
    with pytest.raises(ValueError, match="floating-point dtypes for count, got: Long"):
        ember.binomial(ember.tensor([10, 5]), ember.tensor([0.5, 0.5]))
