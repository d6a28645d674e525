"""``x.sum()`` and ``x.mean()`` of a CPU tensor that requires grad take the reductions' hot
paths and record through ``record_unary`` (NOTE [ Hot path ]): results, gradients and node
names match the general path (the op's built-in kernel switched off) and PyTorch."""

import numpy as np
import pytest

import ember
from ember._ops.reduction import mean_op, sum_op

torch = pytest.importorskip("torch")

_OPS = {"sum": sum_op, "mean": mean_op}
_CASES = [((5, 7), {}), ((5, 7), {"dim": 1}), ((5, 7), {"dim": -2, "keepdim": True}),
          ((3,), {"dim": 0}), ((300, 300), {})]  # the last: the large float32 route


def _run(name, shape, kw, dtype=np.float32):
    x = ember.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(dtype))
    x.requires_grad_()
    y = getattr(x, name)(**kw)
    y.backward(ember.ones_like(y) * 3)
    return y, x.grad


@pytest.mark.parametrize("name", list(_OPS))
@pytest.mark.parametrize("shape,kw", _CASES)
def test_reduction_fast_path_with_grad_matches_general_path(monkeypatch, name, shape, kw):
    y, g = _run(name, shape, kw)
    monkeypatch.setattr(_OPS[name], "builtin_cpu", False)  # the general path through apply
    y2, g2 = _run(name, shape, kw)
    np.testing.assert_allclose(y.detach().numpy(), y2.detach().numpy(), rtol=1e-6, atol=1e-5)
    assert np.array_equal(g.numpy(), g2.numpy())
    assert y.grad_fn.name() == y2.grad_fn.name()
    assert y.shape == y2.shape and y.dtype == y2.dtype


@pytest.mark.parametrize("name", list(_OPS))
@pytest.mark.parametrize("shape,kw", _CASES[:3])
def test_reduction_fast_path_with_grad_names_nodes_as_torch(name, shape, kw):
    y, g = _run(name, shape, kw, np.float64)
    tx = torch.from_numpy(np.random.default_rng(0).standard_normal(shape)).requires_grad_()
    ty = getattr(tx, name)(**kw)
    ty.backward(torch.ones_like(ty) * 3)
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_mean_fast_path_of_an_empty_tensor_as_torch():
    y = ember.empty(0, requires_grad=True).mean()
    ty = torch.empty(0, requires_grad=True).mean()
    assert np.isnan(y.item()) and np.isnan(ty.item())
    assert y.grad_fn.name() == ty.grad_fn.name()


@pytest.mark.parametrize("name", list(_OPS))
def test_reduction_fast_path_under_no_grad_records_nothing(name):
    x = ember.ones(4, requires_grad=True)
    with ember.no_grad():
        y = getattr(x, name)()
    assert y.grad_fn is None and not y.requires_grad


def test_sum_fast_path_keeps_the_leaf_edge():
    x = ember.ones(4, requires_grad=True)
    y = x.sum(0)
    (fn, nr), = y.grad_fn.next_functions
    assert type(fn).__name__ == "AccumulateGrad" and fn.variable is x and nr == 0


def test_sum_fast_path_of_a_view_reaches_its_base():
    base = ember.ones(3, 4, requires_grad=True)
    (base[1] * 1).sum()  # (the view's own history is replayed when its base changed)
    v = base[1]
    v.sum().backward()
    assert base.grad.tolist() == [[0.0] * 4, [1.0] * 4, [0.0] * 4]


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_sum_fast_path_under_anomaly_mode_keeps_the_trace():
    x = ember.ones(4, requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        y = x.sum()
    assert y.grad_fn._trace  # recorded by the general ``record``, which anomaly mode needs
