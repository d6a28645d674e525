"""``nn.functional.softmax`` / ``log_softmax`` / ``softmin`` without ``dim``: PyTorch's
legacy choice of dimension, with its deprecation warning pointing at the caller."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_implicit_dim_matches_torch_and_warns(name, shape):
    data = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        e = getattr(ember.nn.functional, name)(ember.tensor(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.nn.functional, name)(torch.tensor(data))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_warning_points_at_the_caller():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.nn.functional.softmax(ember.ones(2, 2))
    assert w and w[0].filename == __file__


@pytest.mark.parametrize("module", ["Softmax", "LogSoftmax", "Softmin"])
def test_modules_without_dim_warn(module):
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        getattr(ember.nn, module)()(ember.ones(2, 3))


def test_explicit_dim_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.nn.functional.softmax(ember.ones(2, 3), dim=1)
        ember.nn.functional.log_softmax(ember.ones(2, 3), 0)
        ember.nn.Softmax(dim=-1)(ember.ones(2, 3))
