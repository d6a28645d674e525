"""Recurrent cells: a fused LSTM step, and RNN/GRU steps composed from ember ops.

NOTE [ Fused LSTM step ]
An LSTM layer spends its time in many small per-step ops. The input projection of all
time steps is one big GEMM done before the loop (``x @ W_ih.T + b``); each step then runs
one fused op: the recurrent GEMM, the four gate nonlinearities and the cell update, which
returns (h, c) and saves the activated gates and tanh(c) for backward. Its derivative
formula is written in ember ops, so it is differentiable again.
"""

from __future__ import annotations

from .. import _dispatch
from ._registry import Op


def _sigmoid(xp, x):
    # 1 / (1 + exp(-x)) without overflow warnings for large negative x
    return 0.5 * (xp.tanh(0.5 * x) + 1.0)


def _lstm_step_kernel(xp, xw, h, c, w_hh):
    """xw: (N, 4H) input projection (bias included); h, c: (N, H); w_hh: (4H, H)."""
    gates = xw + h @ w_hh.T
    hs = c.shape[1]
    i = _sigmoid(xp, gates[:, :hs])
    f = _sigmoid(xp, gates[:, hs:2 * hs])
    g = xp.tanh(gates[:, 2 * hs:3 * hs])
    o = _sigmoid(xp, gates[:, 3 * hs:])
    c_new = f * c + i * g
    tc = xp.tanh(c_new)
    h_new = o * tc
    acts = xp.concatenate([i, f, g, o], axis=1)
    return h_new, c_new, acts, tc


def _lstm_step_vjp(grads, xw, h, c, w_hh, *, out):
    from .. import cat, is_grad_enabled

    gh, gc = grads[0], grads[1]
    hs = c.shape[1]
    if is_grad_enabled():
        # create_graph: recompute the gates from the inputs so the formula stays
        # differentiable in them (the saved activations are constants to autograd)
        gates = xw + h @ w_hh.t()
        i, f = gates[:, :hs].sigmoid(), gates[:, hs:2 * hs].sigmoid()
        g, o = gates[:, 2 * hs:3 * hs].tanh(), gates[:, 3 * hs:].sigmoid()
        tc = (f * c + i * g).tanh()
    else:
        _, _, acts, tc = out
        i, f = acts[:, :hs], acts[:, hs:2 * hs]
        g, o = acts[:, 2 * hs:3 * hs], acts[:, 3 * hs:]
    if gh is None:
        gh = h * 0
    dc = gh * o * (1 - tc * tc)
    if gc is not None:
        dc = dc + gc
    d_o = gh * tc * o * (1 - o)
    d_i = dc * g * i * (1 - i)
    d_f = dc * c * f * (1 - f)
    d_g = dc * i * (1 - g * g)
    dgates = cat([d_i, d_f, d_g, d_o], 1)
    return dgates, dgates @ w_hh, dc * f, dgates.t() @ h


lstm_step_op = Op("lstm_cell", _lstm_step_kernel, vjp=_lstm_step_vjp, nondiff_outputs=(2, 3))
lstm_step_op.node_name = "LstmCellBackward0"


def lstm_step(xw, h, c, w_hh):
    """One LSTM step from a precomputed input projection; returns (h, c)."""
    h2, c2, _, _ = _dispatch.apply(lstm_step_op, (xw, h, c, w_hh), {})
    return h2, c2


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(h', c')`` of one LSTM cell for input (N, I) and state ``hx = (h, c)``."""
    from .nn_ops import linear

    h, c = hx
    xw = linear(input, w_ih, b_ih)
    if b_hh is not None:
        xw = xw + b_hh
    return lstm_step(xw, h, c, w_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``h'`` of one GRU cell (reset gate applied to the projected hidden state)."""
    from .nn_ops import linear

    xw = linear(input, w_ih, b_ih)
    hw = linear(hx, w_hh, b_hh)
    x_r, x_z, x_n = xw.chunk(3, 1)
    h_r, h_z, h_n = hw.chunk(3, 1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .nn_ops import linear

    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .nn_ops import linear, relu

    return relu(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh))


# ------------------------------------------------------------------------------------------------
# NOTE [ Fused LSTM layer ]
# For unpacked sequences a whole LSTM layer (one direction) is one op: the forward loop runs
# on arrays and saves the gate activations and cell states; backward-through-time is one
# array loop too, with the recurrent weight gradient as a single GEMM over all steps. This
# removes the per-step autograd bookkeeping that dominates small-batch LSTM training. Under
# create_graph the formula instead replays the recurrence with the differentiable per-step
# op, so higher derivatives still work.


def _lstm_layer_kernel(xp, xw, h0, c0, w_hh, w_hr):
    """xw (T, B, 4H) includes both biases; h0 (B, P); c0 (B, H). Returns out (T, B, P),
    h_n, c_n and, for backward, gate activations (T, B, 4H), cell states (T+1, B, H),
    tanh(c) (T, B, H), unprojected outputs (T, B, H) and the inputs h_{t-1} (T, B, P)."""
    steps, batch = xw.shape[:2]
    hs = c0.shape[1]
    p = h0.shape[1]
    dt = xw.dtype
    out = xp.empty((steps, batch, p), dt)
    acts = xp.empty((steps, batch, 4 * hs), dt)
    cs = xp.empty((steps + 1, batch, hs), dt)
    tcs = xp.empty((steps, batch, hs), dt)
    raw = xp.empty((steps, batch, hs), dt) if w_hr is not None else None
    hprev = xp.empty((steps, batch, p), dt)
    h, cs[0] = h0, c0
    w_t = w_hh.T
    for t in range(steps):
        hprev[t] = h
        a = acts[t]
        xp.add(xw[t], h @ w_t, out=a)
        a[:, :2 * hs] = _sigmoid(xp, a[:, :2 * hs])
        xp.tanh(a[:, 2 * hs:3 * hs], out=a[:, 2 * hs:3 * hs])
        a[:, 3 * hs:] = _sigmoid(xp, a[:, 3 * hs:])
        i, f, g, o = a[:, :hs], a[:, hs:2 * hs], a[:, 2 * hs:3 * hs], a[:, 3 * hs:]
        c = cs[t + 1]
        xp.multiply(f, cs[t], out=c)
        c += i * g
        xp.tanh(c, out=tcs[t])
        if w_hr is not None:
            xp.multiply(o, tcs[t], out=raw[t])
            h = raw[t] @ w_hr.T
            out[t] = h
        else:
            xp.multiply(o, tcs[t], out=out[t])
            h = out[t]
    return out, out[-1].copy(), cs[-1].copy(), acts, cs, tcs, raw, hprev


def _lstm_layer_backward_kernel(xp, g_out, g_h, g_c, acts, cs, tcs, raw, hprev, w_hh, w_hr):
    steps, batch = acts.shape[:2]
    hs = cs.shape[2]
    dt = acts.dtype
    dh = xp.zeros(hprev.shape[1:], dt) if g_h is None else g_h.astype(dt, copy=True)
    dc = xp.zeros(cs.shape[1:], dt) if g_c is None else g_c.astype(dt, copy=True)
    dxw = xp.empty_like(acts)
    dw_hr = xp.zeros(w_hr.shape, dt) if w_hr is not None else None
    for t in range(steps - 1, -1, -1):
        dht = dh if g_out is None else dh + g_out[t]
        if w_hr is not None:
            dw_hr += dht.T @ raw[t]
            dht = dht @ w_hr
        a = acts[t]
        i, f, g, o = a[:, :hs], a[:, hs:2 * hs], a[:, 2 * hs:3 * hs], a[:, 3 * hs:]
        tc = tcs[t]
        dct = dht * o * (1 - tc * tc) + dc
        d = dxw[t]
        d[:, :hs] = dct * g * i * (1 - i)
        d[:, hs:2 * hs] = dct * cs[t] * f * (1 - f)
        d[:, 2 * hs:3 * hs] = dct * i * (1 - g * g)
        d[:, 3 * hs:] = dht * tc * o * (1 - o)
        dc = dct * f
        dh = d @ w_hh
    dw_hh = dxw.reshape(steps * batch, -1).T @ hprev.reshape(steps * batch, -1)
    return dxw, dh, dc, dw_hh, dw_hr


def _lstm_layer_vjp(grads, xw, h0, c0, w_hh, w_hr, *, out):
    from .. import is_grad_enabled, stack

    g_out, g_h, g_c = grads[0], grads[1], grads[2]
    if is_grad_enabled():
        # create_graph: replay the recurrence with the differentiable per-step op
        from ..autograd import grad as autograd_grad

        inputs = [t for t in (xw, h0, c0, w_hh, w_hr) if t is not None]
        with _enable_grad():
            # replay from the saved inputs themselves, so the gradients returned depend on
            # them differentiably
            xw_, h_, c_, wh_, wr_ = xw, h0, c0, w_hh, w_hr
            outs = []
            for t in range(xw_.shape[0]):
                h_, c_ = lstm_step(xw_[t], h_, c_, wh_)
                if wr_ is not None:
                    h_ = h_ @ wr_.t()
                outs.append(h_)
            results = [stack(outs), h_, c_]
        pairs = [(r, g) for r, g in zip(results, (g_out, g_h, g_c)) if g is not None]
        wanted = [t for t in inputs if t.requires_grad]
        grads_in = autograd_grad([r for r, _ in pairs], wanted, [g for _, g in pairs],
                                 create_graph=True, allow_unused=True)
        by_id = {id(t): gi for t, gi in zip(wanted, grads_in)}
        return tuple(by_id.get(id(t)) if t is not None else None
                     for t in (xw, h0, c0, w_hh, w_hr))
    _, _, _, acts, cs, tcs, raw, hprev = out
    res = _dispatch.apply(lstm_layer_backward_op, (g_out, g_h, g_c, acts, cs, tcs, raw,
                                                   hprev, w_hh, w_hr), {})
    return res


def _enable_grad():
    from ..autograd.grad_mode import enable_grad

    return enable_grad()


lstm_layer_op = Op("lstm_layer", _lstm_layer_kernel, vjp=_lstm_layer_vjp,
                   nondiff_outputs=(3, 4, 5, 6, 7))
lstm_layer_op.node_name = "LstmBackward0"
lstm_layer_backward_op = Op("lstm_layer_backward", _lstm_layer_backward_kernel)


def lstm_layer(xw, h0, c0, w_hh, w_hr=None):
    """One direction of one LSTM layer over an unpacked sequence (NOTE [ Fused LSTM layer ]);
    returns (outputs (T, B, P), h_n, c_n)."""
    res = _dispatch.apply(lstm_layer_op, (xw, h0, c0, w_hh, w_hr), {})
    return res[0], res[1], res[2]
