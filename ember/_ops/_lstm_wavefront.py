"""LSTM layers on two cores: two stacked layers side by side (``lstm_pair``, NOTE [ LSTM
layers in a wavefront ]) here, and the two directions of a bidirectional layer
(``lstm_bidir`` in _lstm_directions.py). ``nn.LSTM`` takes these ops where ``applies``
says so; their kernels drive the layer loops of ``nn_rnn.py`` (``_lstm_layer_steps``,
``_lstm_layer_backward_steps``) on two threads.
"""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np

from .. import _dispatch, _parallel
from . import _lstm_mlas, nn_rnn
from ._registry import Op
from .linalg import col_sums

# NOTE [ LSTM layers in a wavefront ]
# An LSTM layer's steps are a chain: each step's small recurrent product, (B, P) @ (P, 4H)
# (32 x 256 x 1024 in the bench's LSTM LM), waits for the step before it. Such a product
# gains little from a second thread on these machines (MLAS, packed weight: 72-75 us on one
# thread, 59-61 on two: waking the second thread costs most of what it saves), so on two
# cores the layer loops ran at about one core's speed. But the steps of two stacked layers
# need not wait for each other as a whole: layer 1's step t needs only layer 0's output at
# step t. So ``lstm_pair`` runs layer 0's loop on one thread and layer 1's on another
# (``_parallel.split_batch``: the pool's worker and the caller, BLAS and MLAS held at one
# thread), in chunks of ``CHUNK`` steps: when layer 0 has finished a chunk it says so (an
# Event per chunk), and layer 1, before its first step of that chunk, waits for it. Layer
# 1's input projection, which the plain path runs over all steps at once, is computed per
# chunk, (CHUNK * B, I) @ (I, 4H); the two threads take alternate chunks, so each core
# carries half of those products beside its own loop. Layer 0's rows of a folded lookup are
# gathered a chunk at a time by its own thread too. The backward runs the same way from the
# last step: layer 1's loop leads, and each chunk of its input gradient, which is layer 0's
# output gradient, is made (by alternate threads again) once layer 1 has finished the
# chunk's steps; layer 0 waits for it before the chunk. Each thread sums its layer's bias
# gradient a chunk at a time while the chunk is in cache, then runs its layer's products
# over all steps (the weights' gradients; layer 0's input gradient), and the two threads
# share layer 1's recurrent weight gradient in ``BLOCKS`` blocks of rows, each taken by the
# first thread free and summed in block order. Dropout between the two layers is a mask
# drawn before the pair where ``F.dropout`` would draw it after layer 0 (the layer itself
# draws nothing, so the stream position is the same: the same masks as the plain path's and
# PyTorch's), applied to each chunk before layer 1's projection and to its input gradient.
#
# Each step is computed by the plain path's kernels in the plain path's order; the step
# products run on one MLAS thread instead of two and the chunked products and block sums
# reassociate sums, so results agree with the plain path's to float32 rounding (tests/perf/
# test_lstm_wavefront.py compares both and PyTorch). Used for float32 on the CPU where the
# step products run on MLAS (NOTE [ LSTM step products on MLAS ] in _lstm_mlas.py) with the
# numba step kernels, two threads (``set_num_threads``; with more, the plain path's
# whole-sequence products use them all) on a machine that is not oversubscribed
# (``_parallel.contended``), at least two chunks of steps, unpacked unidirectional layers
# without projections, outside the profiler and dispatch modes; ``EMBER_LSTM_WAVEFRONT=0``
# turns it off. Where the pool declines (another split holds it, OpenBLAS's workers still
# poll) the op runs the layers one after the other. Under ``create_graph`` or a forward-mode
# tangent the formulas replay both layers with differentiable ops, as the one-layer op does.
#
# Measured on the 2-CPU EPYC (AVX-512; ``OPENBLAS_CORETYPE=Haswell``, ``OPENBLAS_L2_SIZE=512``
# as set; ``chrt -f 10``, the load check forced off, machine load 4-9 from other sessions):
# the bench's LSTM LM training step (2x256, seq 64, batch 32, Adam) in one process,
# alternating, 0.82-0.84 of the plain path's (38.0-39.9 ms against 45.8-47.5); the pair's
# forward 13.4 ms against 18.8 for the two layer ops, its backward 20.7 against 25.7. Each
# framework in its own process, 20 steps each, three rounds: ember 38.4-39.8 ms a step,
# PyTorch 43.1-55.9 (its fast mode ~41-42; its best steps 36.8-40.4). A layer loop alone on
# one thread takes 8.1-8.5 ms forward; two side by side take 10.0-10.3 each (the cores
# share the cache and memory traffic of the 1 MB recurrent weights), which bounds the gain.
# Tried: chunks of 2, 4, 6, 8 and 16 steps (4-8 alike, 2 and 16 slower); first and last
# chunks of half size (no gain); 8 or 16 blocks of layer 1's weight gradient (no gain).

#: steps per hand-over between the two loops
CHUNK = [8]
#: the blocks of layer 1's recurrent weight gradient that the two threads share
BLOCKS = [4]
#: False: every layer runs alone (``EMBER_LSTM_WAVEFRONT=0``; tests, A/B)
ENABLED = [os.environ.get("EMBER_LSTM_WAVEFRONT", "1") != "0"]
#: [wavefront forwards run, forwards that fell back to the layers one after the other]
COUNTS = [0, 0]

_F32 = np.dtype(np.float32)


def applies(x, hidden_size, proj_size) -> bool:
    """Whether two stacked layers over ``x`` (T, B, I) run as ``lstm_pair`` (NOTE [ LSTM
    layers in a wavefront ]).

    Args:
        x: the first layer's input tensor, (T, B, I).
        hidden_size: the layers' hidden size.
        proj_size: their projection size (0: none).

    Returns:
        bool: True where the wavefront is taken.

    Example::

        >>> import ember
        >>> applies(ember.ones(2, 1, 3), 4, 0)   # two steps: not worth a hand-over
        False
    """
    from .._core.dtype import float32

    if not ENABLED[0] or proj_size or x.dim() != 3 or x.device.type != "cpu" \
            or x.dtype != float32:
        return False
    steps, batch = x.shape[0], x.shape[1]
    if steps < 2 * CHUNK[0] or batch == 0 or hidden_size == 0 or \
            not _lstm_mlas.steps_on_mlas(batch, 4 * hidden_size, hidden_size):
        return False
    # exactly two threads: with more, the plain path's whole-sequence products run on all
    # of them, where the wavefront's run on one thread each (not measured there)
    if _parallel._threads() != 2 or _parallel.contended():
        return False
    if _dispatch.intercept and _dispatch.state.modes:
        return False
    from .._kernels import _mlas

    return _mlas.engine() == "mlas" and nn_rnn._step_kernels(np, _F32) is not None


def _summed(b, b_hh):
    if b_hh is None:
        return b
    return b_hh if b is None else b + b_hh


def _chunks(steps):
    k = CHUNK[0]
    return [(lo, min(lo + k, steps)) for lo in range(0, steps, k)]


def _on_two_threads(first, second):
    """Runs ``first`` on the pool's worker and ``second`` on this thread, with BLAS and MLAS
    at one thread; False (nothing run) where ``_parallel.split_batch`` declines."""
    def piece(lo, hi):
        (first if lo == 0 else second)()

    return _parallel.split_batch(piece, 2, work=1 << 62, claim=False) is not None


class _Chunks:
    """Per-chunk hand-over between the two loops: ``ready(k)`` once chunk k's input is there,
    ``wait(k)`` for it; ``fail()`` releases every waiter after an error on the other side."""

    def __init__(self, n):
        self._events = [threading.Event() for _ in range(n)]
        self.failed = None

    def ready(self, k):
        self._events[k].set()

    def wait(self, k):
        self._events[k].wait()
        if self.failed is not None:
            raise RuntimeError("lstm: the other layer of a wavefront failed") from self.failed

    def fail(self, error):
        self.failed = error
        for e in self._events:
            e.set()


def _pair_kernel(xp, x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1,
                 b_hh1, table, indices, mask=None):
    """Layers 0 and 1 over x (T, B, I), as two ``lstm_layer`` calls would run them (NOTE
    [ LSTM layers in a wavefront ]). Returns out (T, B, H), h_n and c_n of each layer, then
    for backward: layer 0's gate activations, cell states, tanh(c), read states and input
    rows (None with a table), layer 1's input (layer 0's outputs, times ``mask`` when given:
    dropout between the layers, the mask scaled as ``dropout`` makes it) and layer 1's four
    arrays."""
    steps, batch = x.shape[:2]
    hs0, hs1 = c00.shape[1], c01.shape[1]
    dt = x.dtype
    b0, b1 = _summed(b0, b_hh0), _summed(b1, b_hh1)
    s0, s1 = nn_rnn._gate_scale(xp, hs0, dt), nn_rnn._gate_scale(xp, hs1, dt)
    w_in0 = (w_ih0 * s0[:, None]).T
    if table is None:
        xf0 = x.reshape(steps * batch, -1)
        acts0 = nn_rnn._big_mm(xp, xf0, w_in0)
        acts0 = acts0.reshape(steps, batch, 4 * hs0)
        rows = None
    else:
        # the table's projected rows, gathered a chunk at a time by layer 0's thread just
        # before the chunk's steps read them (in cache then, and not before the split)
        xf0 = None
        rows = nn_rnn._big_mm(xp, table, w_in0)
        acts0 = xp.empty((steps, batch, 4 * hs0), dt)
    w_in1 = [None]   # made by the caller's thread, which waits for layer 0's first chunk
    out0 = xp.empty((steps, batch, hs0), dt)
    x1 = out0 if mask is None else xp.empty_like(out0)   # layer 1's input
    acts1 = xp.empty((steps, batch, 4 * hs1), dt)
    chunks = _chunks(steps)
    hand = _Chunks(len(chunks))
    res = [None, None]

    def project(k):   # layer 1's input projection over chunk k
        lo, hi = chunks[k]
        if mask is not None:   # (the product ``dropout`` takes, element by element)
            xp.multiply(out0[lo:hi], mask[lo:hi], out=x1[lo:hi])
        nn_rnn._big_mm(xp, x1[lo:hi].reshape(-1, hs0), w_in1[0],
                       out=acts1[lo:hi].reshape(-1, 4 * hs1))

    def gather(lo, hi):
        if rows is not None:
            xp.take(rows, indices[lo:hi].reshape(-1), axis=0,
                    out=acts0[lo:hi].reshape(-1, 4 * hs0))

    def before0(t):
        lo, hi = chunks[t // CHUNK[0]]
        if t == lo:
            gather(lo, hi)

    def after0(t):
        k = t // CHUNK[0]
        if t == chunks[k][1] - 1:
            if k % 2:
                w_made.wait()
                project(k)
            hand.ready(k)

    def before1(t):
        k = t // CHUNK[0]
        if t == chunks[k][0]:
            hand.wait(k)
            if not k % 2:
                project(k)

    def layer0():
        try:
            res[0] = nn_rnn._lstm_layer_steps(xp, acts0, b0, h00, c00, w_hh0, None, False,
                                              before=before0, after=after0, threads=1,
                                              out=out0)
        except BaseException as e:
            hand.fail(e)
            raise

    w_made = threading.Event()

    def layer1():
        try:
            w_in1[0] = xp.ascontiguousarray((w_ih1 * s1[:, None]).T)
        finally:
            w_made.set()
        res[1] = nn_rnn._lstm_layer_steps(xp, acts1, b1, h01, c01, w_hh1, None, False,
                                          before=before1, threads=1)

    if xp is np and _on_two_threads(layer0, layer1):
        COUNTS[0] += 1
    else:   # the layers one after the other, as the plain path runs them
        COUNTS[1] += 1
        gather(0, steps)
        res[0] = nn_rnn._lstm_layer_steps(xp, acts0, b0, h00, c00, w_hh0, None, False,
                                          out=out0)
        w_in = xp.ascontiguousarray((w_ih1 * s1[:, None]).T)
        if mask is not None:
            xp.multiply(out0, mask, out=x1)
        nn_rnn._big_mm(xp, x1.reshape(-1, hs0), w_in, out=acts1.reshape(-1, 4 * hs1))
        res[1] = nn_rnn._lstm_layer_steps(xp, acts1, b1, h01, c01, w_hh1, None, False)
    _, h0n, c0n, acts0, cs0, tcs0, _, hprev0 = res[0]
    out1, h1n, c1n, acts1, cs1, tcs1, _, hprev1 = res[1]
    return (out1, h0n, c0n, h1n, c1n, acts0, cs0, tcs0, hprev0, xf0, x1, acts1, cs1, tcs1,
            hprev1)


def _pair_backward_kernel(xp, g_out, g_h0, g_c0, g_h1, g_c1, xf0, w_ih0, w_hh0, x1, w_ih1,
                          w_hh1, acts0, cs0, tcs0, hprev0, acts1, cs1, tcs1, hprev1, table,
                          indices, mask=None, *, needs, x_by_vocab=False):
    """Backward of ``_pair_kernel``: the gradients of its 16 inputs (None for the table,
    indices and mask, and where ``needs`` says none is wanted)."""
    steps, batch = acts0.shape[:2]
    hs0, hs1 = hprev0.shape[2], hprev1.shape[2]
    dt = acts0.dtype
    (need_x, need_wih0, need_b0, need_h0, need_c0, need_whh0, need_bhh0, need_wih1, need_b1,
     need_h1, need_c1, need_whh1, need_bhh1) = needs[:13]
    # layer 0's loop runs when anything of layer 0 or the input wants a gradient
    want0 = any(needs[:7])
    want_b0, want_b1 = need_b0 or need_bhh0, need_b1 or need_bhh1
    # layer 0's output gradient (layer 1's input's): every chunk written by ``project``
    g_x1 = xp.empty((steps, batch, hs0), dt)
    dxw0, dxw1 = xp.empty_like(acts0), xp.empty_like(acts1)
    chunks = _chunks(steps)
    hand = _Chunks(len(chunks))
    res = [None, None]
    # the biases' gradients, column sums of each layer's gate gradients, summed a chunk at a
    # time while the chunk is in cache (then in chunk order), in place of a pass over them all
    sums0, sums1 = [None] * len(chunks), [None] * len(chunks)
    # layer 1's recurrent weight gradient, d2.T @ hprev, as partial products over blocks of
    # rows, each taken by the first thread free (their sum in block order, whoever made them)
    rows = steps * batch
    per = -(-rows // BLOCKS[0])
    blocks = [(lo, min(lo + per, rows)) for lo in range(0, rows, per)] if need_whh1 else []
    partial = [None] * len(blocks)
    taken = itertools.count()
    d2_1, hp1 = dxw1.reshape(rows, -1), hprev1.reshape(rows, -1)

    def take_blocks():
        while True:
            j = next(taken)   # (atomic under the GIL)
            if j >= len(blocks):
                return
            lo, hi = blocks[j]
            partial[j] = nn_rnn._big_mm(xp, d2_1[lo:hi].T, hp1[lo:hi])

    def project(k):   # layer 1's input gradient over chunk k (then layer 0's output's)
        lo, hi = chunks[k]
        nn_rnn._big_mm(xp, dxw1[lo:hi].reshape(-1, dxw1.shape[2]), w_ih1,
                       out=g_x1[lo:hi].reshape(-1, hs0))
        if mask is not None:
            g_x1[lo:hi] *= mask[lo:hi]

    def chunk_sums(dxw, k, into):
        lo, hi = chunks[k]
        into[k] = col_sums(xp, dxw[lo:hi].reshape(-1, dxw.shape[2]))

    def after1(t):
        k = t // CHUNK[0]
        if t == chunks[k][0]:
            if k % 2 and want0:
                project(k)
            hand.ready(k)
            if want_b1:
                chunk_sums(dxw1, k, sums1)

    def before0(t):
        k = t // CHUNK[0]
        if t == chunks[k][1] - 1:
            hand.wait(k)
            if not k % 2:
                project(k)

    def after0(t):
        k = t // CHUNK[0]
        if t == chunks[k][0] and want_b0:
            chunk_sums(dxw0, k, sums0)

    def products(layer, dxw, x, w_ih, hprev, table, indices, wants, by_vocab, steps_out, sums):
        # (with ``sums`` given, the bias gradients are made from them here)
        _, dh, dc, _ = steps_out
        need_b, need_bhh = wants[2], wants[9]
        if sums is not None:
            wants = wants[:2] + (False,) + wants[3:9] + (False,)
        g = list(nn_rnn._lstm_layer_backward_products(
            xp, dxw, dh, dc, None, x, w_ih, None, None, hprev, table, indices, wants,
            by_vocab))
        if sums is not None and (need_b or need_bhh):
            gb = sums[0].copy()
            for v in sums[1:]:
                gb += v
            # (each bias its own array, as the one-layer op gives them)
            g[2], g[7] = (gb if need_b else None), ((gb.copy() if need_b else gb)
                                                    if need_bhh else None)
        res[layer] = g

    wants1 = (False, need_wih1, need_b1, need_h1, need_c1, False, False, False, False,
              need_bhh1)
    wants0 = (need_x, need_wih0, need_b0, need_h0, need_c0, need_whh0, False, False, False,
              need_bhh0)

    def layer1():
        try:
            out = nn_rnn._lstm_layer_backward_steps(xp, g_out, g_h1, g_c1, w_hh1, None, acts1,
                                                    cs1, tcs1, hs1, False, after=after1,
                                                    threads=1, dxw=dxw1)
        except BaseException as e:
            hand.fail(e)
            raise
        products(1, dxw1, x1.reshape(rows, -1), w_ih1, hprev1, None, None, wants1, False,
                 out, sums1)
        take_blocks()

    def layer0():
        if want0:
            out = nn_rnn._lstm_layer_backward_steps(xp, g_x1, g_h0, g_c0, w_hh0, None, acts0,
                                                    cs0, tcs0, hs0, False, before=before0,
                                                    after=after0, threads=1, dxw=dxw0)
            products(0, dxw0, xf0, w_ih0, hprev0, table, indices, wants0, x_by_vocab, out,
                     sums0)
        take_blocks()

    if not (xp is np and _on_two_threads(layer1, layer0)):
        # the layers one after the other, as the plain path runs them
        out = nn_rnn._lstm_layer_backward_steps(xp, g_out, g_h1, g_c1, w_hh1, None, acts1,
                                                cs1, tcs1, hs1, False, dxw=dxw1)
        products(1, dxw1, x1.reshape(rows, -1), w_ih1, hprev1, None, None, wants1, False,
                 out, None)
        if want0:
            nn_rnn._big_mm(xp, d2_1, w_ih1, out=g_x1.reshape(rows, -1))
            if mask is not None:
                g_x1 *= mask
            out = nn_rnn._lstm_layer_backward_steps(xp, g_x1, g_h0, g_c0, w_hh0, None, acts0,
                                                    cs0, tcs0, hs0, False, dxw=dxw0)
            products(0, dxw0, xf0, w_ih0, hprev0, table, indices, wants0, x_by_vocab, out,
                     None)
        take_blocks()
    gx1, gw_ih1, gb1, gh1, gc1, _, _, gb_hh1 = res[1]
    gw_hh1 = None
    for part in partial:
        gw_hh1 = part if gw_hh1 is None else xp.add(gw_hh1, part, out=gw_hh1)
    if res[0] is None:
        gx = gw_ih0 = gb0 = gh0 = gc0 = gw_hh0 = gb_hh0 = None
    else:
        gx, gw_ih0, gb0, gh0, gc0, gw_hh0, _, gb_hh0 = res[0]
    grads = (gx, gw_ih0, gb0, gh0, gc0, gw_hh0, gb_hh0, gw_ih1, gb1, gh1, gc1, gw_hh1, gb_hh1)
    return tuple(g if need else None for g, need in zip(grads, needs[:13])) + (None,) * 3


def _replay(x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1, b_hh1,
            mask=None):
    """The pair in differentiable ops (create_graph, forward-mode tangents)."""
    out0, h0n, c0n = nn_rnn._lstm_layer_replay(x, w_ih0, b0, h00, c00, w_hh0, None, False,
                                               b_hh0)
    x1 = out0 if mask is None else out0 * mask
    out1, h1n, c1n = nn_rnn._lstm_layer_replay(x1, w_ih1, b1, h01, c01, w_hh1, None, False,
                                               b_hh1)
    return out1, h0n, c0n, h1n, c1n


def _replayed_grads(replay, inputs, grads, needs_input_grad, extra=()):
    """The inputs' gradients through ``replay`` of the 13 differentiable ``inputs`` (and
    ``extra``, constant arguments after them), from the outputs' ``grads`` (create_graph,
    or a forward-mode tangent in a formula)."""
    from ..autograd import grad as autograd_grad

    with nn_rnn._enable_grad():
        # replay from the saved inputs themselves, so the gradients returned depend on them
        # differentiably
        results = replay(*inputs[:13], *extra)
    pairs = [(r, g) for r, g in zip(results, grads) if g is not None]
    wanted = [t for t, need in zip(inputs, needs_input_grad) if need]
    grads_in = autograd_grad([r for r, _ in pairs], wanted, [g for _, g in pairs],
                             create_graph=True, allow_unused=True)
    by_id = {id(t): gi for t, gi in zip(wanted, grads_in)}
    return tuple(by_id.get(id(t)) if need and t is not None else None
                 for t, need in zip(inputs, needs_input_grad))


def _replayed_tangents(replay, inputs, x_dots, extra=()):
    """Forward mode through ``replay`` of the 13 differentiable ``inputs`` (and ``extra``,
    constant arguments after them): the replay inside a dual level of its own, as
    ``lstm_layer``'s jvp does. Returns the five outputs' tangents."""
    from ..autograd import _forward

    lvl = _forward.enter(nested_ok=True)
    try:
        duals = []
        for t, d in zip(inputs, x_dots):
            if t is not None and d is not None:
                t = t.view_as(t)
                _forward.set_tangent(t, lvl, d)
            duals.append(t)
        results = replay(*duals, *extra)
        return tuple(_forward.get_tangent(r, lvl) for r in results)
    finally:
        _forward.exit_level(lvl)


def _pair_vjp(grads, x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1, b_hh1,
              table, indices, mask=None, *, out, needs_input_grad):
    inputs = (x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1, b_hh1, None,
              None, None)
    if _dispatch.differentiable_formula(*inputs, *grads):
        return _replayed_grads(_replay, inputs, grads, needs_input_grad, (mask,))
    params = dict(needs=tuple(needs_input_grad))
    if table is not None and needs_input_grad[0] and nn_rnn._lookup_grad_unobserved(x):
        params["x_by_vocab"] = True   # NOTE [ An unobserved lookup's gradient ] in nn_rnn.py
    acts0, cs0, tcs0, hprev0, xf0, x1, acts1, cs1, tcs1, hprev1 = out[5:]
    return _dispatch.apply(pair_backward_op,
                           (grads[0], grads[1], grads[2], grads[3], grads[4], xf0, w_ih0,
                            w_hh0, x1, w_ih1, w_hh1, acts0, cs0, tcs0, hprev0, acts1, cs1,
                            tcs1, hprev1, table, indices, mask), params)


pair_op = Op("lstm_pair", _pair_kernel, vjp=_pair_vjp,
             nondiff_outputs=tuple(range(5, 15)))
# the node PyTorch's CPU build makes for each of the layers (NOTE [ LSTM layers under the
# profiler ] in ember/profiler/_recorder.py; the wavefront is not taken under the profiler)
pair_op.node_name = "MkldnnRnnLayerBackward0"


@pair_op.defjvp
def _pair_jvp(x_dots, *args, out):
    return _replayed_tangents(_replay, args[:13], x_dots, args[15:16]) + (None,) * 10


pair_backward_op = Op("lstm_pair_backward", _pair_backward_kernel)


def lstm_pair(x, layer0, layer1, lookup=None, mask=None):
    """Two stacked unidirectional LSTM layers over an unpacked sequence, run side by side
    (NOTE [ LSTM layers in a wavefront ]).

    Args:
        x: (T, B, I) input of the first layer.
        layer0: ``(w_ih, w_hh, b_ih, b_hh, h0, c0)`` of the first layer (biases may be None).
        layer1: the same for the second layer, whose input is the first layer's output.
        lookup: ``(table, indices)`` when x is ``table[indices]`` (NOTE [ Lookups a layer can
            fold ] in nn_ops.py), else None.
        mask: dropout between the layers: the (T, B, H) factors (zero or ``1 / (1 - p)``)
            that ``dropout`` would multiply the first layer's output by, or None.

    Returns:
        ``(out, (h_n, c_n) of layer 0, (h_n, c_n) of layer 1)``, ``out`` (T, B, H).

    Example::

        >>> import ember
        >>> w = lambda *s: ember.full(s, 0.1)
        >>> layer = (w(8, 2), w(8, 2), None, None, w(1, 2), w(1, 2))
        >>> out, s0, s1 = lstm_pair(ember.ones(3, 1, 2), layer, layer)
        >>> tuple(out.shape)
        (3, 1, 2)
    """
    table, indices = (None, None) if lookup is None else lookup
    w_ih0, w_hh0, b_ih0, b_hh0, h00, c00 = layer0
    w_ih1, w_hh1, b_ih1, b_hh1, h01, c01 = layer1
    res = _dispatch.apply(pair_op, (x, w_ih0, b_ih0, h00, c00, w_hh0, b_hh0, w_ih1, b_ih1,
                                    h01, c01, w_hh1, b_hh1, table, indices, mask), {})
    return res[0], (res[1], res[2]), (res[3], res[4])
