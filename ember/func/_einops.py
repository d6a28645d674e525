"""``rearrange``: einops-style axis reordering, splitting and merging in one pattern."""

from __future__ import annotations

import math
import re

from .._core.tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = ("...",)  # a bare ellipsis: one group per axis it covers
_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


def _parse_side(side, pattern):
    """A side of the pattern as a list of groups (lists of axis names); a bare ``...`` is the
    group ``_ELLIPSIS`` (``(...)`` is the group ``["..."]``) and ``1`` / ``()`` are empty
    groups (unit axes)."""
    groups, current = [], None
    for tok in _TOKEN.findall(side):
        if tok == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in pattern {pattern!r}")
            current = []
        elif tok == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in pattern {pattern!r}")
            groups.append(current)
            current = None
        elif tok == "1" and current is None:
            groups.append([])
        elif tok == "..." and current is None:
            groups.append(_ELLIPSIS)
        elif tok == "..." or tok.isidentifier():
            if current is None:
                groups.append([tok])
            else:
                current.append(tok)
        else:
            raise ValueError(f"rearrange: unexpected {tok!r} in pattern {pattern!r}")
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in pattern {pattern!r}")
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    """Reorder, split and merge the axes of ``tensor`` as ``pattern`` says (einops notation):
    ``"b h w c -> b c h w"`` permutes, ``"b h w c -> b (h w c)"`` merges, ``"(h1 h) w -> h1 h
    w"`` splits (give ``h1=`` as a keyword), ``...`` stands for the axes not named and ``1``
    for a unit axis.

    Args:
        tensor (Tensor or sequence of Tensor): the tensor; a sequence is stacked along a new
            first axis.
        pattern (str): ``"<input axes> -> <output axes>"``.
        **axes_lengths (int): sizes of axes that cannot be inferred.

    Returns:
        Tensor: the rearranged tensor.

    Example:
        >>> import ember
        >>> rearrange(ember.zeros(2, 3, 4), "a b c -> c (a b)").shape
        ember.Size([4, 6])
    """
    from .. import stack

    if isinstance(tensor, (list, tuple)):
        tensor = stack(list(tensor))
    if not isinstance(tensor, Tensor):
        raise TypeError(f"rearrange: expected a Tensor or a sequence of Tensors, got "
                        f"{type(tensor).__name__}")
    if pattern.count("->") != 1:
        raise ValueError(f"rearrange: pattern must contain a single '->', got {pattern!r}")
    lhs_text, rhs_text = pattern.split("->")
    lhs, rhs = _parse_side(lhs_text, pattern), _parse_side(rhs_text, pattern)
    has_ellipsis = _ELLIPSIS in lhs
    n_named = len(lhs) - has_ellipsis
    if (not has_ellipsis and n_named != tensor.dim()) or (has_ellipsis and n_named > tensor.dim()):
        raise ValueError(
            f"Number of dimensions in pattern ({len(lhs)}) must be equal to the number of "
            f"dimensions in the tensor ({tensor.dim()})")
    ellipsis = [f"...{i}" for i in range(tensor.dim() - n_named)]

    def expand(groups):
        out = []
        for g in groups:
            if g == _ELLIPSIS:
                out.extend([e] for e in ellipsis)
            else:
                out.append([n for name in g for n in (ellipsis if name == "..." else [name])])
        return out

    lhs, rhs = expand(lhs), expand(rhs)
    left_names = [n for g in lhs for n in g]
    right_names = [n for g in rhs for n in g]
    if len(set(left_names)) != len(left_names) or len(set(right_names)) != len(right_names):
        raise ValueError(f"rearrange: an axis appears twice on one side of {pattern!r}")
    if set(left_names) != set(right_names):
        raise ValueError(
            f"rearrange: both sides of {pattern!r} must name the same axes; only on one side: "
            f"{sorted(set(left_names) ^ set(right_names))}")
    sizes = {}
    for group, size in zip(lhs, tensor.shape):
        unknown = [n for n in group if n not in axes_lengths]
        known = math.prod(axes_lengths[n] for n in group if n in axes_lengths)
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer the sizes of {unknown} in {pattern!r}; "
                             "pass them as keyword arguments")
        if (unknown and (known == 0 or size % known)) or (not unknown and known != size):
            raise ValueError(
                f"rearrange: axis of size {size} cannot be split as {group} with "
                f"{ {n: axes_lengths[n] for n in group if n in axes_lengths} }")
        for n in group:
            sizes[n] = axes_lengths[n] if n in axes_lengths else size // max(known, 1)
    out = tensor.reshape([sizes[n] for n in left_names])
    out = out.permute([left_names.index(n) for n in right_names])
    return out.reshape([math.prod(sizes[n] for n in g) for g in rhs])
