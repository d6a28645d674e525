"""Least squares and matrix functions: pinv, matrix_rank, lstsq, matrix_power, matrix_exp."""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dispatch
from .._lazy_import import import_module
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.layout import contiguous_format
from .._core.tensor import Tensor, wrap
from ..return_types import make
from ._registry import Op, public, quiet_kernel
from ._xp_compat import batched_expm
from .pointwise import opmath
from ._xp_compat import solve as xp_solve
from .linalg import _conj, _h, check_out_tuple, check_tensor, matmul
from .linalg_householder import householder_product  # noqa: F401 (ember.linalg's)
from .linalg_decomp import (_LAPACK_DTYPES, _eigh_failed, _getf2, _odd_matrices, check_float,
                            check_matrix, check_square, empty_any_dtype, inv, lapack_svd,
                            svdvals)


# ------------------------------------------------------------------------------------------------
# pinv, matrix_rank, lstsq


def _tol(xp, s, atol, rtol, m, n):
    """The singular-value cut-off max(atol, rtol * largest singular value)."""
    smax = s[..., :1] if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
    if rtol is None:
        rtol = (np.finfo(s.dtype).eps * max(m, n)) if (atol is None or atol == 0) else 0.0
    t = smax * rtol
    if atol is not None:
        t = xp.maximum(t, atol)
    return t


def _pinv_kernel(xp, a, *, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return xp.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        try:
            w, v = xp.linalg.eigh(a)
        except np.linalg.LinAlgError:  # torch's error (a RuntimeError), not NumPy's
            _eigh_failed(xp, a, xp.linalg.eigh)
        s = xp.abs(w)
        order = xp.argsort(-s, axis=-1)
        tol = _tol(xp, xp.take_along_axis(s, order, -1), atol, rtol, m, n)
        winv = xp.where(s > tol, 1 / xp.where(w == 0, 1, w), 0)
        return xp.matmul(v * winv[..., None, :].astype(a.dtype), xp.conj(xp.swapaxes(v, -1, -2)))
    u, s, vh = lapack_svd(xp, a, full_matrices=False)
    tol = _tol(xp, s, atol, rtol, m, n)
    sinv = xp.where(s > tol, 1 / xp.where(s == 0, 1, s), 0).astype(a.dtype)
    return xp.matmul(xp.conj(xp.swapaxes(vh, -1, -2)) * sinv[..., None, :],
                     xp.conj(xp.swapaxes(u, -1, -2)))


def _pinv_vjp(g, a, *, out, atol, rtol, hermitian):
    # Golub & Pereyra's derivative of the pseudo-inverse (valid where the rank is constant)
    P, A = out, a
    m, n = A.shape[-2], A.shape[-1]
    Ph, gh = _h(P), _h(g)
    if m <= n:
        K = matmul(gh, P)
        KPh = matmul(K, Ph)
        return (-_h(matmul(P, K)) + KPh - matmul(matmul(A, P), KPh)
                + matmul(matmul(Ph, P), gh - matmul(K, A)))
    K = matmul(P, gh)
    PhK = matmul(Ph, K)
    return (-_h(matmul(K, P)) + matmul(matmul(gh - matmul(A, K), P), Ph) + PhK
            - matmul(matmul(PhK, P), A))


pinv_op = Op("linalg_pinv", _pinv_kernel, vjp=_pinv_vjp)


@pinv_op.defjvp
def _pinv_jvp(x_dots, a, *, out, atol, rtol, hermitian):
    # Golub & Pereyra, forward (constant rank; the whole dA, as torch, also when hermitian):
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
    P, dA = out, x_dots[0]
    dAh = _h(dA)
    t2 = matmul(matmul(P, _h(P)), dAh - matmul(matmul(dAh, a), P))
    X = matmul(dAh, matmul(_h(P), P))
    return -matmul(P, matmul(dA, P)) + t2 + X - matmul(P, matmul(a, X))


def _tol_arg(x):
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise NotImplementedError("linalg.pinv: tensor atol/rtol are supported only as "
                                      "one-element tensors in ember")
        return float(x.item())
    return None if x is None else float(x)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse, dropping singular values below
    ``max(atol, rtol * largest)``."""
    check_matrix("linalg.pinv", A)
    params = {"atol": _tol_arg(atol), "rtol": _tol_arg(rtol), "hermitian": bool(hermitian)}
    return _dispatch.apply(pinv_op, (A,), params, out)


@public
def pinverse(input, rcond=1e-15):
    """Deprecated form of :func:`ember.linalg.pinv` (``rcond`` is a relative tolerance)."""
    return pinv(input, rtol=rcond)


@quiet_kernel
def _matrix_rank_kernel(xp, a, *, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return xp.zeros(a.shape[:-2], np.int64)
    if hermitian:
        s = xp.abs(xp.linalg.eigvalsh(a))
        s = -xp.sort(-s, axis=-1)
    else:
        s = lapack_svd(xp, a, compute_uv=False)
    tol = _tol(xp, s, atol, rtol, m, n)
    return (s > tol).sum(-1).astype(np.int64)


matrix_rank_op = Op("linalg_matrix_rank", _matrix_rank_kernel, differentiable=False)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    """The number of singular values above ``max(atol, rtol * largest)`` (int64)."""
    if tol is not None:
        atol, rtol = tol, 0.0
    # torch derives a default rtol from A's dtype (refusing the others); with one given it goes
    # straight to the decomposition, whose checks apply, and an empty A meets none of them
    name = "linalg.matrix_rank" if rtol is None else "linalg.eigh" if hermitian else "linalg.svd"
    check_tensor("linalg.matrix_rank", A, "A")
    if rtol is None or A.numel() or A.dim() < 2:
        check_matrix(name, A)
    params = {"atol": _tol_arg(atol), "rtol": _tol_arg(rtol), "hermitian": bool(hermitian)}
    return _dispatch.apply(matrix_rank_op, (A,), params, out)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B``: ``(solution, residuals, rank,
    singular_values)``, with PyTorch's rules for which of the last three are computed
    (residuals only when m > n and every matrix has full rank; rank and singular values
    depend on ``driver``)."""
    op_name = "linalg.lstsq"
    check_matrix(op_name, A)
    check_tensor(op_name, B, "B")
    check_float(op_name, B)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(
            f"{op_name}: Expected input and other to have the same dtype, but got "
            f"input's dtype {A.dtype.scalar_name} and other's dtype {B.dtype.scalar_name}")
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    if driver is not None and driver not in drivers:
        raise RuntimeError(
            f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
            f"gelss), but got {driver}")
    driver = driver or "gelsy"
    vec = B.dim() == A.dim() - 1
    m, n = A.shape[-2], A.shape[-1]
    if (B.shape[-1] if vec else B.shape[-2]) != m:
        raise RuntimeError(
            f"{op_name}: input.size(-2) should match other.size(-2) ({m} vs "
            f"{B.shape[-1] if vec else B.shape[-2]})")
    Bm = B.unsqueeze(-1) if vec else B
    rtol = rcond if rcond is not None and rcond >= 0 else None
    X = matmul(pinv(A, rtol=rtol), Bm)
    real = A.dtype.to_real()
    xp = _dispatch.xp_of(A._data)  # results on A's device (NOTE [ Portable array code ])
    empty = wrap(xp.zeros((0,), real.np))
    s = svdvals(A)
    rank = None
    if driver != "gels":
        rank = (s._data > _tol(xp, s._data, None, rtol, m, n)).sum(-1).astype(np.int64)
        if driver == "gelsy" and Bm.shape[-1] == 0:
            rank = rank * 0  # torch skips gelsy for no right-hand sides: rank stays 0
    full_rank = rank is None or bool(xp.all(rank == min(m, n)))
    # no residuals: an empty tensor that is still a function of the solution, so it
    # requires grad when the operands do, as torch's
    none = X.reshape(-1)[:0]
    residuals = none.abs() if none.is_complex() else none
    if m > n and driver != "gelsy" and full_rank or (driver == "gels" and m > n):
        R = matmul(A, X) - Bm
        residuals = (R * _conj(R)).real.sum(-2) if R.is_complex() else (R * R).sum(-2)
    # PyTorch differentiates lstsq's solution and residuals only; the singular values come
    # out without a history (svdvals differentiates them)
    sv = s.detach() if driver in ("gelsd", "gelss") else empty
    rank_t = wrap(xp.asarray(rank)) if rank is not None else wrap(xp.zeros((0,), np.int64))
    if vec:
        X = X.squeeze(-1)
    return make("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])(
        X, residuals, rank_t, sv)


# ------------------------------------------------------------------------------------------------
# matrix functions: power, exp


@_dispatch.entrance("matrix_power")
def _constant_of(like, value):
    """``value`` (shaped as ``like``) as a result that depends on ``like`` with a zero
    derivative, as PyTorch records a constant written over its input (a copy): graph, grad
    flags and zero gradients as there, NaN-free whatever ``like`` holds."""
    if not (like.requires_grad and _dispatch.state.grad_enabled):
        return value
    r = like.clone()
    r.copy_(value)
    return r


def matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (negative powers invert first; 0 gives identity)."""
    op_name = "linalg.matrix_power"
    check_tensor(op_name, A, "A")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op_name}: A must be batches of square matrices, but they are "
            f"{A.shape[-2] if A.dim() >= 2 else 1} by {A.shape[-1] if A.dim() else 1} matrices")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{op_name}(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n == 0:
        xp = _dispatch.xp_of(A._data)
        eye = xp.broadcast_to(xp.eye(A.shape[-1], dtype=A._data.dtype), tuple(A.shape)).copy()
        r = _constant_of(A, wrap(eye))
    else:
        inverted = n < 0
        if inverted:
            check_float(op_name, A)
            A = inv(A)
            n = -n
        r = None
        base = A
        # binary powering: O(log n) products
        while n:
            if n & 1:
                r = base if r is None else matmul(r, base)
            n >>= 1
            if n:
                base = matmul(base, base)
        if r is A and not inverted:  # a new tensor (an inverse already is one), as torch's
            r = A.clone(memory_format=contiguous_format)
    return r if out is None else _dispatch.write_out(op_name, out, r)


@public(name="matrix_power")
def _matrix_power_public(input, n, *, out=None):
    """``input`` to the integer power ``n``."""
    return matrix_power(input, n, out=out)


@opmath
@quiet_kernel
def _matrix_exp_kernel(xp, a):
    if a.size == 0:
        return a.copy()
    if xp is np:
        return np.asarray(import_module("scipy.linalg").expm(a)).astype(a.dtype)
    # batched, in xp's matmul and solve: CuPy's expm takes one 2-d matrix
    return batched_expm(xp, a)  # NOTE [ Portable array code ]


def _block_kernel(xp, ah, g):
    z = xp.zeros_like(ah)
    top = xp.concatenate([ah, g], -1)
    return xp.concatenate([top, xp.concatenate([z, ah], -1)], -2)


def _block_vjp(gb, ah, _g):
    n = ah.shape[-1]
    return gb[..., :n, :n] + gb[..., n:, n:], gb[..., :n, n:]


# [[A, G], [0, A]] as one differentiable op
_mexp_block_op = Op("_matrix_exp_block", _block_kernel, vjp=_block_vjp, linear=True)


def _matrix_exp_vjp(g, a):
    # The adjoint of the Frechet derivative: the upper-right block of
    # exp([[A^H, G], [0, A^H]]) (Najfeld & Havel).
    n = a.shape[-1]
    ah = _h(a)
    g = g.expand(*ah.shape) if tuple(g.shape) != tuple(ah.shape) else g
    big = _dispatch.apply(_mexp_block_op, (ah, g), {})
    return matrix_exp(big)[..., :n, n:]


matrix_exp_op = Op("linalg_matrix_exp", _matrix_exp_kernel, vjp=_matrix_exp_vjp)


@matrix_exp_op.defjvp
def _matrix_exp_jvp(x_dots, a, *, out=None):
    # the Frechet derivative: the upper-right block of exp([[A, dA], [0, A]])
    n = a.shape[-1]
    d = x_dots[0]
    a = a.expand(*d.shape) if tuple(a.shape) != tuple(d.shape) else a
    return matrix_exp(_dispatch.apply(_mexp_block_op, (a, d), {}))[..., :n, n:]


def matrix_exp(A):
    """The matrix exponential ``sum_k A^k / k!`` (scaling and squaring with Pade).

    Differences from PyTorch:
        float16 and bfloat16 inputs: ember computes in float32 and rounds once; PyTorch's
        half-precision result can be far off (inf, NaN or -1e30 on matrices whose exponential
        is small). Complex inputs with NaN: which parts of the result are NaN can differ.
    """
    check_square("linalg.matrix_exp", A)
    return _dispatch.apply(matrix_exp_op, (A,), {})


@public(name="matrix_exp")
def _matrix_exp_public(input):
    """The matrix exponential.

    Differences from PyTorch:
        float16 and bfloat16 inputs: ember computes in float32 and rounds once; PyTorch's
        half-precision result can be far off (inf, NaN or -1e30 on matrices whose exponential
        is small).
    """
    return matrix_exp(input)


# ------------------------------------------------------------------------------------------------
# LU


@empty_any_dtype
def _lu_factor_kernel(xp, a):
    """(LU, pivots): LAPACK getrf per matrix, pivots 1-based int32 as PyTorch."""
    scipy_linalg = import_module("scipy.linalg")
    host = a if xp is np else a.get()
    m, n = host.shape[-2:]
    k = min(m, n)
    flat = host.reshape((int(np.prod(host.shape[:-2])), m, n))
    lus = np.empty_like(flat)
    pivs = np.empty((flat.shape[0], k), np.int32)
    for i in range(flat.shape[0]):
        if k == 0:
            lus[i] = flat[i]
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy warns about a zero pivot; torch does not
            lu, piv = scipy_linalg.lu_factor(flat[i], check_finite=False)
        lus[i], pivs[i] = lu, piv[:k] + 1
    odd = _odd_matrices(np, flat, complex_too=True) if k else None
    if odd is not None:  # NOTE [ Determinants of non-finite matrices ]
        lus[odd], p = _getf2(np, flat[odd])
        pivs[odd] = p + 1
    return (xp.asarray(lus.reshape(host.shape)),
            xp.asarray(pivs.reshape(host.shape[:-2] + (k,))))


def _lu_factor_vjp(g, a, *, out):
    # as PyTorch: unpack, then the factors' gradients are gLU's two triangles
    gLU = g[0]
    if gLU is None:
        return None
    k = min(a.shape[-2], a.shape[-1])
    P, L, U = lu_unpack(*out)
    return _lu_backward(gLU[..., :, :k], gLU[..., :k, :], P, L, U)


lu_factor_op = Op("linalg_lu_factor", _lu_factor_kernel, vjp=_lu_factor_vjp,
                  nondiff_outputs=(1,))


@lu_factor_op.defjvp
def _lu_factor_jvp(x_dots, a, *, out):
    # the factors' tangents (_lu_forward) packed as LU is: dL's strict lower trapezoid and
    # dU's upper one, zero-padded to A's shape
    from .join import cat

    P, L, U = lu_unpack(*out)
    dL, dU = _lu_forward(x_dots[0], P, L, U)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    if n > k:
        dL = cat([dL, dL.new_zeros(tuple(dL.shape[:-1]) + (n - k,))], -1)
    if m > k:
        dU = cat([dU, dU.new_zeros(tuple(dU.shape[:-2]) + (m - k, n))], -2)
    return dL + dU, None


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)``: the packed LU factorisation with partial pivoting (``pivots`` are
    1-based row swaps, int32).

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: the pivots chosen, hence ``LU`` and ``pivots``, can
        differ from PyTorch's.
    """
    r = _lu_factor_unchecked(A, pivot, out)
    _check_zero_pivot(r[0], A.dim() > 2)
    return r


def _lu_factor_unchecked(A, pivot=True, out=None):
    """``lu_factor`` without its refusal of a zero pivot (``lu_factor_ex`` reports it)."""
    check_out_tuple("linalg_lu_factor", out)
    check_matrix("linalg.lu_factor", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    r = _dispatch.apply(lu_factor_op, (A,), {}, out)
    return make("linalg_lu_factor", ["LU", "pivots"])(*r)


def _check_zero_pivot(lu, batched):
    """PyTorch's refusal of a singular factorisation in ``lu_factor`` (its ``_ex`` form and
    ``lu`` return it): the first batch element whose U has a zero on its diagonal."""
    d = lu._data
    k = min(d.shape[-2:])
    if not k or not d.size:
        return
    if type(d) is not np.ndarray and not type(d).__module__.startswith("cupy"):
        return  # (no values to check: the meta device's arrays)
    i = np.arange(k)
    diag = d[..., i, i].reshape(-1, k)
    zero = diag == 0
    if not bool(zero.any()):
        return
    zero = zero if type(zero) is np.ndarray else zero.get()
    b = int(np.argmax(zero.any(-1)))
    j = int(np.argmax(zero[b])) + 1
    where = f"(Batch element {b}): " if batched else ""
    raise RuntimeError(
        f"torch.linalg.lu_factor: {where}U[{j},{j}] is zero and using it on lu_solve would "
        "result in a division by zero. If you still want to perform the factorization, "
        "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _perm_from_pivots(piv, m):
    """The permutation matrix P (A = P L U) of 1-based LAPACK row swaps."""
    batch = piv.shape[:-1]
    flat = piv.reshape((int(np.prod(batch)), piv.shape[-1]))
    P = np.zeros((flat.shape[0], m, m))
    for b in range(flat.shape[0]):
        perm = np.arange(m)
        for i, p in enumerate(flat[b]):
            j = int(p) - 1
            perm[i], perm[j] = perm[j], perm[i]
        P[b, perm, np.arange(m)] = 1
    return P.reshape(batch + (m, m))


def _unpack(xp, lu, piv):
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = xp.tril(lu[..., :, :k], -1)
    L[..., xp.arange(k), xp.arange(k)] = 1
    U = xp.triu(lu[..., :k, :])
    P = xp.asarray(_perm_from_pivots(piv if xp is np else piv.get(), m).astype(lu.dtype))
    return P, L, U


@empty_any_dtype
def _lu_kernel(xp, a):
    lu, piv = _lu_factor_kernel(xp, a)
    return _unpack(xp, lu, piv)


def _lu_backward(gL, gU, P, L, U):
    """The gradient of ``A = P L U`` from its factors' (``gL``, ``gU`` may be None); only
    L's strict lower trapezoid and U's upper trapezoid count, as PyTorch's linalg_lu_backward.

    Square A: ``gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H``. Wide A (m < n) splits
    ``U = [U1 U2]``: U2's part ``L^-1 (P^T A2 - dL U2)`` moves ``gU2 U2^H`` over from U's term
    to L's, and ``gA2 = P L^-H gU2``. Tall A (m > n) is the transpose of that story with
    ``L = [L1; L2]`` and ``gB2 = gL2 U^-H``.
    """
    from .join import cat
    from .linalg_decomp import solve_triangular

    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = gL if gL is not None else L.new_zeros(tuple(L.shape))
    gU = gU if gU is not None else U.new_zeros(tuple(U.shape))
    if m < n:
        U1, U2, gU1, gU2 = U[..., :, :k], U[..., :, k:], gU[..., :, :k], gU[..., :, k:]
        phi = ((matmul(_h(L), gL) - matmul(gU2, _h(U2))).tril(-1)
               + matmul(gU1, _h(U1)).triu())
        gA = cat([solve_triangular(_h(U1), phi, upper=False, left=False), gU2], -1)
        gA = solve_triangular(_h(L), gA, upper=True, unitriangular=True)
    elif m > n:
        L1, L2, gL1, gL2 = L[..., :k, :], L[..., k:, :], gL[..., :k, :], gL[..., k:, :]
        phi = (matmul(_h(L1), gL1).tril(-1)
               + (matmul(gU, _h(U)) - matmul(_h(L2), gL2)).triu())
        gA = cat([solve_triangular(_h(L1), phi, upper=True, unitriangular=True), gL2], -2)
        gA = solve_triangular(_h(U), gA, upper=False, left=False)
    else:
        phi = matmul(_h(L), gL).tril(-1) + matmul(gU, _h(U)).triu()
        gA = solve_triangular(_h(L), phi, upper=True, unitriangular=True)
        gA = solve_triangular(_h(U), gA, upper=False, left=False)
    return matmul(P, gA)


def _lu_forward(dA, P, L, U):
    """The tangents ``(dL, dU)`` of ``A = P L U`` along ``dA`` (P constant).

    Square A: ``B = L^-1 P^T dA U^-1`` splits into ``L^-1 dL`` (strictly lower, as L's
    diagonal is fixed) and ``dU U^-1`` (upper), so ``dL = L tril(B, -1)``,
    ``dU = triu(B) U``. Wide A does that on the leading square block and solves
    ``dU2 = L^-1 (P^T dA2 - dL U2)``; tall A likewise with ``dL2 = (P^T dA2 - L2 dU) U^-1``.
    """
    from .join import cat
    from .linalg_decomp import solve_triangular

    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    PtdA = matmul(P.mT, dA)

    def square(Lk, Uk, D):
        B = solve_triangular(Lk, D, upper=False, unitriangular=True)
        B = solve_triangular(Uk, B, upper=True, left=False)
        return matmul(Lk, B.tril(-1)), matmul(B.triu(), Uk)

    if m < n:
        U1, U2 = U[..., :, :k], U[..., :, k:]
        dL, dU1 = square(L, U1, PtdA[..., :, :k])
        dU2 = solve_triangular(L, PtdA[..., :, k:] - matmul(dL, U2), upper=False,
                               unitriangular=True)
        return dL, cat([dU1, dU2], -1)
    if m > n:
        L1, L2 = L[..., :k, :], L[..., k:, :]
        dL1, dU = square(L1, U, PtdA[..., :k, :])
        dL2 = solve_triangular(U, PtdA[..., k:, :] - matmul(L2, dU), upper=True, left=False)
        return cat([dL1, dL2], -2), dU
    return square(L, U, PtdA)


def _lu_vjp(g, _a, *, out):
    _, gL, gU = g
    P, L, U = out
    return _lu_backward(gL, gU, P, L, U)


lu_op = Op("linalg_lu", _lu_kernel, vjp=_lu_vjp, nondiff_outputs=(0,))


@lu_op.defjvp
def _lu_jvp(x_dots, _a, *, out):
    P, L, U = out
    return (None,) + _lu_forward(x_dots[0], P, L, U)


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U``: P a permutation matrix, L unit lower trapezoidal,
    U upper trapezoidal.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: the pivots chosen, hence ``P``, ``L`` and ``U``, can
        differ from PyTorch's.
    """
    check_out_tuple("linalg_lu", out, 3)
    check_matrix("linalg.lu", A)
    if not pivot:
        raise RuntimeError("linalg.lu: LU without pivoting is not implemented on the CPU")
    r = _dispatch.apply(lu_op, (A,), {}, out)
    return make("linalg_lu", ["P", "L", "U"])(*r)


def _lu_unpack_kernel(xp, lu, piv):
    return _unpack(xp, lu, piv)


def _lu_unpack_vjp(g, lu, _piv):
    # L and U are read off LU's two triangles, so their gradients land back there
    from .join import cat

    _, gL, gU = g
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    grad = None
    if gL is not None:
        grad = gL.tril(-1)
        if n > k:
            grad = cat([grad, grad.new_zeros(tuple(grad.shape[:-1]) + (n - k,))], -1)
    if gU is not None:
        up = gU.triu()
        if m > k:
            up = cat([up, up.new_zeros(tuple(up.shape[:-2]) + (m - k, n))], -2)
        grad = up if grad is None else grad + up
    return grad, None


lu_unpack_op = Op("lu_unpack", _lu_unpack_kernel, vjp=_lu_unpack_vjp, nondiff_outputs=(0,))


@lu_unpack_op.defjvp
def _lu_unpack_jvp(x_dots, lu, _piv, *, out):
    # L and U are LU's two triangles (L's unit diagonal is constant)
    d = x_dots[0]
    k = min(lu.shape[-2], lu.shape[-1])
    return None, d[..., :, :k].tril(-1), d[..., :k, :].triu()


@public(method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed output of :func:`ember.linalg.lu_factor`.

    Only the first ``min(m, n)`` pivots are read (as torch); each must lie in ``[1, m]``.
    """
    check_out_tuple("lu_unpack", out, 3)
    check_tensor("lu_unpack", LU_data, "LU_data")
    check_tensor("lu_unpack", LU_pivots, "LU_pivots")
    if LU_pivots.dtype != _dt.int32:  # torch takes no other integer type either
        raise RuntimeError(
            f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, "
            f"but got {LU_pivots.dtype.scalar_name} (pass the pivots of linalg.lu_factor)")
    if LU_data.dim() >= 2 and LU_pivots.dim() >= 1:
        m, k = LU_data.shape[-2], min(LU_data.shape[-2:])
        piv = LU_pivots._data[..., :k]
        if LU_pivots.shape[-1] < k or piv.size and holds_values(piv) and bool(
                ((piv < 1) | (piv > m)).any()):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                               "inclusive.Did you properly pass the result of lu_factor?")
        if LU_pivots.shape[-1] > k:
            LU_pivots = LU_pivots[..., :k]
    r = _dispatch.apply(lu_unpack_op, (LU_data, LU_pivots), {}, out)
    return make("lu_unpack", ["P", "L", "U"])(*r)


def _getrs(lu, piv, b, left, adjoint):
    """LAPACK getrs on the packed factors, as torch solves with them (rebuilding ``A = P L U``
    and solving again would round differently): ``X A = B`` is ``A^T X^T = B^T``, and its
    adjoint form ``conj(A) X^T = B^T``."""
    getrs = import_module("scipy.linalg").lu_solve

    n = lu.shape[-1]
    batch = np.broadcast_shapes(lu.shape[:-2], piv.shape[:-1], b.shape[:-2])
    lus = np.broadcast_to(lu, batch + (n, n)).reshape(-1, n, n)
    pivs = np.broadcast_to(piv, batch + (n,)).reshape(-1, n) - 1
    bs = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = np.empty(bs.shape, lu.dtype)
    for i in range(out.shape[0]):
        if left:
            out[i] = getrs((lus[i], pivs[i]), bs[i], trans=2 if adjoint else 0,
                           check_finite=False)
        else:
            f = (lus[i].conj(), pivs[i]) if adjoint else (lus[i], pivs[i])
            out[i] = getrs(f, bs[i].T, trans=0 if adjoint else 1, check_finite=False).T
    return out.reshape(batch + b.shape[-2:])


@empty_any_dtype
def _lu_solve_kernel(xp, lu, piv, b, *, left, adjoint):
    shape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    if not np.prod(shape):  # nothing to solve: the pivots are never read (as in PyTorch)
        return xp.zeros(shape, b.dtype)
    if xp is np and lu.dtype in _LAPACK_DTYPES:
        return _getrs(lu, piv, b, left, adjoint)
    P, L, U = _unpack(xp, lu, piv)
    A = xp.matmul(P, xp.matmul(L, U))
    if adjoint:
        A = xp.conj(xp.swapaxes(A, -1, -2))
    if left:
        return xp_solve(xp, A, b)
    return xp.swapaxes(xp_solve(xp, xp.swapaxes(A, -1, -2), xp.swapaxes(b, -1, -2)), -1, -2)


def _lu_solve_vjp(g, lu, piv, _b, *, out, left, adjoint, needs_input_grad):
    # B's gradient is the solve with the adjoint matrix; A = P L U's follows from it and X
    # in the orientation solved (A X = B, A^H X = B, X A = B, X A^H = B), then reaches LU's
    # triangles as in _lu_backward with P constant
    gB = lu_solve(lu, piv, g, left=left, adjoint=not adjoint)
    if not needs_input_grad[0]:
        return None, None, gB
    X = out
    if left:
        gA = -matmul(X, _h(gB)) if adjoint else -matmul(gB, _h(X))
    else:
        gA = -matmul(_h(gB), X) if adjoint else -matmul(_h(X), gB)
    P, L, U = lu_unpack(lu, piv)
    PtgA = matmul(P.mT, gA)
    return matmul(PtgA, _h(U)).tril(-1) + matmul(_h(L), PtgA).triu(), None, gB


lu_solve_op = Op("linalg_lu_solve", _lu_solve_kernel, vjp=_lu_solve_vjp)


@lu_solve_op.defjvp
def _lu_solve_jvp(x_dots, lu, piv, _b, *, out, left, adjoint):
    # differentiate op(A) X = B (op: identity or ^H, X on either side) with
    # dA = P (dL U + L dU) read off LU's tangent: one more solve with the same factors
    dLU, dB = x_dots[0], x_dots[2]
    rhs = dB
    if dLU is not None:
        P, L, U = lu_unpack(lu, piv)
        dA = matmul(P, matmul(dLU.tril(-1), U) + matmul(L, dLU.triu()))
        if adjoint:
            dA = _h(dA)
        t = -(matmul(dA, out) if left else matmul(out, dA))
        rhs = t if rhs is None else rhs + t
    if rhs is None:
        return None
    return lu_solve(lu, piv, rhs, left=left, adjoint=adjoint)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve ``A X = B`` given ``A``'s packed LU factorisation (``adjoint``: ``A^H X = B``;
    ``left=False``: ``X A = B``)."""
    _check_lu_solve(LU, pivots, B, left)
    params = {"left": bool(left), "adjoint": bool(adjoint)}
    return _dispatch.apply(lu_solve_op, (LU, pivots, B), params, out)


def _check_lu_solve(LU, pivots, B, left):
    """PyTorch's checks of ``linalg.lu_solve``, in its order: dtypes (LU's and B's equal,
    int32 pivots), shapes (square LU, a matrix B of matching size, one pivot per row and
    batch), then, when there is something to solve, pivots in ``[1, n]``."""
    name = "linalg.lu_solve"
    check_tensor(name, LU, "LU")
    check_tensor(name, B, "B")
    check_tensor(name, pivots, "pivots")
    check_float(name, LU)
    if LU.dtype != B.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {LU.dtype.scalar_name} and B of type {B.dtype.scalar_name} "
                           "instead")
    if pivots.dtype.name != "int32":
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    check_square(name, LU, "A")
    if B.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if pivots.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if pivots.shape[-1] != n:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    try:
        batch = np.broadcast_shapes(tuple(B.shape[:-2]), tuple(LU.shape[:-2]))
    except ValueError:
        raise RuntimeError(f"{name}: the batch dimensions of B {list(B.shape)} and LU "
                           f"{list(LU.shape)} cannot be broadcast together") from None
    piv = getattr(pivots, "_data", None)  # the raw values: vmap's batch included
    if int(np.prod(batch)) * B.shape[-2] * B.shape[-1] and pivots.numel() and \
            piv is not None and piv.size and holds_values(piv):
        if int(piv.min()) < 1:
            raise RuntimeError("Pivots given to lu_solve must all be greater or equal to 1. Did "
                               "you properly pass the result of lu_factor?")
        if int(piv.max()) > n:
            raise RuntimeError("Pivots given to lu_solve must all be smaller or equal to "
                               "LU.size(-2). Did you properly pass the result of lu_factor?")


def _cholesky_inverse_kernel(xp, l, *, upper):
    """LAPACK's ``?potri`` per matrix (torch's kernel): a zero on the factor's diagonal
    raises LinAlgError naming it; the inverse is mirrored from the triangle potri writes."""
    lapack = import_module("scipy.linalg.lapack")

    from .linalg_decomp import LinAlgError, _bidx

    n = l.shape[-1]
    if xp is not np or not l.size:
        eye = xp.broadcast_to(xp.eye(n, dtype=l.dtype), l.shape)
        L = xp.conj(xp.swapaxes(xp.triu(l), -1, -2)) if upper else xp.tril(l)
        return xp_solve(xp, xp.matmul(L, xp.conj(xp.swapaxes(L, -1, -2))), eye)
    flat = l.reshape((-1, n, n))
    potri = lapack.get_lapack_funcs("potri", (flat,))
    out = np.empty(flat.shape, l.dtype)
    with np.errstate(all="ignore"):
        for i in range(flat.shape[0]):
            # reference LAPACK's trtri (and MKL's, torch's) stops at the first exactly zero
            # diagonal element, NaN or not before it; OpenBLAS's own trtri may not look
            zero = np.flatnonzero(np.diagonal(flat[i]) == 0)
            inv, info = (None, int(zero[0]) + 1) if zero.size else \
                potri(flat[i], lower=not upper)
            if info > 0:
                raise LinAlgError(
                    f"cholesky_inverse: {_bidx(l.shape[:-2], i)}The diagonal element {info} is "
                    "zero, the inversion could not be completed because the input matrix is "
                    "singular.")
            if upper:
                out[i] = np.triu(inv) + np.conj(np.triu(inv, 1)).T
            else:
                out[i] = np.tril(inv) + np.conj(np.tril(inv, -1)).T
    return out.reshape(l.shape)


def _cholesky_inverse_vjp(g, l, *, out, upper):
    # A^-1 = (L L^H)^-1 differentiated for the whole factor as given (torch's formula, with
    # the computed inverse)
    common = matmul(out, matmul(g + _h(g), out))
    return -(matmul(l, common) if upper else matmul(common, l))


cholesky_inverse_op = Op("cholesky_inverse", _cholesky_inverse_kernel,
                         vjp=_cholesky_inverse_vjp)


@cholesky_inverse_op.defjvp
def _cholesky_inverse_jvp(x_dots, l, *, out, upper):
    # d(A^-1) = -A^-1 dA A^-1 with dA = dL L^H + L dL^H (U^H dU + dU^H U), the whole factor
    # as given, consistent with the vjp above
    d = x_dots[0]
    K = matmul(_h(l), d) if upper else matmul(d, _h(l))
    return -matmul(out, matmul(K + _h(K), out))


def _cholesky_inverse_impl(input, upper, out):
    check_square("cholesky_inverse", input, "input")
    return _dispatch.apply(cholesky_inverse_op, (input,), {"upper": bool(upper)}, out)


@public
def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of ``A`` from its Cholesky factor ``input`` (``A = L L^H``)."""
    return _cholesky_inverse_impl(input, upper, out)


# the top-level forms show PyTorch's names
_matrix_power_public.__name__ = _matrix_power_public.__qualname__ = "matrix_power"
_matrix_exp_public.__name__ = _matrix_exp_public.__qualname__ = "matrix_exp"


