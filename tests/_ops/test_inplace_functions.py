"""NOTE [ In-place functions ]: ``ember.exp_(x)`` is ``x.exp_()``, for the names PyTorch has."""

import numpy as np
import pytest

import ember
from ember._ops import _INPLACE_FUNCTIONS

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False


@pytest.mark.parametrize("name", _INPLACE_FUNCTIONS)
def test_inplace_function_writes_into_its_input(name):
    # the method itself, unless the family declares a function of its own (relu_)
    f = getattr(ember, name + "_")
    assert f is getattr(ember.Tensor, name + "_") or f.__name__.endswith(name + "_")


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_inplace_functions_are_the_ones_torch_has():
    ours = {n + "_" for n in _INPLACE_FUNCTIONS}
    assert all(hasattr(torch, n) for n in ours)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("name,args", [("exp", ()), ("sigmoid", ()), ("clamp", (0.2, 0.6)),
                                       ("round", ()), ("xlogy", (2.0,))])
def test_inplace_function_writes_into_input_as_torch(name, args):
    data = np.array([0.1, 0.5, 0.9], dtype=np.float32)
    e, t = ember.tensor(data), torch.tensor(data)
    r = getattr(ember, name + "_")(e, *args)
    getattr(torch, name + "_")(t, *args)
    assert r is e
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("base,exps", [(2.0, [1.0, 2.0]), (2, [1, 3]), (2, [-1, 0, 2]),
                                       (-1, [-1, -2, 3]), (1, [-5]), (2.5, [1, 2])])
def test_number_to_tensor_powers_match_torch(base, exps):
    e = base ** ember.tensor(exps)
    t = base ** torch.tensor(exps)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
