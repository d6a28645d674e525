"""Multi-head attention (``nn.functional.multi_head_attention_forward``)."""

from __future__ import annotations

import math
import warnings

from .._ops.creation import zeros, zeros_like
from .._ops.join import cat
from .._ops.linalg import baddbmm, bmm
from .._ops.nn_attention import scaled_dot_product_attention
from .._ops.nn_dropout import dropout
from .._ops.nn_ops import linear, softmax
from .._ops.nn_pad import pad

# NOTE [ Attention's products through the door ]
# The products of the attention (the projections, the score and value products, SDPA) are
# the public functions, not the raw ops imported above: the public ones consult the mode
# stack, so CPU autocast casts them as PyTorch's dispatcher does inside
# ``multi_head_attention_forward`` (a bfloat16 query met a float32 in-projection weight and
# raised), and ``__torch_function__`` modes see them. They are bound on first use: the
# public namespace imports this module.
_public_bound = False


def _bind_public():
    global linear, bmm, baddbmm, softmax, scaled_dot_product_attention, _public_bound
    from .. import _ops  # noqa: F401  (the public functions' home is loaded by now)
    from .. import baddbmm as _baddbmm, bmm as _bmm
    from . import functional as _F

    linear, softmax = _F.linear, _F.softmax
    scaled_dot_product_attention = _F.scaled_dot_product_attention
    bmm, baddbmm = _bmm, _baddbmm
    _public_bound = True


def _canonical_mask(mask, name, target_dtype, other=None, other_name=""):
    """Bool masks (True = masked out) become additive float masks (-inf where masked).

    ``other`` is the mask given alongside (the attention mask beside a padding mask): a
    pair of different dtypes still works but draws torch's deprecation warning."""
    if mask is None:
        return None
    if mask._data.dtype.kind != "b" and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype != mask.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      "type for both instead.", UserWarning, stacklevel=3)
    if mask._data.dtype.kind == "b":
        return zeros_like(mask, dtype=target_dtype).masked_fill_(mask, float("-inf"))
    # (no conversion where none is needed: a profile shows no ``aten::to`` row, as torch's)
    return mask if mask.dtype == target_dtype else mask.to(target_dtype)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Attention of (L, N, E) queries over (S, N, E) keys/values (or unbatched (L, E)),
    with PyTorch's masks and packed/separate projection weights. Returns the output and,
    with ``need_weights``, the attention weights (averaged over heads by default)."""
    if not _public_bound:
        _bind_public()
    batched = query.dim() == 3
    if key_padding_mask is not None and key_padding_mask.dim() != (2 if batched else 1):
        kind, want = ("batched (3-D)", "2-D") if batched else ("unbatched (2-D)", "1-D")
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or {want} but "
            f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            kind = "batched (3-D)" if batched else "unbatched (2-D)"
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.dim()}-D tensor instead")
        if not batched and attn_mask.dim() == 3:
            want = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != want:
                raise AssertionError(
                    f"Expected `attn_mask` shape to be {want} but got {attn_mask.shape}")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask.")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype,
                                       attn_mask, "attn_mask")
    attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)

    # NOTE [ Attention as PyTorch runs it ]
    # The steps below are PyTorch's ops in PyTorch's order (the packed projection unflattened
    # and split by ``select``, heads by ``view``/``transpose``, the scores by ``bmm`` or
    # ``baddbmm`` with the mask, the scale as ``sqrt(1 / head_dim)``, the averaged weights
    # taken after the output projection), so a profile lists PyTorch's rows, the graph has
    # PyTorch's nodes, and each result is rounded where PyTorch rounds it.
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias,
                                        embed_dim)
    else:
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, b_q)
        k = linear(key, k_proj_weight, b_k)
        v = linear(value, v_proj_weight, b_v)

    if attn_mask is not None:  # exactly the shapes torch takes: no broadcasting here
        want = (tgt_len, src_len) if attn_mask.dim() == 2 else (bsz * num_heads, tgt_len, src_len)
        if tuple(attn_mask.shape) != want:
            raise RuntimeError(
                f"The shape of the {attn_mask.dim()}D attn_mask is {attn_mask.shape}, but should "
                f"be {want}.")
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)

    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    # (L, N, E) -> (N * H, L, head_dim)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None \
        else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None \
        else static_v
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zshape, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(zshape, dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        for i, want in enumerate((bsz, src_len)):
            if key_padding_mask.shape[i] != want:
                # torch's message spells it "key_padded_mask"; scripts may match on it.
                raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be {want}, but "
                                     f"got {key_padding_mask.shape[i]}")
        kpm = key_padding_mask.view(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            weights = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        if attn_mask is not None:
            if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
        out = scaled_dot_product_attention(
            q.view(bsz, num_heads, tgt_len, head_dim),
            k.view(bsz, num_heads, src_len, head_dim),
            v.view(bsz, num_heads, src_len, head_dim), attn_mask, dropout_p)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = None
    if not batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights


def _in_projection_packed(q, k, v, w, b, embed_dim):
    """The query, key and value projections by one packed weight (NOTE [ Attention as
    PyTorch runs it ]): one ``linear`` for self-attention, two where key is value."""
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, embed_dim)).unsqueeze(0).transpose(0, -2) \
                .squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([embed_dim, embed_dim * 2])
        b_q = b_kv = None
        if b is not None:
            b_q, b_kv = b.split([embed_dim, embed_dim * 2])
        q_proj = linear(q, w_q, b_q)
        kv = linear(k, w_kv, b_kv)
        kv = kv.unflatten(-1, (2, embed_dim)).unsqueeze(0).transpose(0, -2).squeeze(-2) \
            .contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q = b_k = b_v = None
    if b is not None:
        b_q, b_k, b_v = b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)

