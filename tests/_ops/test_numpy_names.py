"""NOTE [ NumPy's spellings ]: ``axis``/``keepdims`` for ``dim``/``keepdim`` on ember's
functions and methods, as PyTorch accepts them."""

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

CALLS = [
    ("sum", {"axis": 1}), ("sum", {"axis": 1, "keepdims": True}), ("mean", {"axis": -1}),
    ("amax", {"axis": 0, "keepdims": True}), ("argmax", {"axis": 2}),
    ("logsumexp", {"axis": 1, "keepdims": True}), ("std", {"axis": 1}),
    ("cumsum", {"axis": 1}), ("softmax", {"axis": 2}), ("unsqueeze", {"axis": 0}),
    ("squeeze", {"axis": 0}), ("any", {"axis": 1, "keepdims": True}),
    ("median", {"axis": 1, "keepdims": True}), ("sort", {"axis": 0}),
]


def _values(r):
    if isinstance(r, tuple):
        return [np.asarray(x) for x in r]
    return [np.asarray(r)]


@needs_torch
@pytest.mark.parametrize("name,kwargs", CALLS, ids=[f"{n}-{'-'.join(k)}" for n, k in CALLS])
def test_numpy_names_function_matches_torch(name, kwargs):
    e = getattr(ember, name)(ember.tensor(X), **kwargs)
    t = getattr(torch, name)(torch.tensor(X), **kwargs)
    for a, b in zip(_values(e), _values(t)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("name,kwargs", CALLS, ids=[f"{n}-{'-'.join(k)}" for n, k in CALLS])
def test_numpy_names_method_matches_torch(name, kwargs):
    e = getattr(ember.tensor(X), name)(**kwargs)
    t = getattr(torch.tensor(X), name)(**kwargs)
    for a, b in zip(_values(e), _values(t)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_numpy_names_list_functions():
    a = ember.ones(2, 3)
    assert ember.cat([a, a], axis=1).shape == (2, 6)
    assert ember.stack([a, a], axis=2).shape == (2, 3, 2)


def test_numpy_names_both_spellings_raise_type_error():
    a = ember.ones(2, 3)
    with pytest.raises(TypeError, match="'dim'"):
        ember.sum(a, 1, axis=1)
    with pytest.raises(TypeError, match="'keepdim'"):
        a.sum(1, keepdim=True, keepdims=True)


def test_numpy_names_required_dim_still_required():
    with pytest.raises(TypeError, match="dim"):
        ember.unsqueeze(ember.ones(2))
