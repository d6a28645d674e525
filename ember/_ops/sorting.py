"""Sorting and searching: sort, topk, kthvalue, median, mode, quantile, unique, searchsorted,
bincount and histograms.

Ops that select elements compute values and indices in one non-differentiable kernel and get
their gradient by re-selecting the values from the input (NOTE [ Selection gradients ] in
reduction.py). Ordering is NaN-last ascending (NaN counts as the largest value), as in
PyTorch; ties keep their input order, so ``sort`` is always stable.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dispatch, return_types
from .._core import dtype as _dt
from .._core.checks import holds_values, require_values, wrap_dim
from .._core.tensor import Tensor, wrap
from . import _node_names
from ._registry import Op, out_overloads, public
from ._xp_compat import to_host, ufunc_accumulate
from .reduction import (_NO_KEEPDIM, _bool_as_uint8, _check_out_tuple, _check_tensor, _name,
                        select_values, take_along_op)

_apply = _dispatch.apply

for _n in ("sort", "topk", "kthvalue", "median", "nanmedian", "mode"):
    return_types.make(_n, ("values", "indices"))
return_types.make("histogram", ("hist", "bin_edges"))


#: torch's node names for the values of the (values, indices) ops (NOTE [ Node names ])
_VALUES_NODE = {"sort": "SortBackward0", "topk": "TopkBackward0",
                "kthvalue": "KthvalueBackward0", "median": "MedianBackward1",
                "nanmedian": "NanmedianBackward1", "mode": "ModeBackward0"}


def _named(name, fields, values, out=None):
    node = _VALUES_NODE.get(name)
    if node is not None and out is None:
        _node_names.rename(values[0], node)
    cls = return_types.make(name, fields)
    if out is not None:
        _dispatch.write_out(name, out, tuple(values))
        return cls(*out)
    return cls(*values)


def _no_complex(input, name, kernel_name=None, refusal=None):
    """PyTorch's refusal of complex input: NotImplementedError naming its kernel, or the
    RuntimeError ``refusal`` (sort and topk refuse before reaching one). Nor float8, which has
    no comparison kernels (NOTE [ Float8 dtypes ])."""
    if input._data.dtype.kind == "c" and refusal is not None:
        raise RuntimeError(refusal)
    if input._data.dtype.kind == "c" or input._data.dtype in _dt._NO_MATH_NP:
        raise NotImplementedError(
            f'"{kernel_name or name}" not implemented for \'{_name(input._data.dtype)}\'')


_SORT_REFUSAL = " Sort does not support complex dtypes on CPU"


def _sortable(xp, a):
    """Bools sort as uint8 (NumPy sorts them fine, but keep one code path for the kernels);
    bfloat16 sorts as float32 (exact), since ml_dtypes' own sort misplaces NaN."""
    if a.dtype == _dt.bfloat16.np:
        return a.astype(np.float32)
    return a.view(np.uint8) if a.dtype.kind == "b" else a


def _argsort(xp, a, axis, descending):
    """Stable argsort along ``axis``; descending keeps ties in input order and NaN first."""
    a = _sortable(xp, a)
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = xp.flip(a, axis)
    idx = xp.argsort(rev, axis=axis, kind="stable")
    return (n - 1) - xp.flip(idx, axis)


# ------------------------------------------------------------------------------------------------
# a private reshape/permute with a gradient (used to flatten and to move the quantile axis)


def _rearrange_kernel(xp, a, *, perm, shape, src_shape):
    return xp.ascontiguousarray(xp.transpose(a, perm)).reshape(shape)


def _rearrange_vjp(g, _a, *, perm, shape, src_shape):
    inv = tuple(int(i) for i in np.argsort(perm))
    mid = tuple(src_shape[p] for p in perm)
    g = _apply(rearrange_op, (g,), {"perm": tuple(range(len(shape))), "shape": mid,
                                    "src_shape": shape})
    return _apply(rearrange_op, (g,), {"perm": inv, "shape": src_shape, "src_shape": mid})


rearrange_op = Op("_rearrange", _rearrange_kernel, vjp=_rearrange_vjp, linear=True)


def _rearrange(x, perm, shape):
    return _apply(rearrange_op, (x,), {"perm": tuple(perm), "shape": tuple(shape),
                                       "src_shape": tuple(x._data.shape)})


def _flatten(x):
    return _rearrange(x, range(x._data.ndim), (x._data.size,))


# ------------------------------------------------------------------------------------------------
# sort / argsort / msort


def _sort_kernel(xp, a, *, dim, descending, stable=True):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    idx = _argsort(xp, a, dim, descending)
    if not stable and xp is np and a.size <= _SORT_REPLAY_BUDGET and a.shape[dim] > 16:
        # NOTE [ Tie order of an unstable sort ]
        rows = np.moveaxis(a, dim, -1)
        rows = rows.astype(np.float32) if a.dtype == _dt.bfloat16.np else rows
        srt = np.take_along_axis(rows, np.moveaxis(idx, dim, -1), axis=-1)
        tied = (srt[..., 1:] == srt[..., :-1]).any(axis=-1) | np.isnan(srt).any(axis=-1)
        if tied.any():
            flat_idx = np.moveaxis(idx, dim, -1).copy()
            for at in map(tuple, np.argwhere(tied)):
                flat_idx[at] = _std_sort(rows[at].tolist(), descending)
            idx = np.moveaxis(flat_idx, -1, dim)
    return xp.take_along_axis(a, idx, axis=dim), idx.astype(np.int64, copy=False)


sort_op = Op("sort", _sort_kernel, differentiable=False)

# NOTE [ Tie order of an unstable sort ]
# ``sort``/``argsort`` without ``stable=True`` are, on PyTorch's CPU, libstdc++'s
# ``std::sort`` of (value, index) pairs: an introsort (median-of-three pivots, unguarded
# partitions, heapsort below its depth limit) over runs longer than 16, then insertion sort,
# which leaves tied values in an order of its own for rows longer than 16 (shorter rows are
# insertion-sorted whole: stable). ember sorts stably, then replays ``std::sort`` in Python
# for the rows holding ties or NaN, on tensors of at most ``_SORT_REPLAY_BUDGET`` elements
# (the replay costs O(n log n) Python steps a row: ~0.08 ms for 64 tied elements, ~2 ms for
# 1024, against ~0.02 for the stable sort); larger tensors keep the stable order.
_SORT_REPLAY_BUDGET = 1 << 10


def _std_sort(row, descending):
    """The index order libstdc++'s ``std::sort`` gives the (value, index) pairs of ``row``
    under torch's comparator (NaN above every number)."""
    if descending:
        def comp(x, y):
            return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
    else:
        def comp(x, y):
            return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]

    el = list(zip(row, range(len(row))))
    _std_sort_range(el, comp, 0, len(el))
    return [i for _, i in el]


def _std_sort_range(el, comp, first, last):
    """libstdc++'s ``std::sort`` of ``el[first:last]`` under ``comp``, in place: introsort
    over runs longer than 16 (heapsort below the depth limit), then insertion sort."""

    def heap_sort(lo, hi):  # std::partial_sort over the whole run
        part = el[lo:hi]
        _std_partial_sort(part, len(part), comp)
        el[lo:hi] = part

    def introsort(lo, hi, depth):
        while hi - lo > 16:
            if depth == 0:
                heap_sort(lo, hi)
                return
            depth -= 1
            cut = _pivot_partition(el, comp, lo, hi)
            introsort(cut, hi, depth)
            hi = cut

    n = last - first
    if n < 2:
        return
    introsort(first, last, 2 * (n.bit_length() - 1))
    _insertion_sort(el, comp, first, first + min(n, 16))
    for j in range(first + 16, last):
        _unguarded_insert(el, comp, j, el[j])


def _unguarded_insert(el, comp, j, val):
    """Move ``val`` down from position ``j`` past every element ``comp`` puts after it
    (something before it stops the walk)."""
    while comp(val, el[j - 1]):
        el[j] = el[j - 1]
        j -= 1
    el[j] = val


def _insertion_sort(el, comp, lo, hi):
    """std::sort's insertion sort of ``el[lo:hi]`` under ``comp``."""
    for j in range(lo + 1, hi):
        val = el[j]
        if comp(val, el[lo]):
            el[lo + 1:j + 1] = el[lo:j]
            el[lo] = val
        else:
            _unguarded_insert(el, comp, j, val)


def _pivot_partition(el, comp, first, last):
    """std::sort's step over ``el[first:last]``: the median of the second, middle and last
    elements moved to ``first`` as the pivot, then the unguarded partition around it;
    returns the cut."""
    a, b, c = first + 1, first + (last - first) // 2, last - 1
    if comp(el[a], el[b]):
        m = b if comp(el[b], el[c]) else c if comp(el[a], el[c]) else a
    else:
        m = a if comp(el[a], el[c]) else c if comp(el[b], el[c]) else b
    el[first], el[m] = el[m], el[first]
    lo, hi, pivot = first + 1, last, el[first]
    while True:
        while comp(el[lo], pivot):
            lo += 1
        hi -= 1
        while comp(pivot, el[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        el[lo], el[hi] = el[hi], el[lo]
        lo += 1


def _sorted(name, input, dim, descending, stable=True):
    _check_tensor(input, name)
    _no_complex(input, name, "sort", _SORT_REFUSAL)
    d = wrap_dim(dim, input._data.ndim, name)
    v, i = _apply(sort_op, (input,), {"dim": d, "descending": bool(descending),
                                      "stable": bool(stable)})
    return select_values(input, v, i, d, True), i, d


@public
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Sort along ``dim``: ``(values, indices)``; NaN sorts as largest. Tied values keep
    their input order with ``stable=True``, otherwise PyTorch's (NOTE [ Tie order of an
    unstable sort ])."""
    _check_out_tuple("sort", out)
    v, i, _ = _sorted("sort", input, dim, descending, bool(stable))
    return _named("sort", ("values", "indices"), (v, i), out)


@public
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim``; ties as in :func:`sort`."""
    _check_tensor(input, "argsort")
    _no_complex(input, "argsort", "sort", _SORT_REFUSAL)
    d = wrap_dim(dim, input._data.ndim, "argsort")
    return _apply(sort_op, (input,), {"dim": d, "descending": bool(descending),
                                      "stable": bool(stable)})[1]


@public
def msort(input, *, out=None):
    """``sort(input, dim=0).values``."""
    v = _node_names.rename(_sorted("msort", input, 0, False)[0], "SortBackward0")
    return v if out is None else _dispatch.write_out("msort", out, v)


# ------------------------------------------------------------------------------------------------
# topk / kthvalue


def _topk_kernel(xp, a, *, k, dim, largest):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = _argsort(xp, a, dim, largest)
    idx = xp.take(order, xp.arange(k), axis=dim)
    if xp is np and a.size and k and a.size <= _REPLAY_BUDGET:
        # rows with tied values: the order torch's selection leaves them in (NOTE [ Tie
        # order of topk ])
        rows = np.moveaxis(a, dim, -1)
        rows = rows.astype(np.float32) if a.dtype == _dt.bfloat16.np else rows
        srt = np.take_along_axis(rows, np.moveaxis(order, dim, -1), axis=-1)
        tied = (srt[..., 1:] == srt[..., :-1]).any(axis=-1) | np.isnan(srt).any(axis=-1)
        if tied.any():
            flat_idx = np.moveaxis(idx, dim, -1).copy()
            for at in map(tuple, np.argwhere(tied)):
                flat_idx[at] = _std_topk(rows[at].tolist(), k, largest)
            idx = np.moveaxis(flat_idx, -1, dim)
    return xp.take_along_axis(a, idx, axis=dim), idx.astype(np.int64, copy=False)


# NOTE [ Tie order of topk ]
# Which of several equal values torch's CPU topk names, and in what order, is whatever its
# selection leaves: for ``k * 64 <= n`` a ``std::partial_sort`` (a heap of the first k, then
# sorted by popping), otherwise ``std::nth_element`` at ``k - 1`` followed by ``std::sort``
# of the first ``k - 1`` (libstdc++'s). Rows holding ties are replayed in Python with those
# algorithms; the rest take NumPy's stable order, which names the same values. The replay
# covers both paths at any k (the final sort of ``k - 1`` elements is the unstable sort's
# replay, ``_std_sort_range``: an introsort once it passes 16; before session 33 only k <= 17
# was replayed and 1,213 of 1,500 random tied rows with larger k differed), on tensors of at
# most ``_REPLAY_BUDGET`` elements (the replay is Python, one row at a time).
_REPLAY_BUDGET = 1 << 15  # (a few tens of milliseconds of Python at most)


def _std_topk(row, k, largest):
    """The indices torch's CPU topk returns for a short row: ``std::nth_element`` of
    (value, index) pairs at ``k - 1`` with torch's NaN-first comparator, then ``std::sort``
    of the first ``k - 1`` -- libstdc++'s introselect (median-of-three pivots, unguarded
    partitions, insertion sort below four elements) and insertion sort, replayed."""
    def comp(x, y):
        if largest:
            return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
        return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]

    el = list(zip(row, range(len(row))))
    if k * 64 <= len(el):
        return _std_partial_sort(el, k, comp)

    first, last, nth = 0, len(el), k - 1
    depth = 2 * (len(el).bit_length() - 1)
    while last - first > 3:
        if depth == 0:  # introselect's fallback: a heap selection, the nth swapped in front
            part = el[first:last]
            _std_partial_sort(part, nth + 1 - first, comp, sort_heap=False)
            part[0], part[nth - first] = part[nth - first], part[0]
            el[first:last] = part
            break
        depth -= 1
        lo = _pivot_partition(el, comp, first, last)
        if lo <= nth:
            first = lo
        else:
            last = lo
    else:
        _insertion_sort(el, comp, first, last)
    _std_sort_range(el, comp, 0, k - 1)
    return [i for _, i in el[:k]]


def _std_partial_sort(el, k, comp, sort_heap=True):
    """The first ``k`` indices of libstdc++'s ``std::partial_sort`` of the (value, index)
    pairs ``el`` under ``comp``: a max-heap (under ``comp``) of the first k, every later
    element that ``comp`` puts before the heap's top replacing it, then the heap sorted by
    popping its top to the end, one element at a time (``el`` is reordered in place).
    Without ``sort_heap``, libstdc++'s ``__heap_select``: the heap left unsorted."""

    def push(hole, top, value):
        parent = (hole - 1) // 2
        while hole > top and comp(el[parent], value):
            el[hole] = el[parent]
            hole = parent
            parent = (hole - 1) // 2
        el[hole] = value

    def adjust(hole, length, value):
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if comp(el[child], el[child - 1]):
                child -= 1
            el[hole] = el[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            el[hole] = el[child - 1]
            hole = child - 1
        push(hole, top, value)

    def pop(length, result):
        value = el[result]
        el[result] = el[0]
        adjust(0, length, value)

    if k >= 2:
        for parent in range((k - 2) // 2, -1, -1):
            adjust(parent, k, el[parent])
    for i in range(k, len(el)):
        if comp(el[i], el[0]):
            pop(k, i)
    if not sort_heap:
        return None
    for last in range(k - 1, 0, -1):
        pop(last, last)
    return [i for _, i in el[:k]]


topk_op = Op("topk", _topk_kernel, differentiable=False)


@public
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``."""
    _check_out_tuple("topk", out)
    _check_tensor(input, "topk")
    a = input._data
    d = wrap_dim(dim, a.ndim, "topk")
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:  # (torch's words; checked before the dtype)
        raise RuntimeError("selected index k out of range")
    _no_complex(input, "topk", "topk_cpu", " topk does not support complex dtypes on CPU")
    if input._data.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    v, i = _apply(topk_op, (input,), {"k": int(k), "dim": d, "largest": bool(largest)})
    v = select_values(input, v, i, d, True)
    return _named("topk", ("values", "indices"), (v, i), out)


def _gt_or_nan(x, y):
    # NaN sorts above everything (NaN != NaN marks it)
    return (x != x and y == y) or x > y


def _quickselect(row, k):
    """The position in ``row`` (a list) of the element PyTorch's CPU kthvalue returns for
    the 0-based rank ``k``: its selection (median-of-three pivot, Hoare partition, as in
    Numerical Recipes' ``select``) on a copy of the row, carrying the original positions;
    the order it leaves ties in decides which of them is named."""
    arr, pos = list(row), list(range(len(row)))

    def swap(i, j):
        arr[i], arr[j] = arr[j], arr[i]
        pos[i], pos[j] = pos[j], pos[i]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if _gt_or_nan(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if _gt_or_nan(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if _gt_or_nan(arr[lo], arr[hi]):
            swap(lo, hi)
        if _gt_or_nan(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while _gt_or_nan(pivot, arr[i]):
                i += 1
            j -= 1
            while _gt_or_nan(arr[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return pos[k]


def _kth_kernel(xp, a, *, k, dim, keepdim):
    """The k-th smallest (1-based) along ``dim``; among tied elements the one PyTorch's
    selection names (_quickselect, replayed only for rows whose k-th value is tied)."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    idx = _argsort(xp, a, dim, False)
    idx = xp.take(idx, [k - 1], axis=dim)
    v = xp.take_along_axis(a, idx, axis=dim)
    if xp is np and a.size:
        same = (a == v) | (np.isnan(a) & np.isnan(v)) if a.dtype.kind in "fV" or \
            a.dtype == _dt.bfloat16.np else a == v
        tied = same.sum(axis=dim, keepdims=True) > 1
        if tied.any():
            rows = np.moveaxis(a, dim, -1)
            rows = rows.astype(np.float32) if a.dtype == _dt.bfloat16.np else rows
            flat_idx = np.moveaxis(idx, dim, -1).copy()
            for at in map(tuple, np.argwhere(np.moveaxis(tied, dim, -1)[..., 0])):
                flat_idx[at + (0,)] = _quickselect(rows[at].tolist(), k - 1)
            idx = np.moveaxis(flat_idx, -1, dim)
    if not keepdim:
        v, idx = v.squeeze(dim), idx.squeeze(dim)
    return v, idx.astype(np.int64, copy=False)


kthvalue_op = Op("kthvalue", _kth_kernel, differentiable=False)


@public
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim``: ``(values, indices)``. Among elements
    tied with the k-th value, ``indices`` names the one PyTorch's CPU selection does."""
    _check_out_tuple("kthvalue", out)
    _check_tensor(input, "kthvalue")
    a = input._data
    d = wrap_dim(dim, a.ndim, "kthvalue")
    n = a.shape[d] if a.ndim else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    _no_complex(input, "kthvalue", "kthvalue_cpu")
    if a.dtype == np.bool_:
        raise NotImplementedError('"kthvalue_cpu" not implemented for \'Bool\'')
    v, i = _apply(kthvalue_op, (input,), {"k": int(k), "dim": d, "keepdim": bool(keepdim)})
    v = select_values(input, v, i, d, keepdim)
    return _named("kthvalue", ("values", "indices"), (v, i), out)


# ------------------------------------------------------------------------------------------------
# median / nanmedian / mode


def _median_kernel(xp, a, *, dim, keepdim, ignore_nan):
    """Lower median along ``dim``; with NaN present, NaN (median) or skip them (nanmedian)."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    n = a.shape[dim]
    idx = _argsort(xp, a, dim, False)
    if a.dtype.kind in "fV" or a.dtype == _dt.bfloat16.np:
        nans = xp.isnan(a)
        count = xp.sum(~nans, axis=dim, keepdims=True)
        if ignore_nan:
            pos = xp.maximum((count - 1) // 2, 0)
        else:
            # a row holding NaN points at its first NaN (sorted right after the numbers)
            pos = xp.where(count < n, count, (n - 1) // 2)
    else:
        pos = xp.full(_keep(a.shape, dim), (n - 1) // 2, np.int64)
    i = xp.take_along_axis(idx, pos.astype(np.int64), axis=dim)
    v = xp.take_along_axis(a, i, axis=dim)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return v, i.astype(np.int64, copy=False)


def _keep(shape, dim):
    return tuple(1 if j == dim else s for j, s in enumerate(shape))


median_op = Op("median", _median_kernel, differentiable=False)


def _evenly_shared(flat, v):
    """``v``, a value of ``flat``, whose gradient is shared evenly by every element equal to
    it (all NaNs when it is NaN), as PyTorch's median() and nanmedian() of everything give
    it. The difference term is exactly zero, so the value stays ``v``'s."""
    values = flat.detach()
    hit = (values == v) | (values.isnan() & v.isnan())  # no branch on v: vmap has none
    share = (hit / hit.sum()).to(values.dtype)
    # zero outside the shared elements, where a NaN's difference would be NaN; an infinite
    # median's difference (inf - inf) too, its value then is the shared infinities' sum
    finite = v + ((flat - values).masked_fill(~hit | values.isinf(), 0) * share).sum()
    infinite = (flat.masked_fill(~hit, 0) * share).sum()
    return infinite.where(v.isinf(), finite)


def _median(name, ignore_nan, input, dim, keepdim, out):
    if dim is not None:
        _check_out_tuple(name, out)
    _check_tensor(input, name)
    # torch's median and nanmedian share kernels: "median_cpu" for everything, "median_out"
    # along a dim, which checks the dim's size first
    kname = "median_cpu" if dim is None else "median_out"
    if dim is None:
        flat = _flatten(input)
        if flat._data.size == 0:  # NaN cast to the dtype, as torch's (bool True)
            kind = flat._data.dtype.kind
            if kind == "b":
                return wrap(np.full((), True))
            with np.errstate(invalid="ignore"):
                nan = np.array(np.nan).astype(flat._data.dtype)
            if not (flat._rg and _dispatch.state.grad_enabled):
                return wrap(nan)
            # a floating input that requires grad gets a node, as torch's (empty gradient)
            v = flat.sum() + wrap(nan)
            _node_names.rename(v, "MedianBackward0" if name == "median" else
                               "NanmedianBackward0")
            return v
        _no_complex(input, name, kname)
        if input._data.dtype.kind == "b":
            raise NotImplementedError(f'"{kname}" not implemented for \'Bool\'')
        v, i = _apply(median_op, (flat,), {"dim": 0, "keepdim": False, "ignore_nan": ignore_nan})
        if flat._rg and _dispatch.state.grad_enabled or _dispatch.intercept and \
                _dispatch.carries_tangent is not None and _dispatch.carries_tangent(flat):
            v = _evenly_shared(flat, v)
            _node_names.rename(v, "MedianBackward0" if name == "median" else "NanmedianBackward0")
        return v if out is None else _dispatch.write_out(name, out, v)
    a = input._data
    d = wrap_dim(dim, a.ndim, name)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    _no_complex(input, name, kname)
    if input._data.dtype.kind == "b":
        raise NotImplementedError(f'"{kname}" not implemented for \'Bool\'')
    v, i = _apply(median_op, (input,), {"dim": d, "keepdim": bool(keepdim),
                                        "ignore_nan": ignore_nan})
    v = select_values(input, v, i, d, keepdim)
    return _named(name, ("values", "indices"), (v, i), out)


def _has_dim(dim, **_):
    return dim is not None


def _dim_missing(name):
    return TypeError(f'{name}() missing 1 required positional arguments: "dim"')


# the median of everything has no out= overload in PyTorch
@public
@out_overloads(_has_dim, _dim_missing)
def median(input, dim=None, keepdim=_NO_KEEPDIM, *, out=None):
    """The lower median (of everything, or along ``dim`` with its index); NaN propagates."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
    elif dim is None:  # NOTE [ keepdim without dim ] in reduction.py
        raise _dim_missing("median")
    return _median("median", False, input, dim, keepdim, out)


@public
@out_overloads(_has_dim, _dim_missing)
def nanmedian(input, dim=None, keepdim=_NO_KEEPDIM, *, out=None):
    """The lower median ignoring NaN (NaN only when every value is NaN)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
    elif dim is None:  # NOTE [ keepdim without dim ] in reduction.py
        raise _dim_missing("nanmedian")
    return _median("nanmedian", True, input, dim, keepdim, out)


def _mode_kernel(xp, a, *, dim, keepdim):
    """The most frequent value along ``dim`` (smallest among ties) and its last index."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    x = xp.moveaxis(a, dim, -1)
    idx = _argsort(xp, x, -1, False)
    s = xp.take_along_axis(x, idx, axis=-1)
    n = s.shape[-1]
    pos = xp.arange(n)
    new_run = xp.ones(s.shape, bool)
    new_run[..., 1:] = s[..., 1:] != s[..., :-1]
    start = ufunc_accumulate(xp, "maximum", xp.where(new_run, pos, 0), axis=-1)
    best = xp.argmax(pos - start, axis=-1)[..., None]  # first end of a longest run
    v = xp.take_along_axis(s, best, axis=-1)
    i = xp.take_along_axis(idx, best, axis=-1).astype(np.int64)
    if xp is np and n > 1:
        # NOTE [ Tie order of mode ]: rows whose std::sort leaves another order than the
        # stable one -- NaN in any row, ties past 16 elements -- replayed
        xf = x.astype(np.float32) if x.dtype == _dt.bfloat16.np else x
        odd = np.zeros(s.shape[:-1], bool)
        if xf.dtype.kind == "f":
            odd |= np.isnan(xf).any(axis=-1)
        if n > 16 and x.size <= _SORT_REPLAY_BUDGET:
            odd |= (s[..., 1:] == s[..., :-1]).any(axis=-1)
        for at in map(tuple, np.argwhere(odd)):
            k = _std_mode(xf[at].tolist())
            i[at + (0,)] = k
            v[at + (0,)] = x[at + (k,)]
    v, i = xp.moveaxis(v, -1, dim), xp.moveaxis(i, -1, dim)
    if not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return v.copy(), i.copy()


# NOTE [ Tie order of mode ]
# torch's CPU mode sorts a row's (value, index) pairs with libstdc++'s ``std::sort`` on the
# values' ``<`` alone, then takes the last pair of the first longest run of equal (``==``)
# values. Up to 16 elements that sort is an insertion sort: stable, unless NaN (which ``<``
# never orders) leaves the row partly unsorted; past 16 it is an introsort that leaves tied
# values in an order of its own, so the index named differs from the stable sort's (569 of
# 600 random tied rows did before session 33). Such rows are replayed (``_std_mode``): NaN
# rows always, tied rows while the tensor holds at most ``_SORT_REPLAY_BUDGET`` elements.


def _std_mode(row):
    """The index torch's CPU mode names for ``row`` (NOTE [ Tie order of mode ])."""
    el = list(zip(row, range(len(row))))
    _std_sort_range(el, lambda p, q: p[0] < q[0], 0, len(el))
    best, run, modei = 0, 0, 0
    for j in range(len(el)):
        run += 1
        if j == len(el) - 1 or el[j][0] != el[j + 1][0]:
            if run > best:
                best, modei = run, el[j][1]
            run = 0
    return modei


mode_op = Op("mode", _bool_as_uint8(_mode_kernel), differentiable=False)


@public
def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` and the index of its last occurrence."""
    _check_out_tuple("mode", out)
    _check_tensor(input, "mode")
    a = input._data
    d = wrap_dim(dim, a.ndim, "mode")
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if a.size:  # an empty result never reaches torch's kernel
        _no_complex(input, "mode", "mode_cpu")
    v, i = _apply(mode_op, (input,), {"dim": d, "keepdim": bool(keepdim)})
    v = select_values(input, v, i, d, keepdim)
    return _named("mode", ("values", "indices"), (v, i), out)


# ------------------------------------------------------------------------------------------------
# quantile / nanquantile

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, ignore_nan, input, q, dim, keepdim, interpolation, out):
    _check_tensor(input, name)
    a = input._data
    # torch's checks in its order, every one worded "quantile()" (nanquantile's too): a
    # number q's range, the interpolation, an empty input, q's dims, the dtypes, then a
    # tensor q's values
    if not isinstance(q, Tensor) and not 0 <= float(q) <= 1:  # NaN too
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(q):g}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if a.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q._data.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if a.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q._data.dtype != a.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        qs = q._data.reshape(-1).astype(np.float64)
        scalar_q = q._data.ndim == 0
    else:
        qs = _dispatch.xp_of(a).asarray([float(q)])  # on input's device
        scalar_q = True
    if isinstance(out, Tensor) and out._data.dtype != a.dtype:
        raise RuntimeError("quantile() out tensor must be same dtype as the input tensor")
    outside = ~((qs >= 0) & (qs <= 1)) if holds_values(qs) else None  # NaN too, as torch
    if outside is not None and outside.any():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    nd = a.ndim
    if dim is None:
        x, d = _flatten(input), 0
    else:
        d = wrap_dim(dim, nd, name)
        x = input if nd else _flatten(input)
        d = d if nd else 0
    v = _sorted(name, x, d, False)[0]
    xs = x._data
    n = xs.shape[d]
    nans = np.isnan(xs).sum(axis=d, keepdims=True)
    # ranks along the sorted dim, one per q: shape (..., Q at d, ...)
    qb = qs.reshape((1,) * d + (-1,) + (1,) * (xs.ndim - d - 1))
    # rank = q * scale + offset: NaN rows of quantile point at their (last-sorted) NaN
    if ignore_nan:
        scale, offset = np.maximum(n - nans - 1, 0), np.zeros_like(nans)
    else:
        scale, offset = np.where(nans > 0, 0, n - 1), np.where(nans > 0, n - 1, 0)
    # NOTE [ Quantile ranks in the input's dtype ]
    # torch forms the rank q * (n - 1) in the input's dtype (a number q becomes a tensor of
    # that dtype first), so a float32 rank such as 0.7 * 5 rounds to 3.5 and "nearest" takes
    # 4, where the float64 product 3.4999999 would take 3; lower/higher/nearest and the
    # linear weight all read this rounded rank.
    dt = a.dtype
    rank = qb.astype(dt) * scale.astype(dt) + offset.astype(dt)
    if interpolation == "lower":
        rank = np.floor(rank)
    elif interpolation == "higher":
        rank = np.ceil(rank)
    elif interpolation == "nearest":
        rank = np.rint(rank)
    lo = np.floor(rank).astype(np.int64)
    hi = np.minimum(np.ceil(rank).astype(np.int64), n - 1)
    shape = list(xs.shape)
    shape[d] = len(qs)
    lo, hi = np.broadcast_to(lo, shape).copy(), np.broadcast_to(hi, shape).copy()
    params = {"dim": d, "keepdim": True, "shape": tuple(v._data.shape)}
    vlo = _apply(take_along_op, (v, wrap(lo)), params)
    if interpolation in ("lower", "higher", "nearest"):
        r = vlo
    else:
        vhi = _apply(take_along_op, (v, wrap(hi)), params)
        if interpolation == "midpoint":
            w = 0.5
        elif isinstance(q, Tensor):
            # the weight stays a function of q, so q gets its gradient as in PyTorch
            qt = _rearrange(q, range(q._data.ndim), qb.shape)
            w = qt * wrap(scale.astype(a.dtype)) + wrap((offset - lo).astype(a.dtype))
        else:
            w = wrap(np.broadcast_to((rank - lo).astype(a.dtype), shape).copy())
        # torch's lerp, which switches formula at weight 0.5 (so -inf and 1 at 0.6 is -inf)
        r = vlo.lerp(vhi, w)
    # lay out the reduced dims as torch does, the q axis first
    rest = [s for j, s in enumerate(r._data.shape) if j != d]
    if dim is None:
        kept = [1] * nd if keepdim else []
    else:
        kept = rest[:d] + [1] + rest[d:] if keepdim and nd else rest
    rest_dims = [j for j in range(r._data.ndim) if j != d]
    if scalar_q:
        r = _rearrange(r, rest_dims + [d], kept)
    else:  # q innermost, then moved to the front: PyTorch's layout (a view)
        r = _rearrange(r, rest_dims + [d], kept + [len(qs)]).movedim(-1, 0)
    return r if out is None else _dispatch.write_out(name, out, r)


@public
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles along ``dim`` (or of everything); NaN propagates."""
    return _quantile("quantile", False, input, q, dim, keepdim, interpolation, out)


@public
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring NaN (NaN only where every value is NaN)."""
    return _quantile("nanquantile", True, input, q, dim, keepdim, interpolation, out)


# ------------------------------------------------------------------------------------------------
# unique / unique_consecutive


def _unique_kernel(xp, a, *, dim, return_inverse, return_counts):
    if dim is None:
        flat = _sortable(xp, a.reshape(-1))  # bfloat16 as float32
        kw = {"equal_nan": False} if flat.dtype.kind in "fc" else {}
        vals, inv, counts = xp.unique(flat, return_inverse=True, return_counts=True, **kw)
        if vals.dtype != a.dtype:  # back from the sortable stand-in (bool, bfloat16)
            vals = vals.astype(a.dtype)
        inv = inv.reshape(a.shape)
    else:
        if a.shape[dim] == 0:
            return (a.copy(), xp.zeros((0,), np.int64), xp.zeros((0,), np.int64))
        vals, inv, counts = xp.unique(_sortable(xp, a), return_inverse=True,
                                      return_counts=True, axis=dim)
        if vals.dtype != a.dtype:
            vals = vals.astype(a.dtype)
        inv = inv.reshape(-1)
    return vals, inv.astype(np.int64), counts.astype(np.int64)


unique_op = Op("unique", _unique_kernel, differentiable=False)


def _pick(results, return_inverse, return_counts):
    out = [results[0]]
    if return_inverse:
        out.append(results[1])
    if return_counts:
        out.append(results[2])
    return out[0] if len(out) == 1 else tuple(out)


@public
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along ``dim``), sorted; optionally the inverse
    indices and counts."""
    _check_tensor(input, "unique")
    _no_complex(input, "unique", "unique" if dim is None else "unique_dim")
    d = None if dim is None else wrap_dim(dim, input._data.ndim, "unique")
    _check_zero_dims(input, d)
    r = _apply(unique_op, (input,), {"dim": d, "return_inverse": return_inverse,
                                     "return_counts": return_counts})
    return _pick(r, return_inverse, return_counts)


def _check_zero_dims(input, d):
    """torch's unique over a dim refuses inputs with a zero-size dim other than that one."""
    if d is None:
        return
    zeros = [i for i, n in enumerate(input.shape) if n == 0]
    if len(zeros) > 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot "
                           "be applied ")
    if zeros and zeros[0] != d:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")


def _unique_consecutive_kernel(xp, a, *, dim):
    x = a.reshape(-1) if dim is None else xp.moveaxis(a, dim, 0)
    n = x.shape[0]
    if n == 0:
        empty = xp.zeros((0,), np.int64)
        return a.copy() if dim is not None else x.copy(), empty.reshape(a.shape if dim is
                                                                        None else (0,)), empty
    diff = x[1:] != x[:-1]
    if diff.ndim > 1:
        diff = diff.reshape(n - 1, int(np.prod(diff.shape[1:]))).any(axis=1)
    start = xp.concatenate([xp.ones(1, bool), diff])
    inv = xp.cumsum(start) - 1
    starts = xp.nonzero(start)[0]
    counts = xp.diff(xp.concatenate([starts, xp.asarray([n])]))
    vals = x[starts]
    if dim is not None:
        vals = xp.ascontiguousarray(xp.moveaxis(vals, 0, dim))
    else:
        inv = inv.reshape(a.shape)
    return vals, inv.astype(np.int64), counts.astype(np.int64)


unique_consecutive_op = Op("unique_consecutive", _unique_consecutive_kernel,
                           differentiable=False)


@public
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    _check_tensor(input, "unique_consecutive")
    _no_complex(input, "unique_consecutive", "unique")
    d = None if dim is None else wrap_dim(dim, input._data.ndim, "unique_consecutive")
    _check_zero_dims(input, d)
    r = _apply(unique_consecutive_op, (input,), {"dim": d})
    return _pick(r, return_inverse, return_counts)


# ------------------------------------------------------------------------------------------------
# searchsorted / bucketize


def _searchsorted_kernel(xp, seq, x, sorter, *, side, int32):
    """Binary search of each value of ``x`` in its row of ``seq``, step for step the search
    PyTorch runs: on unsorted or NaN-holding boundaries (where no answer is "right") the
    result is still torch's. All queries advance together, one vectorised step per halving."""
    odt = np.int32 if int32 else np.int64
    n = seq.shape[-1] if seq.ndim else 1
    if x.size == 0 or n == 0 or not (holds_values(seq) and holds_values(x)):
        return xp.zeros(x.shape, odt)  # (on the meta device: the shape is all there is)
    rows = seq.reshape(-1, n)
    if sorter is not None:
        rows = xp.take_along_axis(rows, sorter.reshape(-1, n).astype(np.intp), axis=1)
    xs = x.reshape(rows.shape[0], -1)
    lo = xp.zeros(xs.shape, np.int64)
    hi = xp.full(xs.shape, n, np.int64)
    ridx = xp.arange(rows.shape[0])[:, None]
    act = lo < hi
    while act.any():
        mid = lo + ((hi - lo) >> 1)
        mv = rows[ridx, xp.minimum(mid, n - 1)]
        # NaN compares false, so a NaN on either side moves the search right, as in torch
        right = ~(mv > xs) if side == "right" else ~(mv >= xs)
        lo = xp.where(act & right, mid + 1, lo)
        hi = xp.where(act & ~right, mid, hi)
        act = lo < hi
    return lo.astype(odt).reshape(x.shape)


searchsorted_op = Op("searchsorted", _searchsorted_kernel, differentiable=False)


def _common(seq, x):
    """Compare in a common dtype (torch promotes the two inputs; no bool or complex kernel;
    bfloat16 compares as float32, exactly, since ml_dtypes' search misplaces NaN)."""
    try:
        d = _dt.promote_types(_dt.lookup(seq.dtype), _dt.lookup(x.dtype))
    except (TypeError, KeyError):
        d = _dt.lookup(np.promote_types(seq.dtype, x.dtype))
    if d.np.kind in "bc" and x.size:  # no values to place: torch never calls its kernel
        raise NotImplementedError(
            f'"searchsorted_out_cpu" not implemented for \'{_name(d.np)}\'')
    dt = np.dtype(np.float32) if d.np == _dt.bfloat16.np else d.np
    return (seq if seq.dtype == dt else seq.astype(dt)), (x if x.dtype == dt else x.astype(dt))


@public(method=False)
@_dispatch.entrance("searchsorted")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where ``input`` would be inserted into ``sorted_sequence`` to keep order."""
    _check_tensor(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    seq = sorted_sequence._data
    x = np.asarray(input) if scalar else input._data
    if seq.ndim > 1 and (scalar or x.ndim != seq.ndim or x.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor "
            f"{list(x.shape)}")
    if sorter is not None and sorter._data.shape != seq.shape:
        raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, "
                           f"but got boundary tensor {list(seq.shape)} and got sorter "
                           f"tensor {list(sorter._data.shape)}")
    seq, x = _common(seq, x)
    r = _searchsorted_kernel(_dispatch.xp_of(seq), seq, x,
                             None if sorter is None else sorter._data,
                             side="right" if right else "left", int32=out_int32)
    r = wrap(r)
    return r if out is None else _dispatch.write_out("searchsorted", out, r)


@public(method=False)
@_dispatch.entrance("bucketize")
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket index of each element of ``input`` among 1-D ``boundaries``."""
    _check_tensor(boundaries, "bucketize")
    if boundaries._data.ndim != 1:
        raise RuntimeError("bucketize: boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ------------------------------------------------------------------------------------------------
# bincount / histc / histogram


@public
@_dispatch.entrance("bincount")
def bincount(input, weights=None, minlength=0):
    """Count of each value in a 1-D non-negative integer tensor (weighted when given)."""
    _check_tensor(input, "bincount")
    a = input._data
    if a.dtype.kind not in "iu":  # (bool, floating, complex: torch's kernel has no such loop)
        raise NotImplementedError(
            f'"bincount_cpu" not implemented for \'{input.dtype.scalar_name}\' (bincount '
            "takes 1-d non-negative integral inputs)")
    require_values("bincount", a)
    if a.ndim != 1 or a.dtype.kind not in "iu" or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    top = np.iinfo(np.int64).max
    if a.dtype == np.int64 and a.size and int(a.max()) == top:  # max + 1 bins overflow
        raise RuntimeError(f"maximum value of input overflowed, it should be < {top} but got "
                           f"{top}")
    if minlength < 0:
        raise RuntimeError("bincount(): minlength should be >= 0")
    xp = _dispatch.xp_of(a)
    if weights is None:
        return wrap(xp.bincount(a, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.shape != a.shape:
        raise RuntimeError("bincount(): weights should be 1-d and have the same length as "
                           "input")
    if a.size == 0:  # torch's early exit: int64 zeros whatever the weights
        return wrap(xp.zeros(minlength, np.int64))
    rdt = w.dtype if w.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    return wrap(xp.bincount(a, weights=w.astype(np.float64), minlength=minlength).astype(rdt))


def _float_only(input, name, kname):
    if input._data.dtype.kind != "f" and input._data.dtype != _dt.bfloat16.np:
        raise NotImplementedError(
            f'"{kname}" not implemented for \'{_name(input._data.dtype)}\'')


# NOTE [ Histogram bins as torch's CPU kernel finds them ]
# torch places each value of [edges[0], edges[-1]] (in the input's dtype) by one of three rules:
# histc by ``(x - lo) * bins / (hi - lo)`` truncated; histogram with a number of bins by the same
# quotient corrected by ``upper_bound`` over the edges around it; histogram with given edges by
# ``upper_bound`` over all of them. The last edge closes the last bin. A quotient that is NaN,
# infinite or beyond int64 (a range that rounds to one value, a difference that overflows)
# converts to INT64_MIN: histc then adds to bin 0 (the index wraps to the start) and histogram's
# search looks at edges[0:2] only (bin 1 when the value reaches edges[1], else bin 0). Counts
# and weights are added one value after another in the dtype, as torch's single-threaded loop
# does (float16 counts stop at 2048); ``upper_bound`` is replayed step by step, so edges that
# do not increase land values where torch's binary search does.


def _upper_bound(edges, x, first, count):
    """libstdc++'s ``std::upper_bound`` on ``edges[first:first + count]`` for each ``x``."""
    first, count = first.copy(), count.copy()
    n = edges.shape[0]
    while (count > 0).any():
        half = count >> 1
        mid = first + half
        right = (count > 0) & ~(x < edges[np.clip(mid, 0, n - 1)])
        first = np.where(right, mid + 1, first)
        count = np.where(count > 0, np.where(right, count - half - 1, half), 0)
    return first


def _bin_positions(x, edges, how):
    """The bins of the values ``x`` already inside [edges[0], edges[-1]], by ``how``:
    "linear" (histc), "local" (histogram with a number of bins) or "search" (given edges)
    (NOTE [ Histogram bins as torch's CPU kernel finds them ])."""
    n = edges.shape[0]
    if how == "search":
        pos = _upper_bound(edges, x, np.zeros(x.shape, np.int64),
                           np.full(x.shape, n, np.int64)) - 1
    else:
        ct = x.dtype.type
        with np.errstate(all="ignore"):
            q = ((x - edges[0]) * ct(n - 1) / (edges[-1] - edges[0])).astype(np.float64)
        wild = ~(np.abs(q) < 2.0 ** 63)  # NaN, inf or past int64: INT64_MIN in C++
        pos = np.where(wild, 0, np.trunc(np.where(wild, 0, q))).astype(np.int64)
        if how == "local":
            lo = np.maximum(pos - 1, 0)
            found = _upper_bound(edges, x, lo, np.minimum(pos + 2, n) - lo) - 1
            reached = ~(x < edges[min(1, n - 1)])
            pos = np.where(wild, np.where(reached, 1, 0), found)
    return np.where(pos == n - 1, pos - 1, pos)


def _histogram_counts(x, edges, w, how):
    """torch's histogram of ``x`` (1-d, input dtype) over ``edges`` (the same dtype), with
    weights ``w`` or ones, summed in that dtype in element order."""
    ct = x.dtype
    h = np.zeros(max(edges.shape[0] - 1, 0), ct)
    keep = (x >= edges[0]) & (x <= edges[-1])
    pos = _bin_positions(x[keep], edges, how)
    vals = w[keep] if w is not None else np.ones(pos.shape, ct)
    with np.errstate(all="ignore"):
        np.add.at(h, pos, vals)
    return h


def _histc_range(lo, hi, dtype):
    """histc's outer edges for a range that is one value ``lo == hi``: one below and one above,
    in float32/float64 at least the neighbouring representable numbers (never past the
    largest); float16/bfloat16 widen by one in double precision only."""
    if dtype not in (np.float32, np.float64):
        return lo - 1, hi + 1
    v = dtype.type(lo)
    with np.errstate(over="ignore"):
        lo_c, hi_c = v - dtype.type(1), v + dtype.type(1)
    if lo_c == v:
        lo_c = np.nextafter(v, dtype.type(-np.inf))
        lo_c = v if np.isinf(lo_c) else lo_c
    if hi_c == v:
        hi_c = np.nextafter(v, dtype.type(np.inf))
        hi_c = v if np.isinf(hi_c) else hi_c
    return float(lo_c), float(hi_c)


@public
@_dispatch.entrance("histc")
def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of ``bins`` equal bins over [min, max] (the data's range when equal)."""
    _check_tensor(input, "histc")
    _float_only(input, "histc", "histogram_cpu")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    a = input._data
    lo, hi = float(min), float(max)
    if lo == hi and a.size and holds_values(a):
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = _histc_range(lo, hi, a.dtype)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    xp = _dispatch.xp_of(a)
    if holds_values(a):
        r = wrap(xp.asarray(_histc_counts(to_host(xp, a).reshape(-1), int(bins), lo, hi)))
    else:  # (a meta tensor: only the shape is known, and a histogram's is ``(bins,)``)
        r = wrap(xp.zeros(int(bins), a.dtype))
    return r if out is None else _dispatch.write_out("histc", out, r)


def _histc_counts(x, bins, lo, hi):
    """histc's counts (NOTE [ Histogram bins as torch's CPU kernel finds them ]): edges are
    torch's linspace from ``lo`` to ``hi`` in the input's dtype, whose outer two decide which
    values count and the quotient's ends (an infinite step makes them NaN: nothing counts)."""
    from .ranges import _linspace_array

    edges = np.asarray(_linspace_array("linspace", lo, hi, bins + 1, _dt.from_np[x.dtype])[0])
    return _histogram_counts(x, edges.astype(x.dtype), None, "linear")


@public
@_dispatch.entrance("histogram")
def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """``(hist, bin_edges)``: a histogram with ``bins`` equal bins or the given edges.

    Equal bins need a finite range: the data's (NaN or infinite data raise RuntimeError) or
    ``range``."""
    _check_out_tuple("histogram", out)
    _check_tensor(input, "histogram")
    _float_only(input, "histogram", "histogramdd")
    a = input._data
    name = "torch.histogramdd"
    if isinstance(bins, Tensor):
        if bins.dtype != input.dtype:
            raise RuntimeError(
                f"{name}: input tensor and bins tensors should have the same dtype, but got "
                f"input with dtype {input.dtype} and bins for dimension 0 with dtype {bins.dtype}")
        if bins.dim() != 1:
            raise RuntimeError(f"{name}: bins tensor should have one dimension, but got "
                               f"{bins.dim()} dimensions in the bins tensor for dimension 0")
        if not bins.numel():
            raise RuntimeError(f"{name}: bins tensor should have at least 1 element, but got 0 "
                               "elements in the bins tensor for dimension 0")
    n_bins = bins.numel() - 1 if isinstance(bins, Tensor) else int(bins)
    if n_bins <= 0:
        raise RuntimeError(
            f"torch.histogram(): bins must be > 0, but got {n_bins} for dimension 0")
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(
                f"{name}: if weight tensor is provided it should have the same shape as the "
                f"input tensor excluding its innermost dimension, but got input with shape "
                f"{list(input.shape) + [1]} and weight with shape {list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(
                f"{name}: if weight tensor is provided, input tensor and weight tensor should "
                f"have the same dtype, but got input({input.dtype}), and weight({weight.dtype})")
    if (not isinstance(bins, Tensor) and range is None and a.size
            and a.dtype in (np.float16, _dt.bfloat16.np)):
        # torch finds the data's range with a kernel that has no half-precision version
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_name(a.dtype)}\'')
    xp = _dispatch.xp_of(a)
    x = to_host(xp, a).reshape(-1)
    w = None if weight is None else to_host(xp, weight._data).reshape(-1)
    if isinstance(bins, Tensor):
        e = to_host(xp, bins._data).copy()
        how = "search"
    else:
        if range is not None:
            lo, hi = builtins.map(float, range)
        elif a.size:
            lo, hi = float(x.min()), float(x.max())
        else:  # no data: the unit range
            lo, hi = 0.0, 1.0
        # the data's own range propagates NaN, as torch's min/max do
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"{name}: dimension 0's range [{lo:g}, {hi:g}] is not finite")
        if lo > hi:
            raise RuntimeError(f"{name}: min should not exceed max, but got min {lo:g} max "
                               f"{hi:g} for dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        from .ranges import _linspace_array  # torch's edges: its symmetric linspace

        e = np.asarray(_linspace_array("linspace", lo, hi, int(bins) + 1,
                                       _dt.from_np[a.dtype])[0]).astype(a.dtype)
        how = "local"
    h = _histogram_counts(x, e, w, how)
    if density:  # density of no counts: 0 / 0, NaN as in torch
        with np.errstate(all="ignore"):
            h = (h / h.sum(dtype=h.dtype)).astype(h.dtype)
            h = (h / np.diff(e)).astype(h.dtype)
    r = (wrap(xp.asarray(h)), wrap(xp.asarray(np.ascontiguousarray(e))))
    return _named("histogram", ("hist", "bin_edges"), r, out)


# ------------------------------------------------------------------------------------------------
# isin


def _isin_kernel(xp, a, b, *, assume_unique, invert):
    # bfloat16 as float32 (exact): CuPy cannot sort bfloat16 (NOTE [ Portable array code ])
    return xp.isin(_sortable(xp, a), _sortable(xp, b), assume_unique=assume_unique,
                   invert=invert)


isin_op = Op("isin", _isin_kernel, differentiable=False)


@public(method=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each of ``elements`` occurs in ``test_elements``: a bool tensor of
    ``elements``' shape. Either argument may be a number (not both).

    Args:
        elements (Tensor or Number): the values looked up.
        test_elements (Tensor or Number): the values looked in (any shape).
        assume_unique (bool): both hold unique values (a faster path). Default: False.
        invert (bool): answer "not in" instead. Default: False.
        out (Tensor, optional): the output.

    Returns:
        Tensor: bool.

    Example::

        >>> ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2, 5]))
        tensor([False,  True, False])
    """
    a_is, b_is = isinstance(elements, Tensor), isinstance(test_elements, Tensor)
    if not (a_is or b_is):
        raise TypeError(
            f"isin() received an invalid combination of arguments - got "
            f"({type(elements).__name__}, {type(test_elements).__name__}): at least one of "
            "'elements' and 'test_elements' must be a Tensor")
    like = elements if a_is else test_elements
    a = elements if a_is else wrap(np.asarray(elements)).to(like.device)
    b = test_elements if b_is else wrap(np.asarray(test_elements)).to(like.device)
    for t in (a, b):
        if t.dtype.is_complex or t._data.dtype == np.bool_:  # (torch's kernels skip both)
            raise RuntimeError(
                f"Unsupported input type encountered for isin(): {t.dtype.scalar_name}")
    if a._data.dtype != b._data.dtype:
        # compare in the promoted dtype, as PyTorch does
        d = _dt.promote_types(a.dtype, b.dtype)
        a, b = a.to(d), b.to(d)
    return _dispatch.apply(isin_op, (a, b), {"assume_unique": bool(assume_unique),
                                             "invert": bool(invert)}, out=out)
