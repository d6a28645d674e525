"""Array-function rules of the meta device: what NumPy functions give on placeholders.

NumPy hands every array function that sees a ``MetaArray`` to its ``__array_function__``
(ember/backends/_meta_array.py), which looks the function up in the tables filled here
(NOTE [ Meta array rules ]): a rule computes the result's shape and dtype, a writer does
nothing, and a function whose result shape depends on values raises. Functions without a
rule run NumPy's own implementation on the placeholders.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._ops.linalg_contract import _parse_einsum
from ._meta_array import (
    _DATA_DEPENDENT, _FUNCTION_RULES, MetaArray, _copy_of, _data_dependent, _finish,
    _normalize_axis, _plain, _set_layout, _shape, _shrunk, _surrogate, as_meta,
    expand_strides, placeholder,
)


def _rule(*funcs):
    def register(rule):
        for f in funcs:
            _FUNCTION_RULES[f] = rule
        return rule

    return register


@_rule(np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis)
def _write_nothing(*args, **kwargs):
    return None


@_rule(np.copy)
def _copy(a, order="K", subok=False):
    if isinstance(a, MetaArray):
        return _copy_of(a, a.dtype, order)
    a = np.asanyarray(a)
    return placeholder(a.shape, a.dtype)


@_rule(np.empty_like, np.zeros_like, np.ones_like)
def _like(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
    dtype = prototype.dtype if dtype is None else np.dtype(dtype)
    if shape is None and isinstance(prototype, MetaArray):
        return _copy_of(prototype, dtype, order, contiguous_first=True)
    return placeholder(prototype.shape if shape is None else tuple(np.atleast_1d(shape)),
                       dtype)


@_rule(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    r = as_meta(np.broadcast_to(_plain(array), shape))
    if isinstance(array, MetaArray):  # PyTorch's expand strides
        _set_layout(r, expand_strides(array.shape, array.strides, r.shape, r.itemsize))
    return r


@_rule(np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return tuple(_broadcast_to(a if isinstance(a, np.ndarray) else np.asarray(a), shape)
                 for a in args)


@_rule(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(a, dtype, shape=shape)


@_rule(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (array.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    return placeholder(tuple(int(n + lo + hi) for n, (lo, hi) in zip(array.shape, widths)),
                       array.dtype)


@_rule(np.roll)
def _roll(a, shift, axis=None):
    if axis is not None:
        _normalize_axis(axis, a.ndim)
    return placeholder(a.shape, a.dtype)


@_rule(np.tile)
def _tile(A, reps):
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    shape = (1,) * (len(reps) - A.ndim) + A.shape
    reps = (1,) * (len(shape) - len(reps)) + reps
    return placeholder(tuple(n * r for n, r in zip(shape, reps)), A.dtype)


@_rule(np.take_along_axis)
def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        return placeholder(indices.shape, arr.dtype)
    ax = _normalize_axis(axis, arr.ndim)[0]
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    others = [a for i, a in enumerate(arr.shape) if i != ax]
    idx = [a for i, a in enumerate(indices.shape) if i != ax]
    shape = list(np.broadcast_shapes(tuple(others), tuple(idx)))
    shape.insert(ax, indices.shape[ax])
    return placeholder(tuple(shape), arr.dtype)


@_rule(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    ishape = _shape(indices)
    if axis is None:
        shape = ishape
    else:
        ax = _normalize_axis(axis, a.ndim)[0]
        shape = a.shape[:ax] + ishape + a.shape[ax + 1:]
    return _finish((a.dtype,), shape, None if out is None else (out,))


@_rule(np.concatenate)
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    sur = np.concatenate([_shrunk(np.asanyarray(a) if not isinstance(a, np.ndarray) else a)
                          for a in arrays], axis=axis, dtype=dtype, casting=casting)
    shapes = [_shape(a) for a in arrays]
    if axis is None:
        shape = (sum(math.prod(s) for s in shapes),)
    else:
        ax = _normalize_axis(axis, len(shapes[0]))[0]
        first = shapes[0]
        for i, s in enumerate(shapes[1:], 1):
            for d in range(len(first)):
                if d != ax and s[d] != first[d]:
                    raise ValueError(
                        "all the input array dimensions except for the concatenation axis "
                        f"must match exactly, but along dimension {d}, the array at index 0 "
                        f"has size {first[d]} and the array at index {i} has size {s[d]}")
        shape = first[:ax] + (sum(s[ax] for s in shapes),) + first[ax + 1:]
    return _finish((sur.dtype,), shape, None if out is None else (out,))


@_rule(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = [a if isinstance(a, np.ndarray) else np.asanyarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    shape = arrays[0].shape
    ax = _normalize_axis(axis, len(shape) + 1)[0]
    sur = np.stack([_shrunk(a) for a in arrays], axis=ax, dtype=dtype, casting=casting)
    out_shape = shape[:ax] + (len(arrays),) + shape[ax:]
    return _finish((sur.dtype,), out_shape, None if out is None else (out,))


@_rule(np.where)
def _where(condition, *xy):
    if not xy:
        raise _data_dependent("where")
    x, y = xy
    shape = np.broadcast_shapes(_shape(condition), _shape(x), _shape(y))
    sur = np.where(_surrogate(condition), _surrogate(x), _surrogate(y))
    return placeholder(shape, sur.dtype)


@_rule(np.dot)
def _dot(a, b, out=None):
    sa, sb = _shape(a), _shape(b)
    sur = np.dot(_surrogate(a, (1,) * len(sa)), _surrogate(b, (1,) * len(sb)))
    if not sa or not sb:
        shape = np.broadcast_shapes(sa, sb)
    else:
        k = sb[-1] if len(sb) == 1 else sb[-2]
        if sa[-1] != k:
            raise ValueError(f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) "
                             f"!= {k} (dim {max(len(sb) - 2, 0)})")
        shape = sa[:-1] + (sb[:-2] + sb[-1:] if len(sb) >= 2 else ())
    return _finish((np.asarray(sur).dtype,), shape, None if out is None else (out,))


@_rule(np.vdot)
def _vdot(a, b):
    if math.prod(_shape(a)) != math.prod(_shape(b)):
        raise ValueError("cannot reshape array: vdot needs the same number of elements")
    return placeholder((), np.vdot(_surrogate(a, (1,)), _surrogate(b, (1,))).dtype)


@_rule(np.inner)
def _inner(a, b):
    sa, sb = _shape(a), _shape(b)
    sur = np.inner(_surrogate(a, (1,) * len(sa)), _surrogate(b, (1,) * len(sb)))
    if sa and sb and sa[-1] != sb[-1]:
        raise ValueError("shapes not aligned for inner product")
    return placeholder(sa[:-1] + sb[:-1] if sa and sb else np.broadcast_shapes(sa, sb),
                       np.asarray(sur).dtype)


@_rule(np.outer)
def _outer(a, b, out=None):
    sur = np.outer(_surrogate(a, (1,)), _surrogate(b, (1,)))
    shape = (math.prod(_shape(a)), math.prod(_shape(b)))
    return _finish((sur.dtype,), shape, None if out is None else (out,))


@_rule(np.tensordot)
def _tensordot(a, b, axes=2):
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)):
        axes_a = list(range(len(sa) - axes, len(sa)))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [operator.index(x) % len(sa) if sa else x for x in axes_a]
    axes_b = [operator.index(x) % len(sb) if sb else x for x in axes_b]
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise ValueError("shape-mismatch for sum")
    shape = tuple(n for i, n in enumerate(sa) if i not in axes_a) + \
        tuple(n for j, n in enumerate(sb) if j not in axes_b)
    sur = np.dot(_surrogate(a, (1,)), _surrogate(b, (1,)))
    return placeholder(shape, np.asarray(sur).dtype)


@_rule(np.einsum)
def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if not isinstance(operands[0], str):
        return as_meta(np.einsum(*_plain(operands), dtype=dtype, casting=casting))
    subscripts, arrays = operands[0].replace(" ", ""), operands[1:]
    # ember's own parser makes the subscripts explicit (ellipses become shared fresh labels,
    # right-aligned), so sizes broadcast label by label
    ins, output = _parse_einsum(subscripts, [len(_shape(x)) for x in arrays])
    sizes = {}
    for term, x in zip(ins, arrays):
        for lab, n in zip(term, _shape(x)):
            m = sizes.get(lab)
            if m is None or m == 1:
                sizes[lab] = n
            elif n != 1 and n != m:
                raise ValueError(f"operands could not be broadcast together with remapped "
                                 f"shapes [original->remapped]: size {n} != {m} for label "
                                 f"'{lab}'")
    final = tuple(sizes[lab] for lab in output)
    sur = np.einsum(subscripts, *[_surrogate(x, (1,) * len(_shape(x))) for x in arrays],
                    dtype=dtype, casting=casting)
    return _finish((np.asarray(sur).dtype,), tuple(final), None if out is None else (out,))


@_rule(np.compress)
def _compress(condition, a, axis=None, out=None):
    if isinstance(condition, MetaArray):
        raise _data_dependent("compress")
    return as_meta(np.compress(_plain(condition), _plain(a), axis=axis))


@_rule(np.repeat)
def _repeat(a, repeats, axis=None):
    a = a if isinstance(a, MetaArray) else as_meta(np.asanyarray(a))
    return a.repeat(repeats, axis)


def _unbatch(r, batch):
    """Results computed on a zero-size batch, as placeholders with the batch ``batch``."""
    if isinstance(r, tuple):
        parts = [_unbatch(x, batch) for x in r]
        return type(r)(*parts) if hasattr(r, "_fields") else tuple(parts)
    r = np.asarray(r)
    return placeholder(tuple(batch) + r.shape[1:], r.dtype)


def _linalg_one(func):
    """A rule for a NumPy linalg function of one stack of matrices: it runs on a zero-size
    batch of the same matrices (no work, NumPy's own checks and result types) and the
    results get the real batch. Values never matter, so a singular or indefinite placeholder
    never fails."""

    def rule(a, *args, **kwargs):
        a = a if isinstance(a, np.ndarray) else np.asarray(a)
        if a.ndim < 2:
            return as_meta(func(_plain(a), *_plain(args), **_plain(kwargs)))
        sur = np.zeros((0,) + a.shape[-2:], a.dtype)
        return _unbatch(func(sur, *_plain(args), **_plain(kwargs)), a.shape[:-2])

    return rule


for _f in (np.linalg.inv, np.linalg.cholesky, np.linalg.det, np.linalg.slogdet, np.linalg.eig,
           np.linalg.eigh, np.linalg.eigvals, np.linalg.eigvalsh, np.linalg.svd,
           np.linalg.svdvals, np.linalg.qr, np.linalg.pinv, np.linalg.matrix_rank,
           np.linalg.matrix_power):
    _FUNCTION_RULES[_f] = _linalg_one(_f)


@_rule(np.linalg.solve)
def _solve(a, b):
    vector = b.ndim == 1
    batch = np.broadcast_shapes(a.shape[:-2], () if vector else b.shape[:-2])
    sa = np.zeros((0,) + a.shape[-2:], a.dtype)
    sb = np.zeros(b.shape, b.dtype) if vector else np.zeros((0,) + b.shape[-2:], b.dtype)
    r = np.linalg.solve(sa, sb)
    return placeholder(batch + r.shape[1:], r.dtype)


@_rule(np.histogram)
def _histogram(a, bins=10, range=None, density=None, weights=None):
    if isinstance(bins, str) or (range is None and isinstance(bins, (int, np.integer))):
        raise _data_dependent("histogram without a range")  # bins or range from the values
    if isinstance(bins, (int, np.integer)):
        edges = int(bins) + 1
    else:
        edges = len(bins)
    sur = np.histogram(np.zeros(1, a.dtype), bins=min(edges - 1, 1) if isinstance(
        bins, (int, np.integer)) else np.asarray(_plain(bins))[:2], range=range,
        density=density, weights=None if weights is None else np.zeros(1, weights.dtype))
    return placeholder((edges - 1,), sur[0].dtype), placeholder((edges,), sur[1].dtype)


@_rule(np.bincount)
def _bincount(x, weights=None, minlength=0):
    # kernels use bincount as a scatter-add into ``minlength`` slots that cover every index;
    # without ``minlength`` the length is the largest value plus one
    if not minlength:
        raise _data_dependent("bincount")
    return placeholder((minlength,), np.intp if weights is None else np.float64)


_DATA_DEPENDENT.update({np.nonzero, np.argwhere, np.flatnonzero, np.unique,
                        np.histogram2d, np.histogramdd, np.histogram_bin_edges,
                        np.extract, np.trim_zeros, np.unique_all, np.unique_counts,
                        np.unique_inverse, np.unique_values})
