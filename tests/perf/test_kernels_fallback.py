"""ember._kernels without numba: the fused entry points decline and every op keeps its
NumPy kernel (runs whether or not numba is installed)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
from ember import _kernels


@pytest.fixture
def no_numba(monkeypatch):
    """``ember._kernels`` as it behaves where numba does not import."""
    monkeypatch.setitem(sys.modules, "ember._kernels._numba", None)
    monkeypatch.delattr(_kernels, "_numba", raising=False)
    monkeypatch.delenv("EMBER_KERNELS", raising=False)
    monkeypatch.setattr(_kernels, "_choice", None)
    monkeypatch.setattr(_kernels, "_impl", None)
    yield
    monkeypatch.undo()
    _kernels._impl = None


def test_backend_auto_without_numba_is_numpy(no_numba):
    assert _kernels.backend() == "numpy"


def test_set_backend_numba_without_numba_raises(no_numba):
    with pytest.raises(ImportError):
        _kernels.set_backend("numba")


def test_entry_points_decline_without_numba(no_numba):
    x = np.ones((2, 3), np.float32)
    assert _kernels.softmax(x, 1) is None
    assert _kernels.layer_norm(x, None, None, 1, 1e-5) is None
    assert _kernels.gelu(x) is None
    assert not _kernels.adam(x.copy(), x, x.copy(), x.copy(), beta1=0.9, beta2=0.999,
                             lr=0.1, weight_decay=0.0, eps=1e-8, bias1=0.1,
                             bias2_sqrt=0.03, decoupled=False, maximize=False)


def test_ops_without_numba_match_torch(no_numba):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    got = ember.nn.functional.layer_norm(ember.softmax(ember.tensor(x), -1), (6,))
    want = torch.nn.functional.layer_norm(torch.softmax(torch.tensor(x), -1), (6,))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
