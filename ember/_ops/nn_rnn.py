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
