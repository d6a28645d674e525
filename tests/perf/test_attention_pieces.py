"""Scaled dot-product attention in batch pieces on threads (NOTE [ Attention pieces on
threads ] in ember/_ops/nn_attention.py) gives the one-call results bit for bit, with the
gradients laid out as before, and agrees with PyTorch."""

import numpy as np
import pytest

import ember
from ember import _parallel

pytest.importorskip("threadpoolctl")


@pytest.fixture
def pieces(monkeypatch):
    """Two threads, every attention split however small, and a record of the splits."""
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    # no OpenBLAS workers polling from an earlier test's product (NOTE [ Pieces and the BLAS
    # workers ]): pieces would be declined
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    seen = []
    real = _parallel.split_batch

    def spy(fn, n, work, min_work=None, claim=True):
        r = real(fn, n, work, min_work, claim)
        seen.append(r is not None)
        return r

    monkeypatch.setattr(_parallel, "split_batch", spy)
    yield seen
    ember.set_num_threads(before)


def _inputs(dtype, shape, projected, seed=0):
    """q, k, v as leaf-derived tensors: heads split off one projection and transposed (as
    attention modules make them) or plain contiguous ones."""
    rng = np.random.default_rng(seed)
    b, h, l, e = shape
    if projected:
        base = ember.tensor(rng.standard_normal((b, l, 3, h, e)).astype(dtype),
                            requires_grad=True)
        return base, [base[:, :, i].transpose(1, 2) for i in range(3)]
    leaves = [ember.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
              for _ in range(3)]
    return leaves, leaves


def _run(dtype, shape, projected, mask, causal, grads_of):
    leaves, (q, k, v) = _inputs(dtype, shape, projected)
    if not projected:
        for t, need in zip(leaves, grads_of):
            t.requires_grad_(need)
    out = ember.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                           is_causal=causal)
    g = np.cos(np.arange(out.numel(), dtype=dtype)).reshape(out.shape)
    out.backward(ember.from_numpy(g))
    leaves = leaves if isinstance(leaves, list) else [leaves]
    grads = [t.grad.numpy() if t.grad is not None else None for t in leaves]
    return out.detach().numpy(), grads, (q, k, v)


def _masks(l, dtype):
    rng = np.random.default_rng(1)
    return {
        "none": (None, False),
        "causal": (None, True),
        "bool (L, L)": (ember.from_numpy(rng.random((l, l)) < 0.8), False),
        "float (L, L)": (ember.from_numpy(rng.standard_normal((l, l)).astype(dtype)), False),
        "bool (1, H, L, L)": (ember.from_numpy(rng.random((1, 2, l, l)) < 0.8), False),
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 2, 70, 8), (3, 2, 16, 8)])
@pytest.mark.parametrize("mask_name", ["none", "causal", "bool (L, L)", "float (L, L)",
                                       "bool (1, H, L, L)"])
@pytest.mark.parametrize("projected", [True, False])
def test_pieces_match_one_call(pieces, monkeypatch, dtype, shape, mask_name, projected):
    mask, causal = _masks(shape[2], dtype)[mask_name]
    split = _run(dtype, shape, projected, mask, causal, (True,) * 3)
    assert pieces == [True, True]  # forward and backward each ran in pieces
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    pieces.clear()
    whole = _run(dtype, shape, projected, mask, causal, (True,) * 3)
    assert pieces == [False, False]
    np.testing.assert_array_equal(split[0], whole[0])
    for a, b in zip(split[1], whole[1]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("grads_of", [(True, False, True), (False, False, True),
                                      (False, True, False)])
def test_pieces_some_gradients(pieces, monkeypatch, grads_of):
    split = _run(np.float32, (4, 2, 70, 8), False, None, True, grads_of)
    assert pieces == [True, True]
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    whole = _run(np.float32, (4, 2, 70, 8), False, None, True, grads_of)
    np.testing.assert_array_equal(split[0], whole[0])
    for a, b, need in zip(split[1], whole[1], grads_of):
        assert (a is None) == (not need) == (b is None)
        if need:
            np.testing.assert_array_equal(a, b)


def test_pieces_keep_gradient_layout(pieces, monkeypatch):
    # heads split off one projection: the kernel's gradients are laid out as their inputs
    # in pieces as in one call (NOTE [ Gradients laid out as their inputs ])
    from ember._ops import nn_attention

    def grads():
        _, (q, k, v) = _inputs(np.float32, (4, 2, 70, 8), True)
        o, p = nn_attention._sdpa_kernel(np, q._data, k._data, v._data, None, scale=0.25)
        g = np.ones_like(o)
        return (o, p) + nn_attention._sdpa_backward_kernel(
            np, g, q._data, k._data, v._data, o, p, scale=0.25, needs=(True,) * 3)

    split = grads()
    assert pieces == [True, True]
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    whole = grads()
    assert pieces == [True, True, False, False]
    for a, b in zip(split, whole):
        assert a.strides == b.strides
        np.testing.assert_array_equal(a, b)
    assert split[2].strides[1] < split[2].strides[2]  # (B, L, H, E) memory, as q's


def test_mask_per_sample_forward_runs_whole(pieces, monkeypatch):
    rng = np.random.default_rng(2)
    mask = ember.from_numpy(rng.random((3, 2, 16, 16)) < 0.8)
    split = _run(np.float32, (3, 2, 16, 8), False, mask, False, (True,) * 3)
    # a mask of its own per sample: the forward runs whole (no split asked for); the
    # backward, which reads only the probabilities, still runs in pieces
    assert pieces == [True]
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 1 << 62)
    whole = _run(np.float32, (3, 2, 16, 8), False, mask, False, (True,) * 3)
    np.testing.assert_array_equal(split[0], whole[0])
    for a, b in zip(split[1], whole[1]):
        np.testing.assert_array_equal(a, b)


def test_one_thread_runs_whole(pieces):
    ember.set_num_threads(1)
    _run(np.float32, (4, 2, 70, 8), True, None, True, (True,) * 3)
    assert not any(pieces)


@pytest.mark.parametrize("mask_name", ["causal", "float (L, L)"])
def test_pieces_match_torch(pieces, mask_name):
    torch = pytest.importorskip("torch")
    dtype, shape = np.float32, (4, 2, 70, 8)
    mask, causal = _masks(shape[2], dtype)[mask_name]
    out, grads, _ = _run(dtype, shape, False, mask, causal, (True,) * 3)
    assert all(pieces)
    rng = np.random.default_rng(0)
    tq, tk, tv = (torch.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
                  for _ in range(3))
    tmask = None if mask is None else torch.from_numpy(mask.numpy())
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask,
                                                            is_causal=causal)
    tout.backward(torch.from_numpy(np.cos(np.arange(tout.numel(), dtype=dtype))
                                   .reshape(tout.shape)))
    np.testing.assert_allclose(out, tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, t in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(a, t.grad.numpy(), rtol=1e-4, atol=1e-4)
