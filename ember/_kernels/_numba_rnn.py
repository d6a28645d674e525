"""numba kernels of the fused LSTM layer's per-step element-wise work (NOTE [ Fused LSTM
layer steps ] in ember/_ops/nn_rnn.py).

Imported only when the fused kernels' backend is numba (NOTE [ Fused kernels ] in
``__init__.py``). Each kernel is one loop over a step's (batch, hidden) elements doing what
a run of NumPy calls did, in the same order of operations and without fast-math flags (no
fused multiply-adds, no reassociation), so results are bit for bit the NumPy path's. Arrays
are C-contiguous, float32 or float64, of one dtype; outputs are written in place.
"""

from __future__ import annotations

from numba import njit


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
        for j in range(hs):
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
