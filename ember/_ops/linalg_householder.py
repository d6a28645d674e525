"""Householder reflectors: ``linalg.householder_product`` (``orgqr``) and the kernels
``ormqr`` shares, applied in the order LAPACK applies them (NOTE [ Householder reflectors as
LAPACK applies them ]), with derivative formulas in ember ops."""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core.checks import holds_values
from .._core.tensor import wrap
from ._registry import Op
from .linalg import _conj, _h, check_tensor, matmul
from .linalg_decomp import check_matrix


# ------------------------------------------------------------------------------------------------
# householder_product and ormqr: Householder reflectors applied as LAPACK applies them

# NOTE [ Householder reflectors as LAPACK applies them ]
# torch runs LAPACK's orgqr/ormqr (the unblocked org2r/orm2r order for the sizes people
# pass), and on NaN, infinite or overflowing data the result depends on how each reflector
# ``H = I - tau v v^H`` is applied (``larf``): reflector ``i`` touches only the trailing
# block it acts on; it is skipped when ``tau == 0``; ``v``'s trailing zeros and the columns
# (rows, from the right) of the block that are zero where ``v`` is not are left out of the
# product; ``w = C^H v`` comes first, then ``C += v (-tau conj(w))^T``. Forming ``Q`` by
# products of full matrices instead spreads one NaN of ``v`` (or of the ignored upper
# triangle) over everything. MKL's ormqr differs from its orgqr in one respect: it scans
# nothing and updates each element with a fused multiply-add (``_larf_fused``). The kernels
# below replay both in NumPy; the derivatives are formulas in ember ops (``_reflector_grads``).


def _larf(v, tau, C, left):
    """``C := H C`` (``left``) or ``C H`` with ``H = I - tau v v^H``, in place, as ``larf``."""
    if tau == 0:
        return
    nz = np.flatnonzero(v != 0)
    lastv = int(nz[-1]) + 1 if nz.size else 0
    if left:
        cols = np.flatnonzero((C[:lastv] != 0).any(axis=0))
        lastc = int(cols[-1]) + 1 if cols.size else 0
        if lastc:
            blk = C[:lastv, :lastc]
            w = blk.T.conj() @ v[:lastv]
            blk += np.outer(v[:lastv], (-tau) * np.conj(w))
    else:
        rows = np.flatnonzero((C[:, :lastv] != 0).any(axis=1))
        lastc = int(rows[-1]) + 1 if rows.size else 0
        if lastc:
            blk = C[:lastc, :lastv]
            w = blk @ v[:lastv]
            blk += np.outer(w, (-tau) * np.conj(v[:lastv]))


def _wide(x):
    """``x`` in a wider type, so ``c + v * t`` rounds once, as a fused multiply-add does."""
    return x.astype(np.clongdouble if x.dtype.kind == "c" else np.longdouble)


def _larf_fused(v, tau, C, left):
    """``C := H C`` (``left``) or ``C H`` as MKL's ormqr applies a reflector: ``w`` over the
    whole block (no zero scanning), ``t = -tau conj(w)`` (or ``-tau conj(v)``), then every
    element updated by one fused multiply-add, so a product that overflows only before the
    addition does not."""
    if tau == 0:
        return
    if left:  # C += v t^T
        x, y = v, (-tau) * np.conj(C.T.conj() @ v)
    else:  # C += w t^T
        x, y = C @ v, (-tau) * np.conj(v)
    C[...] = _wide(C) + _wide(x)[:, None] * _wide(y)[None, :]


def _unit_reflector(a, i):
    v = a[i:, i].copy()
    v[0] = 1
    return v


def _org2r(a, tau):
    """LAPACK's org2r on one matrix: the first ``n`` columns of ``H_1 ... H_k``."""
    m, n = a.shape
    k = tau.shape[0]
    q = a.copy()
    q[:, k:] = 0
    for j in range(k, min(m, n)):
        q[j, j] = 1
    for i in reversed(range(k)):
        if i < n - 1:
            _larf(_unit_reflector(a, i), tau[i], q[i:, i + 1:], True)
        q[i + 1:, i] = -tau[i] * a[i + 1:, i]
        q[i, i] = 1 - tau[i]
        q[:i, i] = 0
    return q


def _column_major(x):
    """``x`` as a fresh array, column-major per matrix (LAPACK's layout in PyTorch)."""
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)


def _householder_kernel(xp, a, tau):
    m, n = a.shape[-2], a.shape[-1]
    if not tau.shape[-1]:  # the identity's columns, column-major as LAPACK's results
        eye = xp.broadcast_to(xp.eye(n, m, dtype=a.dtype), a.shape[:-2] + (n, m))
        return xp.swapaxes(xp.ascontiguousarray(eye), -1, -2)
    if not holds_values(a):  # the meta device: shapes only, column-major as the result
        return xp.swapaxes(xp.empty(a.shape[:-2] + (n, m), a.dtype), -1, -2)
    host, thost = (a, tau) if xp is np else (a.get(), tau.get())
    nb = int(np.prod(host.shape[:-2]))
    fa = host.reshape((nb, m, n))
    ft = np.broadcast_to(thost, host.shape[:-2] + thost.shape[-1:]).reshape(nb, thost.shape[-1])
    with np.errstate(all="ignore"):
        q = np.stack([_org2r(fa[b], ft[b]) for b in range(fa.shape[0])]) if fa.shape[0] else \
            np.zeros(fa.shape, fa.dtype)
    q = _column_major(q.reshape(host.shape))
    return q if xp is np else xp.asarray(q)


def _reflectors(A, k):
    """``V``: the first ``k`` columns of ``A`` below the diagonal, a 1 on it, 0 above (what
    ``A`` holds elsewhere is never read)."""
    from .pointwise import where

    m = A.shape[-2]
    A = A[..., :, :k]
    xp = _dispatch.xp_of(A._data)
    below = wrap(xp.asarray(np.tril(np.ones((m, k), bool), -1)))
    eye = wrap(xp.asarray(np.eye(m, k, dtype=A._data.dtype)))
    return where(below, A, eye), below


def _reflector_factors(V, tau):
    """The reflectors ``H_i = I - tau_i v_i v_i^H`` (m x m), as ember tensors."""
    m = V.shape[-2]
    eye = wrap(_dispatch.xp_of(V._data).asarray(np.eye(m, dtype=V._data.dtype)))
    Hs = []
    for i in range(tau.shape[-1]):
        v = V[..., :, i:i + 1]
        Hs.append(eye - tau[..., i:i + 1].unsqueeze(-1) * matmul(v, _h(v)))
    return Hs


def _reflector_grads(GQ, V, tau, ncols):
    """Gradients of ``Q = (H_1 ... H_k)[:, :ncols]`` w.r.t. the reflectors ``V`` and ``tau``
    for the gradient ``GQ`` of ``Q``: with ``P_i = H_1 ... H_{i-1}`` and ``S_i = H_{i+1} ...
    H_k``, ``M_i = P_i^H GQ S_i^H`` gives ``g tau_i = -v_i^H M_i v_i`` and
    ``g v_i = -conj(tau_i) M_i v_i - tau_i M_i^H v_i``."""
    from .join import cat, stack

    Hs = _reflector_factors(V, tau)
    k = len(Hs)
    m = V.shape[-2]
    S = [None] * k
    right = wrap(_dispatch.xp_of(V._data).asarray(np.eye(m, ncols, dtype=V._data.dtype)))
    for i in reversed(range(k)):
        S[i] = right
        right = matmul(Hs[i], right)
    P = None
    gv, gt = [], []
    for i in range(k):
        M = matmul(GQ, _h(S[i]))
        if P is not None:
            M = matmul(_h(P), M)
        v = V[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        Mv = matmul(M, v)
        gt.append(-matmul(_h(v), Mv)[..., 0, 0])
        gv.append(-(_conj(t) * Mv) - t * matmul(_h(M), v))
        P = Hs[i] if P is None else matmul(P, Hs[i])
    return cat(gv, -1), stack(gt, -1)


def _reflector_tangent(V, tau, V_dot, tau_dot, ncols):
    """The tangent of ``(H_1 ... H_k)[:, :ncols]``: ``sum_i P_i dH_i S_i``."""
    Hs = _reflector_factors(V, tau)
    m = V.shape[-2]
    xp = _dispatch.xp_of(V._data)
    right = wrap(xp.asarray(np.eye(m, ncols, dtype=V._data.dtype)))
    S = [None] * len(Hs)
    for i in reversed(range(len(Hs))):
        S[i] = right
        right = matmul(Hs[i], right)
    total, P = None, None
    for i in range(len(Hs)):
        v = V[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        dH = None
        if tau_dot is not None:
            dH = -(tau_dot[..., i:i + 1].unsqueeze(-1) * matmul(v, _h(v)))
        if V_dot is not None:
            dv = V_dot[..., :, i:i + 1]
            term = -(t * (matmul(dv, _h(v)) + matmul(v, _h(dv))))
            dH = term if dH is None else dH + term
        if dH is not None:
            term = matmul(dH, S[i]) if P is None else matmul(P, matmul(dH, S[i]))
            total = term if total is None else total + term
        P = Hs[i] if P is None else matmul(P, Hs[i])
    return total


def _householder_vjp(g, A, tau):
    n, k = A.shape[-1], tau.shape[-1]
    if not k or not A.numel():
        # no reflector, or an empty batch: PyTorch's backward gives neither input a gradient
        return None, None
    V, below = _reflectors(A, k)
    gV, gtau = _reflector_grads(g, V, tau, n)
    from .pointwise import where

    gV = where(below, gV, gV.new_zeros(()))
    if k < n:
        gV = _pad_cols(gV, n)
    return gV, gtau


def _pad_cols(x, n):
    from .join import cat

    extra = n - x.shape[-1]
    return cat([x, x.new_zeros(tuple(x.shape[:-1]) + (extra,))], -1)


def _householder_jvp(x_dots, A, tau, *, out):
    k = tau.shape[-1]
    if not k:
        return None
    from .pointwise import where

    V, below = _reflectors(A, k)
    V_dot = None
    if x_dots[0] is not None:
        V_dot = where(below, x_dots[0][..., :, :k], x_dots[0].new_zeros(()))
    return _reflector_tangent(V, tau, V_dot, x_dots[1], A.shape[-1])


householder_op = Op("linalg_householder_product", _householder_kernel, vjp=_householder_vjp,
                    jvp=_householder_jvp)
householder_op.node_name = "LinalgHouseholderProductBackward0"


def householder_product(A, tau, *, out=None):
    """The first ``n`` columns of ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^H``, where
    ``v_i`` is column ``i`` of ``A`` below the diagonal with a 1 on it (LAPACK's orgqr; see
    NOTE [ Householder reflectors as LAPACK applies them ])."""
    op_name = "linalg.householder_product"
    check_matrix(op_name, A)
    check_tensor(op_name, tau, "tau")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1] if tau.dim() else 0
    if m < n:
        raise RuntimeError(
            f"{op_name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() != A.dim() - 1 or k > n:
        raise RuntimeError(
            f"{op_name}: tau must have {A.dim() - 1} dims and at most input.shape[-1] "
            f"elements in its last dim, got shape {list(tau.shape)}")
    if A._data.dtype != tau._data.dtype:
        raise RuntimeError(
            f"{op_name}: tau dtype {tau.dtype.scalar_name} does not match input dtype "
            f"{A.dtype.scalar_name}")
    r = _dispatch.apply(householder_op, (A, tau), {})
    return r if out is None else _dispatch.write_out(op_name, out, r)
