"""Meta kernels of their own for the ops whose generic kernel cannot run on meta arrays.

Most ops need none: their generic kernel runs on placeholders (NOTE [ Meta device ] in
ember/backends/meta.py). The ones here read values, which placeholders do not have, and get
a kernel through the same ``ember.library.impl(op, "meta")`` an out-of-tree backend uses:

- ``_CHECKS_ONLY``: kernels whose only reads of values are checks of valid input (integer
  division by zero, class indices in range, "is any maximum NaN" before a fix-up pass). They
  run unchanged with every read answering "nothing found" (``reads_find_nothing``), which is
  what PyTorch's meta kernels do: they skip checks of values.
- Kernels that factor on the host (LU, the non-symmetric eigensolver, the matrix
  exponential) or solve triangular systems through SciPy get shape rules.
- Ops whose result shape depends on values (``nonzero``, ``unique``, ``masked_select``, ...)
  raise NotImplementedError as PyTorch does on meta.
- Kernels that walk sequences of values whose result shapes do not depend on them
  (``ctc_loss``) get shape rules.
"""

from __future__ import annotations

import numpy as np

from .. import library
from ._meta_array import DataDependentOutputError, placeholder, reads_find_nothing
from .meta import MetaNamespace

_xp = MetaNamespace()


def _checks_only(op_name):
    """Register, for ``op_name``, its generic kernel run with reads finding nothing."""
    from .._ops._registry import ops

    kernel = ops[op_name].kernel

    @library.impl(op_name, "meta")
    def meta_kernel(*arrays, **params):
        with reads_find_nothing():
            return kernel(_xp, *arrays, **params)

    meta_kernel.__name__ = f"{op_name}_meta"


_CHECKS_ONLY = (
    # integer division by zero, negative integer powers, shifts past the width
    "floor_divide", "div_trunc", "remainder", "fmod", "pow", "bitwise_left_shift",
    "bitwise_right_shift",
    # class indices in range
    "nll_loss", "cross_entropy_loss",
    # "is some maximum NaN", "did a window see only padding": fix-up passes, same shapes
    "max_pool",
    # "did the inversion fail" (the placeholders never do)
    "linalg_inv_ex",
    # "does some matrix hold inf or NaN" before replaying those (NOTE [ Determinants of
    # non-finite matrices ] in ember/_ops/linalg_decomp.py)
    "linalg_det", "linalg_slogdet", "logdet",
)

for _name in _CHECKS_ONLY:
    _checks_only(_name)


def _data_dependent(op_name):
    @library.impl(op_name, "meta")
    def meta_kernel(*arrays, **params):
        raise DataDependentOutputError(
            f"ember: the op '{op_name}' cannot run on device type 'meta': the shape of its "
            "result depends on the input's values, which meta tensors do not have")

    meta_kernel.__name__ = f"{op_name}_meta"


for _name in ("nonzero", "masked_select", "unique", "unique_consecutive"):
    _data_dependent(_name)


def _complex_of(dtype):
    return np.result_type(dtype, np.complex64)


# -- linear algebra done on the host or through SciPy ----------------------------------------------


@library.impl("linalg_matrix_exp", "meta")
def _matrix_exp(a):
    return placeholder(a.shape, a.dtype)


@library.impl("linalg_eig", "meta")
def _eig(a):
    c = _complex_of(a.dtype)
    return placeholder(a.shape[:-1], c), placeholder(a.shape, c)


@library.impl("linalg_eigvals", "meta")
def _eigvals(a):
    return placeholder(a.shape[:-1], _complex_of(a.dtype))


@library.impl("linalg_lu_factor", "meta")
def _lu_factor(a):
    m, n = a.shape[-2:]
    return placeholder(a.shape, a.dtype), placeholder(a.shape[:-2] + (min(m, n),), np.int32)


def _unpacked(lu):
    batch, (m, n) = lu.shape[:-2], lu.shape[-2:]
    k = min(m, n)
    return (placeholder(batch + (m, m), lu.dtype), placeholder(batch + (m, k), lu.dtype),
            placeholder(batch + (k, n), lu.dtype))


@library.impl("linalg_lu", "meta")
def _lu(a):
    return _unpacked(a)


@library.impl("lu_unpack", "meta")
def _lu_unpack(lu, piv):
    return _unpacked(lu)


def _solved(a, b, left):
    """The result of solving with the square matrices ``a`` on the ``left`` (or right) of
    ``b``: NumPy's solve rule on placeholders, transposed for the right side."""
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@library.impl("linalg_lu_solve", "meta")
def _lu_solve(lu, piv, b, *, left, adjoint):
    return _solved(lu, b, left)


@library.impl("linalg_solve_triangular", "meta")
def _solve_triangular(a, b, *, upper, left, unitriangular):
    return _solved(a, b, left)


@library.impl("cholesky_solve", "meta")
def _cholesky_solve(b, l, *, upper):
    return _solved(l, b, True)


# -- ops whose kernels count values ----------------------------------------------------------------


@library.impl("masked_scatter", "meta")
def _masked_scatter(a, mask, src):
    return placeholder(np.broadcast_shapes(a.shape, mask.shape), a.dtype)


# -- ops whose kernels walk sequences of values ----------------------------------------------------


@library.impl("ctc_loss", "meta")
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, *, blank, reduction,
              zero_infinity):
    # the alignment recursion reads the lengths and labels; the shapes need none of them:
    # the loss per sequence (or reduced to one) and its gradient for the log-probabilities
    n = log_probs.shape[1]
    loss = placeholder((n,) if reduction == "none" else (), log_probs.dtype)
    return loss, placeholder(log_probs.shape, log_probs.dtype)
