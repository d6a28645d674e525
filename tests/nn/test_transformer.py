"""Attention and Transformer layers against PyTorch from the same weights."""

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import HAS_TORCH
from tests.nn._compare import compare, copy_weights, to_torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _x(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape))


def _pair(name, *args, **kwargs):
    import torch

    t = getattr(torch.nn, name)(*args, **kwargs).double()
    e = getattr(nn, name)(*args, **kwargs).double()
    copy_weights(e, t)
    return e, t


@pytest.mark.parametrize("kwargs", [
    {}, {"is_causal": True}, {"scale": 0.3},
])
def test_sdpa_matches_torch(kwargs, device):
    import torch

    compare(lambda q, k, v: nn.functional.scaled_dot_product_attention(q, k, v, **kwargs),
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                              **kwargs),
            [_x(2, 3, 5, 4), _x(2, 3, 5, 4, seed=1), _x(2, 3, 5, 6, seed=2)], device=device)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_with_masks_matches_torch(mask_kind, device):
    import torch

    rng = np.random.default_rng(3)
    if mask_kind == "bool":
        m = rng.random((5, 7)) > 0.3
        m[:, 0] = True
    else:
        m = rng.standard_normal((5, 7))
    mask = ember.from_numpy(m)
    compare(lambda q, k, v: nn.functional.scaled_dot_product_attention(q, k, v,
                                                                       mask.to(device)),
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, to_torch(mask)),
            [_x(2, 5, 4), _x(2, 7, 4, seed=1), _x(2, 7, 3, seed=2)], device=device)


@pytest.mark.parametrize("shapes,mask_shape", [
    (((2, 3, 5, 4), (3, 7, 4), (7, 6)), None),           # k and v broadcast over q's batch
    (((5, 4), (7, 4), (2, 7, 3)), None),                 # v has the most batch dims
    (((3, 5, 4), (3, 7, 4), (3, 7, 2)), (3, 1, 7)),      # the mask broadcasts over rows
])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_broadcasting_matches_torch(shapes, mask_shape, mask_kind):
    import torch

    rng = np.random.default_rng(4)
    mask = None
    if mask_shape is not None:
        m = rng.random(mask_shape) > 0.4 if mask_kind == "bool" else \
            rng.standard_normal(mask_shape)
        mask = ember.from_numpy(m)
    compare(lambda q, k, v: nn.functional.scaled_dot_product_attention(q, k, v, mask),
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, None if mask is None else to_torch(mask)),
            [_x(*sh, seed=i) for i, sh in enumerate(shapes)])


@pytest.mark.parametrize("mask_shape", [(2, 3, 5, 7), (4, 7)])
def test_sdpa_mask_shape_errors_match_torch(mask_shape):
    import torch

    q, k, v = _x(3, 5, 4), _x(3, 7, 4, seed=1), _x(3, 7, 2, seed=2)
    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.scaled_dot_product_attention(
            to_torch(q), to_torch(k), to_torch(v), torch.ones(mask_shape, dtype=torch.bool))
    with pytest.raises(RuntimeError) as got:
        nn.functional.scaled_dot_product_attention(q, k, v,
                                                   ember.ones(mask_shape, dtype=ember.bool))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("wanted", ["q", "k", "v", "qv"])
def test_sdpa_gradient_of_some_inputs(wanted):
    import torch

    args = [_x(2, 5, 4), _x(2, 6, 4, seed=1), _x(2, 6, 3, seed=2)]
    targs = [to_torch(a) for a in args]
    for name, a, t in zip("qkv", args, targs):
        if name in wanted:
            a.requires_grad_()
            t.requires_grad_()
    g = _x(2, 5, 3, seed=3)
    nn.functional.scaled_dot_product_attention(*args, is_causal=True).backward(g)
    torch.nn.functional.scaled_dot_product_attention(*targs, is_causal=True).backward(
        to_torch(g))
    for name, a, t in zip("qkv", args, targs):
        if name in wanted:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), atol=1e-12)
        else:
            assert a.grad is None


def test_sdpa_float32_causal_and_masked_nan_key():
    import torch

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 4, 16, 8)).astype(np.float32) for _ in range(3))
    # a NaN in the last key is masked out for every query but the last one
    k[:, :, -1, 0] = np.nan
    out = nn.functional.scaled_dot_product_attention(
        *(ember.from_numpy(a) for a in (q, k, v)), is_causal=True).numpy()
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=True).numpy()
    np.testing.assert_allclose(out[:, :, :-1], ref[:, :, :-1], rtol=1e-5, atol=1e-6)
    assert np.isfinite(out[:, :, :-1]).all()
    assert np.isnan(out[:, :, -1]).all() and np.isnan(ref[:, :, -1]).all()


def test_sdpa_double_backward():
    from ember.autograd import gradgradcheck

    q, k, v = (_x(1, 3, 2, seed=s).requires_grad_() for s in range(3))
    assert gradgradcheck(nn.functional.scaled_dot_product_attention, (q, k, v))


@pytest.mark.parametrize("kwargs,call", [
    ({}, {}),
    ({"batch_first": True}, {"need_weights": False}),
    ({"kdim": 3, "vdim": 5, "add_bias_kv": True}, {}),
    ({"add_zero_attn": True, "bias": False}, {"average_attn_weights": False}),
])
def test_multihead_attention_matches_torch(kwargs, call):
    import torch

    e, t = _pair("MultiheadAttention", 8, 2, **kwargs)
    b_first = kwargs.get("batch_first", False)
    shape_q = (2, 4, 8) if b_first else (4, 2, 8)
    kd, vd = kwargs.get("kdim", 8), kwargs.get("vdim", 8)
    shape_k = (2, 6, kd) if b_first else (6, 2, kd)
    shape_v = (2, 6, vd) if b_first else (6, 2, vd)
    q, k, v = _x(*shape_q), _x(*shape_k, seed=1), _x(*shape_v, seed=2)
    kpm = ember.tensor([[False] * 5 + [True], [False] * 6])
    compare(lambda q, k, v: e(q, k, v, key_padding_mask=kpm, **call)[0],
            lambda q, k, v: t(q, k, v, key_padding_mask=to_torch(kpm), **call)[0],
            [q, k, v], ember_params=list(e.parameters()), torch_params=list(t.parameters()))
    if call.get("need_weights", True):
        w = e(q, k, v, key_padding_mask=kpm, **call)[1]
        tw = t(to_torch(q), to_torch(k), to_torch(v), key_padding_mask=to_torch(kpm),
               **call)[1]
        assert np.allclose(w.detach().numpy(), tw.detach().numpy(), atol=1e-10)
    del torch


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first):
    import torch

    e, t = _pair("TransformerEncoderLayer", 8, 2, 16, dropout=0.0, norm_first=norm_first,
                 activation="gelu")
    mask = nn.Transformer.generate_square_subsequent_mask(5).double()
    compare(lambda x: e(x, src_mask=mask), lambda x: t(x, src_mask=to_torch(mask)),
            [_x(5, 3, 8)], ember_params=list(e.parameters()),
            torch_params=list(t.parameters()))
    del torch


def test_full_transformer_matches_torch():
    e, t = _pair("Transformer", 8, 2, 2, 1, 16, dropout=0.0, batch_first=True)
    compare(lambda s, g: e(s, g), lambda s, g: t(s, g), [_x(2, 5, 8), _x(2, 3, 8, seed=1)],
            ember_params=list(e.parameters()), torch_params=list(t.parameters()))


def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(3)
    assert m.tolist() == [[0.0, float("-inf"), float("-inf")], [0.0, 0.0, float("-inf")],
                          [0.0, 0.0, 0.0]]
