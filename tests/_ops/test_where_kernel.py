"""NOTE [ Selecting without branches ]: ``where`` on large NumPy arrays runs as one compiled
pass; its results equal NumPy's bit for bit and torch's values."""

import numpy as np
import pytest

import ember
from ember import _kernels

torch = pytest.importorskip("torch")


def _bits(a):
    return a.view(f"u{a.itemsize}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32,
                                   np.bool_, np.uint8, np.complex64])
def test_where_kernel_equals_numpy_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    n = 6000
    x = (rng.standard_normal(n) * 10).astype(dtype)
    y = (rng.standard_normal(n) * 10 + 1).astype(dtype)
    if np.dtype(dtype).kind in "fc":
        x[::5], y[::7], x[1::9] = np.nan, -0.0, np.inf
    m = rng.random(n) < 0.5
    for a, b in ((x, y), (x, np.zeros((), dtype)), (np.ones((), dtype), y)):
        r = _kernels.where(m, a, b)
        if _kernels.backend() == "numpy":
            assert r is None
            continue
        e = np.where(m, a, b)
        assert r.dtype == e.dtype and np.array_equal(_bits(r), _bits(e))


def test_where_kernel_leaves_other_cases_to_numpy():
    m = np.ones(5000, bool)
    assert _kernels.where(m[:100], np.ones(100), np.ones(100)) is None  # small
    assert _kernels.where(m, np.ones(5000), np.ones(5000, np.float32)) is None  # mixed
    assert _kernels.where(m, np.ones(10000)[::2], np.ones(5000)) is None  # strided
    assert _kernels.where(m, np.ones(5000, complex), np.ones(5000, complex)) is None  # 16 B


@pytest.mark.parametrize("shape", [(64, 100), (3, 50, 40)])
def test_ember_where_matches_torch_with_gradients(shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    xs = [ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)]
    ts = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    y = ember.where(xs[0] > 0, xs[0], xs[1] * 2)
    ty = torch.where(ts[0] > 0, ts[0], ts[1] * 2)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    y.sum().backward()
    ty.sum().backward()
    for e, t in zip(xs, ts):
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
