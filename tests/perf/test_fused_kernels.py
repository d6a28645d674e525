"""The fused kernels of ember._kernels (NOTE [ Fused kernels ]): each fast path against the
plain NumPy path of its op and against torch, forward and backward, including the edge
values (NaN, inf, -inf masks) and the layouts that fall back."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels

numba = pytest.importorskip("numba")
torch = pytest.importorskip("torch")


@pytest.fixture
def backend():
    """Run ``f`` under one backend and return its results as NumPy arrays."""
    old = _kernels.set_backend("numba")

    def run(name, f):
        _kernels.set_backend(name)
        try:
            out = f()
        finally:
            _kernels.set_backend("numba")
        return [None if o is None else np.array(o.detach().numpy() if hasattr(o, "detach")
                                                else o) for o in out]

    yield run
    _kernels.set_backend(old)


def _rand(*shape, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _both(backend, f, rtol=1e-5, atol=1e-6):
    """Run f under numba and numpy; assert they agree; return the numba results."""
    fast, plain = backend("numba", f), backend("numpy", f)
    for a, b in zip(fast, plain):
        if a is None:
            assert b is None
            continue
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return fast


def _grad_of(fw, fn, *arrays, cot_seed=5):
    """fn's output and the gradients of its inputs for a fixed cotangent, in ``fw``."""
    xs = [fw.tensor(a, requires_grad=True) for a in arrays]
    out = fn(fw, *xs)
    g = fw.tensor(_rand(*out.shape, seed=cot_seed, scale=1.0)) if out.dim() else None
    out.backward(g)
    return [out] + [x.grad for x in xs]


def _check(backend, fn, *arrays, rtol=1e-5, atol=1e-6):
    fast = _both(backend, lambda: _grad_of(ember, fn, *arrays), rtol, atol)
    want = _grad_of(torch, fn, *arrays)
    for a, b in zip(fast, want):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# backend switch


def test_backend_numba_when_installed():
    assert _kernels.backend() in ("numba", "numpy")
    old = _kernels.set_backend("auto")
    try:
        assert _kernels.backend() == "numba"
    finally:
        _kernels.set_backend(old)


def test_env_variable_turns_fast_path_off(monkeypatch):
    monkeypatch.setenv("EMBER_KERNELS", "numpy")
    monkeypatch.setattr(_kernels, "_choice", None)
    monkeypatch.setattr(_kernels, "_impl", None)
    assert _kernels.backend() == "numpy"
    monkeypatch.setenv("EMBER_KERNELS", "auto")
    monkeypatch.setattr(_kernels, "_impl", None)
    assert _kernels.backend() == "numba"


def test_set_backend_bad_name_raises():
    with pytest.raises(ValueError, match="set_backend"):
        _kernels.set_backend("fortran")


def test_numpy_backend_covers_nothing(backend):
    _kernels.set_backend("numpy")
    try:
        assert _kernels.softmax(_rand(2, 3), 1) is None
        assert _kernels.gelu(_rand(4)) is None
    finally:
        _kernels.set_backend("numba")


def test_fallback_for_float64_and_inner_dims(backend):
    assert _kernels.softmax(_rand(2, 3).astype(np.float64), 1) is None
    assert _kernels.softmax(_rand(2, 3), 0) is None
    assert _kernels.softmax(_rand(2, 3), 1) is not None


def test_fallback_for_rows_over_the_cap(backend):
    assert _kernels.softmax(_rand(1, _kernels._ROW_MAX + 1), 1) is None


# ------------------------------------------------------------------------------------------------
# exp


def test_expf_relative_error_within_a_few_ulps():
    impl = _kernels._load()
    x = np.linspace(-87.3, 88.7, 1_000_001, dtype=np.float32)
    out = np.empty_like(x)
    impl.exp_into(x, out)
    want = np.exp(x.astype(np.float64))
    assert (np.abs(out - want) / want).max() < 5e-7


def test_expf_special_values():
    impl = _kernels._load()
    x = np.array([np.nan, np.inf, -np.inf, 89.0, -100.0, 0.0, 88.72], np.float32)
    out = np.empty_like(x)
    impl.exp_into(x, out)
    assert np.isnan(out[0])
    assert out[1] == np.inf and out[3] == np.inf
    assert out[2] == 0
    assert out[4] == np.float32(np.exp(-100.0))  # a denormal, as torch gives (not flushed)
    assert out[5] == 1
    assert np.isclose(out[6], np.exp(np.float32(88.72)), rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# softmax / log_softmax


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_matches_plain_and_torch(backend, name):
    _check(backend, lambda fw, x: getattr(fw, name)(x, -1), _rand(64, 100))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_3d_last_dim_matches(backend, name):
    _check(backend, lambda fw, x: getattr(fw, name)(x, 2), _rand(4, 5, 33))


def test_softmax_non_contiguous_input_matches(backend):
    x = _rand(40, 64)
    _check(backend, lambda fw, x: fw.softmax(x.t(), -1), x)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_nan_inf_rows_match_torch(backend, name):
    x = np.array([[np.inf, 1, 2], [np.nan, 1, 2], [-np.inf, 1, 2], [-np.inf] * 3,
                  [1e30, -1e30, 0]], np.float32)
    (got,) = _both(backend, lambda: [getattr(ember, name)(ember.tensor(x), 1)])
    want = getattr(torch, name)(torch.tensor(x), 1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_softmax_masked_entries_are_exact_zeros(backend):
    x = _rand(8, 16)
    x[:, 8:] = -np.inf
    (got,) = _both(backend, lambda: [ember.softmax(ember.tensor(x), -1)])
    assert (got[:, 8:] == 0).all()


# ------------------------------------------------------------------------------------------------
# cross entropy


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_plain_and_torch(backend, reduction):
    t = np.random.default_rng(1).integers(0, 50, 32)

    def fn(fw, x):
        return fw.nn.functional.cross_entropy(x, fw.tensor(t), reduction=reduction)

    _check(backend, fn, _rand(32, 50))


def test_cross_entropy_weight_and_ignore_index_match(backend):
    t = np.random.default_rng(1).integers(0, 10, 16)
    t[::3] = -100
    w = np.random.default_rng(2).random(10).astype(np.float32)

    def fn(fw, x):
        return fw.nn.functional.cross_entropy(x, fw.tensor(t), weight=fw.tensor(w))

    _check(backend, fn, _rand(16, 10))


def test_cross_entropy_spatial_target_matches(backend):
    t = np.random.default_rng(1).integers(0, 5, (3, 4, 6))

    def fn(fw, x):
        return fw.nn.functional.cross_entropy(x, fw.tensor(t))

    _check(backend, fn, _rand(3, 5, 4, 6))


def test_cross_entropy_out_of_bounds_target_raises(backend):
    x = ember.tensor(_rand(2, 3))
    with pytest.raises(IndexError):
        ember.nn.functional.cross_entropy(x, ember.tensor([0, 3]))


# ------------------------------------------------------------------------------------------------
# layer norm


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True),
                                    (False, False)])
def test_layer_norm_matches_plain_and_torch(backend, affine):
    has_w, has_b = affine
    w, b = _rand(48, seed=1), _rand(48, seed=2)

    def fn(fw, x):
        return fw.nn.functional.layer_norm(x, (48,), fw.tensor(w) if has_w else None,
                                           fw.tensor(b) if has_b else None)

    _check(backend, fn, _rand(4, 7, 48), rtol=1e-4, atol=1e-5)


def test_layer_norm_weight_and_bias_grads_match(backend):
    def fn(fw, x, w, b):
        return fw.nn.functional.layer_norm(x, (6, 8), w, b)

    _check(backend, fn, _rand(5, 6, 8), _rand(6, 8, seed=1), _rand(6, 8, seed=2),
           rtol=1e-4, atol=1e-5)


def test_layer_norm_constant_rows_match(backend):
    x = np.ones((3, 16), np.float32)
    _check(backend, lambda fw, x: fw.nn.functional.layer_norm(x, (16,)), x, atol=1e-5)


def test_layer_norm_statistics_match(backend):
    x = _rand(6, 32)
    got = _both(backend, lambda: list(ember.native_layer_norm(ember.tensor(x), [32], None,
                                                              None, 1e-5)))
    want = torch.native_layer_norm(torch.tensor(x), [32], None, None, 1e-5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


def test_layer_norm_float64_keeps_numpy_path():
    assert _kernels.layer_norm(_rand(2, 4).astype(np.float64), None, None, 1, 1e-5) is None


# ------------------------------------------------------------------------------------------------
# gelu / silu


def test_gelu_matches_plain_and_torch(backend):
    _check(backend, lambda fw, x: fw.nn.functional.gelu(x), _rand(1000, scale=4.0),
           rtol=1e-5, atol=1e-6)


def test_gelu_special_values_match_plain(backend):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, -40.0], np.float32)
    _both(backend, lambda: list(_kernels_or_plain_gelu(x)))


def _kernels_or_plain_gelu(x):
    from ember._ops.nn_ops import _gelu_kernel
    return _gelu_kernel(np, x)


def test_silu_matches_plain_and_torch(backend):
    _check(backend, lambda fw, x: fw.nn.functional.silu(x), _rand(1000, scale=4.0),
           rtol=1e-5, atol=1e-6)


def test_silu_extremes_match_torch(backend):
    x = np.array([-100.0, -88.0, 0.0, 88.0, 100.0, np.inf, -np.inf, np.nan], np.float32)
    (got,) = _both(backend, lambda: [ember.nn.functional.silu(ember.tensor(x))], atol=1e-30)
    want = torch.nn.functional.silu(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30)


def test_silu_backward_kernel_matches_formula():
    x = _rand(500, scale=4.0)
    g = _rand(500, seed=1)
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    want = g * s * (1 + x * (1 - s))
    np.testing.assert_allclose(_kernels.silu_backward(g, x), want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# Adam / AdamW


def _adam_run(fw, cls, steps=3, **kw):
    """Parameters after ``steps`` steps of ``cls`` on fixed gradients (one large parameter,
    updated alone, and small ones, updated together on the flat path)."""
    shapes = [(300, 200), (7,), (5, 3)]
    params = [fw.tensor(_rand(*s, seed=i), requires_grad=True) for i, s in enumerate(shapes)]
    opt = getattr(fw.optim, cls)(params, lr=0.01, **kw)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = fw.tensor(_rand(*p.shape, seed=10 * k + i, scale=1.0))
        opt.step()
    return params + [opt.state[params[0]]["exp_avg"], opt.state[params[0]]["exp_avg_sq"]]


@pytest.mark.parametrize("cls,kw", [
    ("Adam", {}),
    ("Adam", {"weight_decay": 0.1}),
    ("AdamW", {"weight_decay": 0.1}),
    ("AdamW", {"maximize": True, "betas": (0.3, 0.9)}),
    ("Adam", {"amsgrad": True}),
])
def test_adam_step_matches_plain_and_torch(backend, cls, kw):
    fast = _both(backend, lambda: _adam_run(ember, cls, **kw), rtol=1e-5, atol=1e-7)
    want = _adam_run(torch, cls, **kw)
    for a, b in zip(fast, want):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_adam_kernel_declines_non_contiguous():
    p = np.ones((4, 4), np.float32).T
    z = np.zeros((4, 4), np.float32)
    assert not _kernels.adam(p, z, z.copy(), z.copy(), beta1=0.9, beta2=0.999, lr=0.1,
                             weight_decay=0.0, eps=1e-8, bias1=0.1, bias2_sqrt=0.03,
                             decoupled=False, maximize=False)


def test_silu_double_backward_matches_torch(backend):
    x = _rand(20, scale=3.0)

    def run(fw):
        t = fw.tensor(x, requires_grad=True)
        (g,) = fw.autograd.grad(fw.nn.functional.silu(t).sum(), t, create_graph=True)
        (gg,) = fw.autograd.grad(g.sum(), t)
        return [g, gg]

    got = _both(backend, lambda: run(ember))
    for a, b in zip(got, run(torch)):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_silu_backward_bfloat16_matches_torch(backend):
    x = _rand(64, scale=3.0)

    def run(fw):
        t = fw.tensor(x).to(fw.bfloat16).requires_grad_(True)
        fw.nn.functional.silu(t).sum().backward()
        return [t.grad.float()]

    (got,) = _both(backend, lambda: run(ember), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(got, run(torch)[0].numpy(), rtol=1e-2, atol=1e-2)
