"""The vectorised float32 exp (NOTE [ Vectorisable exp ] in ember/_kernels/_numba.py) against
the correctly rounded exp over the whole float32 range, and the fast paths of issue 22
against their plain forms: compiled element-wise kernels and optimizer steps cut over
threads (NOTE [ Compiled element-wise kernels on threads ] in ember/_kernels/__init__.py,
NOTE [ Optimizer steps on threads ] in ember/_kernels/_train.py) give the one-thread bits,
NumPy's exp and sigmoid on threads give NumPy's bits, and SGD's NumPy pieces give the
op-by-op loop's bits."""

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._ops import pointwise
from ember.optim import sgd as sgd_module


def _ulps(got, want):
    """|got - want| in float32 ulps, for non-negative float32 arrays (denormals included)."""
    return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))


# ------------------------------------------------------------------------------------------------
# the exp itself


def test_expf_within_one_ulp_over_the_float32_range(numba_backend):
    # every 61st bit pattern of both signs: normal, denormal and huge inputs alike, the
    # results from 0 through the denormals to inf
    x = np.arange(0, 1 << 32, 61, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[~np.isnan(x)]
    out = np.empty_like(x)
    numba_backend.exp_into(x, out)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    d = _ulps(out, want)
    assert d.max() <= 1
    assert (d > 0).mean() < 0.01


def test_expf_special_values_and_range_ends(numba_backend):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 88.72283, 88.7229,
                  89.0, 1e30, -87.5, -100.0, -103.97, -103.98, -104.0, -1e30], np.float32)
    out = np.empty_like(x)
    numba_backend.exp_into(x, out)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.isnan(out[0])
    np.testing.assert_array_equal(out[1:], want[1:])
    assert out[4] == 1 and out[12] > 0  # exp(-0.0) and a denormal result (not flushed)


def test_reassociating_kernels_keep_the_accurate_exp(numba_backend):
    # SiLU's loop is compiled with reassociation; the exp inside keeps its own flags (NOTE
    # [ Vectorisable exp ]): silu(x) = x / (1 + exp(-x)) for x near -88 is x / exp(-x), so
    # the exp's error near the overflow end shows whole (folded, it was 5 ulps there)
    x = np.linspace(-88.7, -80, 100_003, dtype=np.float32)
    out = np.empty_like(x)
    numba_backend.silu_into(x, out)
    x64 = x.astype(np.float64)
    want = (x64 / (1 + np.exp(-x64))).astype(np.float32)
    assert _ulps(-out, -want).max() <= 2


# ------------------------------------------------------------------------------------------------
# exp and sigmoid as ops: numba's kernel, on threads, and NumPy's


def _input(n, seed=0):
    x = (np.random.default_rng(seed).standard_normal(n) * 30).astype(np.float32)
    x[:7] = [0.0, -0.0, np.nan, np.inf, -np.inf, 95.0, -110.0]
    return x


@pytest.mark.parametrize("op", ["exp", "sigmoid"])
def test_compiled_on_threads_same_bits_as_one_call(numba_backend, threads, op):
    x = _input(2 * _kernels._SPLIT_MIN + 5)
    got = getattr(_kernels, op)(x)
    assert threads == [True]
    one = np.empty_like(x)
    getattr(numba_backend, op + "_into")(x, one)
    np.testing.assert_array_equal(got, one)


@pytest.mark.parametrize("op", ["exp", "sigmoid"])
def test_compiled_ops_match_torch(numba_backend, op):
    torch = pytest.importorskip("torch")
    x = _input(3 * _kernels._SPLIT_MIN).reshape(3, -1)
    got = getattr(ember, op)(ember.from_numpy(x)).numpy()
    want = getattr(torch, op)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-38)


def test_compiled_exp_in_place_and_small_arrays(numba_backend):
    x = _input(1000)
    t = ember.from_numpy(x.copy())
    t.exp_()
    np.testing.assert_array_equal(t.numpy(), _kernels.exp(x))
    assert _kernels.exp(x[:10]) is None                   # small: NumPy's loop
    assert _kernels.exp(x.astype(np.float64)) is None     # float32 only
    assert _kernels.exp(x.reshape(10, 100)[:, ::2]) is None  # not contiguous
    np.testing.assert_array_equal(ember.exp(ember.from_numpy(x[:10])).numpy(), np.exp(x[:10]))


@pytest.mark.parametrize("n", [pointwise._EXP_THREADS_MIN + 3, 3 * pointwise._EXP_THREADS_MIN])
def test_numpy_exp_and_sigmoid_on_threads_same_bits(numpy_backend, threads, n):
    x = _input(n)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ember.exp(ember.from_numpy(x)).numpy(), np.exp(x))
        got = ember.sigmoid(ember.from_numpy(x)).numpy()
        want = pointwise._sigmoid_kernel(np, x)
    np.testing.assert_array_equal(got, want)
    assert threads == [True, True]  # the exp's pieces (ufunc_on_threads) and the sigmoid's


def test_numpy_sigmoid_one_thread_runs_whole(numpy_backend, threads):
    ember.set_num_threads(1)
    x = _input(pointwise._EXP_THREADS_MIN * 2)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ember.sigmoid(ember.from_numpy(x)).numpy(),
                                      pointwise._sigmoid_kernel(np, x))
    assert threads == [False]


# ------------------------------------------------------------------------------------------------
# optimizer steps


_SGD_CASES = [
    {"momentum": 0.9},
    {"momentum": 0.9, "nesterov": True, "weight_decay": 1e-2},
    {"momentum": 0.5, "dampening": 0.25, "maximize": True},
    {"weight_decay": 1e-3},
    {},
]


def _sgd_run(opts, steps=3, dtype=np.float32, n=None):
    rng = np.random.default_rng(5)
    n = n or _kernels.OPTIM_SPLIT + 11
    p = ember.from_numpy(rng.standard_normal(n).astype(dtype)).requires_grad_()
    small = ember.from_numpy(rng.standard_normal(7).astype(dtype)).requires_grad_()
    opt = ember.optim.SGD([p, small], lr=0.1, foreach=False, **opts)
    for _ in range(steps):
        p.grad = ember.from_numpy(rng.standard_normal(n).astype(dtype))
        small.grad = ember.from_numpy(rng.standard_normal(7).astype(dtype))
        opt.step()
    buf = opt.state[p].get("momentum_buffer")
    return p.detach().numpy().copy(), None if buf is None else buf.numpy().copy()


@pytest.mark.parametrize("opts", _SGD_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sgd_numpy_pieces_same_bits_as_the_loop(numpy_backend, threads, monkeypatch, opts,
                                                dtype):
    got = _sgd_run(opts, dtype=dtype)
    assert True in threads
    monkeypatch.setattr(sgd_module, "_sgd_on_threads", lambda *a: False)
    want = _sgd_run(opts, dtype=dtype)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_sgd_numpy_pieces_match_torch(numpy_backend, threads):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    n = _kernels.OPTIM_SPLIT + 3
    w0 = rng.standard_normal(n).astype(np.float32)
    grads = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    pe = ember.from_numpy(w0.copy()).requires_grad_()
    pt = torch.from_numpy(w0.copy()).requires_grad_()
    oe = ember.optim.SGD([pe], lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2)
    ot = torch.optim.SGD([pt], lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2)
    for g in grads:
        pe.grad, pt.grad = ember.from_numpy(g), torch.from_numpy(g)
        oe.step()
        ot.step()
    assert True in threads
    np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("opts", _SGD_CASES)
def test_compiled_sgd_on_threads_same_bits(numba_backend, threads, monkeypatch, opts):
    got = _sgd_run(opts)
    assert True in threads
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    want = _sgd_run(opts)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["Adadelta", "Adam", "AdamW"])
def test_compiled_steps_on_threads_same_bits(numba_backend, threads, monkeypatch, name):
    def run():
        rng = np.random.default_rng(9)
        n = _kernels.OPTIM_SPLIT + 5
        p = ember.from_numpy(rng.standard_normal(n).astype(np.float32)).requires_grad_()
        opt = getattr(ember.optim, name)([p], lr=0.01)
        for _ in range(3):
            p.grad = ember.from_numpy(rng.standard_normal(n).astype(np.float32))
            opt.step()
        return p.detach().numpy().copy()

    got = run()
    assert True in threads
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    np.testing.assert_array_equal(got, run())


def test_numpy_silu_pieces_same_bits(numpy_backend, threads):
    from ember._ops import nn_ops

    x = _input(nn_ops._SILU_SPLIT * 2 + 7)
    got = ember.nn.functional.silu(ember.from_numpy(x)).numpy()
    assert threads == [True]
    np.testing.assert_array_equal(got, nn_ops._silu_into(np, x, np.empty_like(x)))
    torch = pytest.importorskip("torch")
    want = torch.nn.functional.silu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
