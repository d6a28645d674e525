"""The rest of ``ember.linalg``: LDL factorisation and solve, ``lu_factor_ex``, condition
numbers, tensor inverses and solves, Vandermonde matrices and ``linalg.diagonal``.

``ldl_factor_ex`` and ``ldl_solve`` are ops whose kernels call LAPACK's Bunch-Kaufman
routines (``?sytrf``/``?hetrf``, ``?sytrs``/``?hetrs``) through ``scipy.linalg.lapack``, one
matrix at a time, so LD and the pivots are bit-for-bit LAPACK's, as PyTorch's are. PyTorch
defines no derivative for them: their results require grad, and backward raises. Everything
else here is composed of differentiable ops, so autograd follows it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dispatch
from .._lazy_import import import_module
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import wrap
from ..return_types import make
from ._registry import Op
from .linalg import check_out_tuple, check_tensor
from .linalg_decomp import (LinAlgError, _bidx, _odd_matrices, check_square, empty_any_dtype,
                            inv, inv_ex, solve)

# ------------------------------------------------------------------------------------------------
# LDL


def _lapack(prefix_fn, dtype, hermitian):
    """``scipy.linalg.lapack``'s routine ``?<name>`` for ``dtype`` (``he`` for Hermitian
    complex matrices, ``sy`` otherwise)."""
    lapack = import_module("scipy.linalg.lapack")

    kind = "he" if hermitian and dtype.kind == "c" else "sy"
    letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
              np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[np.dtype(dtype)]
    return getattr(lapack, letter + kind + prefix_fn)


def _host(xp, a):
    return a if xp is np else a.get()


@empty_any_dtype
def _ldl_factor_kernel(xp, a, *, hermitian, check_errors):
    if not holds_values(a):  # the meta device: shapes only
        return (xp.empty(a.shape, a.dtype), xp.empty(a.shape[:-1], np.int32),
                xp.empty(a.shape[:-2], np.int32))
    host = _host(xp, a)
    n = host.shape[-1]
    batch = host.shape[:-2]
    flat = host.reshape((int(np.prod(batch)), n, n))
    lds = np.zeros_like(flat)
    pivs = np.zeros((flat.shape[0], n), np.int32)
    infos = np.zeros(flat.shape[0], np.int32)
    if n:
        trf = _lapack("trf", host.dtype, hermitian)
        odd = _odd_matrices(np, flat)  # real matrices only: NOTE [ LDL of non-finite matrices ]
        for i in range(flat.shape[0]):
            if odd is not None and odd[i]:
                lds[i], pivs[i], infos[i] = _sytf2_lower(flat[i])
                continue
            ld, piv, info = trf(flat[i], lower=1)
            lds[i], pivs[i], infos[i] = np.tril(ld), piv, info
            if info < 0:
                raise RuntimeError(f"linalg.ldl_factor: LAPACK rejected argument {-info}")
    if check_errors and infos.any():
        i = int(np.flatnonzero(infos)[0])
        raise LinAlgError(
            f"linalg.ldl_factor_ex: {_bidx(batch, i)}The factorization could not be completed "
            f"because the input is not invertible: D[{infos[i] - 1}, {infos[i] - 1}] is zero.")
    return (xp.asarray(lds.reshape(host.shape)), xp.asarray(pivs.reshape(batch + (n,))),
            xp.asarray(infos.reshape(batch)))


# NOTE [ LDL of non-finite matrices ]
# For a real matrix holding NaN, inf or values whose products overflow, Bunch-Kaufman's
# choices depend on how NaN compares, and the LAPACK under NumPy (which gives up on a NaN
# diagonal: info = k, no interchange) and the one under torch (no such check) part ways.
# ``_sytf2_lower`` replays the unblocked lower factorisation as torch's answers show it: the
# pivot candidate is the first NaN of the column if it has one, else its first largest
# magnitude; Fortran's MAX returns its second argument where one is NaN; every comparison
# with NaN is false (so a NaN column takes a 2 x 2 pivot rather than stopping), and info is
# set only where the column is exactly zero. It matches torch on about 97 in 100 random
# non-finite matrices (NumPy's LAPACK on about 82 in 100); finite matrices keep NumPy's
# LAPACK. Complex matrices keep it too (the replay, with C's complex arithmetic, matched
# torch less often there).
_BK_ALPHA = (1 + math.sqrt(17.0)) / 8


def _first_max(v):
    """i?amax over magnitudes ``v`` as the LAPACK under torch answers it: the first NaN if
    there is one, else the first largest."""
    nan = np.flatnonzero(np.isnan(v))
    if nan.size:
        return int(nan[0])
    k = 0
    for i in range(1, len(v)):
        if v[i] > v[k]:
            k = i
    return k


def _fmax(a, b):
    """Fortran's MAX as compiled (``a > b ? a : b``): the second argument where one is NaN."""
    return a if a > b else b


def _sytf2_lower(a):
    """(LD, pivots, info) of the real symmetric ``a`` (its lower triangle) by the steps of
    NOTE [ LDL of non-finite matrices ]."""
    a = a.copy()
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    info = 0
    one, alpha = a.dtype.type(1), a.dtype.type(_BK_ALPHA)
    k = 0
    with np.errstate(all="ignore"):
        while k < n:
            kstep = 1
            absakk = abs(a[k, k])
            imax, colmax = k, a.dtype.type(0)
            if k < n - 1:
                col = np.abs(a[k + 1:, k])
                imax = k + 1 + _first_max(col)
                colmax = col[imax - k - 1]
            if _fmax(absakk, colmax) == 0:
                info = info or k + 1
                kp = k
            else:
                kp = k
                if not absakk >= alpha * colmax:
                    row = np.abs(a[imax, k:imax])
                    rowmax = row[_first_max(row)]
                    if imax < n - 1:
                        below = np.abs(a[imax + 1:, imax])
                        rowmax = _fmax(rowmax, below[_first_max(below)])
                    if absakk >= alpha * colmax * (colmax / rowmax):
                        kp = k
                    elif abs(a[imax, imax]) >= alpha * rowmax:
                        kp = imax
                    else:
                        kp, kstep = imax, 2
                kk = k + kstep - 1
                if kp != kk:  # swap rows and columns kk and kp of the trailing matrix
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                    seg = a[kk + 1:kp, kk].copy()
                    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                    a[kp, kk + 1:kp] = seg
                    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]
                    if kstep == 2:
                        a[[k + 1, kp], k] = a[[kp, k + 1], k]
                if kstep == 1:
                    if k < n - 1:
                        d11 = one / a[k, k]
                        x = a[k + 1:, k].copy()
                        for j in range(k + 1, n):
                            a[j:, j] += x[j - k - 1:] * (-d11 * x[j - k - 1])
                        a[k + 1:, k] = x * d11
                elif k < n - 2:
                    d21 = a[k + 1, k]
                    d11 = a[k + 1, k + 1] / d21
                    d22 = a[k, k] / d21
                    d21 = one / (d11 * d22 - one) / d21
                    for j in range(k + 2, n):
                        wk = d21 * (d11 * a[j, k] - a[j, k + 1])
                        wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
                        a[j:, j] = a[j:, j] - a[j:, k] * wk - a[j:, k + 1] * wkp1
                        a[j, k], a[j, k + 1] = wk, wkp1
            piv[k:k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
            k += kstep
    return np.tril(a), piv, info


def _no_derivative(name):
    def vjp(g, *_inputs, **_params):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return vjp


def _no_forward_derivative(name):
    def jvp(x_dots, *_inputs, **_params):
        raise NotImplementedError(f"Trying to use forward AD with aten::{name} that does not "
                                  "support it.")

    return jvp


ldl_factor_op = Op("linalg_ldl_factor_ex", _ldl_factor_kernel,
                   vjp=_no_derivative("linalg_ldl_factor_ex"), nondiff_outputs=(1, 2),
                   jvp=_no_forward_derivative("linalg_ldl_factor_ex"))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """The LDL factorisation of a symmetric (or Hermitian) matrix, with Bunch-Kaufman
    pivoting, reporting failures in ``info`` instead of raising.

    Only the lower triangle of ``A`` is read. ``LD`` packs the unit lower triangular ``L``
    (below the diagonal) and the block-diagonal ``D`` (1x1 and 2x2 blocks); ``pivots`` are
    LAPACK's (1-based, negative entries mark 2x2 blocks).

    Args:
        A (Tensor): a ``(*, n, n)`` float or complex tensor.
        hermitian (bool): factor a Hermitian matrix (``A = L D L^H``) rather than a
            symmetric one (``A = L D L^T``); the same for real input.
        check_errors (bool): raise ``LinAlgError`` where ``info`` is nonzero.
        out (tuple, optional): three tensors to write ``(LD, pivots, info)`` into.

    Returns:
        ``(LD, pivots, info)``: ``info`` is 0 where ``D`` is invertible, ``i`` where its
        ``(i-1)``-th diagonal element is exactly zero. No gradient: backward raises.

    Example::

        >>> A = ember.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> LD, pivots, info = ember.linalg.ldl_factor_ex(A)
        >>> LD.tolist(), pivots.tolist(), info.item()
        ([[4.0, 0.0], [0.5, 2.0]], [1, 2], 0)
    """
    check_out_tuple("linalg_ldl_factor_ex", out, 3)
    check_square("linalg.ldl_factor_ex", A)
    r = _dispatch.apply(ldl_factor_op, (A,),
                        {"hermitian": bool(hermitian), "check_errors": bool(check_errors)},
                        out)
    return make("linalg_ldl_factor_ex", ["LD", "pivots", "info"])(*r)


def ldl_factor(A, *, hermitian=False, out=None):
    """The LDL factorisation ``(LD, pivots)`` of a symmetric (or Hermitian) matrix; see
    :func:`ldl_factor_ex`, whose ``info`` it turns into a ``LinAlgError``.

    Args:
        A (Tensor): a ``(*, n, n)`` float or complex tensor (its lower triangle is read).
        hermitian (bool): ``A = L D L^H`` rather than ``L D L^T``.
        out (tuple, optional): two tensors to write ``(LD, pivots)`` into.

    Returns:
        ``(LD, pivots)``, ready for :func:`ldl_solve`.

    Example::

        >>> A = ember.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> LD, pivots = ember.linalg.ldl_factor(A)
        >>> ember.linalg.ldl_solve(LD, pivots, ember.tensor([[6.0], [5.0]])).tolist()
        [[1.0], [1.0]]
    """
    check_out_tuple("linalg_ldl_factor", out)
    check_square("linalg.ldl_factor", A)
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    if holds_values(info._data) and bool(info.ne(0).any()):
        i = int(np.flatnonzero(info.numpy().reshape(-1))[0])
        d = int(info.reshape(-1)[i]) - 1
        raise LinAlgError(
            f"linalg.ldl_factor: {_bidx(tuple(info.shape), i)}The factorization could not be "
            f"completed because the input is not invertible: D[{d}, {d}] is zero.")
    r = make("linalg_ldl_factor", ["LD", "pivots"])(LD, pivots)
    if out is None:
        return r
    return make("linalg_ldl_factor", ["LD", "pivots"])(
        *_dispatch.write_out("linalg.ldl_factor", out, (LD, pivots)))


@empty_any_dtype
def _ldl_solve_kernel(xp, ld, piv, b, *, hermitian):
    n, k = b.shape[-2], b.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    if not holds_values(b):  # the meta device: shapes only
        return xp.empty(batch + (n, k), b.dtype)
    ld, piv, b = _host(xp, ld), _host(xp, piv), _host(xp, b)
    count = int(np.prod(batch))
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((count, n, n))
    piv = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape((count, n))
    flat_b = np.broadcast_to(b, batch + (n, k)).reshape((count, n, k))
    out = np.zeros(flat_b.shape, b.dtype)
    if n and k:
        trs = _lapack("trs", b.dtype, hermitian)
        for i in range(out.shape[0]):
            if _blocks_fit(piv[i]):
                out[i] = trs(ld[i], piv[i], flat_b[i], lower=1)[0]
            else:  # no factorisation has these pivots: NaN, where LAPACK would read past A
                out[i] = complex(np.nan, np.nan) if out.dtype.kind == "c" else np.nan
    return xp.asarray(out.reshape(batch + (n, k)))


def _blocks_fit(piv):
    """Whether LAPACK's lower ``*sytrs`` scan of ``piv`` stays inside the matrix: a negative
    pivot opens a 2x2 block, which must not start on the last row."""
    n, i = len(piv), 0
    while i < n:
        if piv[i] < 0 and i == n - 1:
            return False
        i += 1 if piv[i] > 0 else 2
    return True


ldl_solve_op = Op("linalg_ldl_solve", _ldl_solve_kernel, vjp=_no_derivative("linalg_ldl_solve"),
                  jvp=_no_forward_derivative("linalg_ldl_solve"))


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solve ``A X = B`` from the LDL factorisation ``(LD, pivots)`` of ``A``
    (:func:`ldl_factor`).

    Args:
        LD (Tensor): ``(*, n, n)``, the packed factors.
        pivots (Tensor): ``(*, n)`` int32, the pivots.
        B (Tensor): ``(*, n, k)``, the right-hand sides (batch dims broadcast).
        hermitian (bool): the factorisation was Hermitian (``hermitian=True`` given to
            ``ldl_factor``).
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: ``X`` of shape ``(*, n, k)``. No gradient: backward raises.

    Example::

        >>> A = ember.tensor([[2.0, 1.0], [1.0, -3.0]])
        >>> LD, pivots = ember.linalg.ldl_factor(A)
        >>> ember.linalg.ldl_solve(LD, pivots, ember.tensor([[3.0], [-2.0]])).tolist()
        [[1.0], [1.0]]
    """
    op_name = "torch.linalg.ldl_solve"
    check_square(op_name, LD, "LD")
    check_tensor(op_name, pivots, "pivots")
    check_tensor(op_name, B, "B")
    if B.dim() < 2:
        raise RuntimeError(f"{op_name}: Expected B to have at least 2 dimensions, but it has "
                           f"{B.dim()} dimensions instead")
    if LD.dtype != B.dtype:
        raise RuntimeError(f"{op_name}: Expected LD and B to have the same dtype, but got "
                           f"LD with dtype {LD.dtype.scalar_name} and B with dtype "
                           f"{B.dtype.scalar_name} instead")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op_name}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"{op_name}: Incompatible matrix sizes: each LD matrix is "
                           f"{LD.shape[-1]} by {LD.shape[-1]} but each B matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    if pivots.dtype.category != 1:  # any integer type: torch casts them for LAPACK
        raise RuntimeError(f"{op_name}: Expected pivots to be integers. Got "
                           f"{pivots.dtype.scalar_name}")
    if pivots.dtype != _dt.int32:
        pivots = pivots.to(_dt.int32)
    if holds_values(pivots._data) and pivots.numel():
        # LAPACK's *sytrs reads out of bounds (a crash) on pivots ldl_factor can't produce
        p = np.abs(np.asarray(_host(_dispatch.xp_of(pivots._data), pivots._data), np.int64))
        for ok, bound in ((p >= 1, ">= 1"), (p <= LD.shape[-1], "<= LD.size(-2)")):
            if not ok.all():
                raise RuntimeError(f"Pivots given to ldl_solve must all satisfy |pivot| {bound}. "
                                   "Did you properly pass the result of ldl_factor?")
    return _dispatch.apply(ldl_solve_op, (LD, pivots, B), {"hermitian": bool(hermitian)}, out)


# ------------------------------------------------------------------------------------------------
# lu_factor_ex


def _lu_info(LU):
    """LAPACK getrf's info: ``i`` (1-based) for the first exactly zero pivot of U, else 0."""
    a = _dispatch.xp_of(LU._data)
    k = min(LU.shape[-2], LU.shape[-1])
    diag = LU.detach()._data[..., np.arange(k), np.arange(k)]
    if not holds_values(diag):  # the meta device: shapes only
        return wrap(a.zeros(diag.shape[:-1], np.int32))
    zero = _host(a, diag) == 0
    if k == 0:
        return wrap(a.asarray(np.zeros(zero.shape[:-1], np.int32)))
    first = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    return wrap(a.asarray(first))


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """The packed LU factorisation with partial pivoting, reporting singular input in
    ``info`` instead of raising (see :func:`lu_factor`).

    Args:
        A (Tensor): a ``(*, m, n)`` float or complex tensor.
        pivot (bool): only True is supported on the CPU, as in PyTorch.
        check_errors (bool): raise ``LinAlgError`` where ``info`` is nonzero.
        out (tuple, optional): three tensors to write ``(LU, pivots, info)`` into.

    Returns:
        ``(LU, pivots, info)``: ``info`` is ``i`` where ``U[i-1, i-1]`` is exactly zero, else
        0 (int32). ``LU`` is differentiable.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: the pivots chosen, hence ``LU`` and ``pivots``, can
        differ from PyTorch's.

    Example::

        >>> LU, pivots, info = ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [2.0, 4.0]]))
        >>> pivots.tolist(), info.item()
        ([2, 2], 2)
    """
    check_out_tuple("linalg_lu_factor_ex", out, 3)
    from .linalg_decomp import check_matrix
    from .linalg_func import _lu_factor_unchecked as lu_factor

    check_matrix("linalg.lu_factor_ex", A)
    if not pivot:
        raise RuntimeError(
            "linalg.lu_factor_ex: LU without pivoting is not implemented on the CPU")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns about exactly singular matrices
        LU, pivots = lu_factor(A)
    info = _lu_info(LU)
    if check_errors and holds_values(info._data) and bool(info.ne(0).any()):
        i = int(np.flatnonzero(info.numpy().reshape(-1))[0])
        d = int(info.reshape(-1)[i])
        raise LinAlgError(
            f"linalg.lu_factor_ex: {_bidx(tuple(info.shape), i)}The factorization could not be "
            f"completed because the input is not invertible: U[{d - 1}, {d - 1}] is zero.")
    r = (LU, pivots, info)
    if out is not None:
        r = _dispatch.write_out("linalg.lu_factor_ex", out, r)
    return make("linalg_lu_factor_ex", ["LU", "pivots", "info"])(*r)


# ------------------------------------------------------------------------------------------------
# cond


_INF = math.inf
_SVD_ORDS = (None, 2, -2)
_INV_ORDS = ("fro", "nuc", 1, -1, _INF, -_INF)


def cond(A, p=None, *, out=None):
    """The condition number of ``A`` in the norm ``p``.

    ``p`` in ``None``, 2, -2 uses the singular values (``s_max / s_min``, or its inverse for
    -2) and accepts any ``(*, m, n)`` matrix; 'fro', 'nuc', 1, -1, inf and -inf compute
    ``norm(A, p) * norm(inv(A), p)`` and need square matrices. Singular matrices give inf
    in the latter norms (NaN or inf in the former, as the singular values say).

    Args:
        A (Tensor): a ``(*, m, n)`` float or complex tensor.
        p (int, inf, -inf, 'fro' or 'nuc', optional): the norm; None is 2.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: a real tensor of shape ``(*)``; for an empty ``A`` (of any dtype, any shape)
        zeros of ``A``'s real dtype without a history, as torch's.

    Example::

        >>> A = ember.tensor([[1.0, 0.0], [0.0, 4.0]])
        >>> ember.linalg.cond(A).item(), ember.linalg.cond(A, 1).item()
        (4.0, 4.0)
    """
    from .linalg_decomp import check_matrix, svdvals
    from .linalg_norm import matrix_norm
    from .pointwise import where

    op_name = "linalg.cond"
    check_tensor(op_name, A, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{op_name}: The input tensor must have at least 2 dimensions.")
    if p not in _SVD_ORDS and p not in _INV_ORDS:
        raise RuntimeError(f"{op_name} got an invalid norm type: {p}")
    n, m = A.shape[-2], A.shape[-1]
    if p in ("fro", "nuc") and n != m:  # torch checks these two norms' shapes first
        raise RuntimeError(f"{op_name}(ord={p}): A must be batches of square matrices, but "
                           f"they are {n} by {m} matrices")
    if not A.numel():  # before any other dtype or shape check, as torch
        real = A.dtype.to_real() if A.is_complex() else A.dtype
        r = wrap(_dispatch.xp_of(A._data).zeros(tuple(A.shape[:-2]), real.np))
        return r if out is None else _dispatch.write_out(op_name, out, r)
    # the inverse-based norms meet torch's inv checks first ('nuc' takes the SVD before)
    check_matrix(op_name if p in _SVD_ORDS or p == "nuc" else "linalg.inv", A)
    if p in _SVD_ORDS:
        s = svdvals(A)
        if p == -2:
            r = s[..., -1] / s[..., 0]
        else:
            r = s[..., 0] / s[..., -1]
    else:
        if n != m:
            raise RuntimeError(f"{op_name}(ord={p}): A must be batches of square matrices, but "
                               f"they are {n} by {m} matrices")
        from .linalg_decomp import _eye_like

        Ainv, info = inv_ex(A)
        singular = info.ne(0)
        if holds_values(info._data) and bool(singular.any()):
            # their result is inf: invert the identity there, so no NaN reaches the norm
            mask = singular.unsqueeze(-1).unsqueeze(-1)
            Ainv = inv(where(mask, _eye_like(n, A), A))
        r = where(singular, _INF, matrix_norm(A, p) * matrix_norm(Ainv, p))
        # as torch: a NaN product (0 * inf, or NaN input) reads as an infinite condition
        r = r.nan_to_num(float("inf"), float("inf"), float("-inf"))
    return r if out is None else _dispatch.write_out(op_name, out, r)


# ------------------------------------------------------------------------------------------------
# tensorinv, tensorsolve


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def tensorinv(A, ind=2, *, out=None):
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind``
    dims: ``tensordot(tensorinv(A, ind), A, ind)`` is the identity.

    Args:
        A (Tensor): a tensor with ``prod(A.shape[:ind]) == prod(A.shape[ind:])``.
        ind (int): the number of leading dims that make the output side (> 0).
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: of shape ``A.shape[ind:] + A.shape[:ind]``.

    Example::

        >>> A = ember.eye(6).reshape(6, 2, 3) * 2
        >>> ember.linalg.tensorinv(A, ind=1).shape
        ember.Size([2, 3, 6])
    """
    check_tensor("linalg.tensorinv", A, "A")
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    left, right = _prod(shape[:ind]), _prod(shape[ind:])
    if left != right:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {right} != {left}")
    r = inv(A.reshape(left, left)).reshape(shape[ind:] + shape[:ind])
    return r if out is None else _dispatch.write_out("linalg.tensorinv", out, r)


def tensorsolve(A, B, dims=None, *, out=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``.

    Args:
        A (Tensor): a tensor whose leading ``B.ndim`` dims match ``B``'s shape (after
            ``dims`` moved to the end) and whose remaining dims make the shape of ``X``.
        B (Tensor): the right-hand side.
        dims (tuple of ints, optional): dims of ``A`` to move to the end first.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: ``X`` of shape ``A.shape[B.ndim:]`` (after the move).

    Example::

        >>> A = ember.eye(6).reshape(2, 3, 6)
        >>> ember.linalg.tensorsolve(A, ember.ones(2, 3)).shape
        ember.Size([6])
    """
    check_tensor("linalg.tensorsolve", A, "A")
    check_tensor("linalg.tensorsolve", B, "B")
    if dims is not None:
        dims = tuple(dims)
        A = A.movedim(dims, tuple(range(A.dim() - len(dims), A.dim())))
    shape = tuple(A.shape)
    rows, cols = _prod(shape[:B.dim()]), _prod(shape[B.dim():])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    x = solve(A.reshape(rows, cols), B.reshape(rows))
    r = x.reshape(shape[B.dim():])
    return r if out is None else _dispatch.write_out("linalg.tensorsolve", out, r)


# ------------------------------------------------------------------------------------------------
# vander, diagonal


def vander(x, *, N=None):
    """The Vandermonde matrix of ``x``: column ``j`` is ``x ** j``, ``j = 0 .. N-1``
    (increasing powers, unlike ``ember.vander``).

    Args:
        x (Tensor): ``(*, n)``, integer, float or complex.
        N (int, optional): the number of columns (default ``n``); must be greater than 1.

    Returns:
        Tensor: ``(*, n, N)``, of ``x``'s dtype (int64 for integer ``x``).

    Example::

        >>> ember.linalg.vander(ember.tensor([1, 2, 3])).tolist()
        [[1, 1, 1], [1, 2, 4], [1, 3, 9]]
    """
    from .join import stack

    check_tensor("linalg.vander", x, "x")
    if x.dtype.category == 0 or x.dtype in (_dt.float16, _dt.bfloat16):
        raise RuntimeError("linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {x.dtype.scalar_name}")
    if N is None:
        N = x.shape[-1] if x.dim() else 1
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype.category == 1:  # integers accumulate in int64, as PyTorch's do
        x = x.to(_dt.int64)
    # repeated products (not pow, whose derivative at 0 ** 0 is NaN-prone)
    power = x.new_ones(tuple(x.shape))
    columns = [power]
    for _ in range(N - 1):
        power = power * x
        columns.append(power)
    return stack(columns, -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in ``A`` (a view): ``ember.diagonal`` with defaults for
    the last two dims.

    Args:
        A (Tensor): a tensor with at least 2 dims.
        offset (int): which diagonal: 0 the main one, > 0 above it, < 0 below.
        dim1, dim2 (int): the dims holding the matrices.

    Returns:
        Tensor: the diagonals, as the last dim.

    Example::

        >>> ember.linalg.diagonal(ember.arange(9).reshape(3, 3)).tolist()
        [0, 4, 8]
    """
    from .shape import diagonal as _diagonal

    check_tensor("linalg.diagonal", A, "A")
    return _diagonal(A, offset, dim1, dim2)

