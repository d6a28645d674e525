"""The compiled training-mode batch norm (NOTE [ Compiled batch norm ] in
ember/_kernels/_train.py) against the NumPy path and against torch."""

import numpy as np
import pytest

import ember
from ember import _kernels

pytest.importorskip("numba")


def _run(fw, x, g, affine, transpose=False):
    rng = np.random.default_rng(3)
    c = x.shape[1]
    xt = fw.from_numpy(x.copy())
    if transpose:  # a non-contiguous input: channels-last memory
        xt = fw.from_numpy(np.ascontiguousarray(np.moveaxis(x, 1, -1))).movedim(-1, 1)
    xt.requires_grad_()
    w = b = None
    if affine:
        w = fw.from_numpy(rng.standard_normal(c).astype(np.float32)).requires_grad_()
        b = fw.from_numpy(rng.standard_normal(c).astype(np.float32)).requires_grad_()
    rm, rv = fw.zeros(c), fw.ones(c)
    y = fw.nn.functional.batch_norm(xt, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    y.backward(fw.from_numpy(g))
    out = [y.detach().numpy(), xt.grad.numpy(), rm.numpy(), rv.numpy()]
    if affine:
        out += [w.grad.numpy(), b.grad.numpy()]
    return out


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    return x, g


@pytest.mark.parametrize("shape", [(16, 5), (4, 6, 7), (3, 4, 9, 11), (2, 3, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_equals_numpy_path(numba_backend, shape, affine):
    x, g = _data(shape)
    fast = _run(ember, x, g, affine)
    _kernels.set_backend("numpy")
    plain = _run(ember, x, g, affine)
    for a, b in zip(fast, plain):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_batch_norm_kernel_runs_and_declines(numba_backend):
    x, g = _data((4, 3, 5, 5))
    assert _kernels.batch_norm(x, None, None, 1e-5) is not None
    assert _kernels.batch_norm(x.astype(np.float64), None, None, 1e-5) is None
    y = _kernels.batch_norm(x.transpose(0, 1, 3, 2), None, None, 1e-5)[0]
    np.testing.assert_array_equal(
        y, _kernels.batch_norm(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), None, None,
                               1e-5)[0])
    assert _kernels.batch_norm(x, np.ones(3, np.float64), None, 1e-5) is None
    assert _kernels.batch_norm(x[:0], None, None, 1e-5) is None


def test_batch_norm_constant_channel_gives_zero(numba_backend):
    x = np.full((4, 2, 3, 3), 7.25, np.float32)
    y, m, r = _kernels.batch_norm(x, None, None, 1e-5)
    assert np.all(y == 0) and np.all(m == 7.25)
    np.testing.assert_allclose(r, 1 / np.sqrt(1e-5), rtol=1e-6)


@pytest.mark.parametrize("transpose", [False, True])
def test_batch_norm_matches_torch(numba_backend, transpose):
    torch = pytest.importorskip("torch")
    x, g = _data((8, 4, 6, 5), seed=1)
    if transpose:
        g = np.ascontiguousarray(g)
    for a, b in zip(_run(ember, x, g, True, transpose), _run(torch, x, g, True, transpose)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
