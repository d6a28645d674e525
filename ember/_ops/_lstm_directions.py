"""The two directions of a bidirectional LSTM layer on two threads (``lstm_bidir``, NOTE
[ LSTM directions on two threads ]); ``nn.LSTM`` takes it for each layer of a bidirectional
stack where ``_lstm_wavefront.applies`` says so, and it shares that module's thread hand-off
and replayed formulas.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from . import _lstm_wavefront, nn_rnn
from ._lstm_wavefront import COUNTS, _replayed_grads, _replayed_tangents, _summed
from ._registry import Op

# NOTE [ LSTM directions on two threads ]
# The two directions of a bidirectional layer share only their input: ``lstm_bidir`` runs the
# forward direction (its input projection, its loop) on the pool's worker and the reverse
# one on the calling thread, each with its step products on one MLAS thread, and the
# backward likewise (each direction's loop, then its products; the input's gradient summed
# at the end). No hand-over is needed. It applies where ``applies`` says so for the layer's
# input (NOTE [ LSTM layers in a wavefront ]), to each layer of a bidirectional stack;
# dropout between the layers stays where it was, between the ops. The layer's output is the
# two directions' outputs side by side, (T, B, 2H), as the plain path's ``cat`` makes it.
# A 2-layer bidirectional LSTM (256 hidden, seq 64, batch 32), forward and backward, in one
# process alternating: 0.82 of the plain path's time (92.6 against 113.1 ms, ``chrt -f 10``,
# load 9); 0.74 without ``chrt`` at load 18.


def _direction(xp, xf, table, indices, w_ih, b, h0, c0, w_hh, reverse, shape, threads):
    """One direction's input projection and loop (``_lstm_layer_kernel`` with its thread
    count fixed): what ``_lstm_layer_steps`` returns."""
    steps, batch = shape
    hs = c0.shape[1]
    s = nn_rnn._gate_scale(xp, hs, xf.dtype if xf is not None else table.dtype)
    w_in = (w_ih * s[:, None]).T
    if table is None:
        acts = nn_rnn._big_mm(xp, xf, w_in)
    else:
        acts = xp.take(nn_rnn._big_mm(xp, table, w_in), indices.reshape(-1), axis=0)
    return nn_rnn._lstm_layer_steps(xp, acts.reshape(steps, batch, 4 * hs), b, h0, c0, w_hh,
                                    None, reverse, threads=threads)


def _bidir_kernel(xp, x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1,
                  b_hh1, table, indices):
    """Both directions of one layer over x (T, B, I) (NOTE [ LSTM directions on two threads
    ]); the arguments ending in 0 are the forward direction's, in 1 the reverse one's.
    Returns out (T, B, 2H), h_n and c_n of each direction, then for backward each direction's
    gate activations, cell states, tanh(c) and read states, and x as rows (None with a
    table)."""
    steps, batch = x.shape[:2]
    xf = x.reshape(steps * batch, -1) if table is None else None
    b0, b1 = _summed(b0, b_hh0), _summed(b1, b_hh1)
    res = [None, None]
    args = [(w_ih0, b0, h00, c00, w_hh0, False), (w_ih1, b1, h01, c01, w_hh1, True)]

    def run(d, threads):
        res[d] = _direction(xp, xf, table, indices, *args[d], (steps, batch), threads)

    if xp is np and _lstm_wavefront._on_two_threads(lambda: run(0, 1), lambda: run(1, 1)):
        COUNTS[0] += 1
    else:
        COUNTS[1] += 1
        run(0, None)
        run(1, None)
    (o0, h0n, c0n, acts0, cs0, tcs0, _, hp0), (o1, h1n, c1n, acts1, cs1, tcs1, _, hp1) = res
    out = xp.concatenate((o0, o1), axis=2)
    return (out, h0n, c0n, h1n, c1n, acts0, cs0, tcs0, hp0, xf, acts1, cs1, tcs1, hp1)


def _bidir_backward_kernel(xp, g_out, g_h0, g_c0, g_h1, g_c1, xf, w_ih0, w_hh0, w_ih1, w_hh1,
                           acts0, cs0, tcs0, hprev0, acts1, cs1, tcs1, hprev1, table, indices,
                           *, needs, x_by_vocab=False):
    """Backward of ``_bidir_kernel``: the gradients of its 15 inputs (None for the table and
    indices, and where ``needs`` says none is wanted)."""
    hs = hprev0.shape[2]
    res = [None, None]
    need_x = needs[0]
    per = [(g_h0, g_c0, w_ih0, w_hh0, acts0, cs0, tcs0, hprev0, False, needs[1:7]),
           (g_h1, g_c1, w_ih1, w_hh1, acts1, cs1, tcs1, hprev1, True, needs[7:13])]

    def run(d, threads):
        g_h, g_c, w_ih, w_hh, acts, cs, tcs, hprev, reverse, need = per[d]
        g = None if g_out is None else g_out[:, :, d * hs:(d + 1) * hs]
        _, dh, dc, _ = steps_out = nn_rnn._lstm_layer_backward_steps(
            xp, g, g_h, g_c, w_hh, None, acts, cs, tcs, hs, reverse, threads=threads)
        need_wih, need_b, need_h, need_c, need_whh, need_bhh = need
        wants = (need_x, need_wih, need_b, need_h, need_c, need_whh, False, False, False,
                 need_bhh)
        res[d] = nn_rnn._lstm_layer_backward_products(
            xp, steps_out[0], dh, dc, None, xf, w_ih, None, None, hprev, table, indices,
            wants, x_by_vocab)

    if not (xp is np and _lstm_wavefront._on_two_threads(lambda: run(0, 1), lambda: run(1, 1))):
        run(0, None)
        run(1, None)
    (gx0, gw_ih0, gb0, gh0, gc0, gw_hh0, _, gb_hh0) = res[0]
    (gx1, gw_ih1, gb1, gh1, gc1, gw_hh1, _, gb_hh1) = res[1]
    gx = xp.add(gx0, gx1, out=gx0) if need_x else None
    grads = (gx, gw_ih0, gb0, gh0, gc0, gw_hh0, gb_hh0, gw_ih1, gb1, gh1, gc1, gw_hh1, gb_hh1)
    return tuple(g if need else None for g, need in zip(grads, needs[:13])) + (None, None)


def _bidir_replay(x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1, b_hh1):
    """Both directions in differentiable ops (create_graph, forward-mode tangents)."""
    from .join import cat

    out0, h0n, c0n = nn_rnn._lstm_layer_replay(x, w_ih0, b0, h00, c00, w_hh0, None, False,
                                               b_hh0)
    out1, h1n, c1n = nn_rnn._lstm_layer_replay(x, w_ih1, b1, h01, c01, w_hh1, None, True,
                                               b_hh1)
    return cat([out0, out1], 2), h0n, c0n, h1n, c1n


def _bidir_vjp(grads, x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1,
               b_hh1, table, indices, *, out, needs_input_grad):
    inputs = (x, w_ih0, b0, h00, c00, w_hh0, b_hh0, w_ih1, b1, h01, c01, w_hh1, b_hh1, None,
              None)
    if _dispatch.differentiable_formula(*inputs, *grads):
        return _replayed_grads(_bidir_replay, inputs, grads, needs_input_grad)
    acts0, cs0, tcs0, hprev0, xf, acts1, cs1, tcs1, hprev1 = out[5:]
    params = dict(needs=tuple(needs_input_grad))
    if table is not None and needs_input_grad[0] and nn_rnn._lookup_grad_unobserved(x):
        params["x_by_vocab"] = True   # NOTE [ An unobserved lookup's gradient ] in nn_rnn.py
    return _dispatch.apply(bidir_backward_op,
                           (grads[0], grads[1], grads[2], grads[3], grads[4], xf, w_ih0,
                            w_hh0, w_ih1, w_hh1, acts0, cs0, tcs0, hprev0, acts1, cs1, tcs1,
                            hprev1, table, indices), params)


bidir_op = Op("lstm_bidir", _bidir_kernel, vjp=_bidir_vjp, nondiff_outputs=tuple(range(5, 14)))
bidir_op.node_name = "MkldnnRnnLayerBackward0"   # (as ``pair_op``'s)


@bidir_op.defjvp
def _bidir_jvp(x_dots, *args, out):
    return _replayed_tangents(_bidir_replay, args[:13], x_dots) + (None,) * 9


bidir_backward_op = Op("lstm_bidir_backward", _bidir_backward_kernel)


def lstm_bidir(x, forward, reverse, lookup=None):
    """Both directions of one bidirectional LSTM layer over an unpacked sequence, one per
    thread (NOTE [ LSTM directions on two threads ]).

    Args:
        x: (T, B, I) input.
        forward: ``(w_ih, w_hh, b_ih, b_hh, h0, c0)`` of the forward direction (biases may be
            None).
        reverse: the same for the reverse direction.
        lookup: ``(table, indices)`` when x is ``table[indices]`` (NOTE [ Lookups a layer can
            fold ] in nn_ops.py), else None.

    Returns:
        ``(out, (h_n, c_n) forward, (h_n, c_n) reverse)``, ``out`` (T, B, 2H).

    Example::

        >>> import ember
        >>> w = lambda *s: ember.full(s, 0.1)
        >>> d = (w(8, 2), w(8, 2), None, None, w(1, 2), w(1, 2))
        >>> out, f, r = lstm_bidir(ember.ones(3, 1, 2), d, d)
        >>> tuple(out.shape)
        (3, 1, 4)
    """
    table, indices = (None, None) if lookup is None else lookup
    w_ih0, w_hh0, b_ih0, b_hh0, h00, c00 = forward
    w_ih1, w_hh1, b_ih1, b_hh1, h01, c01 = reverse
    res = _dispatch.apply(bidir_op, (x, w_ih0, b_ih0, h00, c00, w_hh0, b_hh0, w_ih1, b_ih1,
                                     h01, c01, w_hh1, b_hh1, table, indices), {})
    return res[0], (res[1], res[2]), (res[3], res[4])
