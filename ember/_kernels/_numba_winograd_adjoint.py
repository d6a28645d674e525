"""numba kernel for the adjoint of Winograd's F(2x2, 3x3) input transform on NCHW planes
(imported only when numba is installed and the ``numba`` backend is chosen; see NOTE
[ One output transform for both adjoints ] in ``ember/_kernels/_winograd_backward.py``).

Compiled with ``cache=True`` and ``nogil=True`` as the other kernels (NOTE [ Fused
kernels ]); the transform is additions and subtractions only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"reassoc", "contract", "nsz"}


@njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def input_adjoint(dv, ph, pw, gx):  # pragma: no cover - compiled
    """gx[n, c] = the crop at (ph, pw) of the sum over tiles of B dV B^T, each 4x4 tile
    added at padded (2ty, 2tx): the adjoint of ``winograd_input`` in ``_numba_conv``.
    dv (16, C, N, th, tw) holds position 4k + l of tile (ty, tx); gx (N, C, H, W)."""
    n_, c_, h, w = gx.shape
    th, tw = dv.shape[3], dv.shape[4]
    p = np.empty((2 * th + 2, 2 * tw + 2), gx.dtype)
    for n in range(n_):
        for c in range(c_):
            p[:] = 0
            for ty in range(th):
                y0 = 2 * ty
                for tx in range(tw):
                    x0 = 2 * tx
                    for j in range(4):
                        # row j of B dV: B's row j combines dV's rows (k) as B^T's column j
                        if j == 0:
                            r0 = dv[0, c, n, ty, tx]
                            r1 = dv[1, c, n, ty, tx]
                            r2 = dv[2, c, n, ty, tx]
                            r3 = dv[3, c, n, ty, tx]
                        elif j == 1:
                            r0 = dv[4, c, n, ty, tx] - dv[8, c, n, ty, tx] + dv[12, c, n, ty, tx]
                            r1 = dv[5, c, n, ty, tx] - dv[9, c, n, ty, tx] + dv[13, c, n, ty, tx]
                            r2 = dv[6, c, n, ty, tx] - dv[10, c, n, ty, tx] + \
                                dv[14, c, n, ty, tx]
                            r3 = dv[7, c, n, ty, tx] - dv[11, c, n, ty, tx] + \
                                dv[15, c, n, ty, tx]
                        elif j == 2:
                            r0 = dv[4, c, n, ty, tx] + dv[8, c, n, ty, tx] - dv[0, c, n, ty, tx]
                            r1 = dv[5, c, n, ty, tx] + dv[9, c, n, ty, tx] - dv[1, c, n, ty, tx]
                            r2 = dv[6, c, n, ty, tx] + dv[10, c, n, ty, tx] - \
                                dv[2, c, n, ty, tx]
                            r3 = dv[7, c, n, ty, tx] + dv[11, c, n, ty, tx] - \
                                dv[3, c, n, ty, tx]
                        else:
                            r0 = -dv[12, c, n, ty, tx]
                            r1 = -dv[13, c, n, ty, tx]
                            r2 = -dv[14, c, n, ty, tx]
                            r3 = -dv[15, c, n, ty, tx]
                        # (B dV) B^T along the row
                        p[y0 + j, x0] += r0
                        p[y0 + j, x0 + 1] += r1 - r2 + r3
                        p[y0 + j, x0 + 2] += r1 + r2 - r0
                        p[y0 + j, x0 + 3] -= r3
            for i in range(h):
                for jj in range(w):
                    gx[n, c, i, jj] = p[ph + i, pw + jj]
