"""Result layouts of meta ops whose kernels' NumPy layouts are not PyTorch's
(NOTE [ Meta layouts ]).

PyTorch's LAPACK-backed ops give some results in column-major ("Fortran") order per matrix
of the batch, and its meta kernels report those strides; ember's kernels give row-major
NumPy results. Some other kernels work on a moved axis and move it back, which leaves a
permuted layout where PyTorch allocates a fresh one. ``finish_layouts`` gives a meta
kernel's results the strides PyTorch's meta device reports for them: ``_COLUMN_MAJOR``
names, per op, which results are column-major (given the op's parameters), ``_CONTIGUOUS``
the ops whose results are contiguous, ``_LIKE_INPUT`` those laid out like their first
input, ``_CLONE_WHEN_EMPTY`` those whose empty results keep the input's strides; FFTs
replay PyTorch's staged transforms (NOTE [ Meta FFT layouts ]) and a one-operand einsum that
sums nothing is a view. Ops not listed keep what their kernel gave.
"""

from __future__ import annotations

from ._meta_array import (
    MetaArray, _elements, _set_layout, _strides_in_order, contiguous_strides, like_layout,
)


def _always(*which):
    return lambda params: which


def _when_left(*which):
    """Column-major results when solving from the left, row-major from the right."""
    return lambda params: which if params.get("left", True) else ("C",)


def _solve(params):
    # a batch of vectors comes back column-major over the whole result
    if not params.get("left", True):
        return ("C",)
    return ("all",) if params.get("vec") else (0,)


#: op name -> function of the op's parameters giving the indices of column-major results
_COLUMN_MAJOR = {
    "linalg_inv": _always(0),
    "linalg_inv_ex": _always(0),
    "linalg_cholesky": _always(0),
    "cholesky_inverse": _always(0),
    "cholesky_solve": _always(0),
    "linalg_eigh": _always(1),
    "linalg_ldl_factor_ex": _always(0),
    "linalg_ldl_solve": _always(0),
    "linalg_lu_factor": _always(0),
    "linalg_lu_solve": _when_left(0),
    "linalg_qr": _always(0, 1),
    "linalg_solve": _solve,
    "linalg_solve_triangular": _always(0),
    "linalg_svd": _always(0),
}


# -- FFTs (NOTE [ Meta FFT layouts ]) ------------------------------------------------------------
#
# NOTE [ Meta FFT layouts ]
# PyTorch's meta device lays FFT results out as its cuFFT kernels do (its meta rules take the
# CUDA route for every non-CPU tensor): a transform over ``dims`` permutes the other (batch)
# dims first, ordered by the input's strides from largest to smallest, the transformed dims
# last in the order it is given them, and writes a fresh dense result in that order. A
# complex-to-complex transform works in stages of at most three dims, the dims sorted by the
# current strides (largest first) before each stage, the last three taken first. Real-to-complex
# and complex-to-real transforms take all their dims in one stage unless they are more than
# three or start with dims 0 and 1; then the last dim goes first (complex-to-real: after
# the complex stages), the rest as complex stages. Complex-to-real transforms read a contiguous
# copy of their input in the one-stage case. PyTorch's public functions compose these
# differently from ember's three ops: ``ihfft2``/``ihfftn`` run a one-dim real-to-complex
# transform and then complex stages, and ``hfft``/``hfft2``/``hfftn`` run the complex stages and
# then a complex-to-real transform of the last dim on a contiguous copy. The rules below replay
# PyTorch's composition on strides alone.


def _fft_stage(in_strides, out_shape, dims):
    """Strides (elements) of one cuFFT-style stage over ``dims`` writing ``out_shape``."""
    batch = sorted((d for d in range(len(out_shape)) if d not in dims),
                   key=lambda d: in_strides[d], reverse=True)
    out = [0] * len(out_shape)
    step = 1
    for d in reversed(dims):
        out[d] = step
        step *= max(out_shape[d], 1)
    for d in reversed(batch):
        out[d] = step
        step *= out_shape[d]
    return out


def _fft_c2c_stages(strides, shape, dims):
    dims = list(dims)
    while dims:
        dims.sort(key=lambda d: strides[d], reverse=True)  # stable, as PyTorch's rule
        take = min(3, len(dims))
        strides = _fft_stage(strides, shape, dims[len(dims) - take:])
        dims = dims[:len(dims) - take]
    return strides


def _fft_one_stage(dims):
    return len(dims) <= 3 and not (len(dims) >= 2 and dims[0] == 0 and dims[1] == 1)


def _fft_r2c(strides, shape, dims):
    if _fft_one_stage(dims):
        return _fft_stage(strides, shape, dims)
    first = _fft_stage(strides, shape, dims[-1:])
    return _fft_c2c_stages(first, shape, dims[:-1])


def _fft_c2r(strides, in_shape, shape, dims):
    if _fft_one_stage(dims):
        return _fft_stage(contiguous_strides(in_shape, 1), shape, dims)
    if len(dims) > 1:
        strides = _fft_c2c_stages(strides, in_shape, dims[:-1])
    return _fft_stage(strides, shape, dims[-1:])


def _fft_layout(name, params, a, r):
    """The strides (elements) of FFT op ``name``'s result ``r`` from input ``a``."""
    dims = list(params["dims"])
    st = a.strides
    if name == "_fft_c2c":
        return _fft_c2c_stages(st, r.shape, dims)
    if name == "_fft_r2c":
        if params.get("forward", True):
            return _fft_r2c(st, r.shape, dims)
        # ihfft*: a one-dim transform, then complex stages over the others
        return _fft_c2c_stages(_fft_stage(st, r.shape, dims[-1:]), r.shape, dims[:-1])
    if params.get("forward", False):
        # hfft*: complex stages over all but the last dim, then the last on a contiguous copy
        return _fft_stage(contiguous_strides(a.shape, 1), r.shape, dims[-1:])
    return _fft_c2r(st, a.shape, r.shape, dims)


_FFT = {"_fft_c2c", "_fft_r2c", "_fft_c2r"}


def _fft_finish(name, params, arrays, result):
    if isinstance(result, MetaArray) and arrays and isinstance(arrays[0], MetaArray) and \
            result.ndim >= 2:
        strides = _fft_layout(name, params, arrays[0], result)
        result.__dict__.pop("_lay", None)
        _set_layout(result, tuple(s * result.itemsize for s in strides))
    return result


def _einsum_finish(params, arrays, result):
    """A one-operand einsum that sums nothing is a view in PyTorch (a diagonal and a
    permutation): each output label's stride is the sum of the input's strides for it.
    Other einsums keep the kernel's contiguous result (PyTorch's products with several
    operands may lay their results out otherwise: not replayed)."""
    if len(arrays) != 1 or not isinstance(result, MetaArray) or \
            not isinstance(arrays[0], MetaArray):
        return result
    term, out = params["eq"].split("->")
    if set(term) != set(out):
        return result
    strides = arrays[0].strides
    view = tuple(sum(st for lab, st in zip(term, strides) if lab == c) for c in out)
    result.__dict__.pop("_lay", None)
    return _set_layout(result, view)


#: ops whose results PyTorch allocates contiguous whatever the input's layout
_CONTIGUOUS = {"softmax", "log_softmax", "logcumsumexp"}
#: ops whose empty results PyTorch gives as a clone of the input: with its strides
_CLONE_WHEN_EMPTY = {"roll"}
#: ops whose results PyTorch lays out like their (first) input
_LIKE_INPUT = {"sort"}


def _contiguous(a):
    if isinstance(a, MetaArray):
        a.__dict__.pop("_lay", None)
    return a


def _like(a, x):
    if isinstance(a, MetaArray) and isinstance(x, MetaArray) and a.shape == x.shape:
        a.__dict__.pop("_lay", None)
        if x.size:  # an empty result is contiguous
            _set_layout(a, like_layout(x.shape, _elements(x), a.itemsize))
    return a


def _each(result, fn):
    return tuple(fn(r) for r in result) if type(result) is tuple else fn(result)


def _column_major(a):
    """Give placeholder ``a`` column-major strides per matrix of its batch."""
    if not isinstance(a, MetaArray) or a.ndim < 2:
        return a
    order = [a.ndim - 2, a.ndim - 1] + list(range(a.ndim - 3, -1, -1))
    a.__dict__.pop("_lay", None)
    return _set_layout(a, _strides_in_order(a.shape, order, a.itemsize))


def _all_column_major(a):
    """Give placeholder ``a`` column-major strides over all its dims."""
    if isinstance(a, MetaArray) and a.ndim >= 2:
        a.__dict__.pop("_lay", None)
        _set_layout(a, _strides_in_order(a.shape, range(a.ndim), a.itemsize))
    return a


def has_layout_rule(name):
    """Whether ``finish_layouts`` may change the layouts of op ``name``'s results (the meta
    kernels skip it for the other ops)."""
    return name in _CONTIGUOUS or name in _LIKE_INPUT or name in _FFT or name == "einsum" \
        or name in _CLONE_WHEN_EMPTY or name in _COLUMN_MAJOR


def finish_layouts(name, params, arrays, result):
    """``result`` of meta op ``name`` with the layouts PyTorch's meta device gives it.

    Args:
        name: the op's name (``Op.name``).
        params: the keyword parameters the kernel was called with.
        arrays: the kernel's array arguments.
        result: the kernel's result (a placeholder or a tuple of them).

    Returns:
        ``result``, its placeholders given their layouts (in place).

    Example::

        >>> r = finish_layouts("linalg_inv", {}, (), placeholder((3, 3), np.float32))
        >>> r.strides
        (4, 12)
    """
    if name in _CLONE_WHEN_EMPTY and isinstance(result, MetaArray) and not result.size and \
            arrays and isinstance(arrays[0], MetaArray) and arrays[0].shape == result.shape:
        result.__dict__.pop("_lay", None)
        return _set_layout(result, arrays[0].strides)
    if name in _CONTIGUOUS:
        return _each(result, _contiguous)
    if name in _FFT:
        return _fft_finish(name, params, arrays, result)
    if name == "einsum":
        return _einsum_finish(params, arrays, result)
    if name in _LIKE_INPUT:
        return _each(result, lambda r: _like(r, arrays[0] if arrays else None))
    rule = _COLUMN_MAJOR.get(name)
    if rule is None:
        return result
    which = rule(params)
    if not which:
        return result
    if which[0] in ("all", "C"):  # the first result: column-major over all dims, row-major
        first = result[0] if type(result) is tuple else result
        if isinstance(first, MetaArray):
            first.__dict__.pop("_lay", None)
            if which[0] == "all":
                _all_column_major(first)
        return result
    if type(result) is not tuple:
        return _column_major(result) if 0 in which else result
    return tuple(_column_major(r) if i in which else r for i, r in enumerate(result))
