"""``ember.nn.attention.bias``: causal masks as objects that attention understands.

A ``CausalBias`` stands for a causal mask without holding one: passed as ``attn_mask`` to
``nn.functional.scaled_dot_product_attention``, it reaches the call through the
``__torch_function__`` protocol and turns it into the causal form -- ``is_causal=True`` for
the upper-left variant (and for the lower-right one when the query and key lengths agree,
where the two coincide), or the materialised boolean mask for a lower-right mask of
different lengths. The object itself is a zero-strided tensor of shape
``(seq_len_q, seq_len_kv)``: it costs no memory until ``_materialize`` builds the mask.

The two variants differ when the lengths differ. Upper left: query ``i`` sees keys
``0..i``. Lower right: the diagonal ends in the bottom-right corner, so query ``i`` sees keys
``0..i + seq_len_kv - seq_len_q`` -- the form for decoding with a cache, where the last
query is the newest token and sees every key.
"""

from __future__ import annotations

import warnings
from enum import IntEnum

from ..._core import dtype as _dt
from ..._core.tensor import Tensor
from ...overrides import DisableTorchFunctionSubclass

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Which corner a causal mask's diagonal starts from.

    Members:
        UPPER_LEFT: query ``i`` attends to keys ``0..i``.
        LOWER_RIGHT: query ``i`` attends to keys ``0..i + seq_len_kv - seq_len_q``.

    Example:
        >>> from ember.nn.attention.bias import CausalVariant
        >>> int(CausalVariant.LOWER_RIGHT)
        2
    """

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal attention mask, materialised only when needed (see the module doc).

    Args:
        variant (CausalVariant): upper-left or lower-right.
        seq_len_q (int): the query length.
        seq_len_kv (int): the key/value length.

    Returns:
        A tensor subclass of shape ``(seq_len_q, seq_len_kv)`` to pass as ``attn_mask``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> from ember.nn.attention.bias import causal_lower_right
        >>> q = ember.randn(1, 2, 3, 8)
        >>> kv = ember.randn(1, 2, 5, 8)
        >>> F.scaled_dot_product_attention(q, kv, kv, attn_mask=causal_lower_right(3, 5)).shape
        ember.Size([1, 2, 3, 8])
    """

    def __new__(cls, variant, seq_len_q, seq_len_kv):
        from ..._ops.creation import zeros

        with DisableTorchFunctionSubclass():
            base = zeros((), dtype=_dt.bool_).expand(seq_len_q, seq_len_kv)
        return base.as_subclass(cls)

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise TypeError(f"CausalBias: variant must be a CausalVariant, got {variant!r}")
        self.variant = variant
        self.seq_len_q = int(seq_len_q)
        self.seq_len_kv = int(seq_len_kv)

    def _upper_left(self, device):
        """The upper-left boolean mask (True where attention is allowed) on ``device``."""
        from ..._ops.creation import ones

        with DisableTorchFunctionSubclass():
            return ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_dt.bool_).tril()

    def _lower_right(self, device):
        """The lower-right boolean mask (True where attention is allowed) on ``device``."""
        from ..._ops.creation import ones

        with DisableTorchFunctionSubclass():
            m = ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_dt.bool_)
            return m.tril(diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The boolean mask this bias stands for, on ``device`` (default: the CPU).

        Args:
            device: where to build it.

        Returns:
            A ``(seq_len_q, seq_len_kv)`` bool tensor, True where attention is allowed.
        """
        device = "cpu" if device is None else device
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
        """``scaled_dot_product_attention`` with ``attn_mask`` a CausalBias, run in the
        causal form that bias stands for."""
        from .. import functional as F

        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        square = attn_mask.seq_len_q == attn_mask.seq_len_kv
        if attn_mask.variant == CausalVariant.UPPER_LEFT or square:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                                  dropout_p=dropout_p, is_causal=True,
                                                  scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=attn_mask._materialize(query.device),
                dropout_p=dropout_p, is_causal=False, scale=scale, enable_gqa=enable_gqa)
        raise ValueError(
            f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from .. import functional as F

        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    def __repr__(self):
        return repr(self._materialize())


def _check_size(size, name):
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")


def causal_upper_left(*size):
    """A causal mask whose diagonal starts at the top-left corner (query ``i`` sees keys
    ``0..i``), the same as ``is_causal=True``.

    Args:
        *size: ``seq_len_q, seq_len_kv``.

    Returns:
        CausalBias: pass it as ``attn_mask``.

    Example:
        >>> from ember.nn.attention.bias import causal_upper_left
        >>> causal_upper_left(2, 3)._materialize().tolist()
        [[True, False, False], [True, True, False]]
    """
    _check_size(size, "causal_upper_left")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size):
    """A causal mask whose diagonal ends at the bottom-right corner (the last query sees
    every key), for attention over a key/value cache longer than the queries.

    Args:
        *size: ``seq_len_q, seq_len_kv``.

    Returns:
        CausalBias: pass it as ``attn_mask``. Queries beyond the key length see no key, so
        their rows come out NaN (a warning says so when ``seq_len_q > seq_len_kv``).

    Example:
        >>> from ember.nn.attention.bias import causal_lower_right
        >>> causal_lower_right(2, 3)._materialize().tolist()
        [[True, True, False], [True, True, True]]
    """
    _check_size(size, "causal_lower_right")
    if size[0] > size[1]:
        warnings.warn("Lower right causal bias will produce NaNs in the output when "
                      "seq_len_q > seq_len_kv!", stacklevel=2)
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
