"""Scaled dot-product attention's kernels hold the BLAS at one thread for their stack of
per-head GEMMs on an oversubscribed machine (NOTE [ Transposed attention scores ] in
ember/_ops/nn_attention.py), give it back afterwards, and compute the same values."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._ops import nn_attention

pytest.importorskip("threadpoolctl")


def _blas_count():
    return _parallel._blas_controllers()[0].get_num_threads()


@pytest.fixture
def two_threads(monkeypatch):
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    monkeypatch.setattr(_parallel, "contended", lambda: True)
    # the whole stack under one hold, not batch pieces (tests/perf/test_attention_pieces.py)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _qkv(shape=(2, 2, 128, 64)):
    rng = np.random.default_rng(0)
    return [ember.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
            for _ in range(3)]


def _spy(monkeypatch, name, seen):
    real = getattr(nn_attention, name)

    def spy(*args):
        seen.append((name, _blas_count()))
        return real(*args)

    monkeypatch.setattr(nn_attention, name, spy)


def test_sdpa_kernels_hold_blas_at_one_thread_when_contended(two_threads, monkeypatch):
    seen = []
    _spy(monkeypatch, "_sdpa_forward", seen)
    _spy(monkeypatch, "_sdpa_backward", seen)
    q, k, v = _qkv()
    ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    assert seen == [("_sdpa_forward", 1), ("_sdpa_backward", 1)]
    assert _blas_count() == 2


def test_sdpa_small_heads_keep_threads(two_threads, monkeypatch):
    seen = []
    _spy(monkeypatch, "_sdpa_forward", seen)
    q, k, v = _qkv((2, 8, 8))   # 512 multiply-adds a head: OpenBLAS's own single thread
    ember.nn.functional.scaled_dot_product_attention(q, k, v)
    assert seen == [("_sdpa_forward", 2)]


def test_sdpa_causal_held_matches_torch(two_threads):
    torch = pytest.importorskip("torch")
    q, k, v = _qkv()
    out = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(ember.ones_like(out))
    tq, tk, tv = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (q, k, v))
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    tout.backward(torch.ones_like(tout))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in ((q, tq), (k, tk), (v, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
