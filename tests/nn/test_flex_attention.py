"""ember.nn.attention.flex_attention against torch's eager flex_attention (forward) and
against attention written out in torch (gradients: torch's flex has no CPU backward)."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.nn.attention.flex_attention import (
    AuxRequest, BlockMask, and_masks, create_block_mask, create_mask, flex_attention,
    noop_mask, or_masks,
)

torch = pytest.importorskip("torch")
tfa = pytest.importorskip("torch.nn.attention.flex_attention")


def causal(b, h, q, kv):
    return q >= kv


def window(b, h, q, kv):
    return (q - kv).abs() <= 2


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _torch_flex(*args, **kwargs):
    # torch's debug switch runs the same eager math without tracing it first (much faster)
    debug = tfa._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG
    tfa._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tfa.flex_attention(*args, **kwargs)
    finally:
        tfa._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = debug


def _t(arrays):
    return [torch.from_numpy(a.copy()) for a in arrays]


def _e(arrays, requires_grad=False):
    return [ember.tensor(a, requires_grad=requires_grad) for a in arrays]


def _reference(q, k, v, bias=None, keep=None, scale=None):
    """Attention written out in torch, as torch's eager flex_attention computes it."""
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = q @ k.transpose(-2, -1) * (scale or 1 / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
    lse = s.logsumexp(-1)
    p = torch.nan_to_num(s.softmax(-1), nan=0.0)
    return p @ v, lse


def test_flex_attention_equals_torch_flex_attention():
    # one call of torch's own eager flex_attention (its first call costs seconds)
    arrs = _arrays((2, 4, 8, 4), (2, 2, 8, 4), (2, 2, 8, 3))
    (bias,) = _arrays((4, 8, 8), seed=1)
    eb, tb = ember.tensor(bias), torch.from_numpy(bias)
    ebm = create_block_mask(and_masks(causal, window), 2, 1, 8, 8, BLOCK_SIZE=4)
    tbm = tfa.create_block_mask(tfa.and_masks(causal, window), 2, 1, 8, 8, device="cpu",
                                BLOCK_SIZE=4)
    out, aux = flex_attention(*_e(arrs), score_mod=lambda s, b, h, q, kv: s + eb[h, q, kv],
                              block_mask=ebm, enable_gqa=True, scale=0.3,
                              return_aux=AuxRequest(lse=True))
    ref, ref_aux = _torch_flex(*_t(arrs), score_mod=lambda s, b, h, q, kv: s + tb[h, q, kv],
                               block_mask=tbm, enable_gqa=True, scale=0.3,
                               return_aux=tfa.AuxRequest(lse=True))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)
    np.testing.assert_allclose(aux.lse.numpy(), ref_aux.lse.numpy(), atol=1e-5)


def test_flex_attention_plain_equals_sdpa():
    arrs = _arrays((2, 2, 8, 4), (2, 2, 8, 4), (2, 2, 8, 3))
    out = flex_attention(*_e(arrs))
    ref = torch.nn.functional.scaled_dot_product_attention(*_t(arrs))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)


def test_flex_attention_lse_and_fully_masked_rows_equal_reference():
    arrs = _arrays((1, 1, 8, 4), (1, 1, 8, 4), (1, 1, 8, 4))

    def mod(b, h, q, kv):
        return (q < 4) & (kv < q)  # query 0 and queries 4.. see nothing

    with pytest.warns(FutureWarning):
        out, lse = flex_attention(*_e(arrs), block_mask=create_block_mask(mod, 1, 1, 8, 8),
                                  return_lse=True)
    i = torch.arange(8)
    ref, ref_lse = _reference(*_t(arrs), keep=(i[:, None] < 4) & (i[None] < i[:, None]))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)
    np.testing.assert_allclose(lse.numpy(), ref_lse.numpy(), atol=1e-5)
    assert lse.dtype == ember.float32


def test_flex_attention_return_aux_float64_equals_reference():
    arrs = [a.astype(np.float64) for a in _arrays((1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4))]
    out, aux = flex_attention(*_e(arrs), return_aux=AuxRequest(lse=True))
    ref, ref_lse = _reference(*_t(arrs))
    assert out.dtype == ember.float64 and aux.max_scores is None
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(aux.lse.numpy(), ref_lse.numpy(), atol=1e-12)


def test_flex_attention_grads_equal_written_out_attention():
    arrs = _arrays((1, 2, 6, 4), (1, 2, 6, 4), (1, 2, 6, 4), (2, 6, 6))
    q, k, v, bias = _e(arrs, requires_grad=True)
    out = flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + bias[h, i, j],
                         block_mask=create_block_mask(causal, None, None, 6, 6, BLOCK_SIZE=2))
    (out * out).sum().backward()
    tq, tk, tv, tbias = [t.requires_grad_() for t in _t(arrs)]
    s = tq @ tk.transpose(-2, -1) / 2 + tbias
    s = s.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), -math.inf)
    ref = s.softmax(-1) @ tv
    (ref * ref).sum().backward()
    for a, b in [(out, ref), (q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad),
                 (bias.grad, tbias.grad)]:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)


def test_flex_attention_fully_masked_rows_have_zero_finite_grads():
    q, k, v = _e(_arrays((1, 1, 4, 2), (1, 1, 4, 2), (1, 1, 4, 2)), requires_grad=True)
    bm = create_block_mask(lambda b, h, i, j: i > j, None, None, 4, 4)  # row 0 sees nothing
    flex_attention(q, k, v, block_mask=bm).sum().backward()
    assert np.isfinite(q.grad.numpy()).all() and (q.grad.numpy()[0, 0, 0] == 0).all()


def test_flex_attention_mismatched_heads_raises_value_error():
    q, k, v = _e(_arrays((1, 4, 4, 2), (1, 2, 4, 2), (1, 2, 4, 2)))
    with pytest.raises(ValueError, match="enable_gqa=True"):
        flex_attention(q, k, v)
    with pytest.raises(ValueError, match="multiple of kv heads"):
        flex_attention(q[:, :3], k, v, enable_gqa=True)


def test_flex_attention_block_mask_for_other_length_raises_value_error():
    q = ember.randn(1, 1, 8, 2)
    with pytest.raises(ValueError, match="larger length"):
        flex_attention(q, q, q, block_mask=create_block_mask(causal, None, None, 16, 16))


def test_flex_attention_3d_inputs_raise_not_implemented():
    q = ember.randn(1, 4, 2)
    with pytest.raises(NotImplementedError, match="4D"):
        flex_attention(q, q, q)


def test_create_block_mask_tables_equal_torch():
    e = create_block_mask(and_masks(causal, window), 2, 2, 16, 12, BLOCK_SIZE=(4, 4))
    t = tfa.create_block_mask(tfa.and_masks(causal, window), 2, 2, 16, 12, device="cpu",
                              BLOCK_SIZE=(4, 4))
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        a, b = getattr(e, name), getattr(t, name)
        assert a.dtype == ember.int32, name
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())
    assert e.shape == t.shape and e.BLOCK_SIZE == t.BLOCK_SIZE
    assert e.sparsity() == pytest.approx(t.sparsity())


def test_block_mask_str_and_repr_equal_torch():
    def first(b, h, q, kv):
        return kv == 0

    e = create_block_mask(or_masks(causal, first), 2, 3, 32, 32, BLOCK_SIZE=4)
    t = tfa.create_block_mask(tfa.or_masks(causal, first), 2, 3, 32, 32, device="cpu", BLOCK_SIZE=4)
    assert str(e) == str(t)
    assert e.to_string(grid_size=3, limit=2) == t.to_string(grid_size=3, limit=2)
    assert repr(e).replace("ember.Size", "torch.Size") == repr(t)


def test_block_mask_getitem_keeps_dims_like_torch():
    e = create_block_mask(causal, 4, 2, 8, 8, BLOCK_SIZE=2)
    t = tfa.create_block_mask(causal, 4, 2, 8, 8, device="cpu", BLOCK_SIZE=2)
    assert tuple(e[0].kv_num_blocks.shape) == tuple(t[0].kv_num_blocks.shape)
    assert tuple(e[1, -1].kv_indices.shape) == tuple(t[1, -1].kv_indices.shape)
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        flex_attention(*[ember.randn(1, 1, 8, 2)] * 3, block_mask=e[0, 0])


def test_block_mask_from_kv_blocks_defaults_lengths_from_tiles():
    bm = BlockMask.from_kv_blocks(ember.tensor([[[1, 2]]], dtype=ember.int32),
                                  ember.tensor([[[[0, 1], [0, 1]]]], dtype=ember.int32),
                                  BLOCK_SIZE=4)
    assert bm.shape == (1, 1, 8, 8) and bm.mask_mod is noop_mask
    np.testing.assert_array_equal(bm.to_dense().numpy(), [[[[1, 0], [1, 1]]]])


def test_create_mask_of_score_mod_equals_torch():
    def kill_first(score, b, h, q, kv):
        return ember.where(q == 0, -math.inf, score)

    def t_kill_first(score, b, h, q, kv):
        return torch.where(q == 0, -math.inf, score)

    np.testing.assert_array_equal(create_mask(kill_first, 1, 2, 3, 3).numpy(),
                                  tfa.create_mask(t_kill_first, 1, 2, 3, 3, "cpu").numpy())


def test_create_block_mask_rejects_score_mod():
    with pytest.raises(AssertionError, match="mask_mod"):
        create_block_mask(lambda s, b, h, q, kv: s, 1, 1, 4, 4)


def test_and_masks_rejects_non_callables():
    with pytest.raises(RuntimeError, match="callable"):
        and_masks(causal, 3)


def test_block_mask_adjust_crops_like_torch():
    e = create_block_mask(causal, 1, 2, 16, 16, BLOCK_SIZE=4)._adjust(8, 12)
    t = tfa.create_block_mask(causal, 1, 2, 16, 16, device="cpu", BLOCK_SIZE=4)._adjust(8, 12)
    assert e.shape == t.shape
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "q_num_blocks"):
        np.testing.assert_array_equal(getattr(e, name).numpy(), getattr(t, name).numpy())
    q = ember.randn(1, 2, 8, 2)
    k = ember.randn(1, 2, 12, 2)
    assert flex_attention(q, k, k, block_mask=e).shape == (1, 2, 8, 2)
