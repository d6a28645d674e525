"""numba kernels for batch norm in training mode, forward and backward (imported only when
numba is installed and the ``numba`` backend is chosen; see NOTE [ Compiled batch norm ] in
``_train.py``).

Arrays are (N, C, L): each channel's N planes of L elements. A channel's planes are read
two or three times in a row, so after the first pass they come from the cache (a ResNet
stage-1 channel of (32, 32x32) float32 is 128 KB). Sums run in float32 over blocks of at
most ``_BLOCK`` elements of a plane (vectorised; the reassociation flag lets LLVM use
several SIMD lanes) and in float64 across blocks, as the layer norm kernels do. Each kernel
takes a channel range, so that the channels can be split over threads (each channel's
arithmetic is the same whichever thread does it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"reassoc", "contract", "nsz"}
_BLOCK = 4096
_Z = np.float32(0.0)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def batch_norm_train(x, w, b, has_w, has_b, eps, y, mean, rstd, c_lo, c_hi):  # pragma: no cover
    """y = (x - mean) * rstd * w + b per channel, with the channel's batch mean and biased
    variance (the centred sum, no E[x^2] - E[x]^2 cancellation) stored in ``mean`` and
    ``rstd = 1 / sqrt(var + eps)``; channels c_lo <= c < c_hi."""
    n_, _, l_ = x.shape
    count = n_ * l_
    for c in range(c_lo, c_hi):
        s = 0.0
        for n in range(n_):
            xr = x[n, c]
            for lo in range(0, l_, _BLOCK):
                s32 = _Z
                for j in range(lo, min(lo + _BLOCK, l_)):
                    s32 += xr[j]
                s += s32
        m = np.float32(s / count)
        q = 0.0
        for n in range(n_):
            xr = x[n, c]
            for lo in range(0, l_, _BLOCK):
                q32 = _Z
                for j in range(lo, min(lo + _BLOCK, l_)):
                    d = xr[j] - m
                    q32 += d * d
                q += q32
        r = np.float32(1.0 / np.sqrt(np.float32(q / count) + eps))
        mean[c] = m
        rstd[c] = r
        a = r * w[c] if has_w else r
        sh = b[c] if has_b else _Z
        for n in range(n_):     # centred first: a constant channel gives exactly the bias
            xr = x[n, c]
            yr = y[n, c]
            for j in range(l_):
                yr[j] = (xr[j] - m) * a + sh


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def batch_norm_train_backward(g, x, w, has_w, mean, rstd, gx, gw, gb, c_lo,
                              c_hi):  # pragma: no cover
    """Training-mode gradients: per channel ``sum_g`` (gb) and ``sum_gxc = sum g (x -
    mean)`` (gw = sum_gxc * rstd) in one pass, then ``gx = g k_g + (x - mean) k_x + k_c``
    with ``k_g = w rstd``, ``k_x = -k_g rstd^2 sum_gxc / count``, ``k_c = -k_g sum_g /
    count``; channels c_lo <= c < c_hi."""
    n_, _, l_ = x.shape
    count = n_ * l_
    for c in range(c_lo, c_hi):
        m = mean[c]
        r = rstd[c]
        sg = 0.0
        sgx = 0.0
        for n in range(n_):
            xr = x[n, c]
            gr = g[n, c]
            for lo in range(0, l_, _BLOCK):
                sg32 = _Z
                sgx32 = _Z
                for j in range(lo, min(lo + _BLOCK, l_)):
                    gj = gr[j]
                    sg32 += gj
                    sgx32 += gj * (xr[j] - m)
                sg += sg32
                sgx += sgx32
        sum_g = np.float32(sg)
        sum_gxc = np.float32(sgx)
        kg = r * w[c] if has_w else r
        kx = -kg * r * r * sum_gxc / np.float32(count)
        kc = -kg * sum_g / np.float32(count)
        gw[c] = sum_gxc * r
        gb[c] = sum_g
        for n in range(n_):
            xr = x[n, c]
            gr = g[n, c]
            gxr = gx[n, c]
            for j in range(l_):
                gxr[j] = gr[j] * kg + (xr[j] - m) * kx + kc
