"""``nn.attention.bias``: causal masks as objects, against PyTorch."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention.bias import (CausalBias, CausalVariant, causal_lower_right,
                                     causal_upper_left)

torch = pytest.importorskip("torch")
from torch.nn.attention import bias as tbias  # noqa: E402


@pytest.mark.parametrize("lq,lkv", [(3, 5), (4, 4), (5, 3), (1, 6)])
@pytest.mark.parametrize("which", ["causal_upper_left", "causal_lower_right"])
def test_materialized_mask_matches_torch(which, lq, lkv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = getattr(ember.nn.attention.bias, which)(lq, lkv)._materialize()
        t = getattr(tbias, which)(lq, lkv)._materialize()
    assert e.dtype == ember.bool
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("lq,lkv", [(3, 5), (4, 4)])
@pytest.mark.parametrize("which", ["causal_upper_left", "causal_lower_right"])
def test_attention_with_bias_matches_torch(which, lq, lkv):
    r = np.random.default_rng(lq * 10 + lkv)
    q, k, v = (r.standard_normal(s).astype(np.float32)
               for s in ((2, 3, lq, 8), (2, 3, lkv, 8), (2, 3, lkv, 8)))
    e = F.scaled_dot_product_attention(*map(ember.tensor, (q, k, v)),
                                       attn_mask=getattr(ember.nn.attention.bias, which)(lq, lkv))
    t = torch.nn.functional.scaled_dot_product_attention(
        *map(torch.tensor, (q, k, v)), getattr(tbias, which)(lq, lkv))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_upper_left_equals_is_causal():
    q = ember.randn(1, 2, 4, 8)
    k = ember.randn(1, 2, 6, 8)
    a = F.scaled_dot_product_attention(q, k, k, causal_upper_left(4, 6))
    b = F.scaled_dot_product_attention(q, k, k, is_causal=True)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_gradients_flow_through_a_lower_right_bias():
    q = ember.randn(1, 1, 2, 4, requires_grad=True)
    k = ember.randn(1, 1, 5, 4, requires_grad=True)
    F.scaled_dot_product_attention(q, k, k, causal_lower_right(2, 5)).sum().backward()
    assert q.grad is not None and k.grad is not None


def test_bias_with_is_causal_raises_value_error():
    q = ember.randn(1, 1, 3, 4)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        F.scaled_dot_product_attention(q, q, q, causal_lower_right(3, 3), is_causal=True)


def test_lower_right_warns_when_queries_outnumber_keys():
    with pytest.warns(UserWarning, match="produce NaNs"):
        causal_lower_right(5, 3)


def test_bias_is_a_tensor_subclass_of_the_mask_shape():
    b = causal_lower_right(3, 5)
    assert isinstance(b, ember.Tensor) and type(b) is CausalBias
    assert b.variant == CausalVariant.LOWER_RIGHT and (b.seq_len_q, b.seq_len_kv) == (3, 5)
    assert repr(b) == repr(b._materialize())
    assert [int(v) for v in CausalVariant] == [int(v) for v in tbias.CausalVariant]


def test_sizes_other_than_two_raise():
    with pytest.raises(AssertionError):
        causal_upper_left(2, 3, 4)


def test_output_layout_follows_a_transposed_query_as_torch():
    # the SDPA tutorial's module: heads split off one projection, then
    # ``y.transpose(1, 2).view(B, L, H * E)`` with no contiguous() in between
    b, length, h, e = 2, 5, 3, 4
    x = np.random.default_rng(0).standard_normal((b, length, 3 * h * e)).astype(np.float32)
    outs = []
    for lib in (ember, torch):
        q, k, v = (a.view(b, length, h, e).transpose(1, 2)
                   for a in lib.tensor(x).chunk(3, -1))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        outs.append((y.stride(), y.transpose(1, 2).view(b, length, h * e).numpy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)


def test_output_of_contiguous_query_is_contiguous():
    q = ember.randn(2, 3, 5, 4)
    assert F.scaled_dot_product_attention(q, q, q).is_contiguous()
