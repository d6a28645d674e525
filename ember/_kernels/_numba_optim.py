"""numba kernels for the SGD and Adadelta steps on the CPU (imported only when numba is
installed and the ``numba`` backend is chosen; see NOTE [ Fused optimizer steps ] in
``_train.py``).

Each kernel is one pass over flat float32 arrays, in place, computing each element with the
same float32 operations in the same order as the functional update's tensor ops (scalars
come rounded to float32 as those ops round them). No fast-math flags: LLVM contracts
nothing into FMAs by itself, and SGD's ``add(y, alpha=...)`` steps, which PyTorch's kernel
fuses, call ``_fused`` (``llvm.fma``) explicitly (NOTE [ Fused multiply-add as PyTorch's
kernels ] in ``ember/_ops/_fma.py``), so the results equal the op-by-op path bit for bit;
the loops vectorise as they are.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._numba import _fused


@njit(cache=True, nogil=True, error_model="numpy")
def sgd_into(p, g, buf, neg_lr, momentum, keep, nesterov, weight_decay, maximize,
             has_momentum, has_keep):  # pragma: no cover - compiled
    """SGD step: ``g = -g`` (maximize), ``g += weight_decay * p``, ``buf = buf * momentum +
    keep * g`` (``keep = 1 - dampening``, skipped when 1), ``g = g + momentum * buf``
    (nesterov) or ``buf``, ``p += neg_lr * g``; each ``x + alpha * y`` fused."""
    if has_momentum and not (nesterov or maximize or has_keep):
        _momentum_into(p, g, buf, neg_lr, momentum, weight_decay)
        return
    for j in range(p.size):
        gj = -g[j] if maximize else g[j]
        pj = p[j]
        if weight_decay != 0:
            gj = _fused(weight_decay, pj, gj)
        if has_momentum:
            b = buf[j] * momentum
            b = _fused(keep, gj, b) if has_keep else b + gj
            buf[j] = b
            gj = _fused(momentum, b, gj) if nesterov else b
        p[j] = _fused(neg_lr, gj, pj)


@njit(cache=True, nogil=True, error_model="numpy")
def _momentum_into(p, g, buf, neg_lr, momentum, weight_decay):  # pragma: no cover - compiled
    """``sgd_into``'s common case, momentum without dampening, Nesterov or maximize: the
    same operations in the same order, in a loop with one invariant test, which LLVM
    vectorises fully (the general loop's five tests made it 1.5x slower in cache)."""
    for j in range(p.size):
        gj = g[j]
        pj = p[j]
        if weight_decay != 0:
            gj = _fused(weight_decay, pj, gj)
        b = buf[j] * momentum + gj
        buf[j] = b
        p[j] = _fused(neg_lr, b, pj)


@njit(cache=True, nogil=True, error_model="numpy")
def adadelta_into(p, g, sa, ad, neg_lr, rho, one_minus_rho, eps, weight_decay,
                  maximize):  # pragma: no cover - compiled
    """Adadelta step: ``sa = sa * rho + g * g * (1 - rho)``, ``delta = sqrt(ad + eps) /
    sqrt(sa + eps) * g``, ``ad = ad * rho + delta * delta * (1 - rho)``, ``p += neg_lr *
    delta``; the additions fused as ``add``/``addcmul``'s."""
    for j in range(p.size):
        gj = -g[j] if maximize else g[j]
        pj = p[j]
        if weight_decay != 0:
            gj = _fused(weight_decay, pj, gj)
        s = _fused(one_minus_rho * gj, gj, sa[j] * rho)  # addcmul_: fused as PyTorch's
        sa[j] = s
        delta = np.sqrt(ad[j] + eps) / np.sqrt(s + eps) * gj
        ad[j] = _fused(one_minus_rho * delta, delta, ad[j] * rho)
        p[j] = _fused(neg_lr, delta, pj)
