"""The activations that are one element-wise op each (leaky_relu, hardtanh, relu6, elu, selu,
celu, hardsigmoid, hardswish, softplus, logsigmoid, mish): values and gradients equal torch's
at the kinks, at +-inf and at NaN, where random samples never land; half inputs; bad input."""

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_SPECIAL = [-math.inf, -100.0, -6.0, -4.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 4.0, 6.0, 20.0,
            25.0, 100.0, math.inf, math.nan]

_CALLS = {
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2),
    "hardtanh": lambda F, x: F.hardtanh(x, -3.0, 4.0),
    "relu6": lambda F, x: F.relu6(x),
    "elu": lambda F, x: F.elu(x, 0.5),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 2.0),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "softplus": lambda F, x: F.softplus(x, 2.0, 6.0),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "mish": lambda F, x: F.mish(x),
}


def _run(T, name, dtype="float32"):
    x = T.tensor(_SPECIAL, dtype=getattr(T, dtype), requires_grad=True)
    y = _CALLS[name](T.nn.functional, x)
    (g,) = T.autograd.grad(y.sum(), x)
    return y.detach().float().numpy(), g.float().numpy()


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_values_and_gradients_at_special_points_as_torch(name):
    ey, eg = _run(ember, name)
    ty, tg = _run(torch, name)
    np.testing.assert_allclose(ey, ty, rtol=1e-6, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(eg, tg, rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_CALLS))
def test_half_inputs_as_torch(name, dtype):
    ey, _ = _run(ember, name, dtype)
    ty, _ = _run(torch, name, dtype)
    np.testing.assert_allclose(ey, ty, rtol=1e-2, atol=1e-3, equal_nan=True)


@pytest.mark.parametrize("name", ["hardtanh", "relu6"])
def test_bool_input_raises_as_torch(name):
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        _CALLS[name](torch.nn.functional, torch.tensor([True]))
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        _CALLS[name](ember.nn.functional, ember.tensor([True]))


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_integer_input_raises_as_torch(name):
    if name in ("hardtanh", "relu6"):  # integers keep their dtype there, as in torch
        x = ember.tensor([-5, 0, 7])
        assert _CALLS[name](ember.nn.functional, x).tolist() == \
            _CALLS[name](torch.nn.functional, torch.tensor([-5, 0, 7])).tolist()
        return
    with pytest.raises(NotImplementedError):
        _CALLS[name](torch.nn.functional, torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        _CALLS[name](ember.nn.functional, ember.tensor([1, 2]))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "hardswish"])
def test_inplace_keeps_backward(name):
    F = ember.nn.functional
    x = ember.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    y = {"leaky_relu": lambda t: F.leaky_relu(t, 0.2, inplace=True),
         "elu": lambda t: F.elu(t, 0.5, inplace=True),
         "hardswish": lambda t: F.hardswish(t, inplace=True)}[name](x * 1)
    y.sum().backward()
    tx = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    _CALLS[name](torch.nn.functional, tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
