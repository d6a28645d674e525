"""The fused softmax of CPU attention (NOTE [ Fused attention softmax ] in
ember/_ops/nn_attention.py) against the NumPy path and PyTorch."""

import numpy as np
import pytest

import ember
from ember import _kernels
from ember._ops import nn_attention

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(7)


def _qkv(shape=(2, 3, 16, 8), s_len=None):
    kshape = shape[:-2] + ((s_len or shape[-2]), shape[-1])
    return (_RNG.standard_normal(shape).astype(np.float32),
            _RNG.standard_normal(kshape).astype(np.float32),
            _RNG.standard_normal(kshape).astype(np.float32))


def _both(q, k, v, mask, scale=0.3):
    fused = nn_attention._sdpa_forward(np, q, k, v, mask, scale)
    old = _kernels.set_backend("numpy")
    try:
        plain = nn_attention._sdpa_forward(np, q, k, v, mask, scale)
    finally:
        _kernels.set_backend(old)
    return fused, plain


@pytest.mark.parametrize("mask_kind", ["none", "causal", "random", "4d"])
def test_fused_softmax_matches_numpy_path(numba_backend, mask_kind):
    q, k, v = _qkv(s_len=12)
    mask = {"none": None, "causal": np.tril(np.ones((16, 12), bool)),
            "random": _RNG.random((16, 12)) > 0.3,
            "4d": np.tril(np.ones((1, 1, 16, 12), bool))}[mask_kind]
    assert nn_attention._fused_softmax(np, k @ np.swapaxes(q, -1, -2), mask) is not None
    (o1, p1), (o2, p2) = _both(q, k, v, mask)
    np.testing.assert_allclose(p1, p2, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(o1, o2, rtol=1e-5, atol=1e-6)
    assert o1.strides == o2.strides and p1.shape == p2.shape


def test_fused_softmax_non_finite_scores_as_numpy_path(numba_backend):
    q, k, v = _qkv((1, 2, 6, 4))
    q[0, 0, 1, 0] = np.nan   # a NaN column
    q[0, 1, 2, :] = np.inf   # infinite scores
    mask = np.tril(np.ones((6, 6), bool))
    mask[3] = False          # a query that sees no key
    (o1, p1), (o2, p2) = _both(q, k, v, mask)
    assert np.array_equal(np.isnan(p1), np.isnan(p2))
    np.testing.assert_allclose(p1, p2, rtol=2e-6, atol=1e-7)
    assert np.array_equal(np.isnan(o1), np.isnan(o2))


def test_fused_softmax_leaves_float_masks_and_float64_to_numpy(numba_backend):
    q, k, v = _qkv()
    st = k @ np.swapaxes(q, -1, -2)
    assert nn_attention._fused_softmax(np, st, np.zeros((16, 16), np.float32)) is None
    assert nn_attention._fused_softmax(np, st.astype(np.float64), None) is None
    assert nn_attention._fused_softmax(np, st, np.ones((2, 1, 16, 16), bool)) is None


def test_causal_attention_with_fused_softmax_matches_torch(numba_backend):
    q, k, v = _qkv((2, 4, 32, 16))
    g = _RNG.standard_normal(q.shape).astype(np.float32)
    eq, ek, ev = (ember.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    tq, tk, tv = (torch.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    eo = ember.nn.functional.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    eo.backward(ember.from_numpy(g))
    to.backward(torch.from_numpy(g))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in ((eq, tq), (ek, tk), (ev, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


# NOTE [ Causal halves ]


def _causal_run(q, k, v, g):
    eq, ek, ev = (ember.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
    o = ember.nn.functional.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    o.backward(ember.from_numpy(g))
    return [o.detach().numpy(), eq.grad.numpy(), ek.grad.numpy(), ev.grad.numpy()]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("shape", [(2, 3, 64, 8), (2, 65, 8)])
def test_causal_halves_match_the_whole_products(monkeypatch, backend, shape):
    if backend == "numba":
        pytest.importorskip("numba")
    old = _kernels.set_backend(backend)
    try:
        q, k, v = _qkv(shape)
        g = _RNG.standard_normal(q.shape).astype(np.float32)
        assert nn_attention._causal_split(np, q, k, v, np.tri(shape[-2], dtype=bool)) \
            == shape[-2] // 2
        halves = _causal_run(q, k, v, g)
        monkeypatch.setattr(nn_attention, "_SPLIT_MIN", 10 ** 9)
        whole = _causal_run(q, k, v, g)
    finally:
        _kernels.set_backend(old)
    for a, b in zip(halves, whole):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_causal_halves_only_for_a_causal_square_mask():
    q, k, v = _qkv((2, 3, 64, 8))
    tri = np.tri(64, dtype=bool)
    assert nn_attention._causal_split(np, q, k, v, tri[None, None]) == 32
    assert nn_attention._causal_split(np, q, k, v, tri.T) is None           # not causal
    assert nn_attention._causal_split(np, q, k, v, None) is None
    assert nn_attention._causal_split(np, q, k, v, tri.astype(np.float32)) is None
    assert nn_attention._causal_split(np, q, k[:1], v[:1], tri) is None      # broadcast batch
    q2, k2, v2 = _qkv((2, 3, 16, 8))
    assert nn_attention._causal_split(np, q2, k2, v2, np.tri(16, dtype=bool)) is None  # short


def _head_grads(fw, causal):
    # NOTE [ Gradients laid out as their inputs ]: heads split off one projection
    x = fw.from_numpy(np.random.default_rng(3).standard_normal((2, 64, 48)).astype(np.float32))
    x.requires_grad_()
    w = fw.from_numpy(np.random.default_rng(4).standard_normal((144, 48)).astype(np.float32))
    q, k, v = (x @ w.t()).split(48, dim=2)
    q, k, v = (z.view(2, 64, 4, 12).transpose(1, 2) for z in (q, k, v))
    y = fw.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fw.autograd.grad(y.transpose(1, 2).reshape(2, 64, 48).square().sum(), (q, k, v))


@pytest.mark.parametrize("causal", [True, False])
def test_attention_gradients_laid_out_as_torch(causal):
    for e, t in zip(_head_grads(ember, causal), _head_grads(torch, causal)):
        assert e.stride() == t.stride()
        scale = float(t.abs().max())  # (cancellation: compare against the largest entry)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-5 * scale)


# NOTE [ Causal softmax skips the masked half ]


@pytest.mark.parametrize("n", [1, 7, 64, 130])
def test_causal_softmax_kernel_bits_as_the_masked_kernel(numba_backend, n):
    from ember._ops import _nn_attention_numba as kern

    st = _RNG.standard_normal((3, n, n)).astype(np.float32) * 4
    if n > 5:
        st[0, 2, 5] = np.nan     # a visible NaN
        st[1, 4, 1] = np.nan     # a masked NaN (key 4 is after query 1): dropped
        st[2, 0, 3] = np.inf     # a query whose max is infinite
        st[2, 1, :] = -np.inf    # a key no query gives weight to
    scratch = lambda: (np.empty(n, np.float32), np.empty(n, np.float32))  # noqa: E731
    plain, causal = st.copy(), st.copy()
    mt = np.ascontiguousarray(np.tri(n, dtype=bool).T)
    kern.softmax_scores_t(plain, mt, True, np.float32(0.3), *scratch())
    kern.softmax_scores_t_causal(causal, np.float32(0.3), *scratch())
    np.testing.assert_array_equal(causal.view(np.int32), plain.view(np.int32))


def test_causal_forward_with_the_skipping_kernel_matches_numpy_path(numba_backend):
    q, k, v = _qkv((2, 3, 64, 8))
    mask = np.tri(64, dtype=bool)
    assert nn_attention._causal_split(np, q, k, v, mask) == 32
    (o1, p1), (o2, p2) = _both(q, k, v, mask)
    np.testing.assert_allclose(p1, p2, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(o1, o2, rtol=1e-5, atol=1e-6)
    assert not np.triu(p1, 1).any()  # no query gives weight to a later key
