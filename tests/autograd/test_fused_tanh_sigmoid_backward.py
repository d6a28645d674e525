"""tanh's and sigmoid's gradients as one fused op each (NOTE [ Fused tanh and sigmoid
backward ] in ember/_ops/pointwise.py): taken without create_graph, equal to PyTorch's
across dtypes and shapes, and the differentiable formula under create_graph."""

import numpy as np
import pytest

import ember
from ember import _dispatch

torch = pytest.importorskip("torch")

_TOL = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3,
        "complex64": 1e-6}


def _grads(lib, fn, data, dtype, g=None):
    x = lib.tensor(data).to(getattr(lib, dtype)).requires_grad_()
    y = getattr(x, fn)()
    gy = lib.ones_like(y) * 0.3 if g is None else g(lib, y)
    (gx,) = lib.autograd.grad(y, x, gy)
    return gx


@pytest.fixture
def applied(monkeypatch):
    seen = []
    real = _dispatch.apply

    def spy(op, *args, **kw):
        seen.append(op.name)
        return real(op, *args, **kw)

    monkeypatch.setattr(_dispatch, "apply", spy)
    # (with nothing watching, the fused op's kernel is called without the door)
    from ember._ops import pointwise

    for op in (pointwise.tanh_backward_op, pointwise.sigmoid_backward_op):
        kernel = op.impl.get(np.ndarray) or op.resolve(np.ndarray)

        def direct(*a, _kernel=kernel, _name=op.name, **kw):
            seen.append(_name)
            return _kernel(*a, **kw)

        monkeypatch.setitem(op.impl, np.ndarray, direct)
    return seen


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_fused_backward_taken_without_create_graph(fn, applied):
    x = ember.randn(4, 5, requires_grad=True)
    getattr(x, fn)().sum().backward()
    assert f"{fn}_backward" in applied


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
@pytest.mark.parametrize("dtype", list(_TOL))
def test_fused_backward_matches_torch_dtypes(fn, dtype):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((6, 7)) * 2
    if dtype == "complex64":
        data = data + 1j * rng.standard_normal((6, 7))
    e = _grads(ember, fn, data, dtype)
    t = _grads(torch, fn, data, dtype)
    assert str(e.dtype).split(".")[-1] == dtype
    if dtype in ("float16", "bfloat16"):
        e, t = e.float(), t.float()
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(),
                               rtol=_TOL[dtype], atol=_TOL[dtype])


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_fused_backward_zero_dim_and_expanded_grad(fn):
    for data, g in ((np.float32(0.7), None),
                    (np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4),
                     lambda lib, y: lib.tensor([0.5, -1.0, 2.0, 3.0]).expand(3, 4))):
        e = _grads(ember, fn, data, "float32", g)
        t = _grads(torch, fn, data, "float32", g)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_fused_backward_bitwise_equal_to_formula_float32(fn):
    x = ember.randn(300, requires_grad=True)
    y = getattr(x, fn)()
    g = ember.randn(300)
    (fused,) = ember.autograd.grad(y, x, g, retain_graph=True)
    yd = y.detach()
    formula = g * (1 - yd * yd) if fn == "tanh" else g * (1 - yd) * yd  # (torch's order)
    assert np.array_equal(fused.numpy(), formula.numpy())


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_fused_backward_create_graph_second_derivative(fn, applied):
    data = np.linspace(-1.5, 1.5, 7)
    res = []
    for lib in (ember, torch):
        x = lib.tensor(data, requires_grad=True)
        (g,) = lib.autograd.grad(getattr(x, fn)().sum(), x, create_graph=True)
        if lib is ember:  # the first derivative was the formula (a graph), not the fused op
            assert f"{fn}_backward" not in applied and g.requires_grad
        (gg,) = lib.autograd.grad(g.sum(), x)
        res.append(gg.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)
