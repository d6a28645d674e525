"""Result layouts of meta ops whose kernels' NumPy layouts are not PyTorch's
(NOTE [ Meta layouts ]).

PyTorch's LAPACK-backed ops give some results in column-major ("Fortran") order per matrix
of the batch, and its meta kernels report those strides; ember's kernels give row-major
NumPy results. Some other kernels work on a moved axis and move it back, which leaves a
permuted layout where PyTorch allocates a fresh one. ``finish_layouts`` gives a meta
kernel's results the strides PyTorch's meta device reports for them: ``_COLUMN_MAJOR``
names, per op, which results are column-major (given the op's parameters), ``_CONTIGUOUS``
the ops whose results are contiguous, ``_LIKE_INPUT`` those laid out like their first
input. Ops not listed keep what their kernel gave.
"""

from __future__ import annotations

from ._meta_array import MetaArray, _elements, _set_layout, _strides_in_order, like_layout


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


#: ops whose results PyTorch allocates contiguous whatever the input's layout
_CONTIGUOUS = {"softmax", "log_softmax", "logcumsumexp"}
#: ops whose results PyTorch lays out like their (first) input
_LIKE_INPUT = {"sort"}


def _contiguous(a):
    if isinstance(a, MetaArray):
        a.__dict__.pop("_lay", None)
    return a


def _like(a, x):
    if isinstance(a, MetaArray) and isinstance(x, MetaArray) and a.shape == x.shape:
        a.__dict__.pop("_lay", None)
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
    if name in _CONTIGUOUS:
        return _each(result, _contiguous)
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
