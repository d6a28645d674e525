"""``torch.softmax`` / ``torch.log_softmax`` and their methods need ``dim`` (only
``nn.functional`` keeps the legacy implicit choice): leaving it out is a TypeError, as in
PyTorch."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CALLS = {
    "function": lambda m, x, name: getattr(m, name)(x),
    "method": lambda m, x, name: getattr(x, name)(),
    "none": lambda m, x, name: getattr(m, name)(x, None),
}


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_softmax_without_dim_raises_type_error(name, call):
    from tests.conftest import _torch_release

    if call == "none" and _torch_release() < (2, 13):
        pytest.skip("PyTorch before 2.13 raises RuntimeError for dim=None")
    with pytest.raises(TypeError):
        CALLS[call](torch, torch.ones(2, 3), name)
    with pytest.raises(TypeError, match="dim"):
        CALLS[call](ember, ember.ones(2, 3), name)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_with_dim_and_dtype_matches_torch(name):
    data = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    e = getattr(ember, name)(ember.tensor(data), 1, ember.float64)
    t = getattr(torch, name)(torch.tensor(data), 1, torch.float64)
    assert e.dtype == ember.float64
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
