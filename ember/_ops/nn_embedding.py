"""Bags of embeddings (``embedding_bag``) and PyTorch's top-level embedding forms
(``torch.embedding``, ``torch.embedding_bag``, ``torch.embedding_renorm_``), composed from the
``embedding`` lookup op of ``nn_ops.py``.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as _dt
from .._core.checks import holds_values
from . import _node_names
from ._registry import public, recorded_as
from .from_data import tensor
from .join import stack
from .nn_checks import type_name_in_check
from .nn_ops import embedding


def _fast_bags(weight, mode, padding_idx):
    """Whether PyTorch's CPU kernel takes its fast path for these bags: sums or means
    without padding, of a half-precision table or a float32 one whose rows are contiguous.
    The path shows in which checks raise what, and in an empty ``offset2bag`` for sums."""
    dt = weight.dtype.name
    return padding_idx is None and mode in ("sum", "mean") and (
        dt in ("float16", "bfloat16") or (dt == "float32" and weight.stride(-1) == 1))


def _check_bag_args(flat, weight, offsets, padding_idx, mode="sum"):
    """torch's checks of embedding_bag's operands: a floating weight, offsets starting at 0
    and within the input (an offset outside it in between: IndexError, as torch's bag
    bookkeeping indexes with it; on the fast path a RuntimeError, as do decreasing offsets),
    indices and ``padding_idx`` within the table (RuntimeErrors)."""
    if weight.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have one of the following scalar "
            "types: Half, BFloat16, Float, Double; but got "
            f"{type_name_in_check(weight.dtype, weight.is_cuda)} instead (while checking "
            "arguments for embedding_bag)")
    num = weight.shape[0]
    if padding_idx is not None and not -num <= padding_idx < num:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} "
                           f"through {num - 1}, but got {padding_idx}")
    if offsets is not None and offsets.numel() and holds_values(offsets._data):
        first, last = int(offsets[0]), int(offsets[-1])
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                f"start from position 0. However, got {first}\n"
                f"[ torch.{offsets.dtype.scalar_name}Tensor{{}} ]")  # (torch prints offsets[0])
        if last > flat.shape[0]:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                               f"{flat.shape[0]} but got offsets[-1] of {last}")
        offs = offsets.reshape(-1).tolist()
        outside = [o for o in offs if not 0 <= o <= flat.shape[0]]
        fast = _fast_bags(weight, mode, padding_idx)
        if outside and not (fast and mode == "sum"):
            raise IndexError("index out of range in self")
        if fast and (outside or any(b < a for a, b in zip(offs, offs[1:]))):
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing and within "
                               f"the input's length {flat.shape[0]}, got {offs}")
    if flat.numel() and flat._data.dtype.kind in "iu" and holds_values(flat._data):
        where = ((flat < 0) | (flat >= num)).nonzero().reshape(-1)
        if where.numel():
            i = int(where[0])
            raise RuntimeError(f"Index {i} of input takes value {int(flat[i])} which is not in "
                               f"the valid range [0, {num})")


def _bag_indices(indices, offsets_dtype):
    """``indices`` in the dtype torch's kernel reads them in: indices and offsets are
    promoted together (int8 indices with int64 offsets are int64; bool ones count as 0/1),
    and that dtype must be int64 or int32."""
    common = _dt.promote_types(indices.dtype, offsets_dtype)
    if common not in (_dt.int64, _dt.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {type_name_in_check(common, indices.is_cuda)} "
            "instead (while checking arguments for embedding_bag)")
    return indices if indices.dtype == common else indices.to(common)


def _first_max_rows(vals):
    """Per column of the (rows, dim) array ``vals``, the row torch's max-bag kernel keeps:
    it walks the rows in order and replaces its maximum only by a strictly greater value, so
    ties keep the first row and a NaN wins only as the first row (``argmax`` would pick the
    first NaN anywhere)."""
    pos = np.zeros(vals.shape[1], dtype=np.int64)
    if vals.shape[0] > 1:
        best = vals[0].copy()
        for k in range(1, vals.shape[0]):
            up = vals[k] > best
            best[up] = vals[k][up]
            pos[up] = k
    return pos


def _bag_ranges(starts, n, fast, last_offset):
    """The ``[lo, hi)`` rows of each bag of a 1-D input of ``n`` indices, and each bag's size
    as torch's mean divides by it.

    NOTE [ Bags of unsorted offsets ]
    torch's general CPU kernel puts index ``i`` in bag ``#{offsets <= i} - 1``: bag ``k``
    holds the rows from the k-th smallest offset to the next, so decreasing offsets act as
    sorted ones (a bag may come out empty), and with ``include_last_offset`` the last bag runs
    to the end of the input whatever the last offset says. A mean divides by the sizes the
    offsets give in their own order (``offsets[k + 1] - offsets[k]``, the last to the end),
    clamped to at least 1 -- a negative size leaves the bag's sum as it is. The fast path
    (``fast``: sums and means of float32 or half tables without padding) refuses decreasing
    offsets and ends the last bag at ``last_offset`` where one is given."""
    sizes = [b - a for a, b in zip(starts, starts[1:] + [n])]
    if fast:
        ends = starts[1:] + [n if last_offset is None else last_offset]
        return list(zip(starts, ends)), sizes
    order = sorted(starts)
    return list(zip(order, order[1:] + [n])), sizes


def _meta_bags(rows, flat, weight, per_sample_weights, padding_idx, nbags):
    """Bags on the meta device, where offsets hold no values: a ``(nbags, dim)`` result that
    depends on every looked-up row (so gradients reach the table and the per-sample weights
    with their shapes), as PyTorch's meta kernel gives without reading the offsets."""
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    bag_of = flat.new_zeros(flat.shape[0], dtype=_dt.int64)
    return weight.new_zeros(nbags, weight.shape[1]).index_add(0, bag_of, rows)


@recorded_as("aten::embedding_bag", ("weight", "input", "offsets", "scale_grad_by_freq", "mode",
                                     "sparse", "per_sample_weights", "include_last_offset",
                                     "padding_idx"))
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings (bags given by rows of a 2-D input, or
    by ``offsets`` into a 1-D input)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if mode == "max" and sparse:  # (torch's functional form says so; its aten op does not)
        raise ValueError("max mode does not support sparse weights")
    return _bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                 per_sample_weights, include_last_offset, padding_idx)


def _bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
          per_sample_weights, include_last_offset, padding_idx):
    """``embedding_bag`` after its argument checks."""
    if input.dim() == 2 and offsets is None and input.shape[1] == 0:
        # torch's functional form builds the offsets of bags of width 0 with that step
        raise RuntimeError("step must be nonzero")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        input = _bag_indices(input, input.dtype)  # torch's offsets take the input's dtype
        n, length = input.shape
        flat = input.reshape(-1)
        starts = list(range(0, n * length, length))
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    else:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if include_last_offset and offsets.dim() == 1 and offsets.shape[0] == 0:
            raise RuntimeError("include_last_offset: number of offset should be at least 1")
        flat = input = _bag_indices(input, offsets.dtype)
        if offsets.dtype != flat.dtype:
            offsets = offsets.to(flat.dtype)
        starts = None
        if holds_values(offsets._data):
            starts = offsets.tolist()
            if include_last_offset:
                starts = starts[:-1]
        psw = per_sample_weights
    _check_bag_args(flat, weight, offsets if input.dim() != 2 else None, padding_idx, mode)
    # a sparse gradient of the table is the one of these lookups: one row per index, in
    # input order, the padding left out (NOTE [ Sparse embedding gradients ])
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    if starts is None:  # meta offsets: the bags' bounds are unknown, their number is not
        return _node_names.rename(
            _meta_bags(rows, flat, weight, per_sample_weights, padding_idx,
                       offsets.shape[0] - (1 if include_last_offset else 0)),
            "EmbeddingBagBackward0")
    ranges, sizes = _bag_ranges(starts, flat.shape[0], input.dim() == 2 or
                                _fast_bags(weight, mode, padding_idx),
                                int(offsets[-1]) if include_last_offset and input.dim() != 2
                                else None)
    fast = _fast_bags(weight, mode, padding_idx)
    if psw is not None:
        if weight.dtype.name in ("float16", "bfloat16"):
            # products in float32, summed there (NOTE [ Half-precision bags ])
            rows = rows.float() * psw.float().unsqueeze(1)
        else:
            rows = rows * psw.unsqueeze(1)
    keep = pad = None
    if padding_idx is not None:
        pad = flat != (padding_idx % weight.shape[0])
        keep = pad.to(weight.dtype).unsqueeze(1)
    bags = []
    for (lo, hi), size in zip(ranges, sizes):
        seg = rows[lo:hi]
        if mode == "max" and keep is not None:  # padding takes no part in a maximum
            seg = seg[pad[lo:hi]]
        elif keep is not None:
            # zeros in place of the padding rows (not a product with 0: an inf or NaN in a
            # padding row must not reach the bag, as in torch, which skips those rows)
            seg = seg.masked_fill(~pad[lo:hi].unsqueeze(1), 0)
        if seg.shape[0] == 0:  # zeros that are still the table's function, as torch's
            # (through the lookups, so that a sparse gradient stays sparse)
            bags.append(rows[:0].sum(0).to(weight.dtype))
        elif mode == "sum":
            bags.append(_bag_sum(seg, fast, weight.dtype))
        elif mode == "mean":
            # torch's divisor: the bag's size by its offsets, less its padding, at least 1
            count = weight.new_tensor(float(size))
            if keep is not None:
                count = count - (hi - lo) + keep[lo:hi].sum()
            bags.append(_bag_mean(_bag_sum(seg, fast, weight.dtype), count.clamp(min=1)))
        else:
            pos = _first_max_rows(seg.detach().cpu().numpy())
            bags.append(seg.gather(0, tensor(pos, device=seg.device).unsqueeze(0)).squeeze(0))
    # no bags: an empty result that is still the table's function (torch's requires grad).
    # ember composes the bags from several ops; the node on the result takes the name of
    # torch's one fused op (NOTE [ Node names ])
    return _node_names.rename(stack(bags) if bags else weight[:0] * 0, "EmbeddingBagBackward0")


# NOTE [ Half-precision bags ]
# Measured against torch 2.13's CPU kernel: a bag's sum is a float32 sum of its rows (times
# their per-sample weights, in float32) rounded once, and fbgemm, which sums bfloat16 tables
# on the fast path (sums and means without padding), rounds halfway cases away from zero (it
# adds half a unit and truncates), not to even. A mean is that sum, rounded, divided by the
# bag's size; its backward scales the gradient by 1 / size rounded to the table's dtype (an
# axpy in the dtype), not by a division. Both adjustments change values only, not the graph.


def _bag_sum(seg, fast, dtype):
    """The sum of a bag's rows ``seg`` (float32 products where per-sample weights scaled a
    half-precision table's rows) in ``dtype``, as torch's kernel rounds it (NOTE
    [ Half-precision bags ])."""
    total = seg.sum(0)
    if total.dtype != dtype:
        total = total.to(dtype)
    if not (fast and dtype.name == "bfloat16" and holds_values(seg._data)):
        return total
    wide = np.asarray(seg.detach().float().sum(0).cpu().numpy(), np.float32)
    bits = wide.view(np.uint32)
    away = np.where(np.isfinite(wide), ((bits.astype(np.uint64) + 0x8000) & 0xFFFF0000)
                    .astype(np.uint32), bits).view(np.float32)
    step = away - np.asarray(total.detach().float().cpu().numpy(), np.float32)
    if not step.any():
        return total
    # one unit of the last place where torch rounds away, added exactly in bfloat16
    return total + tensor(step, device=seg.device).to(dtype)


def _bag_mean(total, count):
    """``total / count`` whose gradient is scaled by ``1 / count`` rounded to the dtype, as
    torch's backward scales it (NOTE [ Half-precision bags ])."""
    mean = total / count
    if total.dtype.name not in ("float16", "bfloat16"):
        return mean
    scaled = total * (1.0 / count)
    # the difference of two roundings of one value is exact: the sum gives ``mean`` back
    fix = (mean - scaled).detach()
    return scaled + fix if bool(fix.isfinite().all()) else mean


@public(name="embedding", method=False)
def _embedding_top(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` selected by ``indices`` (PyTorch's top-level argument order: the
    table first; ``padding_idx=-1`` means none).

    Args:
        weight: the (num_embeddings, dim) table.
        indices: integer indices of any shape.
        padding_idx: a row whose gradient stays zero, or -1 for none.
        scale_grad_by_freq: divide each lookup's gradient by the lookups of its row.
        sparse: give ``weight`` a sparse COO gradient (one row per lookup).

    Returns:
        A tensor of shape ``indices.shape + (dim,)``.

    Example:
        >>> import ember
        >>> ember.embedding(ember.eye(3), ember.tensor([2, 0]))
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    # torch's top-level form takes padding_idx as given, unchecked: a row index no lookup
    # can name (negative, or past the table) simply never matches
    rows = weight.shape[0] if weight.dim() else 0
    return embedding(indices, weight, padding_idx if 0 <= padding_idx < rows else None,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@public(method=False)
def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place, the rows of the table ``input`` that ``indices`` name whose
    ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm`` (not recorded by autograd).

    Args:
        input: the (num_embeddings, dim) table, modified.
        indices: the rows to check.
        max_norm: the largest norm allowed.
        norm_type: the norm's degree.

    Returns:
        ``input``.

    Example:
        >>> import ember
        >>> w = ember.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> ember.embedding_renorm_(w, ember.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    from ..autograd.grad_mode import no_grad

    if input.dim() != 2:
        raise RuntimeError(f"embedding_renorm_: expected a 2-D table, got "
                           f"{list(input.shape)}")
    with no_grad():
        rows = indices.reshape(-1).unique()
        sel = input[rows]
        norms = sel.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        input[rows] = sel * scale
    return input


_BAG_MODES = ("sum", "mean", "max")


@public(name="embedding_bag", method=False)
def _embedding_bag_top(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                       sparse=False, per_sample_weights=None, include_last_offset=False,
                       padding_idx=None):
    """Bags of embeddings with PyTorch's top-level signature: the table first, ``mode`` as
    0 sum, 1 mean, 2 max, and the bookkeeping tensors returned beside the result.

    Args:
        weight: the (num_embeddings, dim) table.
        indices: 1-D indices, bags given by ``offsets``.
        offsets: the start of each bag in ``indices``.
        scale_grad_by_freq: divide each index's gradient by its count in ``indices``.
        mode: 0 sum, 1 mean, 2 max.
        sparse: give ``weight`` a sparse COO gradient (one row per index).
        per_sample_weights: a weight per index (sum mode only).
        include_last_offset: ``offsets`` ends with the end of the last bag.
        padding_idx: a row left out of every bag.

    Returns:
        ``(output, offset2bag, bag_size, max_indices)``: the (bags, dim) result; the bag of
        each index (empty in sum mode without padding, below float64); the number of
        non-padding indices per bag (zeros in sum mode); the row each maximum came from (max
        mode; otherwise ``bag_size`` again, or zeros in sum mode).

    Example:
        >>> import ember
        >>> out, *_ = ember.embedding_bag(ember.eye(3), ember.tensor([0, 1, 2]),
        ...                               ember.tensor([0, 2]), mode=0)
        >>> out
        tensor([[1., 1., 0.],
                [0., 0., 1.]])
    """
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                           f"{mode}")
    if mode == 2 and sparse:  # the aten op takes a sparse gradient in max mode too
        out = _bags(indices, weight, offsets, None, 2, scale_grad_by_freq, "max", True,
                    per_sample_weights, include_last_offset, padding_idx)
    else:
        out = embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq,
                            _BAG_MODES[mode], sparse, per_sample_weights, include_last_offset,
                            padding_idx)
    nbags = out.shape[0]
    if not holds_values(indices._data) or not holds_values(offsets._data):
        # the meta device: the shapes PyTorch's meta kernel gives the bookkeeping tensors
        # (in the indices' dtype, whatever the offsets')
        def empty(*shape):
            return indices.new_empty(shape)

        return (out, empty(indices.numel()), empty(offsets.shape[0]),
                empty(nbags, weight.shape[1]) if mode == 2 else empty(0))
    idx = indices.reshape(-1).cpu().numpy()
    starts = [int(v) for v in offsets.reshape(-1).cpu().numpy()][:nbags]
    bounds = starts + [len(idx) if not include_last_offset else int(offsets[-1])]
    bag_of = np.zeros(len(idx), dtype=np.int64)
    for b in range(nbags):
        bag_of[bounds[b]:bounds[b + 1]] = b
    pad = None if padding_idx is None else padding_idx % weight.shape[0]
    counts = np.array([int(np.sum(idx[bounds[b]:bounds[b + 1]] != pad))
                       for b in range(nbags)], dtype=np.int64)

    # the bookkeeping tensors take the indices' and offsets' common dtype (int32 only when
    # both are), as torch's CPU kernel promotes the two first
    book = indices.dtype if offsets.dtype == indices.dtype else _dt.int64

    def as_tensor(a):
        return tensor(a, dtype=book, device=weight.device)

    if mode == 0:
        zeros = np.zeros(nbags, dtype=np.int64)
        # PyTorch's reduced-precision sum kernel (all but float64) leaves offset2bag empty
        # unless it has padding to skip; it reads rows in place, so a table whose rows are
        # not contiguous (a transposed one, float16 too) gets offset2bag filled
        fast = _fast_bags(weight, "sum", padding_idx) and weight.stride(-1) == 1
        bags = np.zeros(0, dtype=np.int64) if fast else bag_of
        return out, as_tensor(bags), as_tensor(zeros), as_tensor(zeros)
    if mode == 1:
        return out, as_tensor(bag_of), as_tensor(counts), as_tensor(counts.copy())
    table = weight.detach().cpu().numpy()
    arg = np.zeros((nbags, weight.shape[1]), dtype=np.int64)
    for b in range(nbags):
        rows = [r for r in idx[bounds[b]:bounds[b + 1]] if r != pad]
        if rows:
            arg[b] = np.asarray(rows)[_first_max_rows(table[rows])]
    return out, as_tensor(bag_of), as_tensor(counts), as_tensor(arg)
