"""Which memory format an op's result takes: PyTorch's ``suggest_memory_format`` rule.

NOTE [ Result layout ]
A network whose input (or weights) are channels-last stays channels-last in PyTorch:
convolutions, batch norm and pooling give results in the layout their input suggests, and
element-wise ops keep their operand's layout. Ember's kernels compute in whatever layout
NumPy gives; the public functions of those ops pass their result through ``keep_layout``,
which lays it out channels-last (a copy) when an operand is, so ``is_contiguous(
memory_format=channels_last)`` and ``stride()`` answer as PyTorch's do.
"""

from __future__ import annotations

import functools

import numpy as np


def keep_layout(y, *like):
    """``y``, laid out channels-last (or channels-last-3d) when one of ``like`` is: 4-d
    (5-d) and channels-last-contiguous without being contiguous (NOTE [ Result layout ]).

    Args:
        y: the op's result.
        *like: the operands whose layout the result follows (input, weight).

    Returns:
        Tensor: ``y`` itself, or a channels-last copy of it.

    Example::

        >>> x = ember.ones(1, 3, 2, 2).to(memory_format=ember.channels_last)
        >>> keep_layout(ember.ones(1, 3, 2, 2), x).stride()
        (12, 1, 6, 3)
    """
    if y._data.flags.c_contiguous:
        for t in like:
            if t is not None and not t._data.flags.c_contiguous:
                break
        else:  # every array in row order: nothing suggests channels-last (the common case)
            return y
    from .._core.layout import channels_last, channels_last_3d

    fmt = {4: channels_last, 5: channels_last_3d}.get(y.dim())
    if fmt is None or y.is_contiguous(memory_format=fmt):
        return y
    for t in like:
        if t is not None and t.dim() == y.dim() and not t.is_contiguous() and \
                t.is_contiguous(memory_format=fmt):
            return y.contiguous(memory_format=fmt)
    return y


# -- strides of element-wise results ---------------------------------------------------------------
#
# NOTE [ Result strides ]
# Programs compare ``stride()`` and ``is_contiguous(memory_format=...)`` of results, so an
# element-wise result is laid out as PyTorch's TensorIterator lays it out, not as NumPy's
# ufuncs do (they agree on the common cases, not on ties):
# 1. operands of one shape, all contiguous: a contiguous result; all channels-last (4-d): a
#    channels-last result; all dense and non-overlapping with equal strides: those strides;
# 2. otherwise the dims are ordered from innermost to outermost by an insertion sort over
#    the operands' byte strides (broadcast dims count as stride 0 and have no say; equal
#    strides put the smaller dim inside), and the result is dense in that order.
# ``*_like``/``clone`` with preserve_format keep a dense input's strides exactly and lay out
# anything else by rule 2 for that one input (``like_strides``). Kernels compute in NumPy's
# layout; ``follow`` copies into the rule's layout only where the two differ. The hot paths
# (operators, methods) call it only when the result's strides differ from the first
# operand's, one tuple comparison: where they agree, the first operand's dim order is the
# one PyTorch's rule takes too (it decides every pair it has an opinion on), so the two can
# differ only in the strides of size-1 dims the first operand leaves open and a later one
# orders. Those few stay NumPy's there.


def _dense(shape, strides):
    """Whether element ``strides`` over ``shape`` cover a block without gaps or overlap."""
    dims = sorted((i for i in range(len(shape)) if shape[i] > 1), key=lambda i: strides[i])
    expected = 1
    for i in dims:
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def _elems(a):
    item = a.itemsize
    return tuple(s // item for s in a.strides)


def _perm_strides(shape, operand_strides):
    """Dense element strides in the dim order rule 2 of NOTE [ Result strides ] gives, or
    None when that order is the row-major one (a contiguous result)."""
    from ..backends._meta_array import _dense_order  # (the meta device's rule: one copy)

    nd = len(shape)
    perm = _dense_order(shape, operand_strides)  # perm[0] the innermost dim
    if perm == list(range(nd - 1, -1, -1)):
        return None
    out = [0] * nd
    step = 1
    for d in perm:
        out[d] = step
        step *= shape[d]
    return tuple(out)


def _channels_last_strides(shape):
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def result_strides(shape, arrays):
    """Element strides of an element-wise result of ``shape`` computed from ``arrays`` (the
    tensor operands' arrays, zero-dim ones included), or None for row-major ones
    (NOTE [ Result strides ])."""
    shape = tuple(shape)
    nd = len(shape)
    if nd <= 1:
        return None
    if all(a.shape == shape for a in arrays):
        if all(a.flags.c_contiguous for a in arrays):
            return None
        elems = [_elems(a) for a in arrays]
        if nd == 4:
            cl = _channels_last_strides(shape)
            if all(_layout_matches(shape, e, cl) for e in elems):
                return cl
        if all(e == elems[0] for e in elems) and _dense(shape, elems[0]):
            return elems[0]
    operand_strides = []
    for a in arrays:
        off = nd - a.ndim
        st = [0] * off
        for n, s, m in zip(a.shape, a.strides, shape[off:]):
            st.append(0 if n == 1 and m != 1 else s)
        operand_strides.append(st)
    return _perm_strides(shape, operand_strides)


def _layout_matches(shape, strides, want):
    """Whether ``strides`` equal ``want`` on every dim longer than 1 (size-1 dims never
    matter to ``is_contiguous``)."""
    return all(n == 1 or s == w for n, s, w in zip(shape, strides, want))


def like_strides(a):
    """Element strides a preserve_format copy of array ``a`` takes, or None for row-major
    ones: a dense input's own strides, else rule 2 of NOTE [ Result strides ]."""
    if a.flags.c_contiguous or a.ndim <= 1:
        return None
    e = _elems(a)
    if _dense(a.shape, e):
        return e
    return _perm_strides(a.shape, [a.strides])


def with_strides(r, strides):
    """``r``'s values in a new array with element ``strides`` (dense), or ``r`` itself when it
    already has them (or is not a NumPy array, or ``strides`` is None and it is row-major)."""
    if type(r) is not np.ndarray:
        return r
    if strides is None:
        if r.flags.c_contiguous and (1 not in r.shape or is_canonical(r)):
            return r
        return np.ascontiguousarray(r) if not r.flags.c_contiguous else r.copy()
    if _elems(r) == tuple(strides) or r.size == 0:
        return r
    item = r.itemsize
    out = np.ndarray(r.shape, r.dtype, buffer=np.empty(max(r.size, 1), r.dtype),
                     strides=tuple(s * item for s in strides))
    np.copyto(out, r)
    return out


def is_canonical(a):
    """True when ``a``'s strides are exactly the C-contiguous ones, size-1 dims included
    (NumPy's contiguity flags ignore size-1 dims, PyTorch's later views do not)."""
    expected = a.itemsize
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        if s != expected:
            return False
        expected *= n
    return True


def follow(r, arrays):
    """Element-wise result ``r`` laid out as NOTE [ Result strides ] says for operand
    ``arrays``: ``r`` itself in the common case, else a copy."""
    if type(r) is not np.ndarray or r.size == 0:
        return r
    if r.flags.c_contiguous:
        if 1 not in r.shape:
            for a in arrays:
                if not a.flags.c_contiguous:
                    break
            else:  # row-major operands: the result is row-major (rule 2 keeps the dim order)
                return r
            if _row_ordered(r.shape, arrays):  # NOTE [ Row-ordered operands ]
                return r
        else:
            # NOTE [ Results with size-one dims ]
            shape = r.shape
            strides = r.strides
            for a in arrays:
                if (a.strides != strides or a.shape != shape) and any(a.strides):
                    break
            else:
                if is_canonical(r):
                    return r
    return with_strides(r, result_strides(r.shape, arrays))


def _row_ordered(shape, arrays):
    """Whether every operand either has no say in rule 2's order (all strides 0: a number, a
    zero-dim tensor) or has the result's ``shape`` (no size-1 dim) and positive strides that
    strictly decrease outwards-in (NOTE [ Row-ordered operands ])."""
    for a in arrays:
        st = a.strides
        if not any(st):
            continue
        if a.shape != shape:
            return False
        prev = st[0]
        if prev <= 0:
            return False
        for s in st[1:]:
            if not 0 < s < prev:
                return False
            prev = s
    return True


# NOTE [ Row-ordered operands ]
# Column slices of a wider array (an LSTM or GRU cell's gates, ``x.chunk(4, 1)``, ``x[:,
# :n]``) are not contiguous, so every element-wise op on them went through the whole rule
# (~5 us, several times the op's kernel) to find the layout NumPy's row-major result already
# has: when each operand that has a say has the result's shape (with no size-1 dim) and
# strides that strictly decrease from the outermost dim in, its first say on every pair of
# dims keeps the row-major order, so rule 2's insertion sort leaves it unchanged, and rule 1
# does not apply (dense operands so ordered are row-major ones, which the test above
# takes). tests/perf/test_overhead_33.py compares the exit with the rule.


# NOTE [ Results with size-one dims ]
# NumPy's contiguity flag ignores size-1 dims, so a row-major result of shape (1, 64) -- a
# batch-1 layer's every activation and gradient -- cannot take the test above and went
# through the whole rule (operand strides, the insertion sort, ``with_strides``): ~2 us per
# op against a kernel of a few hundred ns. When every operand either has stride 0 on every
# dim (a number, a zero-dim tensor, a scalar expanded -- a sum's gradient: no say in rule
# 2's order) or has the result's very shape and strides, and those are the canonical
# row-major ones, rule 1 (all one shape, all contiguous) or rule 2 (canonical strides never
# decrease outwards and tie only beside size-1 dims, which the sort leaves in place) gives
# the row-major layout the result already has: it is returned as is. Anything else -- a
# broadcast operand with a stride, another layout, non-canonical strides -- takes the rule
# (tests/perf/test_overhead_32.py compares the two).


def preserve(r, a):
    """``r``, a fresh copy of ``a``'s values (a cast, a clone), laid out as
    ``memory_format=preserve_format`` lays out a copy of ``a`` (NOTE [ Result strides ])."""
    if type(r) is not np.ndarray or r.ndim <= 1 or a.flags.c_contiguous:
        return r
    return with_strides(r, like_strides(a))


def empty_preserving(a, dtype):
    """A new uninitialized NumPy array shaped like ``a`` in ``dtype``, laid out as
    preserve_format lays out a copy of ``a`` (NOTE [ Result strides ])."""
    strides = like_strides(a)
    if strides is None:
        return np.empty(a.shape, dtype)
    dtype = np.dtype(dtype)
    return np.ndarray(a.shape, dtype, buffer=np.empty(max(a.size, 1), dtype),
                      strides=tuple(s * dtype.itemsize for s in strides))


def suggest_format(a):
    """The memory format PyTorch's ``suggest_memory_format`` names for array ``a``: 4-d (5-d)
    arrays whose strides order the channels innermost are channels-last (channels-last-3d);
    anything else, and every ambiguous case, is contiguous. Returns "cl", "cl3d" or None."""
    nd = a.ndim
    if nd not in (4, 5) or a.size == 0:
        return None
    shape = a.shape
    st = _elems(a)
    if st[1] == 0:
        return None
    lowest = 0
    for d in ((1, 3, 2, 0) if nd == 4 else (1, 4, 3, 2, 0)):
        if st[d] < lowest or (d == 0 and lowest == st[1]):
            return None
        lowest = st[d] * shape[d] if shape[d] > 1 else st[d]
    return "cl" if nd == 4 else "cl3d"


def empty_in_format(shape, dtype, fmt):
    """A new NumPy array of ``shape``, row-major (``fmt`` None) or channels-last."""
    if fmt is None:
        return np.empty(shape, dtype)
    order = (0, 2, 3, 1) if len(shape) == 4 else (0, 2, 3, 4, 1)
    inverse = tuple(int(i) for i in np.argsort(order))
    return np.empty(tuple(shape[i] for i in order), dtype).transpose(inverse)


def row_major(r):
    """``r`` with the row-major strides PyTorch's reductions, scans and softmax give their
    results whatever the input's layout (a copy only where NumPy kept the input's order)."""
    if type(r) is not np.ndarray or r.ndim <= 1 or r.size == 0:
        return r
    return with_strides(r, None)


def row_major_kernel(kernel):
    """``kernel`` (``kernel(xp, *arrays, **params)`` -> array) with its result passed
    through ``row_major``."""
    @functools.wraps(kernel)
    def run(xp, *args, **params):
        return row_major(kernel(xp, *args, **params))

    return run
