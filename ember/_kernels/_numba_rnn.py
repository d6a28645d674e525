"""numba kernels of the fused LSTM layer's per-step element-wise work (NOTE [ Fused LSTM
layer steps ] in ember/_ops/nn_rnn.py).

Imported only when the fused kernels' backend is numba (NOTE [ Fused kernels ] in
``__init__.py``). Each kernel is one loop over a step's (batch, hidden) elements doing what
a run of NumPy calls did, in the same order of operations and without fast-math flags (no
fused multiply-adds, no reassociation), so results are bit for bit the NumPy path's. Arrays
are C-contiguous, float32 or float64, of one dtype; outputs are written in place.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._numba import _expf


@njit(error_model="numpy", nogil=True, cache=True)
def lstm_gates_cell(a, s, shift, c_in, c):
    """After ``tanh`` of the pre-activations ``a`` (B, 4H): ``a = a * s + shift`` (the
    sigmoid gates' ``(tanh(x / 2) + 1) / 2``), then the new cell state ``c = f * c_in + i *
    g`` (B, H)."""
    batch, hs4 = a.shape
    hs = hs4 // 4
    for b in range(batch):
        for j in range(hs4):
            a[b, j] = a[b, j] * s[b, j] + shift[b, j]
        for j in range(hs):
            c[b, j] = a[b, hs + j] * c_in[b, j] + a[b, j] * a[b, 2 * hs + j]


@njit(inline="always", cache=True)
def gate_grads(ai, af, ag, ao, di, df, dg, do, tr, cr, hr, dcr, n, one):  # pragma: no cover
    """For ``n`` hidden units of one sample: from the activated gates ``ai, af, ag, ao``,
    ``tanh(c)`` ``tr``, the cell state read ``cr``, the output gradient ``hr`` and the cell
    gradient from the step after ``dcr`` (updated in place to this step's), the gates'
    pre-activation gradients ``di, df, dg, do``; all one-dimensional row views (LLVM
    vectorises the loop over them: 26 -> 16 us a step for B=32, H=256, not over
    two-dimensional indexing). Shared by the one-core step and the split loops, inlined into
    both, so their results are the same bits."""
    for j in range(n):
        i = ai[j]
        f = af[j]
        g = ag[j]
        o = ao[j]
        t = tr[j]
        dh = hr[j]
        dct = (one - t * t) * o * dh + dcr[j]
        di[j] = ((one - i) * i) * (dct * g)
        df[j] = ((one - f) * f) * (dct * cr[j])
        dg[j] = ((one - g) * (g + one)) * (dct * i)
        do[j] = ((one - o) * o) * (dh * t)
        dcr[j] = dct * f


@njit(error_model="numpy", nogil=True, cache=True)
def lstm_step_backward(a, tc, c_in, dht, dc, d, one):
    """One step of the layer's backward: from the step's activated gates ``a`` (B, 4H),
    ``tanh(c)`` ``tc``, the cell state it read ``c_in``, the output gradient ``dht`` (B, H)
    and the cell gradient from the step after ``dc`` (updated in place to this step's), the
    pre-activation gradients ``d`` (B, 4H). ``one`` is 1 in the arrays' dtype (an integer
    literal would promote float32 arithmetic to float64)."""
    batch, hs4 = a.shape
    hs = hs4 // 4
    for b in range(batch):
        # one-dimensional row views: LLVM vectorises this loop over them (26 -> 16 us a step
        # for B=32, H=256), not over the two-dimensional indexing
        ai, af, ag, ao = a[b, :hs], a[b, hs:2 * hs], a[b, 2 * hs:3 * hs], a[b, 3 * hs:]
        di, df, dg, do = d[b, :hs], d[b, hs:2 * hs], d[b, 2 * hs:3 * hs], d[b, 3 * hs:]
        tr, cr, hr, dcr = tc[b], c_in[b], dht[b], dc[b]
        gate_grads(ai, af, ag, ao, di, df, dg, do, tr, cr, hr, dcr, hs, one)


# NOTE [ A float32 tanh for the LSTM steps ]
# NumPy's float32 tanh is a scalar loop on the AVX2 development machine, ~3.2 ns an element:
# in an LSTM LM step (2 layers of 256, 64 steps, batch 32) its 5M elements took ~16 ms of
# thread time, more than the steps' element-wise loops together. ``_tanhf`` is written with
# selects only, so LLVM vectorises it: for |x| < 0.55 the odd polynomial x + x^3 P(x^2)
# (P of degree 4, fitted here to tanh's relative error by least squares on Chebyshev nodes:
# within 0.77 ulp in float32 arithmetic), elsewhere 1 - 2 / (exp(2|x|) + 1) with the sign
# put back, from the vectorisable exp (NOTE [ Vectorisable exp ] in _numba.py): a result of
# at least 0.5 there, so the subtraction loses little. Over every 61st float32 bit pattern
# it is within 1 ulp of the correctly rounded tanh (0.15% of values 1 ulp off; NumPy's: also
# 1 ulp); NaN stays NaN, +-inf gives +-1 (tests/perf/test_row_kernels_on_threads.py), at
# ~0.8 ns an element. It serves float32 steps only; float64 keeps NumPy's tanh.

_TANH_SMALL = np.float32(0.55)
_T0 = np.float32(-0.33333319425582886)
_T1 = np.float32(0.13332617282867432)
_T2 = np.float32(-0.05385512113571167)
_T3 = np.float32(0.021082058548927307)
_T4 = np.float32(-0.006287662778049707)
_ONE32 = np.float32(1.0)
_TWO32 = np.float32(2.0)


@njit(fastmath={"contract"}, error_model="numpy", inline="always", cache=True)
def _tanhf(x):  # pragma: no cover (compiled)
    """tanh of a float32 (NOTE [ A float32 tanh for the LSTM steps ]); inlined by numba:
    called, LLVM kept the loops around it scalar (17 ns an element instead of ~1)."""
    ax = abs(x)
    y = x * x
    p = _T4 * y + _T3
    p = p * y + _T2
    p = p * y + _T1
    p = p * y + _T0
    small = x + x * y * p if x != 0 else x   # (-0.0 stays -0.0)
    big = _ONE32 - _TWO32 / (_expf(_TWO32 * ax) + _ONE32)
    big = big if x >= 0 else -big
    return small if ax < _TANH_SMALL else (big if x == x else x)


@njit(fastmath={"contract"}, error_model="numpy", nogil=True, cache=True)
def tanh_into(x, out):  # pragma: no cover (compiled)
    """``out = tanh(x)`` over flat float32 arrays."""
    for j in range(x.size):
        out[j] = _tanhf(x[j])


@njit(fastmath={"contract"}, error_model="numpy", nogil=True, cache=True)
def lstm_step_forward(a, rec, s, shift, c_in, c, tc, h):  # pragma: no cover (compiled)
    """One float32 step of the layer's forward after its recurrent product ``rec`` (B, 4H):
    the gates ``a = tanh(a + rec) * s + shift`` (the sigmoid gates as ``(tanh(x / 2) + 1) /
    2``), the cell ``c = f * c_in + i * g``, ``tc = tanh(c)`` and ``h = o * tc`` (B, H)."""
    batch, hs4 = a.shape
    hs = hs4 // 4
    for b in range(batch):
        ab, rb, sb, kb = a[b], rec[b], s[b], shift[b]
        for j in range(hs4):
            ab[j] = _tanhf(ab[j] + rb[j]) * sb[j] + kb[j]
        _cell_row(ab, c_in[b], c[b], tc[b], h[b], hs)


@njit(fastmath={"contract"}, error_model="numpy", inline="always", cache=True)
def _cell_row(ab, cr, cb, tb, hb, hs):  # pragma: no cover (compiled)
    """One sample's cell update from its activated gates ``ab`` (4H,): ``c = f * c_in + i *
    g``, ``tc = tanh(c)``, ``h = o * tc``."""
    ai, af, ag, ao = ab[:hs], ab[hs:2 * hs], ab[2 * hs:3 * hs], ab[3 * hs:]
    for j in range(hs):
        cj = af[j] * cr[j] + ai[j] * ag[j]
        cb[j] = cj
        t = _tanhf(cj)
        tb[j] = t
        hb[j] = ao[j] * t


@njit(fastmath={"contract"}, error_model="numpy", nogil=True, cache=True)
def lstm_step_forward_unscaled(a, rec, bias, has_bias, s, shift, c_in, c, tc,
                               h):  # pragma: no cover (compiled)
    """``lstm_step_forward`` for a recurrent product ``rec`` (B, 4H) of the unscaled weight
    (NOTE [ LSTM step products on MLAS ] in ember/_ops/_lstm_mlas.py): the gates ``a =
    tanh(a + (rec * s + bias)) * s + shift`` with ``bias`` (B, 4H) the scaled bias when
    ``has_bias``. ``rec * s`` (s a power of two) is what the scaled weight's product gives,
    exactly, so the results are those of ``rec += bias`` after that product."""
    batch, hs4 = a.shape
    hs = hs4 // 4
    for b in range(batch):
        ab, rb, sb, kb = a[b], rec[b], s[b], shift[b]
        if has_bias:
            bb = bias[b]
            for j in range(hs4):
                ab[j] = _tanhf(ab[j] + (rb[j] * sb[j] + bb[j])) * sb[j] + kb[j]
        else:
            for j in range(hs4):
                ab[j] = _tanhf(ab[j] + rb[j] * sb[j]) * sb[j] + kb[j]
        _cell_row(ab, c_in[b], c[b], tc[b], h[b], hs)


@njit(error_model="numpy", nogil=True, cache=True)
def rows_summed_by_index(g, idx, out):  # pragma: no cover (compiled)
    """out[idx[j]] += g[j] for every row j of g, in row order: the lookups' gradient of an
    LSTM layer fed by an embedding summed by vocabulary entry (NOTE [ An unobserved lookup's
    gradient ] in ember/_ops/nn_rnn.py), in the order the embedding's backward sums them.
    ``out`` (V, D) starts at zero; ``idx`` holds valid rows of it."""
    n, d = g.shape
    for j in range(n):
        r = idx[j]
        for k in range(d):
            out[r, k] += g[j, k]
