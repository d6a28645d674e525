"""The fused LSTM layer's time loops split by hidden units over threads (NOTE [ LSTM steps
split by hidden units ]); ``_lstm_layer_kernel`` and ``_lstm_layer_backward_kernel`` in
``nn_rnn.py`` call ``plan`` and, where it gives one, ``forward`` or ``backward`` instead of
their one-core loops.
"""

from __future__ import annotations

import os

import numpy as np

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

# NOTE [ LSTM steps split by hidden units ]
# An LSTM layer's time loop is a chain: each step needs the whole previous hidden state, and
# runs a small (B, P) @ (P, 4H) product (32 x 256 x 1024 in the bench LSTM LM: ~150 us on
# one core) and an element-wise step (~20 us). OpenBLAS splits the product over two threads
# (with both cores free: 164 -> 90 us), but forks and joins for each one, and the
# element-wise step and the loop's Python stay on one core. Batch pieces (one sample range
# per thread) lost to OpenBLAS's polling workers and halved every product's M, already small
# (bench/RESULTS.md). Here the loop is instead split by hidden units: worker k of n owns
# units [k H / n, (k + 1) H / n) of all four gates, runs its (B, P) @ (P, 4H / n) slice of
# each step's product (its gates' rows of W_hh, scaled and transposed once per call) and
# its units' element-wise step, and meets the others at a barrier once a step,
# since every worker needs the whole new h. Backward: each worker computes its units' gate
# gradients, a barrier, then its columns of dh = d @ W_hh (the other workers' units are not
# needed for its own next step, so one barrier a step again; with a projection, dh is split
# by the projection's columns and each step takes two barriers, as in the forward). The
# barrier is a counter per worker spun on in compiled code (ember/_kernels/_numba_rnn_split.py),
# ~1 us, where a hand-over through Python threads costs 20-40 us (NOTE [ A relay for split
# work ] in ember/_parallel.py): the relay starts the workers once per loop, and each runs the
# whole time loop in one numba call without the GIL, calling NumPy's own OpenBLAS (held at
# one thread meanwhile) through its ``cblas_?gemm`` address. Every element of a product is
# summed in the same order as in the whole product and the element-wise arithmetic is the
# one-core step's, so float32 results are bit for bit the one-core path's (measured; the
# tests allow rounding), float64 ones within rounding (NumPy's tanh against libm's).
# Measured (2-CPU AMD EPYC, both cores to the process under ``chrt -f 10``, the machine's
# load 8-11 from other sessions, ``contended`` forced off; in one process, alternating):
# OpenBLAS itself runs a step's (32, 256) @ (256, 1024) product 1.8x faster at two threads
# than at one (90 vs 164 us, OPENBLAS_CORETYPE=Haswell), so the split's gain is the
# element-wise half of the step and the per-product fork and join: a forward step 110-116 us
# on two workers against 119-135 us before, a backward step about even (each worker's
# product reads the whole (B, 4H) gate gradient, half of it from the other core's cache:
# 142 us on two workers against 96 us for one worker's half alone). Forward + backward of the
# bench's 2x256 LSTM (batch 32, 64 steps): 0.98-0.99x the one-core loop's time with Haswell
# kernels, 0.89-0.93x with SkylakeX ones; the bench LSTM LM step 0.98-0.99x and 0.89-0.95x.
# Taken only where it can pay: the numba backend, NumPy float32/float64 arrays, more than one
# thread configured (``ember.set_num_threads(1)`` turns it off), the machine not
# oversubscribed (``_parallel.contended``: a spinning worker would wait for a core), the relay
# free, a BLAS whose threads ember can hold and whose 64-bit ``cblas_?gemm`` it finds, and a
# step product of at least ``UNIT_SPLIT_MIN_WORK`` multiply-adds with ``UNIT_SPLIT_MIN_UNITS``
# units per worker; otherwise the one-core loop runs as before. ``EMBER_LSTM_SPLIT=0`` turns
# it off.

#: the least multiply-adds of one step's recurrent product (B * 4H * P) worth splitting
#: (1 << 62: never, with ``EMBER_LSTM_SPLIT=0``)
UNIT_SPLIT_MIN_WORK = 1 << 62 if os.environ.get("EMBER_LSTM_SPLIT") == "0" else 1 << 18
#: the fewest hidden units a worker takes
UNIT_SPLIT_MIN_UNITS = 16


def plan(xp, dt, batch, hs, p):
    """``(kernels, workers, gemm, sched_yield)`` for a layer loop split by hidden units
    (NOTE [ LSTM steps split by hidden units ]), or None where the one-core loop runs."""
    if xp is not np or dt not in _DTYPES or batch * 4 * hs * p < UNIT_SPLIT_MIN_WORK:
        return None
    from .. import _kernels, _parallel

    nw = min(_parallel._threads(), hs // UNIT_SPLIT_MIN_UNITS)
    if nw < 2 or _kernels.backend() != "numba" or _parallel.contended() or \
            not _parallel._blas_controllers():
        return None
    from .._kernels import _numba_rnn_split

    gemm, yld = _numba_rnn_split.blas_addresses(dt)
    return None if not gemm else (_numba_rnn_split, nw, gemm, yld)


def _cuts(size, n):
    """``n`` contiguous ranges covering ``range(size)``, as even as can be."""
    return [(k * size // n, (k + 1) * size // n) for k in range(n)]


def _on_units(plan, run):
    """Run ``run(k, sync)`` for every worker k of ``plan`` on the relay's threads with the
    BLAS at one thread; False (nothing run) when the relay declines. A worker that fails
    before its loop sets ``sync[0]``, so that the others stop waiting for it."""
    from .. import _parallel

    kern, nw = plan[0], plan[1]
    sync = np.zeros(kern.LINE * (nw + 1), np.int64)

    def piece(lo, hi):
        try:
            run(lo, sync)
        except BaseException:
            sync[0] = 1
            raise

    _parallel._hold_blas()  # (every worker's products on one BLAS thread)
    try:
        return _parallel.split_on_threads(piece, nw, min_size=2)
    finally:
        _parallel._release_blas()


def forward(plan, acts, w_hh, s, bias, h0, cs, tcs, out, raw, hprev, w_hr,
                      reverse):
    """The layer's forward loop split by hidden units (NOTE [ LSTM steps split by hidden
    units ]); False when it did not run. ``s`` (4H,) are the gates' scales, ``bias`` (B, 4H)
    the scaled bias."""
    kern, nw, gemm, yld = plan
    hs = acts.shape[2] // 4
    dt = acts.dtype
    units = _cuts(hs, nw)
    cols = _cuts(out.shape[2], nw) if w_hr is not None else units
    none = np.empty((1, 1), dt)
    wks, bks = [], []
    for u0, u1 in units:
        # the worker's gates' rows of W_hh, scaled and transposed: (P, 4U), gate by gate
        # (slices: a fancy-index gather of the columns of the whole scaled W_hh^T cost as
        # much again as building it)
        u = u1 - u0
        wk = np.empty((w_hh.shape[1], 4 * u), dt)
        bk = none if bias is None else np.empty((bias.shape[0], 4 * u), dt)
        for q in range(4):
            np.multiply(w_hh[q * hs + u0:q * hs + u1].T, s[q * hs], out=wk[:, q * u:(q + 1) * u])
            if bias is not None:
                bk[:, q * u:(q + 1) * u] = bias[:, q * hs + u0:q * hs + u1]
        wks.append(wk)
        bks.append(bk)
    w_hr_t = none if w_hr is None else np.ascontiguousarray(w_hr.T)
    raw = np.empty((1, 1, 1), dt) if raw is None else raw
    h0 = np.ascontiguousarray(h0)
    one, half = dt.type(1), dt.type(0.5)

    def run(k, sync):
        kern.forward_units(gemm, yld, sync, k, nw, *units[k], *cols[k], acts, wks[k], bks[k],
                           bias is not None, h0, cs, tcs, out, raw, hprev, w_hr_t,
                           w_hr is not None, reverse, one, half)

    return _on_units(plan, run)


def backward(plan, g_out, acts, tcs, cs, dh, dc, dxw, dhs, w_hh, w_hr, reverse):
    """The layer's backward loop split by hidden units (NOTE [ LSTM steps split by hidden
    units ]), updating ``dh`` and ``dc`` and filling ``dxw`` (and ``dhs``); False when it did
    not run."""
    kern, nw, gemm, yld = plan
    hs = acts.shape[2] // 4
    dt = acts.dtype
    units = _cuts(hs, nw)
    cols = _cuts(dh.shape[1], nw) if w_hr is not None else units
    none3 = np.empty((1, 1, 1), dt)
    g = none3 if g_out is None else g_out.astype(dt, copy=False)
    w_hh = np.ascontiguousarray(w_hh)
    w_hr = np.empty((1, 1), dt) if w_hr is None else np.ascontiguousarray(w_hr)
    dhs_ = none3 if dhs is None else dhs

    def run(k, sync):
        kern.backward_units(gemm, yld, sync, k, nw, *units[k], *cols[k], acts, tcs, cs, g,
                            g_out is not None, dh, dc, dxw, dhs_, w_hh, w_hr, dhs is not None,
                            reverse, dt.type(1))

    return _on_units(plan, run)
