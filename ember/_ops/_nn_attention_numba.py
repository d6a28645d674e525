"""numba kernel of attention's softmax, fused (NOTE [ Fused attention softmax ] in
nn_attention.py).

Imported only when the fused kernels' backend is numba (NOTE [ Fused kernels ] in
ember/_kernels/__init__.py) and the scores are float32; it reuses that package's
vectorisable ``_expf`` and fast-math flags (NOTE [ Vectorisable exp ] in
ember/_kernels/_numba.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels._numba import _FM, _expf

_NINF = np.float32(-np.inf)
_ZERO = np.float32(0)
_ONE = np.float32(1)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def softmax_scores_t(st, mt, has_mask, scale, m, den):
    """Attention probabilities from transposed scores, in place.

    ``st`` (N, S, L) float32 holds each head's scores transposed (NOTE [ Transposed
    attention scores ]); each column (one query) becomes ``softmax(scale * column)`` over
    the keys where ``mt`` (S, L) bool is True, and 0 where it is False (``has_mask`` False:
    every key counts; ``mt`` is then any (S, L) bool array and is not read). A column whose
    maximum is not finite is shifted by 0, and one whose sum is 0 is divided by 1, as the
    NumPy path does. ``m`` and ``den`` are (L,) float32 scratch rows.
    """
    n_heads, s_len, l_len = st.shape
    for n in range(n_heads):
        x = st[n]
        for j in range(l_len):
            m[j] = _NINF
        for s in range(s_len):
            xs = x[s]
            if has_mask:
                ms = mt[s]
                for j in range(l_len):
                    v = xs[j] * scale
                    v = v if ms[j] else _NINF
                    xs[j] = v
                    m[j] = v if v > m[j] else m[j]
            else:
                for j in range(l_len):
                    v = xs[j] * scale
                    xs[j] = v
                    m[j] = v if v > m[j] else m[j]
        for j in range(l_len):
            mj = m[j]
            m[j] = mj if mj - mj == _ZERO else _ZERO  # (inf - inf and NaN: not finite)
            den[j] = _ZERO
        for s in range(s_len):
            xs = x[s]
            for j in range(l_len):
                e = _expf(xs[j] - m[j])
                xs[j] = e
                den[j] += e
        for j in range(l_len):
            d = den[j]
            den[j] = d if d != _ZERO else _ONE
        for s in range(s_len):
            xs = x[s]
            for j in range(l_len):
                xs[j] = xs[j] / den[j]


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def softmax_scores_t_causal(st, scale, m, den):
    """``softmax_scores_t`` under a causal mask, reading only the keys each query sees
    (NOTE [ Causal softmax skips the masked half ] in nn_attention.py).

    ``st`` (N, L, L) float32 holds each head's scores transposed: row ``s`` is key ``s``,
    which queries ``j >= s`` see. Those entries become the probabilities, every other entry
    ``0 / sum`` (0, or NaN in a NaN column); the same bits as ``softmax_scores_t`` with the
    (L, L) causal mask, whose masked entries add exp(-inf) = 0 to each sum. ``m`` and
    ``den`` are (L,) float32 scratch rows. The visible part of each row is taken as a slice
    (``x[s, s:]``): loops over a slice from 0 vectorise, where ``range(s, L)`` ran slower
    than the whole masked row.
    """
    n_heads, l_len = st.shape[0], st.shape[2]
    for n in range(n_heads):
        x = st[n]
        for j in range(l_len):
            m[j] = _NINF
        for s in range(l_len):
            xs = x[s, s:]
            ms = m[s:]
            for j in range(xs.size):
                v = xs[j] * scale
                xs[j] = v
                ms[j] = v if v > ms[j] else ms[j]
        for j in range(l_len):
            mj = m[j]
            m[j] = mj if mj - mj == _ZERO else _ZERO  # (inf - inf and NaN: not finite)
            den[j] = _ZERO
        for s in range(l_len):
            xs = x[s, s:]
            ms = m[s:]
            ds = den[s:]
            for j in range(xs.size):
                e = _expf(xs[j] - ms[j])
                xs[j] = e
                ds[j] += e
        for j in range(l_len):
            d = den[j]
            den[j] = d if d != _ZERO else _ONE
        for s in range(l_len):
            xs = x[s]
            for j in range(s):  # 0 / den: a NaN sum makes the column NaN, as masked
                xs[j] = _ZERO / den[j]
            xs = x[s, s:]
            ds = den[s:]
            for j in range(xs.size):
                xs[j] = xs[j] / ds[j]
