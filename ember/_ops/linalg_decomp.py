"""Linear algebra: inverses, determinants, solvers and decompositions (``ember.linalg``).

Kernels call ``xp.linalg`` (LAPACK through NumPy on the CPU, cuSOLVER through CuPy), which
broadcasts over leading batch dims. Backward formulas are the standard matrix-calculus
results, written in ember ops so they differentiate again (NOTE [ Derivative formulas ]).

NOTE [ Linalg dtypes ]
PyTorch's linalg functions take float32, float64, complex64 and complex128 only. Integers
raise "Expected a floating point or complex tensor", float16/bfloat16 raise "Low precision
dtypes not supported"; both RuntimeErrors, raised before any work.

NOTE [ Singular input ]
Failures of the factorisation itself (a singular matrix in ``inv``/``solve``, a matrix that
is not positive-definite in ``cholesky``) raise ``LinAlgError``, a RuntimeError subclass, as
``torch._C._LinAlgError``. The ``*_ex`` variants never raise; they return ``info`` (0 when
the factorisation succeeded) per batch element instead.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .._lazy_import import import_module
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import Tensor, wrap
from ..return_types import make
from ._registry import Op, public, quiet_kernel
from ._xp_compat import solve as xp_solve
from .linalg import _conj, _h, check_out_tuple, check_tensor, matmul


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite...).

    Args:
        *args: the message, as for ``RuntimeError`` (which it subclasses, as in PyTorch).

    Example:
        >>> try:
        ...     ember.linalg.inv(ember.zeros(2, 2))
        ... except ember.linalg.LinAlgError as e:
        ...     print(type(e).__name__)
        _LinAlgError
    """


# PyTorch's class is ``torch._C._LinAlgError``: a program printing ``type(e).__name__``, a
# traceback's last line and a pickle name it so
LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"
LinAlgError.__module__ = "ember._C"


def check_float(op_name, A):
    """See NOTE [ Linalg dtypes ]."""
    d = A.dtype
    if d.category < 2:
        kernel = _INT_KERNEL.get(op_name)
        if kernel is not None:  # torch goes straight to a kernel with no integer version
            if op_name in _NO_KERNEL_WHEN_EMPTY and not A.numel():
                return
            raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')
        raise RuntimeError(
            f"{op_name}: Expected a floating point or complex tensor as input. Got "
            f"{d.scalar_name}")
    if d in (_dt.float16, _dt.bfloat16):
        if op_name in _HALF_OK or op_name in _NO_KERNEL_WHEN_EMPTY and not A.numel():
            return
        kernel = _LAPACK_KERNEL.get(op_name)
        if kernel is not None:  # torch reaches a kernel without a half-precision version
            raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')
        raise RuntimeError(f"{op_name}: Low precision dtypes not supported. Got {d.scalar_name}")


#: the CPU kernel torch names when an op gets float16 / bfloat16 (NotImplementedError); ops
#: not listed raise "Low precision dtypes not supported" (RuntimeError), as torch
_LAPACK_KERNEL = {
    **dict.fromkeys(("linalg.svd", "linalg.svdvals", "svd", "linalg.cond"), "linalg_svd_cpu"),
    **dict.fromkeys(("linalg.det", "linalg.lu", "linalg.lu_factor", "linalg.lu_factor_ex",
                     "linalg.solve", "linalg.solve_ex"), "lu_cpu"),
    **dict.fromkeys(("linalg.cholesky", "linalg.cholesky_ex", "cholesky"), "cholesky_cpu"),
    **dict.fromkeys(("linalg.qr", "qr", "geqrf"), "geqrf_cpu"),
    **dict.fromkeys(("linalg.eigh", "linalg.eigvalsh"), "linalg_eigh_cpu"),
    **dict.fromkeys(("linalg.eig", "linalg.eigvals"), "linalg_eig_out_cpu"),
    **dict.fromkeys(("linalg.ldl_factor", "linalg.ldl_factor_ex"), "ldl_factor_kernel_cpu"),
    **dict.fromkeys(("linalg.solve_triangular", "triangular_solve"), "triangular_solve_cpu"),
    **dict.fromkeys(("linalg.householder_product", "orgqr"), "orgqr_cpu"),
    "cholesky_inverse": "cholesky_inverse_out_cpu",
    "cholesky_solve": "cholesky_solve_cpu",
}
#: the same for integer and bool inputs (the other ops raise "Expected a floating point or
#: complex tensor", a RuntimeError, as torch)
_INT_KERNEL = {
    **dict.fromkeys(("linalg.eigh", "linalg.eigvalsh"), "linalg_eigh_cpu"),
    **dict.fromkeys(("linalg.lu", "linalg.lu_factor", "linalg.lu_factor_ex"), "lu_cpu"),
    **dict.fromkeys(("linalg.solve_triangular", "triangular_solve"), "triangular_solve_cpu"),
    **dict.fromkeys(("linalg.householder_product", "orgqr"), "orgqr_cpu"),
    "geqrf": "geqrf_cpu",
    "cholesky": "cholesky_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu",
    "cholesky_solve": "cholesky_solve_cpu",
}
#: ops torch runs in float16 / bfloat16 (ember computes them in float32, see NOTE [ Half-precision
#: opmath ])
_HALF_OK = frozenset({"linalg.matrix_exp"})
#: ops whose dtype refusal above lives in a kernel that torch never calls for an empty input:
#: an empty tensor of any dtype the tables name goes through them (the results keep its
#: dtype). The QR, eig, triangular-solve and Cholesky-solve/inverse kernels check first.
_NO_KERNEL_WHEN_EMPTY = frozenset({
    "linalg.svd", "linalg.svdvals", "svd", "linalg.det", "linalg.lu", "linalg.lu_factor",
    "linalg.lu_factor_ex", "linalg.solve", "linalg.solve_ex", "linalg.cholesky",
    "linalg.cholesky_ex", "cholesky", "linalg.eigh", "linalg.eigvalsh", "linalg.ldl_factor",
    "linalg.ldl_factor_ex", "linalg.lu_solve", "torch.linalg.ldl_solve",
})


#: the dtypes LAPACK (and NumPy's linalg) computes in
_LAPACK_DTYPES = frozenset(np.dtype(c) for c in "fdFD")


def empty_any_dtype(fn):
    """Let kernel ``fn`` take the empty inputs of other dtypes that ``check_float`` lets
    through (``_NO_KERNEL_WHEN_EMPTY``): it runs on float32 copies of the arrays of the first
    argument's dtype, and its float32 results come back in that dtype (pivots and ``info``
    keep theirs). Arrays of LAPACK dtypes go straight to ``fn``.
    """

    def kernel(xp, *args, **params):
        odd = args[0].dtype
        if odd in _LAPACK_DTYPES:
            return fn(xp, *args, **params)
        f32 = np.dtype(np.float32)
        up = [a.astype(f32) if getattr(a, "dtype", None) == odd else a for a in args]
        r = fn(xp, *up, **params)

        def back(x):
            return x.astype(odd) if getattr(x, "dtype", None) == f32 else x

        return tuple(back(x) for x in r) if isinstance(r, tuple) else back(xp.asarray(r))

    kernel.__name__ = fn.__name__
    kernel.__doc__ = fn.__doc__
    return kernel


def check_square(op_name, A, argname="A"):
    check_tensor(op_name, A, argname)
    if A.dim() < 2:
        raise RuntimeError(
            f"{op_name}: The input tensor {argname} must have at least 2 dimensions.")
    check_float(op_name, A)
    n, m = A.shape[-2], A.shape[-1]
    if n != m:
        raise RuntimeError(
            f"{op_name}: {argname} must be batches of square matrices, but they are {n} by "
            f"{m} matrices")


def check_matrix(op_name, A, argname="A"):
    check_tensor(op_name, A, argname)
    if A.dim() < 2:
        raise RuntimeError(
            f"{op_name}: The input tensor {argname} must have at least 2 dimensions.")
    check_float(op_name, A)


def _eye_like(n, t):
    """A constant identity matrix of ``t``'s dtype and device (for masks in backward
    formulas)."""
    return wrap(_dispatch.xp_of(t._data).eye(n, dtype=t._data.dtype))


def _const_like(array, t):
    """The host array ``array`` as a constant tensor on ``t``'s device."""
    return wrap(_dispatch.xp_of(t._data).asarray(array))


def _bidx(shape, flat):
    return "" if not shape else f"(Batch element {flat}): "


def _first_failure(xp, A, fn):
    """Index of the first batch element on which ``fn`` raises LinAlgError (error path)."""
    batch = A.shape[:-2]
    flat = A.reshape((-1,) + A.shape[-2:])
    for i in range(flat.shape[0]):
        try:
            fn(flat[i])
        except np.linalg.LinAlgError:
            return _bidx(batch, i)
    return ""


# ------------------------------------------------------------------------------------------------
# inv


def _inv_kernel(xp, a):
    try:
        return xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        where = _first_failure(xp, a, xp.linalg.inv)
        pivot = _zero_pivot(a, xp) if xp is np else 0
        which = f"The diagonal element {pivot} is zero, the" if pivot > 0 else "The"
        raise LinAlgError(
            f"linalg.inv: {where}{which} inversion could not be completed because the input "
            "matrix is singular.") from None


def _zero_pivot(A, xp):
    """The 1-based index of the first zero pivot of LAPACK's LU of the first singular
    matrix of ``A`` (PyTorch names it in its error), or 0."""
    lapack = import_module("scipy.linalg.lapack")
    flat = A.reshape((-1,) + A.shape[-2:])
    for m in flat:
        try:
            xp.linalg.inv(m)
        except np.linalg.LinAlgError:
            getrf = lapack.get_lapack_funcs("getrf", (m,))
            with np.errstate(all="ignore"):
                return int(getrf(m)[2])
    return 0


def _inv_vjp(g, _a, *, out):
    h = _h(out)
    return -matmul(h, matmul(g, h))


def _inv_jvp(x_dots, a, *, out):
    return -matmul(out, matmul(x_dots[0], out))


inv_op = Op("linalg_inv", _inv_kernel, vjp=_inv_vjp, jvp=_inv_jvp)


def inv(A, *, out=None):
    """The inverse of a square matrix (or batch). Singular input raises LinAlgError."""
    check_square("linalg.inv", A)
    return _dispatch.apply(inv_op, (A,), {}, out)


@public
def inverse(input, *, out=None):
    """Alias of :func:`ember.linalg.inv`."""
    return inv(input, out=out)


# NOTE [ Solves of singular matrices ]
# torch's inv_ex and solve_ex factor A with LAPACK's getrf and solve with getrs whatever the
# factorisation says: ``info`` is getrf's (the 1-based index of the first zero pivot of U,
# not just "singular"), and the result is what getrs makes of that zero pivot (inf and NaN
# from the triangular solves), not a matrix of NaN. ``_lapack_solve`` runs the same two
# routines per matrix; it runs only once NumPy's solver has refused a matrix.


def _lapack_solve(a, b, trans=0):
    """(solution, info) of ``a x = b`` (``a^T x = b`` with ``trans=1``) by getrf + getrs for
    host batches ``a`` (..., n, n) and ``b`` (..., n, k) of one LAPACK dtype; info has
    ``a``'s batch shape (NOTE [ Solves of singular matrices ])."""
    lapack = import_module("scipy.linalg.lapack")

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    info = np.zeros(a.shape[:-2], np.int32)
    x = np.empty(batch + b.shape[-2:], b.dtype)
    getrf, getrs = lapack.get_lapack_funcs(("getrf", "getrs"), (a,))
    factors = {}
    for i in np.ndindex(*a.shape[:-2]):
        lu, piv, info[i] = getrf(a[i])
        factors[i] = lu, piv
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    with np.errstate(all="ignore"):
        for i in np.ndindex(*batch):
            # the batch element of ``a`` that broadcasts to ``i``
            j = tuple(k if n > 1 else 0 for k, n in zip(i[len(batch) - (a.ndim - 2):],
                                                       a.shape[:-2]))
            lu, piv = factors[j]
            x[i] = getrs(lu, piv, bb[i], trans=trans)[0]
    return x, info


def _singular_info(xp, a):
    """Per-batch info: 0 where ``a`` is invertible, else a positive int (getrf's on host)."""
    if xp is np and a.dtype in _LAPACK_DTYPES:
        return _lapack_solve(a, np.zeros(a.shape[:-1] + (0,), a.dtype))[1]
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    for i in range(flat.shape[0]):
        try:
            np.linalg.inv(flat[i])
        except np.linalg.LinAlgError:
            info[i] = 1
    return xp.asarray(info.reshape(batch))


def _inv_ex_kernel(xp, a, *, check_errors):
    try:
        r = xp.linalg.inv(a)
        info = xp.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        if check_errors:
            raise LinAlgError("linalg.inv_ex: The input matrix is singular.") from None
        if xp is np and a.dtype in _LAPACK_DTYPES:
            eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
            return _lapack_solve(a, eye)
        info = _singular_info(xp, a)
        r = xp.full(a.shape, np.nan, a.dtype)
        ok = info == 0
        if ok.any():
            r[ok] = xp.linalg.inv(a[ok])
    return r, info


def _inv_ex_vjp(g, _a, *, out, check_errors):
    return _inv_vjp(g[0], None, out=out[0])


inv_ex_op = Op("linalg_inv_ex", _inv_ex_kernel, vjp=_inv_ex_vjp, nondiff_outputs=(1,))
# forward mode: d(A^-1) = -A^-1 dA A^-1
inv_ex_op.defjvp(lambda x_dots, _a, *, out, check_errors:
                 (-matmul(out[0], matmul(x_dots[0], out[0])), None))


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: like :func:`inv` but reports failures in ``info``."""
    check_out_tuple("linalg_inv_ex", out)
    check_square("linalg.inv_ex", A)
    r = _dispatch.apply(inv_ex_op, (A,), {"check_errors": check_errors}, out)
    return make("linalg_inv_ex", ["inverse", "info"])(*r)


# ------------------------------------------------------------------------------------------------
# det, slogdet, logdet


# NOTE [ Determinants of non-finite matrices ]
# For a matrix holding inf, NaN or values whose products overflow, the determinant depends on
# the order of the LU factorisation's operations: which pivot wins, whether a column is scaled
# by a reciprocal, when inf meets 0. torch's det/slogdet/logdet factor the transpose of A (its
# row-major memory read as column-major) with LAPACK's unblocked partial-pivoting steps:
# the first largest |x| of the column as pivot (NaN never larger), rows swapped, the column
# below scaled by 1/pivot (divided when |pivot| < tiny; left alone when the pivot is 0), then
# the rank-1 update. ``_getf2`` replays those steps in NumPy for such matrices (a few in a
# random run; the others keep NumPy's LAPACK), which reproduces torch's answers on 2,995 of
# 3,000 random non-finite matrices (the rest cancel +-1e308 differently). torch's lu_factor
# (and lu, solve) factor A itself with the same steps: ``_lu_factor_kernel`` replays them too,
# for complex matrices as well (the pivot search then compares |re| + |im|, as izamax).


def _odd_matrices(xp, a, complex_too=False):
    """Which real (and, with ``complex_too``, complex) matrices of the batch ``a`` hold
    non-finite or near-overflow values (None when none does); see NOTE [ Determinants of
    non-finite matrices ]."""
    if a.dtype.kind not in ("fc" if complex_too else "f") or not a.size:
        return None
    with np.errstate(all="ignore"):
        big = np.sqrt(np.finfo(a.dtype).max)
        odd = (~(_abs1(xp, a) <= big)).any(axis=(-2, -1))
    return odd if odd.any() else None


def _abs1(xp, a):
    """LAPACK's cheap magnitude: ``|re| + |im|`` for complex values (its pivot search), |x|
    for real ones."""
    if a.dtype.kind == "c":
        return xp.abs(a.real) + xp.abs(a.imag)
    return xp.abs(a)


def _getf2(xp, a):
    """The LU steps of NOTE [ Determinants of non-finite matrices ] on the batch ``a`` (B, m,
    n): the packed factors and LAPACK's pivots (B, min(m, n)), 0-based."""
    a = a.copy()
    nb, n = a.shape[0], min(a.shape[-2:])
    rows = xp.arange(nb)
    piv = xp.zeros((nb, n), np.int64)
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(all="ignore"):
        for j in range(n):
            col = _abs1(xp, a[:, j:, j])
            p = xp.argmax(xp.where(xp.isnan(col), -1, col), axis=1)
            p = xp.where(xp.isnan(col[:, 0]), 0, p) + j
            piv[:, j] = p
            nonzero = a[rows, p, j] != 0
            swap = nonzero & (p != j)
            if swap.any():
                rj, rp = a[rows, j].copy(), a[rows, p].copy()
                a[rows, j] = xp.where(swap[:, None], rp, rj)
                a[rows, p] = xp.where(swap[:, None], rj, rp)
            d = a[:, j, j][:, None]
            below = a[:, j + 1:, j]
            scaled = xp.where(xp.abs(d) >= tiny, below * _reciprocal(xp, d), below / d)
            a[:, j + 1:, j] = xp.where(nonzero[:, None], scaled, below)
            a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return a, piv


def _reciprocal(xp, d):
    """``1 / d`` as the LAPACK under torch computes a complex pivot's reciprocal: both parts
    divided by the larger magnitude first, so an infinite part gives NaN (NumPy's division
    gives a signed zero there); real values divide plainly."""
    if d.dtype.kind != "c":
        return 1 / d
    s = xp.maximum(xp.abs(d.real), xp.abs(d.imag))
    re, im = d.real / s, d.imag / s
    den = s * (re * re + im * im)
    r = xp.empty_like(d)
    r.real = re / den
    r.imag = -im / den
    return r


def _replayed_det(xp, a, odd, log):
    """det (``log`` False) or (sign, logabsdet) of the matrices of ``a`` where ``odd``, from
    ``_getf2`` of their transposes; see NOTE [ Determinants of non-finite matrices ]."""
    lu, piv = _getf2(xp, xp.swapaxes(a[odd], -1, -2))
    i = xp.arange(lu.shape[-1])
    d = lu[:, i, i]
    swaps = (piv != i).sum(-1)  # as torch counts them, from the pivots
    perm = xp.where(swaps % 2 == 1, -1.0, 1.0).astype(a.dtype)
    with np.errstate(all="ignore"):
        if not log:
            r = xp.ones(d.shape[0], a.dtype)
            for k in range(d.shape[1]):
                r = r * d[:, k]
            return r * perm
        sg = xp.sign(d)
        sg = xp.where(xp.isnan(sg), 0, sg)
        sign, labs = perm, xp.zeros(d.shape[0], a.dtype)
        for k in range(d.shape[1]):
            sign, labs = sign * sg[:, k], labs + xp.log(xp.abs(d[:, k]))
        return sign, labs


@empty_any_dtype
def _det_kernel(xp, a):
    with np.errstate(all="ignore"):  # NumPy's det warns from its own module on inf/NaN
        r = xp.asarray(xp.linalg.det(a))
    odd = _odd_matrices(xp, a)
    if odd is not None:
        r = r.copy()
        r[odd] = _replayed_det(xp, a, odd, False)
    return _signed_zeros(xp, a, r)


def _signed_zeros(xp, a, r):
    """``r`` (determinants or their signs) with PyTorch's sign on each zero: its det is the
    pivots' sign times the product of the LU diagonal (of A^T for a real matrix), so a
    singular matrix's det can be -0.0, where NumPy's is 0.0."""
    zero = r == 0
    if xp is not np or a.dtype.kind not in "fc" or not zero.any():
        return r
    m = a[zero] if a.dtype.kind == "c" else np.swapaxes(a[zero], -1, -2)
    lu, piv = _lu_of(m)
    i = np.arange(lu.shape[-1])
    odd_swaps = (piv != i).sum(-1) % 2 == 1
    with np.errstate(all="ignore"):
        d = np.where(odd_swaps, -1, 1).astype(a.dtype) * np.prod(lu[:, i, i], axis=-1)
    r = r.copy()
    r[zero] = np.where(d == 0, d, r[zero])
    return r


# NOTE [ Determinant gradients at singular matrices ]
# The gradient of det(A) is det(A) A^-H, of log|det A| A^-H (times the incoming gradient):
# neither may invert A, which is singular exactly where a user's matrix is rank-deficient.
# PyTorch solves ``A^H X = diag(d)`` with the LU factors the forward pass made (of A^T for a
# contiguous real A, else of A), so the values at a singular A are what that solve gives:
#   * det, first order: a zero pivot of the factors is first replaced by the dtype's eps
#     (det is smooth, so the nearby nonsingular matrix's gradient is the limit); the
#     right-hand side is then ``grad * det`` = 0, and the gradient is 0 (with LAPACK's signed
#     zeros) for a singular A;
#   * slogdet/logdet, first order: the zero pivot stays, and the solve divides by it: +-inf
#     and NaN, as log|det| has no derivative there;
#   * with a graph (``create_graph=True``): det takes ``solve(A^H, diag(d))`` where
#     ``|det| >= 100 eps`` and, for the others, the SVD form ``U diag(dprod(S)) V^H`` with
#     the product's gradient computed without division (``_prod_grad_without_division``);
#     slogdet/logdet take the solve alone, which refuses a singular A as torch's does.
# ``_lu_solve_grad`` is the first-order solve, ``_det_grad_graph`` the graph-building one.


def _under_transform():
    """Whether vmap or forward AD is on the mode stack: the determinant gradients then keep
    the plain ``A^-H`` form, built of ops those transforms batch and differentiate (the
    singular-matrix forms read values on the host and branch on them)."""
    return _dispatch.transform_on()


def _lu_solve_grad(a, d, perturb):
    """``A^-H diag(d)`` for a batch of scalars ``d``, solved with A's LU factors as PyTorch's
    first-order det/slogdet formulas solve (NOTE [ Determinant gradients at singular
    matrices ]); ``perturb``: zero pivots become eps first (det's form)."""
    x = a._data
    xp = _dispatch.backends_by_type[type(x)].xp
    host = x if xp is np else x.get()
    if not host.size:
        return wrap(xp.zeros(x.shape, x.dtype))
    by_t = host.dtype.kind != "c" and a.is_contiguous()
    lu, piv = _lu_of(np.swapaxes(host, -1, -2) if by_t else host)
    n = host.shape[-1]
    i = np.arange(n)
    if perturb:
        eps = np.finfo(host.dtype).eps
        diag = lu[..., i, i]
        lu[..., i, i] = diag + np.where(diag == 0, eps, 0).astype(diag.dtype)
    dd = d._data if xp is np else d._data.get()
    rhs = np.zeros(host.shape, host.dtype)
    rhs[..., i, i] = np.asarray(dd, host.dtype)[..., None]
    with np.errstate(all="ignore"):
        r = _lu_solve_steps(lu, piv, rhs, not by_t)
    return wrap(xp.asarray(r))


def _lu_of(a):
    """(LU, 0-based pivots) of the batch ``a`` on the host: LAPACK's getrf."""
    from .linalg_func import _lu_factor_kernel

    lu, piv = _lu_factor_kernel(np, a)
    return lu, piv.astype(np.int64) - 1


def _lu_solve_steps(lu, piv, b, adjoint):
    """``A X = B`` (``A^H X = B`` where ``adjoint``) from A's packed LU factors, step by step
    as LAPACK's getrs: the row swaps, then the triangular solves, column by column with no
    step skipped for a zero (so a zero pivot gives inf and NaN, and zeros keep their signs)."""
    x = b.copy()
    n = lu.shape[-1]
    rows = np.arange(int(np.prod(x.shape[:-2], dtype=np.int64)))
    flat_x = x.reshape((-1,) + x.shape[-2:])
    flat_lu = lu.reshape((-1, n, n))
    flat_piv = piv.reshape((-1, n))
    if not adjoint:
        for k in range(n):
            p = flat_piv[:, k]
            xk, xp_ = flat_x[rows, k].copy(), flat_x[rows, p].copy()
            flat_x[rows, k], flat_x[rows, p] = xp_, xk
        for k in range(n - 1):  # L, unit diagonal
            flat_x[:, k + 1:] -= flat_lu[:, k + 1:, k, None] * flat_x[:, k, None]
        for k in range(n - 1, -1, -1):  # U
            flat_x[:, k] /= flat_lu[:, k, k, None]
            flat_x[:, :k] -= flat_lu[:, :k, k, None] * flat_x[:, k, None]
        return x
    c = np.conj(flat_lu)
    for k in range(n):  # U^H: lower, from the top
        flat_x[:, k] -= np.einsum("bj,bjc->bc", c[:, :k, k], flat_x[:, :k])
        pivot = c[:, k, k, None]
        flat_x[:, k] /= pivot
        if c.dtype.kind == "c":  # a complex division by zero is NaN in LAPACK's, not inf
            flat_x[:, k] = np.where(pivot == 0, np.nan + 0j * np.nan, flat_x[:, k])
    for k in range(n - 1, -1, -1):  # L^H: upper, unit diagonal, from the bottom
        flat_x[:, k] -= np.einsum("bj,bjc->bc", c[:, k + 1:, k], flat_x[:, k + 1:])
    for k in range(n - 1, -1, -1):
        p = flat_piv[:, k]
        xk, xp_ = flat_x[rows, k].copy(), flat_x[rows, p].copy()
        flat_x[rows, k], flat_x[rows, p] = xp_, xk
    return x


def _prod_grad_without_division(g, s):
    """The gradient of ``prod(s, -1)`` times ``g`` (one value per row), as products of the
    values before and after each one, so that zeros need no division."""
    from .join import cat

    n = s.shape[-1]
    if n == 1:
        return g.expand(s.shape)
    ones = s.new_ones(tuple(s.shape[:-1]) + (1,))
    before = cat([ones, s[..., :n - 1]], -1).cumprod(-1)
    after = cat([ones, s[..., 1:].flip(-1)], -1).cumprod(-1).flip(-1)
    return g * _conj(before * after)


def _det_grad_singular(a, g):
    """det's gradient from the SVD ``A = U S V^H``: ``U diag(g * d prod(S)) V^H`` with the
    phases ``det(U) det(V^H)`` folded in (NOTE [ Determinant gradients at singular matrices ])."""
    U, S, Vh = svd(a)
    alpha = det(U) * det(Vh)
    D = _prod_grad_without_division((g * alpha).unsqueeze(-1), S.to(a.dtype))
    return matmul(U * D.unsqueeze(-2), Vh)


def _diag_of(d, n):
    """The batch of ``n x n`` diagonal matrices with the values ``d``."""
    from .join import diag_embed

    return diag_embed(d.unsqueeze(-1).expand(tuple(d.shape) + (n,)))


def _det_grad_graph(g, a, out):
    """det's gradient as ember ops, for a graph (NOTE [ Determinant gradients at singular
    matrices ]): the solve where ``|det| >= 100 eps``, the SVD form elsewhere."""
    from .join import cat

    n = a.shape[-1]
    eps = float(np.finfo(a._data.dtype).eps)
    small = (out.abs() < 100 * eps).reshape(-1)
    d = g * _conj(out)
    if not bool(small.any()):
        return solve(_h(a), _diag_of(d, n))
    if bool(small.all()):
        return _det_grad_singular(a, g)
    flat_a = a.reshape((-1, n, n))
    bs = (-1,)
    g_flat = g.expand(out.shape).reshape(bs)
    d_flat = d.reshape(bs)
    sing = small.nonzero().reshape(bs)
    fine = (~small).nonzero().reshape(bs)
    parts = cat([_det_grad_singular(flat_a[sing], g_flat[sing]),
                 solve(_h(flat_a[fine]), _diag_of(d_flat[fine], n))], 0)
    return parts[cat([sing, fine]).argsort()].reshape(a.shape)


def _det_vjp(g, a, *, out):
    # NOTE [ Determinant gradients at singular matrices ]
    if a.shape[-1] == 1:  # a 1 x 1 matrix's cofactor is 1, singular or not (torch's value)
        return g.unsqueeze(-1).unsqueeze(-1).expand(a.shape)
    if _under_transform():
        # the plain form, but no refusal of a singular A: where |det| < 100 eps the SVD
        # form, chosen element-wise (values under vmap cannot steer a branch), as torch's
        plain = (g * _conj(out)).unsqueeze(-1).unsqueeze(-1) * _h(inv_ex(a).inverse)
        eps = float(np.finfo(a._data.dtype).eps)
        small = (out.abs() < 100 * eps).unsqueeze(-1).unsqueeze(-1)
        from .pointwise import where

        return where(small, _det_grad_singular(a, g), plain)
    if _dispatch.state.grad_enabled:
        return _det_grad_graph(g, a, out)
    return _lu_solve_grad(a, g * _conj(out), True)


def _lu_trace(a, d, fill_zero_pivots):
    """``tr(A^-1 dA)`` through A's LU factors, with no check for a singular ``A``
    (NOTE [ Determinant tangents at singular matrices ])."""
    from .join import diag_embed
    from .linalg_extra import lu_factor_ex
    from .linalg_func import lu_solve
    from .pointwise import where

    lu, piv, _ = lu_factor_ex(a)
    if fill_zero_pivots:
        eps = float(np.finfo(lu._data.dtype).eps)
        lu = lu + diag_embed(where(lu.diagonal(0, -2, -1) == 0, eps, 0.0).to(lu.dtype))
    return lu_solve(lu, piv, d).diagonal(0, -2, -1).sum(-1)


# NOTE [ Determinant tangents at singular matrices ]
# Forward mode takes ``d det = det * tr(A^-1 dA)`` and ``d log|det| = tr(A^-1 dA)`` as torch
# does: through A's LU factors, never an inverse that refuses a singular A. det's tangent
# reads a zero pivot as eps (the determinant is smooth, and the product with det = 0 is a
# signed zero there); slogdet's reads the LU as it is, so a singular A's log|det| tangent
# is the solve's inf or NaN, torch's values.
def _det_jvp(x_dots, a, *, out):
    return out * _lu_trace(a, x_dots[0], True)


det_op = Op("linalg_det", _det_kernel, vjp=_det_vjp, jvp=_det_jvp)


def det(A, *, out=None):
    """The determinant of a square matrix (or batch).

    Differences from PyTorch:
        Gradients for NaN, infinite and near-overflow inputs: ember can return a huge finite
        gradient where PyTorch returns NaN.
    """
    check_square("linalg.det", A)
    return _dispatch.apply(det_op, (A,), {}, out)


@public(name="det")
def _det_public(input):
    """The determinant of a square matrix (or batch)."""
    return det(input)


@quiet_kernel
def _slogdet_kernel(xp, a):
    s, l = xp.linalg.slogdet(a)
    s, l = xp.asarray(s).copy(), xp.asarray(l).copy()
    odd = _odd_matrices(xp, a)
    if odd is not None:  # NOTE [ Determinants of non-finite matrices ]
        s[odd], l[odd] = _replayed_det(xp, a, odd, True)
    return _signed_zeros(xp, a, s), l


def _logabsdet_grad(a, c):
    """``A^-H diag(c)``: log|det A|'s gradient for the incoming ``c`` (NOTE [ Determinant
    gradients at singular matrices ])."""
    if _under_transform():
        return c.unsqueeze(-1).unsqueeze(-1) * _h(inv(a))
    if _dispatch.state.grad_enabled:
        return solve(_h(a), _diag_of(c, a.shape[-1]))
    return _lu_solve_grad(a, c, False)


def _slogdet_vjp(g, a, *, out):
    g_sign, g_log = g
    if g_log is None and g_sign is None:
        return None
    if a.is_complex():
        sign = out[0]
        c = 0
        if g_log is not None:
            c = g_log
        if g_sign is not None:
            c = c + 1j * (g_sign * _conj(sign)).imag
        return _logabsdet_grad(a, c)
    if g_log is None:
        return None
    return _logabsdet_grad(a, g_log)


slogdet_op = Op("linalg_slogdet", _slogdet_kernel, vjp=_slogdet_vjp)


@slogdet_op.defjvp
def _slogdet_jvp(x_dots, a, *, out):
    # d log|det A| = Re tr(A^-1 dA); the sign moves only for complex A: sign * i Im(...)
    t = _lu_trace(a, x_dots[0], False)  # NOTE [ Determinant tangents at singular matrices ]
    if a.is_complex():
        return out[0] * (1j * t.imag), t.real
    return None, t


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant, stable where ``det`` over/underflows.

    Differences from PyTorch:
        Singular, infinite and near-overflow inputs: ``sign`` can differ (ember can give -1 or 0
        where PyTorch gives -0.0); complex inputs with inf: ``logabsdet`` can be inf where
        PyTorch's is NaN.
    """
    check_out_tuple("linalg_slogdet", out)
    check_square("linalg.slogdet", A)
    r = _dispatch.apply(slogdet_op, (A,), {}, out)
    return make("linalg_slogdet", ["sign", "logabsdet"])(*r)


@public(name="slogdet")
def _slogdet_public(input, *, out=None):
    """``(sign, logabsdet)`` of the determinant.

    Differences from PyTorch:
        Singular, infinite and near-overflow inputs: ``sign`` can differ (ember can give -1 or 0
        where PyTorch gives -0.0); complex inputs with inf: ``logabsdet`` can be inf where
        PyTorch's is NaN.
    """
    check_out_tuple("slogdet", out)
    check_square("slogdet", input)
    r = _dispatch.apply(slogdet_op, (input,), {}, out)
    return make("slogdet", ["sign", "logabsdet"])(*r)


def _logdet_kernel(xp, a):
    s, l = _slogdet_kernel(xp, a)
    if a.dtype.kind == "c":
        # torch's complex add scales the real term by a complex 1 (NOTE [ Complex add and
        # sub ]): a singular matrix's -inf brings a NaN imaginary part
        with np.errstate(invalid="ignore"):
            return xp.asarray(xp.log(s) + l.astype(s.dtype) * s.dtype.type(1))
    return xp.asarray(xp.where(s < 0, np.nan, l)).astype(a.dtype)


def _logdet_vjp(g, a):
    if not a.is_complex():  # a negative determinant's NaN takes no gradient, as torch's
        g = g.masked_fill(slogdet(a.detach())[0] < 0, 0)
    return _logabsdet_grad(a, g)


logdet_op = Op("logdet", _logdet_kernel, vjp=_logdet_vjp)


@logdet_op.defjvp
def _logdet_jvp(x_dots, a, *, out):
    # logdet is slogdet's log(sign) + log|det| (complex) or log|det| where the sign is not -1
    # (real): the tangents of those pieces, in torch's order (NOTE [ Determinant tangents at
    # singular matrices ]), so a singular complex A's tangent is 0/0
    t = _lu_trace(a, x_dots[0], False)
    sign = slogdet(a.detach())[0]
    if a.is_complex():
        return t.imag * (1j * sign) / sign + t.real
    from .pointwise import where

    return where(sign < 0, 0.0, t)


@public
def logdet(input):
    """``log(det(input))``: nan for a negative determinant, -inf for a singular matrix."""
    check_square("logdet", input)
    return _dispatch.apply(logdet_op, (input,), {})


# ------------------------------------------------------------------------------------------------
# solve


@empty_any_dtype
def _solve_kernel(xp, a, b, *, left, vec):
    if vec:
        b = b[..., None]
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a = xp.swapaxes(a, -1, -2)
        b = xp.swapaxes(b, -1, -2)
    try:
        x = xp_solve(xp, a, b)
    except np.linalg.LinAlgError:
        where = _first_failure(xp, a, xp.linalg.inv)
        raise LinAlgError(
            f"torch.linalg.solve: {where}The solver failed because the input matrix is "
            "singular.") from None
    if not left:
        x = xp.swapaxes(x, -1, -2)
    return x[..., 0] if vec else x


def _solve_vjp(g, a, _b, *, out, left, vec):
    x = out
    if vec:
        g, x = g.unsqueeze(-1), x.unsqueeze(-1)
    if left:
        gb = solve(_h(a), g)
        ga = -matmul(gb, _h(x))
    else:
        gb = solve(_h(a), g, left=False)
        ga = -matmul(_h(x), gb)
    if vec:
        gb = gb.squeeze(-1)
    return ga, gb


def _solve_jvp(x_dots, a, _b, *, out, left, vec):
    # A X = B: A dX = dB - dA X (left); X A = B: dX A = dB - X dA (right)
    da, db = x_dots
    x = out.unsqueeze(-1) if vec else out
    if db is not None and vec:
        db = db.unsqueeze(-1)
    rhs = db
    if da is not None:
        t = -matmul(da, x) if left else -matmul(x, da)
        rhs = t if rhs is None else rhs + t
    r = solve(a, rhs, left=left)
    return r.squeeze(-1) if vec else r


solve_op = Op("linalg_solve", _solve_kernel, vjp=_solve_vjp, jvp=_solve_jvp)


def _solve_args(op_name, A, B, left):
    check_square(op_name, A)
    check_tensor(op_name, B, "B")
    if A.numel() or B.dtype not in (_dt.float16, _dt.bfloat16):
        # (torch's LU kernel refuses half precision; it never runs on an empty A, whatever
        # B holds)
        check_float(op_name, B)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(
            f"{op_name}: Expected A and B to have the same dtype, but found A of type "
            f"{A.dtype.scalar_name} and B of type {B.dtype.scalar_name} instead")
    # PyTorch treats B as a (batch of) vector(s) when it is 1-D or A's batch of vectors
    vec = B.dim() == 1 or (left and B.dim() == A.dim() - 1 and
                           tuple(B.shape) == tuple(A.shape[:-1]))
    n = A.shape[-1]
    k = B.shape[-1] if vec else (B.shape[-2] if left else B.shape[-1])
    if B.dim() == 0 or k != n:
        side = "AX = B" if left else "XA = B"
        bs = f"{B.shape[-1]}x1" if vec else _shape2(B)
        raise RuntimeError(
            f"{op_name}: Incompatible shapes of A and B for the equation {side} "
            f"({n}x{n} and {bs})")
    try:
        np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-1] if vec else B.shape[:-2]))
    except ValueError:
        raise RuntimeError(
            f"{op_name}: the batch dimensions of A {list(A.shape)} and B {list(B.shape)} "
            "cannot be broadcast together") from None
    return vec


def _shape2(t):
    return "x".join(str(s) for s in t.shape[-2:]) if t.dim() >= 2 else str(t.shape[-1])


def solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``)."""
    vec = _solve_args("linalg.solve", A, B, left)
    return _dispatch.apply(solve_op, (A, B), {"left": left, "vec": vec}, out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)``: :func:`solve` reporting singular input in ``info``."""
    check_out_tuple("linalg_solve_ex", out)
    vec = _solve_args("linalg.solve", A, B, left)  # (torch's refusals name linalg.solve)
    info_shape = tuple(A.shape[:-2])
    try:
        x = _dispatch.apply(solve_op, (A, B), {"left": left, "vec": vec})
        info = wrap(_dispatch.xp_of(A._data).zeros(info_shape, np.int32))
    except LinAlgError:
        if check_errors:
            raise
        xp = _dispatch.xp_of(A._data)  # results on A's device
        shape = np.broadcast_shapes(tuple(B.shape), tuple(A.shape[:-2]) + (
            (A.shape[-1],) if vec else tuple(B.shape[-2:])))
        a, b = A._data, B._data
        if xp is np and a.dtype in _LAPACK_DTYPES:
            # NOTE [ Solves of singular matrices ]: X A = B is A^T X^T = B^T
            b = b[..., None] if vec else b if left else np.swapaxes(b, -1, -2)
            x, info = _lapack_solve(a, b, 0 if left else 1)
            x = x[..., 0] if vec else x if left else np.swapaxes(x, -1, -2)
            info, x = wrap(info), wrap(np.ascontiguousarray(x.reshape(shape)))
        else:
            info = wrap(_singular_info(xp, a))
            x = wrap(xp.full(shape, np.nan, b.dtype))
    r = make("linalg_solve_ex", ["result", "info"])(x, info)
    if out is not None:
        _dispatch.write_out("linalg.solve_ex", out, tuple(r))
        return make("linalg_solve_ex", ["result", "info"])(*out)
    return r


# ------------------------------------------------------------------------------------------------
# triangular solve


def _tri(xp, a, upper, unit):
    t = xp.triu(a) if upper else xp.tril(a)
    if unit:
        n = a.shape[-1]
        t = t.copy()
        t[..., xp.arange(n), xp.arange(n)] = 1
    return t


def _trsm(a, b, upper, left, unit):
    """BLAS trsm over the broadcast batch of ``a`` and ``b`` (host arrays): no singularity
    check, so a zero on the diagonal gives inf and NaN, as torch's."""
    get_blas_funcs = import_module("scipy.linalg.blas").get_blas_funcs

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if not math.prod(batch + b.shape[-2:]):
        return np.zeros(batch + b.shape[-2:], b.dtype)
    a = np.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
    out = np.array(np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:]))
    trsm = get_blas_funcs("trsm", (a, out))
    for i in range(out.shape[0]):
        out[i] = trsm(1.0, a[i], out[i], side=0 if left else 1, lower=0 if upper else 1,
                      diag=1 if unit else 0)
    return out.reshape(batch + b.shape[-2:])


def _solve_triangular_kernel(xp, a, b, *, upper, left, unitriangular):
    if xp is np and a.dtype in _LAPACK_DTYPES:
        return _trsm(a, b, upper, left, unitriangular)
    t = _tri(xp, a, upper, unitriangular)
    if left:
        return xp_solve(xp, t, b)
    return xp.swapaxes(xp_solve(xp, xp.swapaxes(t, -1, -2), xp.swapaxes(b, -1, -2)), -1, -2)


def _solve_triangular_vjp(g, a, _b, *, out, upper, left, unitriangular):
    ah = _h(a)
    gb = solve_triangular(ah, g, upper=not upper, left=left, unitriangular=unitriangular)
    ga = -matmul(gb, _h(out)) if left else -matmul(_h(out), gb)
    # the triangle A's solve read, selected (not multiplied by a mask: inf and NaN outside it
    # must not leak in as NaN)
    k = 1 if unitriangular else 0
    return (ga.triu(k) if upper else ga.tril(-k)), gb


solve_triangular_op = Op("linalg_solve_triangular", _solve_triangular_kernel,
                         vjp=_solve_triangular_vjp)


@solve_triangular_op.defjvp
def _solve_triangular_jvp(x_dots, a, b, *, out, upper, left, unitriangular):
    # X = T^-1 B: dX = T^-1 (dB - dT X) (left), (dB - X dT) T^-1 (right), where dT is dA's
    # triangle (strict with a unit diagonal): only that triangle of A is read
    ad, bd = x_dots
    rhs = bd
    if ad is not None:
        n = a.shape[-1]
        mask = np.triu(np.ones((n, n)), 1 if unitriangular else 0)
        if not upper:
            mask = mask.T
        dt = ad * _const_like(mask.astype(ad._data.dtype), ad)
        t = -matmul(dt, out) if left else -matmul(out, dt)
        rhs = t if rhs is None else rhs + t
    return solve_triangular(a, rhs, upper=upper, left=left, unitriangular=unitriangular)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``; only the
    triangle named by ``upper`` is read. ``B`` is converted to ``A``'s dtype, as torch does;
    a zero on the diagonal gives inf and NaN entries (no error), as torch's.
    """
    op_name = "linalg.solve_triangular"
    check_square(op_name, A)
    check_tensor(op_name, B, "B")
    if B.dim() < 2:
        raise RuntimeError(
            f"{op_name}: The input tensor B must have at least 2 dimensions.")
    if A._data.dtype != B._data.dtype:
        B = B.to(A.dtype)
    k = B.shape[-2] if left else B.shape[-1]
    if k != A.shape[-1]:
        raise RuntimeError(
            f"{op_name}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({_shape2(A)} and {_shape2(B)})")
    params = {"upper": bool(upper), "left": bool(left), "unitriangular": bool(unitriangular)}
    return _dispatch.apply(solve_triangular_op, (A, B), params, out)


# ------------------------------------------------------------------------------------------------
# cholesky


def _potrf(xp, a):
    """``xp.linalg.cholesky(a)``, raising LinAlgError where LAPACK's potrf reports failure:
    NumPy lets a NaN pivot through (a NaN factor), torch's potrf refuses it."""
    l = xp.linalg.cholesky(a)
    if holds_values(l) and bool(xp.isnan(xp.diagonal(l, axis1=-2, axis2=-1)).any()):
        raise np.linalg.LinAlgError("NaN pivot")
    return l


def _not_pd(op_name, xp, a):
    where = _first_failure(xp, a, lambda m: _potrf(xp, m))
    order = ""
    if xp is np:
        flat = a.reshape((-1,) + a.shape[-2:])
        i = next((i for i in range(flat.shape[0]) if _chol_partial(flat[i])[0]), None)
        if i is not None:
            k = _chol_partial(flat[i])[0]
            order = f" (the leading minor of order {k} is not positive-definite)"
    return LinAlgError(
        f"{op_name}: {where}The factorization could not be completed because the input is "
        f"not positive-definite{order}.")


@empty_any_dtype
def _cholesky_kernel(xp, a, *, upper, partial=False):
    # upper=True reads the upper triangle, as LAPACK's uplo='U': U = L^H for the lower
    # factor L of A^H, whose lower triangle is the upper one of A conjugated
    if upper:
        a = xp.conj(xp.swapaxes(a, -1, -2))
    try:
        l = _potrf(xp, a)
    except np.linalg.LinAlgError:
        if not partial:
            raise _not_pd("linalg.cholesky", xp, a) from None
        l = _potf2_batched(xp, a)
    return xp.conj(xp.swapaxes(l, -1, -2)) if upper else l


def _phi_mask(n, t):
    """Lower triangle of ones with 0.5 on the diagonal."""
    return _const_like((np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(t._data.dtype), t)


def _cholesky_jvp(x_dots, _a, *, out, upper, partial=False):
    # A = L L^H: dL = L Phi(L^-1 dA L^-H), Phi the lower triangle with half the diagonal
    L = _h(out) if upper else out
    n = L.shape[-1]
    S = solve_triangular(L, x_dots[0], upper=False)
    S = solve_triangular(_h(L), S, upper=True, left=False)
    dL = matmul(L, S * _phi_mask(n, L))
    return _h(dL) if upper else dL


def _cholesky_vjp(g, _a, *, out, upper, partial=False):
    # A = L L^H.  gA = L^-H Phi(L^H gL) L^-1, symmetrised (Murray 2016)
    L = _h(out) if upper else out
    gL = _h(g) if upper else g
    n = L.shape[-1]
    P = matmul(_h(L), gL) * _phi_mask(n, L)
    # S = L^-H P L^-1
    S = solve_triangular(_h(L), P, upper=True)
    S = solve_triangular(L, S, upper=False, left=False)
    return (S + _h(S)) * 0.5


cholesky_op = Op("linalg_cholesky", _cholesky_kernel, vjp=_cholesky_vjp, jvp=_cholesky_jvp)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor ``L`` (``A = L L^H``) of a Hermitian positive-definite matrix;
    ``upper=True`` returns ``L^H``. Only the lower triangle of ``A`` is read."""
    check_square("linalg.cholesky", A)
    return _dispatch.apply(cholesky_op, (A,), {"upper": bool(upper)}, out)


@public(name="cholesky")
def _cholesky_public(input, upper=False, *, out=None):
    """Deprecated form of :func:`ember.linalg.cholesky`."""
    check_square("cholesky", input)
    r = _dispatch.apply(cholesky_op, (input,), {"upper": bool(upper)})
    # unlike linalg.cholesky, the old form casts into out (NOTE [ out= dtypes ])
    return r if out is None else _dispatch.write_out("cholesky", out, r, False)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: :func:`cholesky` reporting failures in ``info``.

    Where the factorisation fails (``info = k > 0``: the leading minor of order ``k`` is not
    positive-definite), ``L`` holds LAPACK's partial factor: the first ``k - 1`` columns
    factored, the failing pivot's value on the diagonal, the rest of ``A``'s triangle as read.
    See NOTE [ Partial Cholesky factors ].
    """
    check_out_tuple("linalg_cholesky_ex", out)
    check_square("linalg.cholesky_ex", A)
    params = {"upper": bool(upper), "partial": not check_errors}
    L = _dispatch.apply(cholesky_op, (A,), params)
    info = wrap(_chol_info(L._data))
    r = make("linalg_cholesky_ex", ["L", "info"])(L, info)
    if out is not None:
        _dispatch.write_out("linalg.cholesky_ex", out, tuple(r))
        return make("linalg_cholesky_ex", ["L", "info"])(*out)
    return r


# NOTE [ Partial Cholesky factors ]
# torch's cholesky_ex returns what LAPACK's potrf left behind when it stops: for the small
# matrices it is given, the unblocked left-looking potf2 order (column j is finished from
# the columns before it), which stores the first non-positive (or NaN) pivot ``ajj`` on the
# diagonal unrooted and leaves the later columns as read. NumPy's cholesky only raises, so
# the failing matrices are redone here in that order; every pivot of a finished factor is
# > 0 (a square root of something > 0), so ``info`` is read off the diagonal.


def _potf2(a):
    """(info, L): LAPACK's unblocked lower Cholesky of one matrix, as far as it gets."""
    n = a.shape[-1]
    L = np.tril(a)
    with np.errstate(all="ignore"):
        for j in range(n):
            row = L[j, :j]
            ajj = L[j, j].real - np.vdot(row, row).real
            if not ajj > 0:  # NaN too
                L[j, j] = ajj
                return j + 1, L
            ajj = np.sqrt(ajj)
            L[j, j] = ajj
            if j + 1 < n:
                L[j + 1:, j] = (L[j + 1:, j] - L[j + 1:, :j] @ np.conj(row)) / ajj
    return 0, L


def _potf2_batched(xp, a):
    """:func:`_potf2`'s factors of every matrix of a batch (the failure path)."""
    host = a if xp is np else a.get()
    flat = host.reshape((-1,) + host.shape[-2:])
    Ls = np.stack([_potf2(m)[1] for m in flat]) if flat.shape[0] else flat.copy()
    Ls = Ls.reshape(host.shape)
    return Ls if xp is np else xp.asarray(Ls)


def _chol_info(l):
    """LAPACK's ``info`` of each factor of :func:`_potf2_batched` (0 where it finished)."""
    xp = _dispatch.xp_of(l)
    if not l.shape[-1]:
        return xp.zeros(l.shape[:-2], np.int32)
    d = xp.diagonal(l, axis1=-2, axis2=-1).real
    with np.errstate(invalid="ignore"):
        bad = ~(d > 0)
    return xp.where(bad.any(-1), bad.argmax(-1) + 1, 0).astype(np.int32)


def _chol_partial(a):
    """(info, L) for one matrix: info is the order of the first non-PD leading minor."""
    return _potf2(a)


def _cholesky_solve_kernel(xp, b, l, *, upper):
    # only the named triangle of the factor is read
    if xp is np and b.size and l.size:
        return _potrs(b, l, upper)
    if not b.size or not l.size:  # nothing to solve: no solve (NumPy's refuses a singular A)
        batch = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
        return xp.zeros(batch + b.shape[-2:], b.dtype)
    L = xp.conj(xp.swapaxes(xp.triu(l), -1, -2)) if upper else xp.tril(l)
    A = xp.matmul(L, xp.conj(xp.swapaxes(L, -1, -2)))
    return xp_solve(xp, A, b)


def _potrs(b, l, upper):
    """LAPACK's ``?potrs`` per matrix (torch's kernel): two triangular solves with the
    factor, so a singular factor gives inf / NaN, not an error."""
    lapack = import_module("scipy.linalg.lapack")

    batch = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
    n, k = b.shape[-2:]
    bs = np.broadcast_to(b, batch + (n, k)).reshape((-1, n, k))
    ls = np.broadcast_to(l, batch + (n, n)).reshape((-1, n, n))
    potrs = lapack.get_lapack_funcs("potrs", (ls,))
    out = np.empty(bs.shape, b.dtype)
    with np.errstate(all="ignore"):
        for i in range(bs.shape[0]):
            out[i] = potrs(ls[i], bs[i], lower=not upper)[0]
    return out.reshape(batch + (n, k))


def _cholesky_solve_vjp(g, b, l, *, out, upper):
    n = l.shape[-1]
    low = _const_like(np.tril(np.ones((n, n))).astype(l._data.dtype), l)
    L = _h(l * low.mT) if upper else l * low
    A = matmul(L, _h(L))
    gb = solve(A, g)  # A is Hermitian
    gA = -matmul(gb, _h(out))
    # A = L L^H (or U^H U): torch differentiates the whole factor as given, not only the
    # triangle the kernel reads, so the factor's gradient is unmasked
    sym = gA + _h(gA)
    return gb, (matmul(l, sym) if upper else matmul(sym, l))


cholesky_solve_op = Op("cholesky_solve", _cholesky_solve_kernel, vjp=_cholesky_solve_vjp)


@cholesky_solve_op.defjvp
def _cholesky_solve_jvp(x_dots, b, l, *, out, upper):
    # A X = B with A = L L^H (U^H U), the whole factor as given as in the vjp:
    # dX = A^-1 (dB - dA X), dA = K + K^H, K = dL L^H (U^H dU)
    dB, dL = x_dots
    rhs = dB
    if dL is not None:
        K = matmul(_h(l), dL) if upper else matmul(dL, _h(l))
        t = -matmul(K + _h(K), out)
        rhs = t if rhs is None else rhs + t
    return cholesky_solve(rhs, l, upper)


@public
def cholesky_solve(input, input2, upper=False, *, out=None):
    """Solve ``A X = input`` given the Cholesky factor ``input2`` of ``A``."""
    check_tensor("cholesky_solve", input)
    check_square("cholesky_solve", input2, "input2")
    if input._data.dtype != input2._data.dtype:
        raise RuntimeError(
            f"cholesky_solve: Expected b and A to have the same dtype, but found b of type "
            f"{input.dtype.scalar_name} and A of type {input2.dtype.scalar_name} instead.")
    if input.dim() < 2 or input.shape[-2] != input2.shape[-1]:
        raise RuntimeError(
            f"cholesky_solve: Incompatible matrix sizes for cholesky_solve: each b matrix is "
            f"{_shape2(input)} but each A matrix is {_shape2(input2)}")
    return _dispatch.apply(cholesky_solve_op, (input, input2), {"upper": bool(upper)}, out)


# ------------------------------------------------------------------------------------------------
# qr


def _qr_kernel(xp, a, *, mode):
    a = a + 0.0  # a -0.0 pivot counts as +0.0, as in MKL (see _geqrf_kernel)
    if mode == "r":
        r = xp.linalg.qr(a, mode="r")
        return xp.empty((0,), a.dtype), r
    q, r = xp.linalg.qr(a, mode=mode)
    return q, r


def _copyltu(M):
    """The lower triangle of ``M`` mirrored (conjugated) onto the upper one."""
    n = M.shape[-1]
    low = M * _const_like(np.tril(np.ones((n, n)), -1).astype(M._data.dtype), M)
    eye = _eye_like(n, M)
    d = M * eye
    if M.is_complex():
        d = d.real * eye
    return low + _h(low) + d


def _qr_vjp(g, a, *, out=None, mode):
    # Walter & Lehmann; valid for m >= n (reduced) and square (complete)
    gQ, gR = g
    m, n = a.shape[-2], a.shape[-1]
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
            "through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and "
            "nrows > ncols.")
    if m < n:
        # A = [X | Y] with X square: X = Q U, Y = Q V. Differentiate through X's QR.
        X = a[..., :m]
        Y = a[..., m:]
        Q, R = qr(X)
        gU = None if gR is None else gR[..., :m]
        gV = None if gR is None else gR[..., m:]
        gQx = gQ
        if gV is not None:
            t = matmul(Y, _h(gV))
            gQx = t if gQx is None else gQx + t
        gX = _qr_vjp((gQx, gU), X, out=(Q, R), mode="reduced")
        gY = matmul(Q, gV) if gV is not None else Y * 0
        return _dispatch.apply(_cat_last_op, (gX, gY), {})
    Q, R = out
    if gR is None:
        M = -matmul(_h(gQ), Q)
    elif gQ is None:
        M = matmul(R, _h(gR))
    else:
        M = matmul(R, _h(gR)) - matmul(_h(gQ), Q)
    b = matmul(Q, _copyltu(M))
    if gQ is not None:
        b = b + gQ
    # gA = b R^-H
    return solve_triangular(_h(R), b, upper=False, left=False)


qr_op = Op("linalg_qr", _qr_kernel, vjp=_qr_vjp)


@qr_op.defjvp
def _qr_jvp(x_dots, a, *, out, mode):
    # real A = QR with m >= n: C = Q^T dA R^-1 = Q^T dQ + dR R^-1, the first term skew and
    # the second upper triangular, so Omega = tril(C, -1) - tril(C, -1)^T, dR = (C - Omega) R
    # and dQ = dA R^-1 - Q (C - Omega). Other shapes, modes and complex A: the transpose of
    # the vjp (NOTE [ Forward mode from the vjp ] in ember/autograd/_forward.py)
    m, n = a.shape[-2], a.shape[-1]
    if a.is_complex() or mode == "r" or m < n or (mode == "complete" and m != n):
        from ..autograd._forward import transpose_jvp

        return transpose_jvp(qr_op, x_dots, (a,), {"mode": mode}, out)
    Q, R = out
    dA_Rinv = solve_triangular(R, x_dots[0], upper=True, left=False)
    C = matmul(_h(Q), dA_Rinv)
    low = C.tril(-1)
    upper = C - (low - _h(low))
    return dA_Rinv - matmul(Q, upper), matmul(upper, R)


def _cat_last_kernel(xp, x, y):
    return xp.concatenate([x, y], -1)


def _cat_last_vjp(g, x, _y):
    n = x.shape[-1]
    return g[..., :n], g[..., n:]


_cat_last_op = Op("_linalg_cat_last", _cat_last_kernel, vjp=_cat_last_vjp, linear=True)


def qr(A, mode="reduced", *, out=None):
    """``(Q, R)`` with ``A = Q R``; ``mode`` is 'reduced', 'complete' or 'r' (Q empty).

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: which entries of ``Q`` and ``R`` are NaN can differ
        from PyTorch's (ember can give 0 where PyTorch gives NaN).
    """
    check_out_tuple("linalg_qr", out)
    check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'")
    r = _dispatch.apply(qr_op, (A,), {"mode": mode}, out)
    return make("linalg_qr", ["Q", "R"])(*r)


@public(name="qr")
def _qr_public(input, some=True, *, out=None):
    """Deprecated form of :func:`ember.linalg.qr` (``some=False`` is mode 'complete')."""
    check_out_tuple("qr", out)
    check_matrix("qr", input)
    r = _dispatch.apply(qr_op, (input,), {"mode": "reduced" if some else "complete"}, out)
    return make("qr", ["Q", "R"])(*r)


# ------------------------------------------------------------------------------------------------
# eigen-decompositions


def _eigh_failed(xp, a, fn):
    """LAPACK's eigensolver gave up: PyTorch's LinAlgError (a RuntimeError) naming the first
    failing batch element, instead of NumPy's."""
    raise LinAlgError(f"linalg.eigh: {_first_failure(xp, a, fn)}The algorithm failed to "
                      "converge because the input matrix is ill-conditioned or has too many "
                      "repeated eigenvalues.")


@empty_any_dtype
def _eigh_kernel(xp, a, *, UPLO):
    try:
        w, v = xp.linalg.eigh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        _eigh_failed(xp, a, lambda m: xp.linalg.eigh(m, UPLO=UPLO))
    return w, v


def _eig_backward(gL, gV, L, V, hermitian):
    """PyTorch's convention for the eigen-decomposition backward (see linalg.eig docs)."""
    n = V.shape[-1]
    eye = _eye_like(n, V)
    if gV is None:
        gA = gL.unsqueeze(-1) * eye
    else:
        VhgV = matmul(_h(V), gV)
        if hermitian:
            VhgV = (VhgV - _h(VhgV)) * 0.5
        else:
            d = (VhgV * eye).sum(-2)  # the diagonal, as a row
            if d.is_complex():
                d = d.real
            VhgV = VhgV - matmul(_h(V), V * d.unsqueeze(-2))
        from .pointwise import where
        Lc = _conj(L)
        # the diagonal of E is 1 and gL replaces gA's, as copies: with an infinite
        # eigenvalue, inf - inf (or 0 * inf from a mask) must not reach them
        on = eye.bool()
        E = where(on, 1.0, Lc.unsqueeze(-2) - Lc.unsqueeze(-1))
        gA = VhgV / E
        if gL is not None:
            gA = where(on, gL.unsqueeze(-1).to(gA.dtype), gA)
    if hermitian:
        return matmul(V, matmul(gA, _h(V)))
    return solve(_h(V), matmul(gA, _h(V)))


def _eigh_vjp(g, _a, *, out, UPLO):
    gL, gV = g
    L, V = out
    if gL is not None and V.is_complex():
        gL = gL.to(V.dtype)
    r = _eig_backward(gL, gV, L, V, True)
    return r


eigh_op = Op("linalg_eigh", _eigh_kernel, vjp=_eigh_vjp)


@eigh_op.defjvp
def _eigh_jvp(x_dots, _a, *, out, UPLO):
    # with M = V^H dA V: dL = Re diag(M), dV = V (M / (L_j - L_i)) off the diagonal
    L, V = out
    m = matmul(_h(V), matmul(x_dots[0], V))
    n = L.shape[-1]
    eye = _const_like(np.eye(n, dtype=L._data.dtype), L)
    dL = m.diagonal(0, -2, -1)
    if dL.is_complex():
        dL = dL.real
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    return dL, matmul(V, (m / E.to(m.dtype)) * (1 - eye).to(m.dtype))


def _check_uplo(op_name, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op_name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    """``(eigenvalues, eigenvectors)`` of a Hermitian matrix, eigenvalues real and
    ascending. Only the triangle named by ``UPLO`` is read.

    Differences from PyTorch:
        Repeated eigenvalues: any orthonormal basis of their eigenspace is a correct set of
        eigenvectors, and ember's (LAPACK through NumPy) can differ from PyTorch's.
    """
    check_out_tuple("linalg_eigh", out)
    check_square("linalg.eigh", A)
    _check_uplo("linalg.eigh", UPLO)
    r = _dispatch.apply(eigh_op, (A,), {"UPLO": UPLO}, out)
    return make("linalg_eigh", ["eigenvalues", "eigenvectors"])(*r)


@empty_any_dtype
def _eigvalsh_kernel(xp, a, *, UPLO):
    try:
        return xp.linalg.eigvalsh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        _eigh_failed(xp, a, lambda m: xp.linalg.eigvalsh(m, UPLO=UPLO))


def _eigvalsh_vjp(g, a, *, UPLO):
    L, V = eigh(a, UPLO)
    gL = g.to(V.dtype) if V.is_complex() else g
    return matmul(V * gL.unsqueeze(-2), _h(V))


eigvalsh_op = Op("linalg_eigvalsh", _eigvalsh_kernel, vjp=_eigvalsh_vjp)


@eigvalsh_op.defjvp
def _eigvalsh_jvp(x_dots, a, *, UPLO, out=None):
    # dL = Re diag(V^H dA V)
    _, V = eigh(a, UPLO)
    d = matmul(_h(V), matmul(x_dots[0], V)).diagonal(0, -2, -1)
    return d.real if d.is_complex() else d


def eigvalsh(A, UPLO="L", *, out=None):
    """The (real, ascending) eigenvalues of a Hermitian matrix."""
    check_square("linalg.eigvalsh", A)
    _check_uplo("linalg.eigvalsh", UPLO)
    if isinstance(out, Tensor) and out.dtype != A.dtype.to_real():
        # checked before the solver runs, as PyTorch does
        raise RuntimeError(f"Expected out tensor to have dtype {A.dtype.to_real().name}, but "
                           f"got {out.dtype.name} instead")
    return _dispatch.apply(eigvalsh_op, (A,), {"UPLO": UPLO}, out)


def _eig_kernel(xp, a):
    if not bool(xp.isfinite(a).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = np.linalg.eig(a if xp is np else a.get())
    ct = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    return xp.asarray(w.astype(ct)), xp.asarray(v.astype(ct))


def _eig_vjp(g, _a, *, out):
    gL, gV = g
    L, V = out
    return _eig_backward(gL, gV, L, V, False)


eig_op = Op("linalg_eig", _eig_kernel, vjp=_eig_vjp)


def _eig_forward(dA, L, V, vectors):
    """Tangents of ``A V = V diag(L)`` along ``dA``: with ``M = V^-1 dA V``,
    ``dL = diag(M)`` and ``dV = V (M / (L_j - L_i))`` off the diagonal, less the part that
    would change the columns' unit norms, ``V Re diag(V^H dV)``."""
    dA = dA.to(V.dtype) if not dA.is_complex() else dA
    M = solve(V, matmul(dA, V))
    dL = M.diagonal(0, -2, -1)
    if not vectors:
        return dL
    n = L.shape[-1]
    eye = _const_like(np.eye(n, dtype=bool), L)
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    dV = matmul(V, (M / E.masked_fill(eye, 1)).masked_fill(eye, 0))
    dV = dV - V * matmul(_h(V), dV).diagonal(0, -2, -1).real.unsqueeze(-2)
    return dL, dV


@eig_op.defjvp
def _eig_jvp(x_dots, _a, *, out):
    return _eig_forward(x_dots[0], out[0], out[1], True)


def eig(A, *, out=None):
    """``(eigenvalues, eigenvectors)`` of a general square matrix, always complex.

    Eigenvectors are normalised to unit norm (their phase is arbitrary, as in PyTorch).
    """
    check_out_tuple("linalg_eig", out)
    check_square("linalg.eig", A)
    r = _dispatch.apply(eig_op, (A,), {}, out)
    return make("linalg_eig", ["eigenvalues", "eigenvectors"])(*r)


def _eigvals_kernel(xp, a):
    a = a if xp is np else a.get()
    # a matrix holding NaN or inf has NaN eigenvalues (torch), not an error
    bad = ~np.isfinite(a).all(axis=(-2, -1))
    w = np.linalg.eigvals(np.where(bad[..., None, None], 0, a) if bad.any() else a)
    ct = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    w = w.astype(ct)
    if bad.any():
        w[bad] = complex(math.nan, math.nan)
    return xp.asarray(w)


def _eigvals_vjp(g, a):
    L, V = eig(a)
    return _eig_backward(g, None, L, V, False)


eigvals_op = Op("linalg_eigvals", _eigvals_kernel, vjp=_eigvals_vjp)


@eigvals_op.defjvp
def _eigvals_jvp(x_dots, a, *, out=None):
    L, V = eig(a)
    return _eig_forward(x_dots[0], L, V, False)


def eigvals(A, *, out=None):
    """The (complex) eigenvalues of a general square matrix."""
    check_square("linalg.eigvals", A)
    if A.requires_grad and _dispatch.state.grad_enabled and A.numel() and \
            _dispatch.plain_data() and holds_values(A._data) and \
            not bool(A.detach().isfinite().all()):  # (not under vmap: a value-dependent test)
        # torch computes a differentiable input's eigenvalues with linalg.eig, which refuses
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    return _dispatch.apply(eigvals_op, (A,), {}, out)


# ------------------------------------------------------------------------------------------------
# svd


@empty_any_dtype
def _svd_kernel(xp, a, *, full_matrices):
    m, n = a.shape[-2:]
    if a.size == 0:  # LAPACK refuses empty matrices
        k = min(m, n)
        bs = a.shape[:-2]
        mu, nv = (m, n) if full_matrices else (k, k)
        u = xp.broadcast_to(xp.eye(m, mu, dtype=a.dtype), bs + (m, mu)).copy()
        vh = xp.broadcast_to(xp.eye(nv, n, dtype=a.dtype), bs + (nv, n)).copy()
        return u, xp.zeros(bs + (k,), a.real.dtype), vh
    # ``+ 0`` makes every -0.0 a +0.0: the reference LAPACK turns a singular vector for a
    # -0.0 column to -1, MKL's (torch's) keeps +1; both are right, torch's is matched
    u, s, vh = lapack_svd(xp, a + 0, full_matrices=full_matrices)
    return u, s, vh


def lapack_svd(xp, a, **kwargs):
    """``xp.linalg.svd(a, **kwargs)`` with torch's answers on non-finite input, promptly
    (LAPACK's gesdd can loop forever on inf): a matrix holding NaN raises LinAlgError (torch's
    "failed to converge", naming the first such batch element); one holding inf but no NaN
    gives NaN factors."""
    if not holds_values(a):  # the meta device: shapes only
        return xp.linalg.svd(a, **kwargs)
    finite = xp.isfinite(a).all(axis=(-2, -1))
    if bool(finite.all()):
        try:
            return xp.linalg.svd(a, **kwargs)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                              "matrix is ill-conditioned or has too many repeated singular "
                              "values.") from None
    nan = xp.isnan(a).any(axis=(-2, -1))
    if bool(nan.any()):
        first = int(xp.flatnonzero(nan.reshape(-1))[0])  # NOTE [ Portable array code ]
        raise LinAlgError(f"linalg.svd: {_bidx(a.shape[:-2], first)}The algorithm failed to "
                          "converge because the input matrix contained non-finite values.")
    # inf but no NaN: NaN factors for those matrices, LAPACK for the rest
    keep = finite[..., None, None]
    r = xp.linalg.svd(xp.where(keep, a, 0), **kwargs)
    parts = r if isinstance(r, tuple) else (r,)
    out = []
    for x in parts:
        mask = finite.reshape(finite.shape + (1,) * (x.ndim - finite.ndim))
        out.append(xp.where(mask, x, xp.asarray(np.nan, dtype=x.dtype)))
    return tuple(out) if isinstance(r, tuple) else out[0]


def _svd_backward(gU, gS, gVh, U, S, Vh, full_matrices):
    """The standard SVD derivative for distinct, nonzero singular values (PyTorch's gauge:
    the imaginary part of diag(U^H gU) is fixed by the phase convention)."""
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices and (m != k or n != k):
        if gU is not None:
            gU = gU[..., :k]
        if gVh is not None:
            gVh = gVh[..., :k, :]
        U = U[..., :k]
        Vh = Vh[..., :k, :]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return matmul(U * gS.to(U.dtype).unsqueeze(-2), Vh)
    V = _h(Vh)
    gV = None if gVh is None else _h(gVh)
    eye = _eye_like(k, U)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_like(k, S)
    Sc = S.to(U.dtype) if U.is_complex() else S
    gA = None
    if gU is not None:
        UhgU = matmul(_h(U), gU)
        skew = UhgU - _h(UhgU)
        gA = skew * Sc.unsqueeze(-2) / E
    if gV is not None:
        VhgV = matmul(_h(V), gV)
        skew = VhgV - _h(VhgV)
        t = Sc.unsqueeze(-1) * skew / E
        gA = t if gA is None else gA + t
    if gS is not None:
        gA = gA + gS.to(U.dtype).unsqueeze(-1) * eye
    if U.is_complex() and gU is not None:
        # the phase gauge: diag(skew(U^H gU)) / (2 S) = i Im(diag(U^H gU)) / S
        d = (UhgU * eye).sum(-1).imag
        gA = gA + (1j * (d / S)).unsqueeze(-1) * eye
    if m > k and gU is not None:
        gA = matmul(U, gA)
        gUSinv = gU / Sc.unsqueeze(-2)
        gA = gA + gUSinv - matmul(U, matmul(_h(U), gUSinv))
        gA = matmul(gA, Vh)
    elif n > k and gV is not None:
        gA = matmul(gA, Vh)
        gVSinv = gV / Sc.unsqueeze(-2)
        gA = gA + _h(gVSinv - matmul(V, matmul(_h(V), gVSinv)))
        gA = matmul(U, gA)
    else:
        gA = matmul(U, matmul(gA, Vh))
    return gA


def _svd_vjp(g, _a, *, out, full_matrices):
    U, S, Vh = out
    return _svd_backward(g[0], g[1], g[2], U, S, Vh, full_matrices)


svd_op = Op("linalg_svd", _svd_kernel, vjp=_svd_vjp)


@svd_op.defjvp
def _svd_jvp(x_dots, a, *, out, full_matrices):
    # real A = U S V^T (reduced), P = U^T dA V: dS = diag(P); with F_ij = 1 / (s_j^2 - s_i^2)
    # off the diagonal, dU = U (F o (P S + S P^T)) + (I - U U^T) dA V S^-1 and
    # dV = V (F o (S P + P^T S)) + (I - V V^T) dA^T U S^-1. Complex input, full matrices
    # (the extra columns are a gauge) and empty input: the transpose of the vjp
    if a.is_complex() or full_matrices and a.shape[-1] != a.shape[-2] or a.numel() == 0:
        from ..autograd._forward import transpose_jvp

        return transpose_jvp(svd_op, x_dots, (a,), {"full_matrices": full_matrices}, out)
    U, S, Vh = out
    V = Vh.transpose(-1, -2)
    d = x_dots[0]
    m, n = a.shape[-2], a.shape[-1]
    k = S.shape[-1]
    P = matmul(U.transpose(-1, -2), matmul(d, V))
    dS = P.diagonal(0, -2, -1)
    s2 = S * S
    diff = s2.unsqueeze(-2) - s2.unsqueeze(-1)
    eye = _const_like(np.eye(k, dtype=S._data.dtype), S)
    F = (1 - eye) / (diff + eye)
    Srow, Scol = S.unsqueeze(-2), S.unsqueeze(-1)
    dU = matmul(U, F * (P * Srow + Scol * P.transpose(-1, -2)))
    dV = matmul(V, F * (Scol * P + P.transpose(-1, -2) * Srow))
    if m > k:
        r = matmul(d, V) / Srow
        dU = dU + r - matmul(U, matmul(U.transpose(-1, -2), r))
    if n > k:
        r = matmul(d.transpose(-1, -2), U) / Srow
        dV = dV + r - matmul(V, matmul(V.transpose(-1, -2), r))
    return dU, dS, dV.transpose(-1, -2)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending.

    Differences from PyTorch:
        Some matrices holding infinities: PyTorch (MKL's gesdd) fails to converge and raises, ember
        returns NaN.
    """
    check_out_tuple("linalg_svd", out, 3)
    check_matrix("linalg.svd", A)
    r = _dispatch.apply(svd_op, (A,), {"full_matrices": bool(full_matrices)}, out)
    return make("linalg_svd", ["U", "S", "Vh"])(*r)


@public(name="svd")
def _svd_public(input, some=True, compute_uv=True, *, out=None):
    """Deprecated form of :func:`ember.linalg.svd`: returns ``V`` (not ``Vh``); with
    ``compute_uv=False`` U and V are zero-filled.

    Differences from PyTorch:
        Some matrices holding infinities: PyTorch (MKL's gesdd) fails to converge and raises, ember
        returns NaN.
    """
    check_out_tuple("svd", out, 3)
    check_matrix("svd", input)
    U, S, Vh = _dispatch.apply(svd_op, (input,), {"full_matrices": not some})
    V = _h(Vh)
    if not compute_uv:
        U = U.new_zeros(tuple(U.shape))
        V = V.new_zeros(tuple(V.shape))
    r = make("svd", ["U", "S", "V"])(U, S, V)
    if out is not None:
        _dispatch.write_out("svd", out, tuple(r))
        return make("svd", ["U", "S", "V"])(*out)
    return r


@empty_any_dtype
def _svdvals_kernel(xp, a):
    if a.size == 0:
        return xp.zeros(a.shape[:-2] + (min(a.shape[-2:]),), a.real.dtype)
    return lapack_svd(xp, a, compute_uv=False)


def _svdvals_vjp(g, a):
    U, S, Vh = svd(a, full_matrices=False)
    return matmul(U * g.to(U.dtype).unsqueeze(-2), Vh)


svdvals_op = Op("linalg_svdvals", _svdvals_kernel, vjp=_svdvals_vjp)


@svdvals_op.defjvp
def _svdvals_jvp(x_dots, a, *, out=None):
    # dS = Re diag(U^H dA V)
    U, _, Vh = svd(a, full_matrices=False)
    d = matmul(_h(U), matmul(x_dots[0], _h(Vh))).diagonal(0, -2, -1)
    return d.real if d.is_complex() else d


def svdvals(A, *, driver=None, out=None):
    """The singular values of ``A``, descending."""
    check_matrix("linalg.svdvals", A)
    return _dispatch.apply(svdvals_op, (A,), {}, out)


# the top-level forms show PyTorch's names
_det_public.__name__ = _det_public.__qualname__ = "det"
_slogdet_public.__name__ = _slogdet_public.__qualname__ = "slogdet"
_cholesky_public.__name__ = _cholesky_public.__qualname__ = "cholesky"
_qr_public.__name__ = _qr_public.__qualname__ = "qr"
_svd_public.__name__ = _svd_public.__qualname__ = "svd"
