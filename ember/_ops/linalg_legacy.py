"""PyTorch's older top-level linear-algebra API, kept for the programs that still call it:
``lu``, ``lu_solve``, ``triangular_solve``, ``geqrf``, ``orgqr``, ``ormqr``,
``nuclear_norm``, ``frobenius_norm``, and the randomized ``svd_lowrank`` / ``pca_lowrank``.

Most are thin layers over ``ember.linalg`` (argument order and result types as PyTorch's),
so autograd follows the functions they call. ``geqrf`` is an op of its own: its kernel is
LAPACK's ``?geqrf`` through ``scipy.linalg.lapack`` and, as in PyTorch, it has no
derivative (backward raises NotImplementedError).
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core.checks import holds_values
from .._core.layout import contiguous_format
from .._core.tensor import Tensor
from ..return_types import make
from ._registry import Op, public
from .linalg import _h, check_out_tuple, check_tensor, matmul
from .linalg_decomp import check_matrix

# ------------------------------------------------------------------------------------------------
# LU and triangular solves


@public
def lu(A, pivot=True, get_infos=False, out=None):
    """The packed LU factorisation of ``A`` (``ember.linalg.lu_factor``), with the per-matrix
    ``infos`` when ``get_infos``.

    Args:
        A (Tensor): a ``(*, m, n)`` float or complex tensor.
        pivot (bool): only True is supported on the CPU.
        get_infos (bool): also return ``infos`` (0 where the factorisation succeeded).
        out (tuple, optional): tensors to write the results into.

    Returns:
        ``(LU, pivots)``, or ``(LU, pivots, infos)`` when ``get_infos``.

    Example::

        >>> LU, pivots = ember.lu(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots.tolist()
        [2, 2]
    """
    from .._settings import warn_at_caller
    from .linalg_extra import lu_factor_ex

    warn_at_caller(
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, "
        "compute_pivots)\nshould be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
        "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)"
        "\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
        "compute_pivots)", UserWarning, once=True)
    LU, pivots, infos = lu_factor_ex(A, pivot=pivot)
    if get_infos:
        r = (LU, pivots, infos)
        if out is not None:
            r = _dispatch.write_out("lu", out, r)
        return make("_lu_with_info", ["LU", "pivots", "infos"])(*r)
    if out is not None:
        return tuple(_dispatch.write_out("lu", out, (LU, pivots)))
    return LU, pivots


@public
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Solve ``A X = b`` from ``A``'s packed LU factorisation (``ember.lu``); the older
    argument order of ``ember.linalg.lu_solve(LU, pivots, B)``.

    Args:
        b (Tensor): ``(*, n, k)``, the right-hand sides.
        LU_data (Tensor): ``(*, n, n)``, the packed factors.
        LU_pivots (Tensor): ``(*, n)`` int32 pivots.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: ``X``, differentiable in ``b`` and ``LU_data``.

    Pivots not produced by ``lu_factor`` (one below 1 or above the size) raise RuntimeError,
    as in PyTorch.

    Example::

        >>> A = ember.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> LU, pivots = ember.lu(A)
        >>> ember.lu_solve(ember.tensor([[2.0], [4.0]]), LU, pivots).tolist()
        [[1.0], [1.0]]
    """
    from .linalg_func import lu_solve as _lu_solve

    check_tensor("lu_solve", b, "b")
    if b.dim() < 2:
        raise RuntimeError(f"linalg.lu_solve: Expected B to have at least 2 dimensions, but it "
                           f"has {b.dim()} dimensions instead")
    return _lu_solve(LU_data, LU_pivots, b, out=out)


@public
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solve ``A X = b`` for a triangular ``A`` (``A^T X = b`` with ``transpose``).

    Args:
        b (Tensor): ``(*, m, k)``, the right-hand sides.
        A (Tensor): ``(*, m, m)``; only its upper (``upper``) or lower triangle is read.
        upper (bool): ``A`` is upper triangular.
        transpose (bool): solve with ``A``'s transpose.
        unitriangular (bool): take ``A``'s diagonal to be all ones.
        out (tuple, optional): two tensors for ``(solution, cloned_coefficient)``.

    Returns:
        ``(solution, cloned_coefficient)``: ``X`` and a copy of ``A`` (broadcast to the
        batch shape). Differentiable in both inputs.

    Example::

        >>> A = ember.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> ember.triangular_solve(ember.tensor([[3.0], [4.0]]), A).solution.tolist()
        [[1.0], [1.0]]
    """
    check_out_tuple("triangular_solve", out)
    from .linalg_decomp import solve_triangular

    op_name = "torch.triangular_solve"
    check_tensor(op_name, b, "b")
    check_tensor(op_name, A, "A")
    for t, name in ((b, "b"), (A, "A")):
        if t.dim() < 2:
            raise RuntimeError(f"{op_name}: Expected {name} to have at least 2 dimensions, but "
                               f"it has {t.dim()} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op_name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} "
            f"by {A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    if A.dtype != b.dtype:
        raise RuntimeError(f"{op_name}: Expected b and A to have the same dtype, but got "
                           f"b with dtype {b.dtype.scalar_name} and A with dtype "
                           f"{A.dtype.scalar_name}")
    batch = tuple(np.broadcast_shapes(tuple(b.shape[:-2]), tuple(A.shape[:-2])))
    Ab = A.expand(*batch, *A.shape[-2:])
    coef = A.mT if transpose else A
    X = solve_triangular(coef, b.expand(*batch, *b.shape[-2:]), upper=upper != transpose,
                         unitriangular=unitriangular)
    # the copy of A is column-major per matrix, as LAPACK-backed PyTorch gives it
    r = (X, Ab.mT.clone(memory_format=contiguous_format).mT)
    if out is not None:
        r = _dispatch.write_out("triangular_solve", out, r)
    return make("triangular_solve", ["solution", "cloned_coefficient"])(*r)


# ------------------------------------------------------------------------------------------------
# Householder QR: geqrf, orgqr, ormqr


def _geqrf_kernel(xp, a):
    from .._lazy_import import import_module

    lapack = import_module("scipy.linalg.lapack")

    m, n = a.shape[-2:]
    if not holds_values(a):  # the meta device: shapes only
        return xp.empty(a.shape, a.dtype), xp.empty(a.shape[:-2] + (min(m, n),), a.dtype)
    host = a if xp is np else a.get()
    k = min(m, n)
    batch = host.shape[:-2]
    flat = host.reshape((int(np.prod(batch)), m, n))
    qr = np.array(flat, copy=True)
    tau = np.zeros((flat.shape[0], k), host.dtype)
    if k:
        fn = getattr(lapack, {"f": "s", "d": "d", "F": "c", "D": "z"}[host.dtype.char] + "geqrf")
        for i in range(flat.shape[0]):
            # + 0.0 turns -0.0 into 0.0: MKL's larfg takes the sign of a -0.0 pivot as +,
            # the reference LAPACK SciPy carries as - (the opposite Householder sign)
            qr[i], tau[i], _, _ = fn(flat[i] + 0.0)
    return xp.asarray(qr.reshape(host.shape)), xp.asarray(tau.reshape(batch + (k,)))


def _geqrf_vjp(g, _a):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


geqrf_op = Op("geqrf", _geqrf_kernel, vjp=_geqrf_vjp)


@geqrf_op.defjvp
def _geqrf_jvp(x_dots, _a, *, out=None):
    # no forward derivative either, as in torch (the Householder form is not smooth data)
    raise NotImplementedError("Trying to use forward AD with geqrf that does not support it "
                              "because it has not been implemented yet.")


@public
def geqrf(input, *, out=None):
    """The QR factorisation in LAPACK's packed form: ``R`` on and above the diagonal of ``a``,
    the Householder vectors below it, their scales in ``tau``.

    ``orgqr(a, tau)`` rebuilds ``Q``; ``ormqr(a, tau, C)`` multiplies by it without forming it.

    Args:
        input (Tensor): a ``(*, m, n)`` float or complex tensor.
        out (tuple, optional): two tensors for ``(a, tau)``.

    Returns:
        ``(a, tau)`` with ``tau`` of shape ``(*, min(m, n))``. No gradient: backward raises.

    Example::

        >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> round(abs(a[0, 0].item()), 4)
        5.0
    """
    check_out_tuple("geqrf", out)
    check_matrix("geqrf", input, "input")
    r = _dispatch.apply(geqrf_op, (input,), {}, out)
    return make("geqrf", ["a", "tau"])(*r)


@public
def orgqr(input, tau):
    """The first ``n`` columns of ``Q`` from ``geqrf``'s packed output (alias of
    ``ember.linalg.householder_product``).

    Args:
        input (Tensor): ``(*, m, n)``, the Householder vectors below the diagonal.
        tau (Tensor): ``(*, k)``, their scales (``k <= n``).

    Returns:
        Tensor: ``(*, m, n)``, differentiable.

    Differences from PyTorch:
        Non-finite float32 input: PyTorch's MKL kernel fuses multiply-adds where ember
        applies the reflectors in LAPACK's reference order, so where an intermediate
        overflows the two can disagree on which entries come out inf or NaN.

    Example::

        >>> A = ember.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> a, tau = ember.geqrf(A)
        >>> Q = ember.orgqr(a, tau)
        >>> ember.allclose(Q @ Q.mT, ember.eye(2), atol=1e-6)
        True
    """
    from .linalg_householder import householder_product

    return householder_product(input, tau)


def _orm2r(a, tau, c, left, transpose):
    """LAPACK's orm2r on one matrix: ``c`` times ``Q = H_1 ... H_k`` or ``Q^H``, each
    reflector applied as ``larf`` does (NOTE [ Householder reflectors as LAPACK applies
    them ])."""
    from .linalg_householder import _larf_fused, _unit_reflector

    c = c.copy()
    k = min(tau.shape[0], a.shape[-1], a.shape[-2])
    forward = left == transpose  # Q^H C and C Q take H_1 first
    for i in (range(k) if forward else reversed(range(k))):
        t = np.conj(tau[i]) if transpose else tau[i]
        v = _unit_reflector(a, i)
        _larf_fused(v, t, c[i:, :] if left else c[:, i:], left)
    return c


def _ormqr_kernel(xp, a, tau, c, *, left, transpose):
    from .linalg_householder import _column_major

    if not holds_values(c):  # the meta device: shapes only, column-major as the result
        return xp.swapaxes(xp.empty(c.shape[:-2] + c.shape[-2:][::-1], c.dtype), -1, -2)
    host = [x if xp is np else x.get() for x in (a, tau, c)]
    batch = np.broadcast_shapes(host[0].shape[:-2], host[1].shape[:-1], host[2].shape[:-2])
    nb = int(np.prod(batch))
    fa, ft, fc = (np.broadcast_to(x, batch + x.shape[-d:]).reshape((nb,) + x.shape[-d:])
                  for x, d in zip(host, (2, 1, 2)))
    with np.errstate(all="ignore"):
        r = np.stack([_orm2r(fa[b], ft[b], fc[b], left, transpose) for b in range(fc.shape[0])]) \
            if fc.shape[0] else fc.copy()
    r = _column_major(r.reshape(batch + host[2].shape[-2:]))
    return r if xp is np else xp.asarray(r)


def _ormqr_parts(A, tau, mn):
    from .linalg_householder import _reflectors

    k = min(tau.shape[-1], A.shape[-1], mn)
    V, below = _reflectors(A, k)
    return V, below, tau[..., :k]


def _ormqr_vjp(g, A, tau, C, *, left, transpose, needs_input_grad):
    from .linalg_householder import _pad_cols, _reflector_grads
    from .pointwise import where

    gC = None
    if needs_input_grad[2]:
        gC = ormqr(A, tau, g, left=left, transpose=not transpose)
    gA = gtau = None
    mn = C.shape[-2] if left else C.shape[-1]
    # no reflector, or an empty batch: PyTorch's backward gives A and tau no gradient
    if min(tau.shape[-1], A.shape[-1], mn) and A.numel() and (needs_input_grad[0] or
                                                              needs_input_grad[1]):
        V, below, t = _ormqr_parts(A, tau, mn)
        G = matmul(g, _h(C)) if left else matmul(_h(C), g)  # the gradient of op(Q)
        gV, gtau = _reflector_grads(_h(G) if transpose else G, V, t, mn)
        gA = where(below, gV, gV.new_zeros(()))
        if gA.shape[-1] < A.shape[-1]:
            gA = _pad_cols(gA, A.shape[-1])
        if gtau.shape[-1] < tau.shape[-1]:
            gtau = _pad_cols(gtau, tau.shape[-1])
    return gA, gtau, gC


def _ormqr_jvp(x_dots, A, tau, C, *, out, left, transpose):
    from .linalg_householder import _reflector_tangent
    from .pointwise import where

    total = None
    mn = C.shape[-2] if left else C.shape[-1]
    if min(tau.shape[-1], A.shape[-1], mn) and (x_dots[0] is not None or x_dots[1] is not None):
        V, below, t = _ormqr_parts(A, tau, mn)
        k = t.shape[-1]
        V_dot = None if x_dots[0] is None else where(
            below, x_dots[0][..., :, :k], x_dots[0].new_zeros(()))
        t_dot = None if x_dots[1] is None else x_dots[1][..., :k]
        dQ = _reflector_tangent(V, t, V_dot, t_dot, mn)
        if dQ is not None:
            dQ = _h(dQ) if transpose else dQ
            total = matmul(dQ, C) if left else matmul(C, dQ)
    if x_dots[2] is not None:
        term = ormqr(A, tau, x_dots[2], left=left, transpose=transpose)
        total = term if total is None else total + term
    return total


ormqr_op = Op("ormqr", _ormqr_kernel, vjp=_ormqr_vjp, jvp=_ormqr_jvp)


@public
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """``other`` multiplied by the ``Q`` of ``geqrf``'s packed output, without the caller
    forming ``Q``: ``Q C``, ``Q^H C`` (``transpose``), ``C Q`` or ``C Q^H`` (``left=False``).

    Args:
        input (Tensor): ``(*, mn, k)``, the Householder vectors (``mn`` is ``other``'s row
            count when ``left``, its column count otherwise).
        tau (Tensor): ``(*, min(mn, k))``, their scales.
        other (Tensor): ``(*, m, n)``, the matrix to multiply.
        left (bool): multiply ``Q`` from the left.
        transpose (bool): use ``Q``'s conjugate transpose.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: of ``other``'s shape, differentiable in all three inputs.

    Example::

        >>> A = ember.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> a, tau = ember.geqrf(A)
        >>> R = ember.ormqr(a, tau, A, transpose=True)
        >>> round(abs(R[1, 0].item()), 4)
        0.0
    """
    op_name = "torch.ormqr"
    check_matrix(op_name, input, "input")
    check_tensor(op_name, tau, "tau")
    check_tensor(op_name, other, "other")
    if other.dim() < 2:
        raise RuntimeError(f"{op_name}: other must have at least 2 dimensions.")
    mn = other.shape[-2] if left else other.shape[-1]
    side = "other.shape[-2]" if left else "other.shape[-1]"
    if input.shape[-2] != mn:
        raise RuntimeError(f"{op_name}: input.shape[-2] must be equal to {side}, but got "
                           f"{input.shape[-2]} and {mn}")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError(f"{op_name}: tau.shape[-1] must be less than or equal to "
                           f"input.shape[-1]")
    if tau.shape[-1] != min(mn, input.shape[-1]):
        raise RuntimeError(f"{op_name}: tau.shape[-1] must be equal to min({side}, "
                           "input.shape[-1])")
    if len({input.dtype, tau.dtype, other.dtype}) != 1:
        raise RuntimeError(f"{op_name}: Expected input, tau and other to have the same dtype, "
                           f"but got {input.dtype.scalar_name}, {tau.dtype.scalar_name} and "
                           f"{other.dtype.scalar_name}")
    params = {"left": bool(left), "transpose": bool(transpose)}
    r = _dispatch.apply(ormqr_op, (input, tau, other), params)
    return r if out is None else _dispatch.write_out("ormqr", out, r)


# ------------------------------------------------------------------------------------------------
# norms


@public(method=False)
def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The nuclear norm (sum of singular values) of the matrices over ``dim``.

    Also callable as ``nuclear_norm(input, keepdim)`` for the last two dims, as in PyTorch.

    Args:
        input (Tensor): a float or complex tensor with at least 2 dims.
        dim (tuple of two ints, optional): the matrix dims (default the last two).
        keepdim (bool): keep the reduced dims with size 1.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: the norms, real.

    Example::

        >>> ember.nuclear_norm(ember.tensor([[3.0, 0.0], [0.0, -4.0]])).item()
        7.0
    """
    from .linalg_norm import matrix_norm

    if isinstance(dim, bool):
        dim, keepdim = None, dim
    check_tensor("nuclear_norm", input)
    if dim is not None and len(tuple(dim)) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim)}")
    return matrix_norm(input, "nuc", tuple(dim) if dim is not None else (-2, -1), keepdim,
                       out=out)


@public(method=False)
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The Frobenius norm (2-norm of the entries) over one or two dims; ``dim=()`` is all.

    Args:
        input (Tensor): a float or complex tensor.
        dim (int or tuple of at most two ints): the dims to reduce.
        keepdim (bool): keep the reduced dims with size 1.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: the norms, real.

    Example::

        >>> ember.frobenius_norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]), (0, 1)).item()
        5.0
    """
    from .linalg_norm import vector_norm

    check_tensor("frobenius_norm", input)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return vector_norm(input, 2, dims if dims else None, keepdim, out=out)


# ------------------------------------------------------------------------------------------------
# randomized low-rank SVD and PCA (Halko, Martinsson and Tropp, 2011)


def _range_basis(A, q, niter, M):
    """An orthonormal ``(*, m, q)`` basis that nearly spans the range of ``A - M``: a random
    sketch, sharpened by ``niter`` power iterations, each orthonormalised by QR."""
    from .linalg_decomp import qr
    from .random_ops import randn

    def prod(X, adjoint=False):
        B = _h(A) if adjoint else A
        r = matmul(B, X)
        if M is not None:
            r = r - matmul(_h(M) if adjoint else M, X)
        return r

    R = randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(prod(R)).Q
    for _ in range(niter):
        Q = qr(prod(Q, adjoint=True)).Q
        Q = qr(prod(Q)).Q
    return Q


def _lowrank_dtype(op_name, A):
    """The randomized factorizations start with a QR (geqrf), whose kernel PyTorch lacks in
    float16 (NotImplementedError); other dtypes are checked as any matrix input."""
    if isinstance(A, Tensor) and A.dtype.name == "float16":
        raise NotImplementedError('"geqrf_cpu" not implemented for \'Half\'')
    check_matrix(op_name, A)


def _check_q(op_name, q, m, n):
    if not isinstance(q, int) or q < 0 or q > min(m, n):
        raise ValueError(f"{op_name}: q(={q}) must be non-negative integer and not greater "
                         f"than min(m, n)={min(m, n)}")


@public(method=False)
def svd_lowrank(A, q=6, niter=2, M=None):
    """A randomized rank-``q`` SVD: ``A - M ~ U diag(S) V^H``.

    Args:
        A (Tensor): ``(*, m, n)``.
        q (int): the rank sought (a little above the true rank is best); default 6.
        niter (int): power iterations sharpening the sketch (default 2).
        M (Tensor, optional): subtracted from ``A`` (broadcastable), e.g. a mean.

    Returns:
        ``(U, S, V)``: ``(*, m, q)``, ``(*, q)``, ``(*, n, q)``. Note ``V``, not ``V^H``.
        Random: fix ``ember.manual_seed`` for repeatable results.

    A ``q`` above ``min(m, n)`` gives factors of rank ``min(m, n)``, as in PyTorch.

    Example::

        >>> A = ember.randn(8, 2) @ ember.randn(2, 6)
        >>> U, S, V = ember.svd_lowrank(A, q=2)
        >>> ember.allclose(U @ ember.diag(S) @ V.mT, A, atol=1e-4)
        True
    """
    from .linalg_decomp import svd

    _lowrank_dtype("svd_lowrank", A)
    m, n = A.shape[-2], A.shape[-1]
    q = 6 if q is None else q
    if not isinstance(q, int):
        raise TypeError(f"svd_lowrank: q must be an int, got {type(q).__name__}")
    if q < 0:  # PyTorch's sketch is randn(n, q)
        raise RuntimeError(f"Trying to create tensor with negative dimension {q}: "
                           f"[{min(m, n)}, {q}]")
    niter = 2 if niter is None else niter
    if M is not None:
        M = M.expand(*A.shape)
    if m < n:  # sketch the smaller side: work with A^H and swap the factors back
        U, S, V = svd_lowrank(_h(A), q, niter, None if M is None else _h(M))
        return V, S, U
    Q = _range_basis(A, q, niter, M)
    B = matmul(_h(Q), A if M is None else A - M)
    U, S, Vh = svd(B, full_matrices=False)
    return matmul(Q, U), S, _h(Vh)


@public(method=False)
def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal component analysis of the rows of ``A`` by a randomized low-rank SVD.

    Args:
        A (Tensor): ``(*, m, n)``: ``m`` samples of ``n`` features.
        q (int, optional): the number of components (default ``min(6, m, n)``).
        center (bool): subtract the feature means first.
        niter (int): power iterations (default 2).

    Returns:
        ``(U, S, V)`` as :func:`svd_lowrank`: ``V``'s columns are the principal directions,
        ``S ** 2 / (m - 1)`` the variances along them.

    Example::

        >>> X = ember.randn(50, 3) * ember.tensor([5.0, 1.0, 0.1])
        >>> U, S, V = ember.pca_lowrank(X, q=2)
        >>> V.shape
        ember.Size([3, 2])
    """
    check_tensor("pca_lowrank", A, "A")
    m, n = (A.shape[-2], A.shape[-1]) if A.dim() >= 2 else (0, 0)
    if q is None:
        q = min(6, m, n)
    _check_q("pca_lowrank", q, m, n)
    _lowrank_dtype("pca_lowrank", A)
    if center:
        A = A - A.mean(-2, keepdim=True)
    return svd_lowrank(A, q, niter=niter)


# ------------------------------------------------------------------------------------------------
# functions PyTorch keeps only to say what replaced them (ikostrikov's ACKTR still calls
# torch.symeig): the same RuntimeError, word for word, from the function and the method

_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_REMOVED_MESSAGES = {
    "symeig": _REMOVED + " The default behavior has changed from using the upper triangular "
    "portion of the matrix by default to using the lower triangular portion.\n\n"
    "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
    "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
    "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
    "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "eig": _REMOVED + " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
    "`cdouble` rather than real tensors mimicking complex tensors.\n\n"
    "L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\n"
    "and\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
    "L_complex, V_complex = torch.linalg.eig(A)",
    "lstsq": _REMOVED + " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
    "the returned tuple (although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
    "The returned solution in `torch.lstsq` stored the residuals of the solution in the last "
    "m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals "
    "are in the field 'residuals' of the returned named tuple.\n\n"
    "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
    "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "solve": _REMOVED + " `torch.solve` is deprecated in favor of `torch.linalg.solve`. "
    "`torch.linalg.solve` has its arguments reversed and does not return the LU "
    "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
    "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
    "replaced with:\nX = torch.linalg.solve(A, B)",
    "matrix_rank": _REMOVED + "\nPlease use the `torch.linalg.matrix_rank` function instead. "
    "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}

_REMOVED_DOC = """Removed from PyTorch: always raises the RuntimeError that names ``{use}``.

    Args:
        {args}

    Returns:
        Nothing: always raises RuntimeError.

    Example::

        >>> ember.{call}  # doctest: +SKIP
        RuntimeError: This function was deprecated since version 1.9 and is now removed...
    """


def _removed(f, use, args, call):
    f.__doc__ = _REMOVED_DOC.format(use=use, args=args, call=call)
    return f


@public(method=False)
def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(_REMOVED_MESSAGES["symeig"])


@public(method=False)
def eig(input, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(_REMOVED_MESSAGES["eig"])


@public(method=False)
def lstsq(input, A, *, out=None):
    raise RuntimeError(_REMOVED_MESSAGES["lstsq"])


@public(method=False)
def solve(input, A, *, out=None):
    raise RuntimeError(_REMOVED_MESSAGES["solve"])


@public(method=False)
def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(_REMOVED_MESSAGES["matrix_rank"])


def _symeig_method(self, eigenvectors=False):
    raise RuntimeError(_REMOVED_MESSAGES["symeig"])


def _eig_method(self, eigenvectors=False):
    raise RuntimeError(_REMOVED_MESSAGES["eig"])


def _lstsq_method(self, other):
    raise RuntimeError(_REMOVED_MESSAGES["lstsq"])


def _solve_method(self, other):
    raise RuntimeError(_REMOVED_MESSAGES["solve"])


_ARGS = {
    "symeig": ("ember.linalg.eigh", "input, eigenvectors, upper, out: ignored.",
               "symeig(ember.eye(2))"),
    "eig": ("ember.linalg.eig", "input, eigenvectors, e, v: ignored.", "eig(ember.eye(2))"),
    "lstsq": ("ember.linalg.lstsq", "input, A, out: ignored.",
              "lstsq(ember.eye(2), ember.eye(2))"),
    "solve": ("ember.linalg.solve", "input, A, out: ignored.",
              "solve(ember.eye(2), ember.eye(2))"),
    "matrix_rank": ("ember.linalg.matrix_rank", "input, tol, symmetric, out: ignored.",
                    "matrix_rank(ember.eye(2))"),
}
for _f in (symeig, eig, lstsq, solve, matrix_rank):
    _removed(_f, *_ARGS[_f.__name__])
for _name, _m in (("symeig", _symeig_method), ("eig", _eig_method), ("lstsq", _lstsq_method),
                  ("solve", _solve_method)):
    _m.__name__ = _m.__qualname__ = _name
    _use, _, _call = _ARGS[_name]
    _removed(_m, _use, "self, other or eigenvectors: ignored.", f"eye(2).{_name}()")
    public(_m, function=False)
