"""Issue 22, session 30 (helper hnorm): the element-wise kernels and layer norm on numba's
own thread pool (NOTE [ Element-wise kernels on the pool ] in ember/_kernels/_numba_par.py).

Each kernel that now splits on the pool is checked against the relay's split and against
one thread (the same bits: every element and every row is computed alone), layer norm's
weight and bias gradients against the relay's (the same cut, the same float64 partials),
and, where PyTorch is installed, the values against PyTorch's.
"""


import os

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _pool(pool_on, monkeypatch):
    """Every test here on numba's pool (``pool_on`` in conftest.py), flat kernels included
    (NOTE [ Flat kernels on the pool in training steps ]: ``EMBER_FLAT_POOL=1``)."""
    monkeypatch.setattr(_kernels, "POOL_FLAT_MIN", 1 << 16)
    yield


def _paths(fn, monkeypatch):
    """``fn()`` on numba's pool, through the relay, and on one thread; asserts the pool ran
    the first and the relay the second."""
    pooled, relayed = [], []
    native, relay = _parallel.native_split, _parallel.split_on_threads

    def counted(f, size, min_size=_parallel.MIN_ELEMENTS):
        done = native(f, size, min_size)
        pooled.append(done)
        return done

    def counted_relay(*args, **kwargs):
        done = relay(*args, **kwargs)
        relayed.append(done)
        return done

    with monkeypatch.context() as m:
        m.setattr(_parallel, "native_split", counted)
        pool = fn()
    assert any(pooled), "the pool did not take the call"
    with monkeypatch.context() as m:
        m.setattr(_parallel, "native_split", lambda *a, **k: False)
        m.setattr(_parallel, "split_on_threads", counted_relay)
        split = fn()
        assert any(relayed), "the relay did not take the call"
        m.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
        one = fn()
    return pool, split, one


def _same(*results):
    first = results[0]
    for r in results[1:]:
        for a, b in zip(first if isinstance(first, tuple) else (first,),
                        r if isinstance(r, tuple) else (r,)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _values(size, seed=0):
    x = np.random.default_rng(seed).standard_normal(size).astype(np.float32) * 4
    x.reshape(-1)[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 90.0, -90.0]
    return x


# sizes over the relay's threshold (2**18), one not a multiple of the 16-element alignment
SIZES = [(1 << 18) + 5, (3, 1 << 17)]

UNARY = {
    "silu": lambda x: _kernels.silu(x),
    "gelu": lambda x: _kernels.gelu(x)[0],
    "exp": lambda x: _kernels.exp(x),
    "sigmoid": lambda x: _kernels.sigmoid(x),
    "relu": lambda x: _kernels.relu(x),
}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_kernel_pool_same_bits(two_threads, monkeypatch, name, size):
    x = _values(size)
    _same(*_paths(lambda: UNARY[name](x), monkeypatch))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["silu_backward", "gelu_backward"])
def test_backward_kernel_pool_same_bits(two_threads, monkeypatch, name, size):
    x, g = _values(size), _values(size, seed=1)
    _same(*_paths(lambda: getattr(_kernels, name)(g, x), monkeypatch))


def test_flat_pool_threshold_below_the_relays(two_threads, monkeypatch):
    """Between ``POOL_FLAT_MIN`` and the relay's threshold only the pool splits."""
    x = _values(_kernels.POOL_FLAT_MIN + 3)
    ran = []
    native = _parallel.native_split

    def counted(f, size, min_size=_parallel.MIN_ELEMENTS):
        ran.append(native(f, size, min_size))
        return ran[-1]

    monkeypatch.setattr(_parallel, "native_split", counted)
    got = _kernels.silu(x)
    assert ran == [True]
    monkeypatch.setattr(_parallel, "native_split", lambda *a, **k: False)
    np.testing.assert_array_equal(got, _kernels.silu(x))


def test_kernel_without_a_driver_goes_to_the_relay(two_threads, monkeypatch):
    """``reciprocal_times`` runs a closure of its own: the pool declines, the relay takes it."""
    x = _values(1 << 19)[10:] + np.float32(0.5)
    relayed = []
    relay = _parallel.split_on_threads

    def counted(*args, **kwargs):
        relayed.append(relay(*args, **kwargs))
        return relayed[-1]

    monkeypatch.setattr(_parallel, "split_on_threads", counted)
    got = _kernels.reciprocal_times(x, np.float32(3))
    assert got is not None and relayed and relayed[0]
    np.testing.assert_allclose(got, np.float32(3) / x, rtol=2e-7)


def _ln_input(m=1200, n=384, seed=3):
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)
    x[4] += 3000.0  # a row far from 0
    x[9, 5] = np.nan
    return x


@pytest.mark.parametrize("has_w,has_b", [(True, True), (True, False), (False, True),
                                         (False, False)])
def test_layer_norm_pool_same_bits(two_threads, monkeypatch, has_w, has_b):
    x = _ln_input()
    w = np.linspace(-2, 2, x.shape[1], dtype=np.float32) if has_w else None
    b = np.linspace(1, -1, x.shape[1], dtype=np.float32) if has_b else None
    _same(*_paths(lambda: _kernels.layer_norm(x, w, b, 1, 1e-5), monkeypatch))


def test_layer_norm_pool_counts_rows_near_the_top(two_threads, monkeypatch):
    x = _ln_input()
    near = (np.float32(1000.0), np.float32(0.0))
    pool, split, one = _paths(lambda: _kernels.layer_norm(x, None, None, 1, 1e-5, near=near),
                              monkeypatch)
    assert pool[3] and split[3] and one[3]
    x[4] -= 3000.0
    assert not _kernels.layer_norm(x, None, None, 1, 1e-5, near=near)[3]


@pytest.mark.parametrize("has_w", [True, False])
@pytest.mark.parametrize("m,n", [(1200, 384), (64 * 3 + 1, 1536)])
def test_layer_norm_backward_pool_same_bits(two_threads, monkeypatch, has_w, m, n):
    x = _ln_input(m=m, n=n)
    x[9, 5] = 0.0
    g = np.cos(x * 3).astype(np.float32)
    w = np.linspace(-2, 2, x.shape[1], dtype=np.float32) if has_w else None
    _, mean, rstd = _kernels.layer_norm(x, w, None, 1, 1e-5)
    pool, split, one = _paths(lambda: _kernels.layer_norm_backward(g, x, w, mean, rstd, 1),
                              monkeypatch)
    _same(pool, split)  # the same cut and float64 partials as the relay's
    np.testing.assert_array_equal(pool[0], one[0])  # each row's gradient alone
    for a, b in zip(pool[1:], one[1:]):  # the sums over rows: float64 reassociated
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_ops_match_torch_on_the_pool(two_threads):
    torch = pytest.importorskip("torch")
    F, tF = ember.nn.functional, torch.nn.functional
    x = np.random.default_rng(5).standard_normal((512, 1024)).astype(np.float32) * 3
    g = np.random.default_rng(6).standard_normal((512, 1024)).astype(np.float32)
    # (PyTorch's GELU loses relative accuracy in the negative tail, 1 - erf cancelling there:
    # ~1e-6 absolute at x = -3 where ember's Phi keeps it, NOTE [ Float32 normal CDF ])
    for f, tf, tol in ((F.silu, tF.silu, 1e-6), (F.gelu, tF.gelu, 1e-5)):
        a = ember.from_numpy(x).requires_grad_()
        ta = torch.from_numpy(x).requires_grad_()
        y, ty = f(a), tf(ta)
        y.backward(ember.from_numpy(g))
        ty.backward(torch.from_numpy(g))
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    xl = x.reshape(64, 8, 1024)
    w = np.linspace(-1, 1, 1024, dtype=np.float32)
    b = np.linspace(1, 0, 1024, dtype=np.float32)
    a = ember.from_numpy(xl).requires_grad_()
    ta = torch.from_numpy(xl).requires_grad_()
    ew, tw = ember.from_numpy(w).requires_grad_(), torch.from_numpy(w).requires_grad_()
    y = F.layer_norm(a, (1024,), ew, ember.from_numpy(b))
    ty = tF.layer_norm(ta, (1024,), tw, torch.from_numpy(b))
    y.backward(ember.from_numpy(g.reshape(xl.shape)))
    ty.backward(torch.from_numpy(g.reshape(xl.shape)))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_large_arithmetic_on_the_pool_same_bits_as_numpy(two_threads, monkeypatch, op):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((1 << 20) + 3).astype(np.float32)
    b = rng.standard_normal((1 << 20) + 3).astype(np.float32)
    a[:6] = [0.0, 1.0, 2.0, 3e-39, 1e30, -0.0]
    b[:6] = [0.0, np.inf, np.nan, -0.0, 1e-40, 5.0]
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    run = {"add": lambda: ta + tb, "sub": lambda: ta - tb, "mul": lambda: ta * tb,
           "div": lambda: ta / tb}[op]
    pool, split, one = _paths(lambda: run().numpy(), monkeypatch)
    with np.errstate(all="ignore"):
        want = f(a, b)
    for got in (pool, split, one):
        np.testing.assert_array_equal(got, want)


def test_large_arithmetic_pool_leaves_other_cases_to_the_relay(two_threads):
    a = np.ones(1 << 20, np.float32)
    assert _kernels._arith_on_pool(np.add, a, a) is not None
    assert _kernels._arith_on_pool(np.add, a, a.astype(np.float64)) is None  # dtypes differ
    assert _kernels._arith_on_pool(np.maximum, a, a) is None  # not one of + - * /
    assert _kernels._arith_on_pool(np.add, a[::2], a[1::2]) is None  # not contiguous
    assert _kernels._arith_on_pool(np.add, a, a[:-1]) is None  # shapes differ
    r = _kernels.ufunc_on_threads(np.add, a[::2], a[1::2])  # (the relay's own rule)
    assert r is None


def test_large_add_matches_torch(two_threads):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal(1 << 21).astype(np.float32) for _ in range(2))
    got = (ember.from_numpy(a) + ember.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, (torch.from_numpy(a) + torch.from_numpy(b)).numpy())


def test_layer_norm_backward_without_sums_same_input_gradient(two_threads, monkeypatch):
    """``sums=False`` leaves the parameters' sums out and returns None for them; the input's
    gradient is the full kernel's, but for the reassociation of its row sums."""
    x = _ln_input()
    x[9, 5] = 0.0
    g = np.sin(x * 2).astype(np.float32)
    w = np.linspace(-2, 2, x.shape[1], dtype=np.float32)
    _, mean, rstd = _kernels.layer_norm(x, w, None, 1, 1e-5)
    full = _kernels.layer_norm_backward(g, x, w, mean, rstd, 1)
    pool, split, one = _paths(
        lambda: _kernels.layer_norm_backward(g, x, w, mean, rstd, 1, sums=False), monkeypatch)
    for got in (pool, split, one):
        assert got[1] is None and got[2] is None
        np.testing.assert_allclose(got[0], full[0], rtol=1e-5, atol=1e-6)
    _same(pool[0], split[0], one[0])


@pytest.mark.parametrize("w_grad,b_grad", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_layer_norm_parameter_sums_only_when_wanted(monkeypatch, w_grad, b_grad):
    torch = pytest.importorskip("torch")
    calls = []
    real = _kernels.layer_norm_backward

    def spy(*args):
        calls.append(args[6] if len(args) > 6 else True)
        return real(*args)

    monkeypatch.setattr(_kernels, "layer_norm_backward", spy)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 24, 128)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w = np.linspace(-1, 1, 128, dtype=np.float32)
    b = np.linspace(1, 0, 128, dtype=np.float32)
    e = [ember.from_numpy(a) for a in (x, w, b)]
    t = [torch.from_numpy(a) for a in (x, w, b)]
    for pair in (e, t):
        pair[0].requires_grad_()
        pair[1].requires_grad_(w_grad)
        pair[2].requires_grad_(b_grad)
    ember.nn.functional.layer_norm(e[0], (128,), e[1], e[2]).backward(ember.from_numpy(g))
    torch.nn.functional.layer_norm(t[0], (128,), t[1], t[2]).backward(torch.from_numpy(g))
    assert calls == [w_grad or b_grad]
    np.testing.assert_allclose(e[0].grad.numpy(), t[0].grad.numpy(), rtol=1e-4, atol=1e-5)
    for a, b_ in zip(e[1:], t[1:]):
        assert (a.grad is None) == (b_.grad is None)
        if a.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b_.grad.numpy(), rtol=1e-4, atol=1e-4)


def _every_61st_float32():
    return np.arange(0, 1 << 32, 61, dtype=np.uint64).astype(np.uint32).view(np.float32)


def test_silu_exp_same_bits_as_the_general_exp(numba_backend):
    """SiLU's one-step exp (NOTE [ SiLU's exp ] in ember/_kernels/_numba.py) gives what
    ``x / (1 + exp(-x))`` gives with the general exp kernel, over every 61st float32."""
    from ember._kernels import _numba
    x = _every_61st_float32()
    e = np.empty_like(x)
    _numba.exp_into(-x, e)
    with np.errstate(all="ignore"):
        want = x / (np.float32(1) + e)
    got = np.empty_like(x)
    _numba.silu_into(x, got)
    np.testing.assert_array_equal(got, want)


def test_silu_backward_with_silus_exp_matches_torch(numba_backend):
    torch = pytest.importorskip("torch")
    from ember._kernels import _numba
    x = _every_61st_float32()
    x = x[np.isfinite(x)]
    g = np.cos(np.arange(x.size, dtype=np.float32))
    got = np.empty_like(x)
    _numba.silu_backward_into(g, x, got)
    want = torch.ops.aten.silu_backward(torch.from_numpy(g), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("env,least", [(None, 1 << 18), ("1", 1 << 16), ("0", 1 << 62)])
def test_flat_kernels_take_the_pool_from_the_size_asked(env, least):
    # NOTE [ Flat kernels on the pool in training steps ]
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "EMBER_FLAT_POOL"}
    if env is not None:
        environ["EMBER_FLAT_POOL"] = env
    out = subprocess.run([sys.executable, "-c", "from ember import _kernels; "
                          "print(_kernels.POOL_FLAT_MIN)"], env=environ, capture_output=True,
                         text=True, check=True).stdout
    assert int(out) == least
