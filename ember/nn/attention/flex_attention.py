"""``ember.nn.attention.flex_attention``: attention with user-written score and mask functions
(``torch.nn.attention.flex_attention``).

NOTE [ Flex attention, eagerly ]
``flex_attention`` computes ``softmax(score_mod(q @ k^T * scale) where mask_mod else -inf) @ v``.
PyTorch compiles ``score_mod``/``mask_mod`` into a fused kernel that skips masked-out blocks;
its eager form instead materialises the whole (B, H, L, S) score matrix and calls the mods
once on all of it, which is what ember does: the mods receive index tensors that broadcast
against each other (``b``: (B, 1, 1, 1), ``h``: (1, H, 1, 1), ``q_idx``: (1, 1, L, 1),
``kv_idx``: (1, 1, 1, S)) -- the same values PyTorch's vmap feeds one at a time, so a mod
written for PyTorch (comparisons, arithmetic, ``torch.where``, indexing captured tensors with
the indices) gives the same result. Scores are computed in float32 (float64 for float64
inputs) through ember's ops, so gradients flow to query, key, value and to any tensor a
``score_mod`` captures. A :class:`BlockMask` only contributes its ``mask_mod`` to the result
(as in PyTorch's eager form); its block tables describe which tiles a fused kernel would skip
and are kept, printed and converted exactly as PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, TypedDict

from ..._core.tensor import Tensor
from ...utils._pytree import (  # noqa: F401  (names this module carries, as torch's does)
    TreeSpec, tree_flatten, tree_map_only, tree_unflatten)
from ._flex_masks import (  # noqa: F401  (the masks are part of this module's API)
    _DEFAULT_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE, BlockMask, _dense_mask, _indices,
    _sliced_mask_mod_error, and_masks, create_block_mask, create_mask, noop_mask, or_masks,
)

__all__ = ["BlockMask", "create_block_mask", "create_mask", "flex_attention", "and_masks",
           "or_masks", "noop_mask", "AuxRequest", "AuxOutput", "FlexKernelOptions"]

#: the signatures of the two kinds of modification functions (for type annotations)
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


class FlexKernelOptions(TypedDict, total=False):
    """Tuning options for PyTorch's fused flex-attention kernels (``kernel_options=``).

    ember computes flex attention eagerly (NOTE [ Flex attention, eagerly ]) and accepts
    these keys without using them. Every key is optional.

    Args:
        num_warps, num_stages (int): the GPU launch shape of PyTorch's Triton kernel.
        BLOCK_M, BLOCK_N (int): the query and key tile sizes of the forward kernel.
        BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 (int): the tile sizes of the backward kernels.
        PRESCALE_QK (bool): scale the query before the score product.
        ROWS_GUARANTEED_SAFE (bool): promise that no query has every key masked.
        BLOCKS_ARE_CONTIGUOUS (bool): promise that kept tiles are contiguous.
        WRITE_DQ (bool): write the query gradient in the backward kernel.
        FORCE_USE_FLEX_ATTENTION (bool): never pick the decoding kernel.
        USE_TMA (bool): use the tensor memory accelerator on Hopper GPUs.
        kpack, matrix_instr_nonkdim, waves_per_eu (int): ROCm tuning.
        BACKEND (str): which fused kernel to use.

    Example:
        >>> from ember.nn.attention.flex_attention import FlexKernelOptions, flex_attention
        >>> q = ember.randn(1, 1, 4, 8)
        >>> opts = FlexKernelOptions(BLOCK_M=64, BLOCK_N=64)
        >>> ember.equal(flex_attention(q, q, q, kernel_options=opts), flex_attention(q, q, q))
        True
    """

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_M1: int
    BLOCK_N1: int
    BLOCK_M2: int
    BLOCK_N2: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    kpack: int
    matrix_instr_nonkdim: int
    waves_per_eu: int
    BACKEND: str


def _ember():
    import ember  # deferred: ember.nn is imported while ember itself initialises

    return ember


class AuxRequest(NamedTuple):
    """Which extra outputs :func:`flex_attention` should return (``return_aux=``).

    Args:
        lse (bool): the log-sum-exp of each query's scores. Default: False.
        max_scores (bool): the largest score of each query. Default: False.

    Example:
        >>> from ember.nn.attention.flex_attention import AuxRequest, flex_attention
        >>> q = ember.randn(1, 1, 4, 8)
        >>> out, aux = flex_attention(q, q, q, return_aux=AuxRequest(lse=True))
        >>> aux.lse.shape, aux.max_scores
        (ember.Size([1, 1, 4]), None)
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs of :func:`flex_attention`; a field not requested is None.

    Args:
        lse (Tensor, optional): (B, Hq, L) the log-sum-exp of each query's scores, in
            float32 (float64 for float64 inputs); ``-inf`` where every key is masked.
        max_scores (Tensor, optional): (B, Hq, L) the largest score of each query.

    Example:
        >>> from ember.nn.attention.flex_attention import AuxRequest, flex_attention
        >>> q = ember.randn(1, 1, 4, 8)
        >>> out, aux = flex_attention(q, q, q, return_aux=AuxRequest(lse=True, max_scores=True))
        >>> bool((aux.max_scores <= aux.lse).all())
        True
    """

    lse: Tensor | None = None
    max_scores: Tensor | None = None


# ------------------------------------------------------------------------------------------------
# flex_attention


def _validate(query, key, value, enable_gqa, block_mask):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"flex_attention(): expected {name} to be a Tensor, but got "
                            f"{type(t).__name__}")
    # key and value may differ in dtype from query (PyTorch allows low-precision k/v): the
    # scores are computed in the working precision whatever the inputs
    if not query.dtype.is_floating_point:
        raise ValueError(f"flex_attention(): expected floating point inputs, got {query.dtype}")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but "
                         f"got E={query.size(-1)} and E={key.size(-1)}.")
    if key.size(-2) != value.size(-2) or key.size(-3) != value.size(-3):
        raise ValueError("flex_attention(): key and value must have the same sequence length "
                         f"and heads, but got {tuple(key.shape)} and {tuple(value.shape)}")
    hq, hkv = query.size(-3), key.size(-3)
    if not enable_gqa and hq != hkv:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={hq} and Hkv={hkv}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and hq % hkv != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA "
                         f"but got Hq={hq} and Hkv={hkv}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or non-none "
                f"block_mask, but got block_mask=None, Bq={query.size(0)}, and "
                f"Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or block_mask and "
                f"query to have the same batch size, but got Bq={query.size(0)}, "
                f"Bkv={key.size(0)}, B_block_mask={block_mask.kv_num_blocks.size(0)}.")
        if key.size(0) != 1:
            raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={query.size(0)} and "
                               f"Bkv={key.size(0)}")
    if block_mask is not None and block_mask.BLOCK_SIZE != (_LARGE_SPARSE_BLOCK_SIZE,) * 2:
        if block_mask.mask_mod is _sliced_mask_mod_error:
            raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
        bq, bkv = block_mask.shape[-2:]
        L, S = query.size(-2), key.size(-2)
        if L > bq or S > bkv:
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got "
                f"q_len={L} and kv_len={S}. As the block mask was created for a smaller length "
                "than you're using it for, you likely need to create a new block mask.")
        if L < bq or S < bkv:
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got "
                f"q_len={L} and kv_len={S}. As the block mask was created for a larger length "
                "than you're using it for, you can either 1. create a new block mask with the "
                "correct length, or 2. 'adjust' the existing block mask to the correct length "
                "by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the "
                "block mask to the upper left corner, which does not work for all mask_mods!")


#: set True to silence the warning that an eager call materialises the whole score matrix
_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = False
_WARNINGS_SHOWN: set = set()
_UNFUSED_WARNING = (
    "flex_attention called without torch.compile() - this will use an unfused implementation "
    "that materializes the full scores matrix instead of generating a fused kernel.\n\n"
    "SOLUTION: Use torch.compile(flex_attention)(...)\n\n"
    "If you want to debug your score_mod/mask_mod, you can set:\n"
    "torch.nn.attention.flex_attention._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True\n\n"
    "This will allow you to use print statements or breakpoints. Note: This doesn't work with "
    "the backwards pass and may produce incorrect results.")


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod=None, block_mask=None,
                   scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options=None, *, return_aux=None):
    """Scaled dot-product attention whose scores and mask are given by Python functions.

    ``out = softmax(where(mask_mod(b, h, q, kv), score_mod(q @ k^T * scale, b, h, q, kv),
    -inf)) @ v``, computed as in NOTE [ Flex attention, eagerly ]. A query whose every key is
    masked gets zeros (and an lse of ``-inf``).

    Args:
        query (Tensor): (B, Hq, L, E).
        key (Tensor): (B or 1, Hkv, S, E).
        value (Tensor): (B or 1, Hkv, S, Ev).
        score_mod (callable, optional): ``score_mod(score, b, h, q_idx, kv_idx)`` returning
            the modified score. Default: the score unchanged.
        block_mask (BlockMask, optional): its ``mask_mod`` masks positions. Default: none.
        scale (float, optional): score scale. Default: ``1 / sqrt(E)``.
        enable_gqa (bool): allow Hq to be a multiple of Hkv (grouped-query attention).
        return_lse (bool): also return the log-sum-exp of the scores (deprecated in PyTorch
            in favour of ``return_aux``; warns).
        kernel_options (dict, optional): fused-kernel tuning; accepted, unused by ember.
        return_aux (AuxRequest, optional): which extra outputs to return as an
            :class:`AuxOutput`.

    Returns:
        Tensor of shape (B, Hq, L, Ev) in the query's dtype; with ``return_lse`` also the lse
        (B, Hq, L) in float32 (float64 for float64 inputs); with ``return_aux`` an AuxOutput.

    Example:
        >>> import ember
        >>> from ember.nn.attention.flex_attention import flex_attention, create_block_mask
        >>> q = ember.randn(1, 2, 4, 8)
        >>> causal = create_block_mask(lambda b, h, i, j: i >= j, None, None, 4, 4,
        ...                            device="cpu")
        >>> out = flex_attention(q, q, q, block_mask=causal)
        >>> ref = ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        >>> ember.allclose(out, ref, atol=1e-6)
        True
    """
    import warnings

    e = _ember()
    _validate(query, key, value, enable_gqa, block_mask)
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=2)
    if not _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG and "unfused" not in _WARNINGS_SHOWN:
        from ..._dynamo.eval_frame import running_compiled

        # as PyTorch: once a process, from the first eager call (a compiled one would fuse)
        if not running_compiled():
            _WARNINGS_SHOWN.add("unfused")
            warnings.warn(_UNFUSED_WARNING, UserWarning, stacklevel=1)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))

    B, Hq, L, _ = query.shape
    groups = Hq // key.size(1)
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    S = key.size(-2)
    key = key.expand(B, *key.shape[1:])
    value = value.expand(B, *value.shape[1:])

    working = e.float64 if query.dtype == e.float64 else e.float32
    scores = (query.to(working) @ key.to(working).transpose(-2, -1)) * scale
    if score_mod is not None:
        scores = e.as_tensor(score_mod(scores, *_indices(B, Hq, L, S)))
        scores = scores.to(working).expand(B, Hq, L, S)
    mask_mod = block_mask.mask_mod if block_mask is not None else noop_mask
    masked = None
    if mask_mod is not noop_mask:
        keep = e.from_numpy(_dense_mask(mask_mod, B, Hq, L, S))
        scores = e.where(keep, scores, e.tensor(-math.inf, dtype=working))
        masked = ~keep.any(dim=-1, keepdim=True)  # queries with nothing to attend to
    neg_inf_rows = e.isneginf(scores).all(dim=-1, keepdim=True)
    masked = neg_inf_rows if masked is None else masked | neg_inf_rows
    safe = e.where(masked, e.zeros((), dtype=working), scores)
    probs = e.where(masked, e.zeros((), dtype=working), e.softmax(safe, dim=-1))
    out = probs.to(query.dtype) @ value.to(query.dtype)

    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    lse = max_scores = None
    if want_lse:
        lse = e.where(masked.squeeze(-1), e.tensor(-math.inf, dtype=working),
                      e.logsumexp(safe, dim=-1))
    if want_max:
        max_scores = scores.amax(dim=-1)
    if return_aux is not None:
        return out, AuxOutput(lse=lse, max_scores=max_scores)
    if return_lse:
        return out, lse
    return out
