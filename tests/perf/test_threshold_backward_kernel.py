"""relu's one-pass backward kernel (``ember._kernels.threshold_backward``) against NumPy's
``where`` and against torch, on both threads and on the fallbacks."""

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel

pytest.importorskip("numba")


def _reference(g, y, threshold):
    return np.where(y <= threshold, np.zeros((), g.dtype), g)


def test_threshold_backward_edge_values_equal_where(numba_backend):
    y = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 2.0, -3.0], np.float32)
    g = np.arange(1, y.size + 1, dtype=np.float32)
    for threshold in (0, 0.5, -1.0, 3.4e38):
        r = _kernels.threshold_backward(g, y, threshold)
        np.testing.assert_array_equal(r, _reference(g, y, threshold))
    # a threshold beyond float32's range is left to NumPy's exact comparison
    assert _kernels.threshold_backward(g, y, 1e300) is None


def test_threshold_backward_on_two_threads_equals_where(numba_backend, monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)  # split whatever the load
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        n = _parallel.MIN_ELEMENTS * 2 + 5
        rng = np.random.default_rng(0)
        g, y = rng.standard_normal((2, n)).astype(np.float32)
        np.testing.assert_array_equal(_kernels.threshold_backward(g, y, 0), _reference(g, y, 0))
    finally:
        ember.set_num_threads(before)


def test_threshold_backward_declines_other_cases(numba_backend):
    y = np.ones((4, 4), np.float32)
    assert _kernels.threshold_backward(y.T[::2], y.T[::2], 0) is None  # not contiguous
    assert _kernels.threshold_backward(y.astype(np.float64), y.astype(np.float64), 0) is None
    assert _kernels.threshold_backward(y, y.reshape(16), 0) is None
    _kernels.set_backend("numpy")
    assert _kernels.threshold_backward(y, y, 0) is None


def test_relu_backward_matches_torch(numba_backend):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 5, 7)).astype(np.float32)
    x[0, 0, :3] = [0.0, np.nan, -0.0]
    g = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    ember.relu(xe).backward(ember.from_numpy(g))
    xt = torch.from_numpy(x.copy()).requires_grad_()
    torch.relu(xt).backward(torch.from_numpy(g))
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
