"""The compiled relu forward (``ember._kernels.relu``) against NumPy's ``maximum`` path: the
same bits (-0.0 and NaN included), chosen only where it pays, the same bits when cut over
threads (NOTE [ Compiled element-wise kernels on threads ] in ember/_kernels/__init__.py),
and PyTorch's values."""

import numpy as np
import pytest

import ember
from ember import _kernels


def _input(n, seed=0):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x[:6] = [-0.0, 0.0, np.nan, -np.nan, -np.inf, np.inf]
    return x


def _numpy_relu(x):
    old = _kernels.set_backend("numpy")
    try:
        return ember.relu(ember.from_numpy(x)).numpy()
    finally:
        _kernels.set_backend(old)


@pytest.mark.parametrize("n", [_kernels._RELU_MIN, 3 * _kernels._RELU_MIN + 5,
                               _kernels._SPLIT_MIN + 1])
def test_same_bits_as_numpy(numba_backend, n):
    x = _input(n)
    got = ember.relu(ember.from_numpy(x)).numpy()
    want = _numpy_relu(x)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


def test_every_entry_point(numba_backend):
    x = _input(2 * _kernels._RELU_MIN).reshape(64, -1)
    want = _numpy_relu(x)
    F = ember.nn.functional
    for r in (F.relu(ember.from_numpy(x)), ember.nn.ReLU()(ember.from_numpy(x)),
              ember.from_numpy(x.copy()).relu_(), F.relu(ember.from_numpy(x.copy()),
                                                         inplace=True)):
        np.testing.assert_array_equal(r.numpy().view(np.int32), want.view(np.int32))


def test_chosen_where_it_pays(numba_backend, monkeypatch):
    impl = _kernels._load()
    calls = []
    real = impl.relu_into
    monkeypatch.setattr(impl, "relu_into", lambda x, out: calls.append(x.size) or real(x, out))
    n = _kernels._RELU_MIN
    x = _input(2 * n)
    assert _kernels.relu(x) is not None and calls == [2 * n]
    assert _kernels.relu(x[:n - 1]) is None  # NumPy's loop is cheaper than the dispatch
    assert _kernels.relu(x[::2]) is None  # not contiguous
    assert _kernels.relu(x.astype(np.float64)) is None
    assert calls == [2 * n]
    # the op takes the NumPy path for what the kernel declines, with the same answers
    for a in (x[::2], x.astype(np.float64), x[:n - 1]):
        got = ember.relu(ember.from_numpy(a)).numpy()
        np.testing.assert_array_equal(got, np.maximum(np.zeros((), a.dtype), a))
    assert calls == [2 * n]


def test_numpy_backend_never_calls_the_kernel():
    old = _kernels.set_backend("numpy")
    try:
        assert _kernels.relu(_input(4 * _kernels._RELU_MIN)) is None
    finally:
        _kernels.set_backend(old)


def test_pieces_on_threads_same_bits(numba_backend, threads):
    x = _input(2 * _kernels._SPLIT_MIN + 7)
    got = _kernels.relu(x)
    assert threads == [True]
    one = np.empty_like(x)
    _kernels._load().relu_into(x, one)
    np.testing.assert_array_equal(got.view(np.int32), one.view(np.int32))


def test_below_the_split_runs_whole(numba_backend, threads):
    _kernels.relu(_input(_kernels._SPLIT_MIN - 1))
    assert threads == []


def test_matches_torch_forward_and_backward(numba_backend):
    torch = pytest.importorskip("torch")
    x = _input(3 * _kernels._RELU_MIN).reshape(3, -1)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ye, yt = ember.relu(xe), torch.relu(xt)
    np.testing.assert_array_equal(ye.detach().numpy().view(np.int32),
                                  yt.detach().numpy().view(np.int32))
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
