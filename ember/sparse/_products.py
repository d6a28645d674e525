"""Sparse x dense products on SciPy, with autograd to the values and the dense operand.

NOTE [ Sparse products ]
``spmm(values, row, col, shape, dense)`` is ``A @ dense`` for the 2-D matrix ``A`` holding
``values`` at ``(row, col)`` (duplicates add, so an uncoalesced tensor needs no coalescing).
SciPy's CSR kernel computes it; the backward is written with ember ops, so it is itself
differentiable (double backward works):

    dense_bar  = A^T @ grad                      (the same product, row and col swapped)
    values_bar = sum(grad[row] * dense[col])     (over the trailing columns)

Dtypes SciPy has no kernel for (float16, bfloat16) compute in float32 and cast back.
"""

from __future__ import annotations

import numpy as np

from .._core.tensor import wrap
from ..autograd.function import Function

_SCIPY_KINDS = "fciu"


def _csr(values_np, row, col, shape):
    from .._lazy_import import import_module

    return import_module("scipy.sparse").csr_array((values_np, (row, col)), shape=shape)


def _compute_dtype(a):
    if a.dtype.kind in _SCIPY_KINDS and a.dtype.itemsize >= 4 or a.dtype.kind in "iu":
        return a.dtype
    if a.dtype.kind == "b":
        return np.dtype(np.int64)
    return np.dtype(np.float32)


def _product(values, row, col, shape, dense):
    v, d = values._data, dense._data
    work = _compute_dtype(v)
    out = _csr(v.astype(work, copy=False), row, col, shape) @ d.astype(work, copy=False)
    return np.ascontiguousarray(np.asarray(out).astype(v.dtype, copy=False))


class _SpMM(Function):
    @staticmethod
    def forward(ctx, values, dense, row, col, shape):
        ctx.save_for_backward(values, dense)
        ctx.rc = (row, col, shape)
        return wrap(_product(values, row, col, shape, dense))

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        row, col, shape = ctx.rc
        v_bar = d_bar = None
        if ctx.needs_input_grad[0]:
            prod = grad[wrap(row)] * dense[wrap(col)]
            v_bar = prod.sum(-1) if prod.dim() > 1 else prod
        if ctx.needs_input_grad[1]:
            d_bar = spmm(values, col, row, (shape[1], shape[0]), grad)
        return v_bar, d_bar, None, None, None


def spmm(values, row, col, shape, dense):
    """``A @ dense`` for the sparse matrix ``A`` (NOTE [ Sparse products ])."""
    return _SpMM.apply(values, dense, row, col, tuple(shape))
