"""Recurrent cells: a fused LSTM step, and RNN/GRU steps composed from ember ops.

NOTE [ Fused LSTM step ]
An LSTM layer spends its time in many small per-step ops. The input projection of all
time steps is one big GEMM done before the loop (``x @ W_ih.T + b``); each step then runs
one fused op: the recurrent GEMM, the four gate nonlinearities and the cell update, which
returns (h, c) and saves the activated gates and tanh(c) for backward. Its derivative
formula is written in ember ops, so it is differentiable again.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core.tensor import wrap
from .._kernels import _blas
from . import _lstm_mlas, _lstm_units, _node_names
from ._registry import Op, observing_profiler, public
from .join import cat, stack
from .linalg import col_sums


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
    if h_new.dtype != xw.dtype:  # low-precision gates computed in float32 return in their dtype
        return tuple(a.astype(xw.dtype) for a in (h_new, c_new, acts, tc))
    return h_new, c_new, acts, tc


def _lstm_step_vjp(grads, xw, h, c, w_hh, *, out):
    gh, gc = grads[0], grads[1]
    hs = c.shape[1]
    if _dispatch.differentiable_formula(gh, gc, xw, h, c, w_hh):
        # create_graph (or forward-over-reverse): recompute the gates from the inputs so
        # the formula stays differentiable in them (the saved activations are constants
        # to autograd)
        gates = xw + h @ w_hh.t()
        i, f = gates[:, :hs].sigmoid(), gates[:, hs:2 * hs].sigmoid()
        g, o = gates[:, 2 * hs:3 * hs].tanh(), gates[:, 3 * hs:].sigmoid()
        tc = (f * c + i * g).tanh()
    else:
        _, _, acts, tc = out
        fast = _lstm_step_grads_on_arrays(gh, gc, h, c, acts, tc, w_hh)
        if fast is not None:
            return fast
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


def _lstm_step_grads_on_arrays(gh, gc, h, c, acts, tc, w_hh):
    """``_lstm_step_vjp``'s gradients from the saved activations, its element-wise steps
    run on the arrays (NOTE [ LSTM step gradients on the arrays ]), or None where the
    formula runs op by op."""
    if _dispatch.intercept:
        return None
    ad = acts._data
    dt = ad.dtype
    if type(ad) is not np.ndarray or dt.char not in "fd":
        return None
    arrays = [h._data, c._data, tc._data]
    for t in (gh, gc):
        if t is not None:
            arrays.append(t._data)
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype is not dt:
            return None
    hd, cd, tcd = arrays[0], arrays[1], arrays[2]
    hs = cd.shape[1]
    i, f = ad[:, :hs], ad[:, hs:2 * hs]
    g, o = ad[:, 2 * hs:3 * hs], ad[:, 3 * hs:]
    # (the formula's own steps, in its order)
    ghd = hd * 0 if gh is None else gh._data
    dc = ghd * o * (1 - tcd * tcd)
    if gc is not None:
        dc = dc + gc._data
    d_o = ghd * tcd * o * (1 - o)
    d_i = dc * g * i * (1 - i)
    d_f = dc * cd * f * (1 - f)
    d_g = dc * i * (1 - g * g)
    dgates = wrap(np.concatenate([d_i, d_f, d_g, d_o], axis=1))
    return dgates, dgates @ w_hh, wrap(dc * f), dgates.t() @ h


# NOTE [ LSTM step gradients on the arrays ]
# Outside create_graph (and forward-over-reverse), the step's formula reads only constants
# (the saved gates and tanh(c')) and the incoming gradients: its twenty-odd element-wise ops
# and the gates' concatenation are seen by nothing -- no graph records them, no mode or
# profiler watches (``_dispatch.intercept`` is off) -- so, on CPU float32/float64 arrays of
# one dtype, they run as the same NumPy operations in the same order (the same bits: each
# is one IEEE operation per element) without a dispatch each: ~1 us an op of an LSTMCell
# step's backward. The two products stay tensor ops (their kernels choose their bits by
# size). tests/perf/test_overhead_33.py compares the two routes.


lstm_step_op = Op("lstm_cell", _lstm_step_kernel, vjp=_lstm_step_vjp, nondiff_outputs=(2, 3))
lstm_step_op.saved_outputs = (2, 3)  # the gates and tanh(c'), never h' or c' themselves


@lstm_step_op.defjvp
def _lstm_step_jvp(x_dots, xw, h, c, w_hh, *, out):
    xwd, hd, cd, wd = x_dots
    hs = c.shape[1]
    if _dispatch.state.grad_enabled and any(t is not None and t._rg
                                            for t in (xw, h, c, w_hh) + tuple(x_dots)):
        gates = xw + h @ w_hh.t()
        i, f = gates[:, :hs].sigmoid(), gates[:, hs:2 * hs].sigmoid()
        g, o = gates[:, 2 * hs:3 * hs].tanh(), gates[:, 3 * hs:].sigmoid()
        tc = (f * c + i * g).tanh()
    else:
        _, _, acts, tc = out
        i, f = acts[:, :hs], acts[:, hs:2 * hs]
        g, o = acts[:, 2 * hs:3 * hs], acts[:, 3 * hs:]
    # the gates' pre-activation tangent: d(xw + h w_hh^T)
    gd = xwd
    for t in ((hd @ w_hh.t()) if hd is not None else None,
              (h @ wd.t()) if wd is not None else None):
        if t is not None:
            gd = t if gd is None else gd + t
    dc = None if cd is None else f * cd
    do = None
    if gd is not None:
        di = gd[:, :hs] * i * (1 - i)
        df = gd[:, hs:2 * hs] * f * (1 - f)
        dg = gd[:, 2 * hs:3 * hs] * (1 - g * g)
        do = gd[:, 3 * hs:] * o * (1 - o)
        t = df * c + di * g + i * dg
        dc = t if dc is None else dc + t
    dh = None if dc is None else o * (1 - tc * tc) * dc
    if do is not None:
        t = do * tc
        dh = t if dh is None else dh + t
    return dh, dc, None, None
lstm_step_op.node_name = "LstmCellBackward0"


def lstm_step(xw, h, c, w_hh):
    """One LSTM step from a precomputed input projection; returns (h, c)."""
    h2, c2, _, _ = _dispatch.apply(lstm_step_op, (xw, h, c, w_hh), {})
    return h2, c2


def _check_cell(input, hidden, w_ih, w_hh, gates, biases=(), cell=None):
    """torch's argument checks of an RNN cell, before any product: ``gates`` rows per
    hidden unit in both weights, the input's feature size, and each hidden state's batch and
    hidden sizes (an LSTM's ``cell`` state too, whose dtype may differ: it meets the gates
    in elementwise ops only). The cells take batched (N, I) inputs only (the modules add the
    batch)."""
    if _cell_args_plain(input, hidden, w_ih, w_hh, gates, biases, cell):
        return
    shaped = tuple(hidden) + (() if cell is None else (cell,))
    for t in (input,) + shaped:
        if t.dim() < 2:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(t.dim(), 1)}, {max(t.dim(), 1) - 1}], but got 1)")
    # torch's cells run their two products one after the other (the hidden one first, but
    # the input one first in a GRU), each refusing bool before the other is compared
    b_ih, b_hh = (tuple(biases) + (None, None))[:2]
    products = [(input, w_ih, b_ih), (hidden[0], w_hh, b_hh)]
    for x, w, b in (products if gates == 3 else products[::-1]):
        if x.dtype.name == w.dtype.name == "bool" and (b is None or b.dtype.name == "bool") \
                and x.shape[0] * w.shape[0] and x.shape[1] == w.shape[-1] and x.shape[1]:
            raise NotImplementedError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    given = (input,) + tuple(hidden) + (w_ih, w_hh) + tuple(b for b in biases if b is not None)
    if any(t.dtype != input.dtype for t in given):
        odd = next(t for t in given if t.dtype != input.dtype)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{odd.dtype.scalar_name} != {input.dtype.scalar_name}")
    if gates > 1 and input.dtype.name != "bool" and not (
            input.is_floating_point() or input.is_complex()):
        # torch's LSTM / GRU gates are computed in float and written back into the input's
        # dtype (the Elman cells compute in the input's dtype: tanh gives a float result)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.scalar_name}")
    hs = w_hh.shape[1] if w_hh.dim() > 1 else 0
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != gates * hs:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = "
                               f"{gates * hs}, but got {w.shape[0]}")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for i, h in enumerate(shaped):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                               f"batch size {h.shape[0]}")
        if h.shape[1] != hs:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {hs}")


def _cell_args_plain(input, hidden, w_ih, w_hh, gates, biases, cell):
    """Whether a cell's arguments pass every check of ``_check_cell``, tested on the arrays
    in one pass: 2-D float or complex operands of one dtype (the cell state's may differ),
    weights of ``gates`` rows per hidden unit, and matching sizes. False sends the call
    through the checks one by one, which raise torch's errors."""
    x = input._data
    dt = x.dtype
    if x.ndim != 2 or dt.kind not in "fc":
        return False
    wi, wh = w_ih._data, w_hh._data
    if wi.ndim != 2 or wh.ndim != 2 or wi.dtype != dt or wh.dtype != dt:
        return False
    n, hs = x.shape[0], wh.shape[1]
    if wi.shape[0] != gates * hs or wh.shape[0] != gates * hs or x.shape[1] != wi.shape[1]:
        return False
    for h in hidden:
        d = h._data
        if d.ndim != 2 or d.dtype != dt or d.shape[0] != n or d.shape[1] != hs:
            return False
    if cell is not None:
        d = cell._data
        if d.ndim != 2 or d.shape[0] != n or d.shape[1] != hs:
            return False
    for b in biases:
        if b is not None and b._data.dtype != dt:
            return False
    return True


@public(method=False)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: ``(h', c')`` for input (N, I) and state ``hx = (h, c)``, gates in the
    order input, forget, cell, output.

    Args:
        input: (N, I).
        hx: ``(h, c)``, each (N, H).
        w_ih: (4H, I); w_hh: (4H, H).
        b_ih, b_hh: (4H,) or None.

    Returns:
        ``(h', c')``.

    Example:
        >>> import ember
        >>> h, c = ember.lstm_cell(ember.ones(1, 2), (ember.zeros(1, 3), ember.zeros(1, 3)),
        ...                        ember.zeros(12, 2), ember.zeros(12, 3))
        >>> c
        tensor([[0., 0., 0.]])
    """
    h, c = hx
    _check_cell(input, (h,), w_ih, w_hh, 4, (b_ih, b_hh), cell=c)
    if c.dtype != input.dtype:
        # the cell state meets the gates only in elementwise ops, so torch promotes it (a
        # uint8 or float64 c with float32 gates): the gates in the input's dtype, then the
        # update in the promoted one
        from .nn_ops import linear

        gates = linear(input, w_ih, b_ih) + linear(h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c2.tanh(), c2
    session = observing_profiler()
    if session is not None:   # (PyTorch's one op; its CPU cell's steps under it)
        args = (input, hx, w_ih, w_hh, b_ih, b_hh)
        return session.composite("aten::lstm_cell", lambda: (input, list(hx)) + args[2:],
                                 _profiled_lstm, args, {})
    return _lstm_cell_nodes(_lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh),
                            input, hx, w_ih, w_hh, b_ih, b_hh)


def _lstm_cell_nodes(out, input, hx, w_ih, w_hh, b_ih, b_hh):
    """``lstm_cell``'s results under the nodes of PyTorch's CPU cell, which composes it
    (``h'`` a ``MulBackward0``, ``c'`` an ``AddBackward0``, over sigmoids and tanhs of an
    ``UnsafeSplitBackward0`` of the summed products): ember's one fused node still computes
    the gradients (NOTE [ One node for a composite ] in ember/autograd/_composite_node.py)."""
    h2, c2 = out
    if c2._grad_fn is None or h2._grad_fn is None:
        return out
    args = (input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)
    split = []

    def gates(e, step):
        if not split:  # (one split for both results' graphs, as torch's)
            x, h, _, wi, wh, bi, bh = e

            def product(b, a, w, bias):
                wt = step("TBackward0", (w,))
                return step("AddmmBackward0", (b, a, wt)) if bias is not None else \
                    step("MmBackward0", (a, wt))
            summed = step("AddBackward0", (product(bh, h, wh, b_hh), product(bi, x, wi, b_ih)))
            node = step("UnsafeSplitBackward0", (summed,))[0]
            split.extend((node, k) for k in range(4))
        return split

    def c_steps(e, step):
        i, f, g, _ = gates(e, step)
        return (step("MulBackward0", (step("SigmoidBackward0", (f,)), e[2])),
                step("MulBackward0", (step("SigmoidBackward0", (i,)),
                                      step("TanhBackward0", (g,)))))

    c2 = _node_names.as_one_node("AddBackward0", c2, args, shown=c_steps)
    c_edge = (c2._grad_fn, c2._out_nr)

    def h_steps(e, step):
        return (step("SigmoidBackward0", (gates(e, step)[3],)), step("TanhBackward0", (c_edge,)))

    return _node_names.as_one_node("MulBackward0", h2, args, shown=h_steps), c2


def _profiled_lstm(input, hx, w_ih, w_hh, b_ih, b_hh):
    """``lstm_cell`` as PyTorch's CPU cell runs it (its profile's rows and nodes): the
    input's product added in place to the hidden one, unsafe chunks of that activated in
    place, then the cell update. The same numbers as the fused step, to rounding."""
    from .nn_ops import linear

    h, c = hx
    gates = linear(h, w_hh, b_hh).add_(linear(input, w_ih, b_ih))
    i, f, g, o = unsafe_chunks(observing_profiler(), gates, 4)
    i, f, g, o = i.sigmoid_(), f.sigmoid_(), g.tanh_(), o.sigmoid_()
    c2 = (f * c).add_(i * g)
    return o * c2.tanh(), c2


def _lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """lstm_cell without its argument checks: the whole-sequence form's step, whose weights
    may carry a projection (w_hh is (4H, P))."""
    from .nn_ops import linear

    h, c = hx
    if h.shape[-1] != w_hh.shape[-1]:  # the recurrent product, as torch's matmul words it
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({h.shape[0] if h.dim() > 1 else 1}x{h.shape[-1]} and "
                           f"{w_hh.shape[-1]}x{w_hh.shape[0]})")
    xw = linear(input, w_ih, b_ih)
    if b_hh is not None:
        xw = xw + b_hh
    return lstm_step(xw, h, c, w_hh)


@public(method=False)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: ``h'`` for input (N, I) and state (N, H), gates in the order reset,
    update, new (the reset gate scales the projected hidden state).

    Args:
        input: (N, I).
        hx: (N, H).
        w_ih: (3H, I); w_hh: (3H, H).
        b_ih, b_hh: (3H,) or None.

    Returns:
        ``h'``, (N, H).

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: ember can return a finite value (1.0) where PyTorch
        returns NaN.

    Example:
        >>> import ember
        >>> ember.gru_cell(ember.ones(1, 2), ember.ones(1, 3), ember.zeros(9, 2),
        ...                ember.zeros(9, 3))
        tensor([[0.5000, 0.5000, 0.5000]])
    """
    _check_cell(input, (hx,), w_ih, w_hh, 3, (b_ih, b_hh))
    session = observing_profiler()
    if session is not None:   # (PyTorch's one op; ember's steps under it)
        args = (input, hx, w_ih, w_hh, b_ih, b_hh)
        return session.composite("aten::gru_cell", lambda: args, _profiled_gru, args, {})
    return _gru_steps(input, hx, w_ih, w_hh, b_ih, b_hh)


def _profiled_gru(input, hx, w_ih, w_hh, b_ih, b_hh):
    """``_gru_steps`` as PyTorch's CPU ``gru_cell`` runs them (its profile's rows): the
    gates from unsafe chunks of the two products, updated in place."""
    from .nn_ops import linear

    return gru_step_as_torch(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def gru_step_as_torch(xw, hx, w_hh, b_hh):
    """One GRU step from the input's product ``xw`` as PyTorch's CPU cell runs it while a
    profiler records: unsafe chunks of both products, the gates updated in place (the same
    numbers as ``_gru_steps``)."""
    from .nn_ops import linear

    session = observing_profiler()
    x_r, x_z, x_n = unsafe_chunks(session, xw, 3)
    h_r, h_z, h_n = unsafe_chunks(session, linear(hx, w_hh, b_hh), 3)
    r = h_r.add_(x_r).sigmoid_()
    z = h_z.add_(x_z).sigmoid_()
    n = x_n.add(h_n.mul_(r)).tanh_()
    return (hx - n).mul_(z).add_(n)


def unsafe_chunks(session, t, n):
    """``t.unsafe_chunk(n, 1)`` recorded as PyTorch's ``aten::unsafe_chunk`` around its
    ``aten::unsafe_split`` (``session``: the profiler's, which records)."""
    from .join import unsafe_chunk

    size = -(-t.shape[1] // n)
    return session.composite(
        "aten::unsafe_chunk", lambda: (t, n, 1),
        lambda: session.as_one_op("aten::unsafe_split", lambda: (t, size, 1), unsafe_chunk,
                                  (t, n, 1), {}), (), {})


def _gru_steps(input, hx, w_ih, w_hh, b_ih, b_hh):
    from .join import unsafe_chunk
    from .nn_ops import linear

    xw = linear(input, w_ih, b_ih)
    hw = linear(hx, w_hh, b_hh)
    x_r, x_z, x_n = unsafe_chunk(xw, 3, 1)
    h_r, h_z, h_n = unsafe_chunk(hw, 3, 1)
    # (operands and chunks in the order of PyTorch's CPU cell, whose graph inspecting code reads)
    r = (h_r + x_r).sigmoid()
    z = (h_z + x_z).sigmoid()
    n = (x_n + h_n * r).tanh()
    return (hx - n) * z + n


@public(method=False)
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step: ``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``.

    Args:
        input: (N, I).
        hx: (N, H).
        w_ih: (H, I); w_hh: (H, H).
        b_ih, b_hh: (H,) or None.

    Returns:
        ``h'``, (N, H).

    Example:
        >>> import ember
        >>> ember.rnn_tanh_cell(ember.ones(1, 1), ember.zeros(1, 1), ember.ones(1, 1),
        ...                     ember.ones(1, 1))
        tensor([[0.7616]])
    """
    from .nn_ops import linear

    _check_cell(input, (hx,), w_ih, w_hh, 1, (b_ih, b_hh))
    session = observing_profiler()
    if session is not None:
        return _profiled_cell(session, "aten::rnn_tanh_cell", lambda t: t.tanh(),
                              input, hx, w_ih, w_hh, b_ih, b_hh)
    return (linear(hx, w_hh, b_hh) + linear(input, w_ih, b_ih)).tanh()  # (torch's order)


@public(method=False)
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with ReLU: ``relu(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``.

    Args:
        input: (N, I).
        hx: (N, H).
        w_ih: (H, I); w_hh: (H, H).
        b_ih, b_hh: (H,) or None.

    Returns:
        ``h'``, (N, H).

    Example:
        >>> import ember
        >>> ember.rnn_relu_cell(ember.ones(1, 1), ember.zeros(1, 1), -ember.ones(1, 1),
        ...                     ember.ones(1, 1))
        tensor([[0.]])
    """
    from .nn_ops import linear, relu

    _check_cell(input, (hx,), w_ih, w_hh, 1, (b_ih, b_hh))
    session = observing_profiler()
    if session is not None:
        return _profiled_cell(session, "aten::rnn_relu_cell", relu,
                              input, hx, w_ih, w_hh, b_ih, b_hh)
    return relu(linear(hx, w_hh, b_hh) + linear(input, w_ih, b_ih))  # (torch's order)


def _profiled_cell(session, name, act, input, hx, w_ih, w_hh, b_ih, b_hh):
    """An Elman cell under the profiler, as PyTorch's one op ``name`` runs it: the hidden
    and input products, the second added in place to the first, then ``act``."""
    from .nn_ops import linear

    def run(input, hx, w_ih, w_hh, b_ih, b_hh):
        gates = linear(hx, w_hh, b_hh)
        return act(gates.add_(linear(input, w_ih, b_ih)))

    args = (input, hx, w_ih, w_hh, b_ih, b_hh)
    return session.composite(name, lambda: args, run, args, {})


# ------------------------------------------------------------------------------------------------
# NOTE [ Fused LSTM layer ]
# For unpacked sequences a whole LSTM layer (one direction) is one op, input projection
# included: the forward loop runs on arrays and saves the gate activations and cell states;
# backward-through-time is one array loop too, and every weight gradient is a single GEMM
# over all steps. This removes the per-step autograd bookkeeping that dominates small-batch
# LSTM training. What is left is GEMMs and a few elementwise passes per step, so the loops
# write into preallocated buffers (``out=``) rather than allocating temporaries:
#
# * sigmoid(x) = (tanh(x / 2) + 1) / 2. The rows of W_ih, W_hh and the bias that feed the
#   i, f and o gates are halved before the GEMMs (exact: a power of two), so one tanh over
#   all four gates, a multiply and an add give every activation.
# * per-step operands are whole (B, 4H) blocks where possible: the factors of that multiply
#   and add, and the bias (added to each step's recurrent product, in cache, rather than in
#   a pass over the whole projection), because NumPy's same-shape products run about twice
#   as fast as row broadcasts or strided gate slices at this size.
# * backward takes every local derivative in one form, (1 - a)(a + k) with k = 0 for the
#   sigmoid gates (s (1 - s)) and k = 1 for the g block ((1 - g)(1 + g)); one product with
#   the per-gate upstream factors finishes the gate gradients.
#
# When x is an embedding's output, the input projection and its weight gradient go through
# the table instead of every token (NOTE [ Lookups a layer can fold ] in nn_ops.py).
#
# ``reverse`` runs the recurrence from the last step to the first (the backward direction of
# a bidirectional layer) with outputs kept in time order. Under create_graph the formula
# instead replays the layer with differentiable ops (``linear`` and the per-step op), so
# higher derivatives still work.


# NOTE [ Fused LSTM layer steps ]
# Each step of the layer kernels below runs the small recurrent GEMM and then a run of
# element-wise NumPy calls over (batch, 4H) or (batch, H) arrays: eight in the forward, fifteen
# in the backward, each a separate pass with its own call overhead. With the numba backend of
# the fused kernels (NOTE [ Fused kernels ] in ember/_kernels/__init__.py), the backward's
# whole step is one loop (ember/_kernels/_numba_rnn.py): the same operations in the same
# order, without fused multiply-adds, so its results are bit for bit the NumPy path's. The
# forward's step is one loop too: for float32 with the two tanh included (NOTE [ A float32
# tanh for the LSTM steps ]: NumPy's is a scalar loop on AVX2, ~3.2 ns an element, and was
# ~15% of an LSTM LM step), so float32 results agree with the NumPy path's to float32
# rounding; float64 keeps NumPy's tanh and the gate scaling and cell update in one loop, bit
# for bit (tests/perf/test_lstm_layer_steps.py compares them). NumPy arrays only. With more
# than one thread the loops may instead run split by hidden units (NOTE [ LSTM steps split
# by hidden units ] in _lstm_units.py).

_STEP_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _step_kernels(xp, dt):
    """The numba step kernels (NOTE [ Fused LSTM layer steps ]), or None where they do not
    apply: another array library, another dtype, or the NumPy backend of the kernels."""
    if xp is not np or dt not in _STEP_DTYPES:
        return None
    from .. import _kernels

    if _kernels.backend() != "numba":
        return None
    from .._kernels import _numba_rnn

    return _numba_rnn


def _big_mm(xp, a, b, out=None):
    """A layer's products over all its steps at once (the input projection, the weight
    gradients): NumPy's through ``_blas.matmul``, which picks the BLAS threads by shape and
    takes MLAS where chosen (NOTE [ Products past a pinned OpenBLAS ]); the per-step products
    stay on the loops' own hold."""
    if xp is np:
        return _blas.matmul(a, b, out)
    return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)


def _gate_scale(xp, hs, dt):
    """Per-gate-row factors: 1/2 for the sigmoid gates i, f, o; 1 for the tanh gate g."""
    s = xp.full(4 * hs, 0.5, dt)
    s[2 * hs:3 * hs] = 1
    return s


def _lstm_layer_kernel(xp, x, w_ih, b, h0, c0, w_hh, w_hr, table, indices, b_hh=None, *,
                       reverse):
    """x (T, B, I); w_ih (4H, I); b (4H,) the input bias, or None; b_hh the hidden one, or
    None (summed here, as PyTorch's oneDNN layer does); h0 (B, P); c0 (B, H);
    ``table`` (V, I) and ``indices`` (T, B) when x is table[indices], else None (NOTE
    [ Lookups a layer can fold ] in nn_ops.py). Returns out (T, B, P), h_n, c_n and, for
    backward, the gate activations (T, B, 4H), cell states (T+1, B, H), tanh(c) (T, B, H),
    unprojected outputs (T, B, H), the state each step read, h_{t-1} (T, B, P), and x as
    rows (T*B, I), or None when the table stands in for it."""
    steps, batch = x.shape[:2]
    hs = c0.shape[1]
    dt = x.dtype
    if b_hh is not None:
        b = b_hh if b is None else b + b_hh
    s = _gate_scale(xp, hs, dt)
    w_in = (w_ih * s[:, None]).T
    if table is None:
        # (T*B, I): a copy when x is a transposed batch_first input, saved so that backward
        # does not make it again
        xf = x.reshape(steps * batch, -1)
        acts = _big_mm(xp, xf, w_in)
    else:
        xf = None
        acts = xp.take(_big_mm(xp, table, w_in), indices.reshape(-1), axis=0)
    acts = acts.reshape(steps, batch, 4 * hs)
    return _lstm_layer_steps(xp, acts, b, h0, c0, w_hh, w_hr, reverse) + (xf,)


def _lstm_layer_steps(xp, acts, b, h0, c0, w_hh, w_hr, reverse, *, before=None, after=None,
                      threads=None, out=None):
    """The recurrence of ``_lstm_layer_kernel`` over its input projection ``acts`` (T, B, 4H),
    sigmoid rows halved, overwritten by the gate activations; ``b`` the summed bias or None.
    Returns out, h_n, c_n, acts, cs, tcs, raw and hprev as that kernel does. ``before(t)`` and
    ``after(t)``, when given, run before and after step t, ``threads`` fixes the step
    products' MLAS threads and ``out`` is the (T, B, P) array to write the outputs into (NOTE
    [ LSTM layers in a wavefront ] in _lstm_wavefront.py)."""
    steps, batch = acts.shape[:2]
    hs, p = c0.shape[1], h0.shape[1]
    dt = acts.dtype
    s = _gate_scale(xp, hs, dt)
    # the bias joins each step's recurrent product, in cache, rather than a pass over acts
    bias = None if b is None else xp.broadcast_to(b * s, (batch, 4 * hs)).copy()
    # (H, 4H) in row order: OpenBLAS ran the steps' (B, H) @ (H, 4H) products 1.4x slower
    # on the transposed view (B=32, H=256, one thread: 290 vs 211 us)
    rec = xp.empty((batch, 4 * hs), dt)
    # NOTE [ LSTM step products on MLAS ] in _lstm_mlas.py: the products of w_hh unscaled
    weights = (_lstm_mlas.recurrent_weights(xp, dt, w_hh, steps, threads=threads, batch=batch)
               if p * hs * batch else None)
    step_mm = None if weights is None else weights.product(False, rec)
    # NOTE [ LSTM steps split by hidden units ]
    plan = (None if step_mm is not None or before is not None or after is not None
            else _lstm_units.plan(xp, dt, batch, hs, p))
    w_t = None if plan is not None or step_mm is not None else \
        xp.ascontiguousarray((w_hh * s[:, None]).T)
    gate_s = s
    shift = s.copy()
    shift[2 * hs:3 * hs] = 0
    # full-size factors: a same-shape product runs twice as fast as a row broadcast
    s, shift = (xp.broadcast_to(v, (batch, 4 * hs)).copy() for v in (s, shift))
    out = xp.empty((steps, batch, p), dt) if out is None else out
    cs = xp.empty((steps + 1, batch, hs), dt)
    tcs = xp.empty((steps, batch, hs), dt)
    raw = xp.empty((steps, batch, hs), dt) if w_hr is not None else None
    hprev = xp.empty((steps, batch, p), dt)
    ig = xp.empty((batch, hs), dt)
    h = h0 if step_mm is None else xp.ascontiguousarray(h0)
    cs[steps if reverse else 0] = c0
    # the steps' small products with the BLAS threads chosen by shape, one hold for the loop
    # (NOTE [ GEMM threads by shape ] in ember/_kernels/_blas.py: two threads waited a time
    # slice per step under load; a hold per product cost three threadpoolctl calls each)
    mm = xp.matmul
    fused = _step_kernels(xp, dt)
    fused32 = fused if dt == np.float32 else None  # NOTE [ Fused LSTM layer steps ]
    no_bias = rec[:1]
    if plan is not None:
        if _lstm_units.forward(plan, acts, w_hh, gate_s, bias, h0, cs, tcs, out, raw, hprev,
                             w_hr, reverse):
            last = 0 if reverse else steps - 1
            return (out, out[last].copy(), cs[0 if reverse else steps].copy(), acts, cs, tcs,
                    raw, hprev)
        w_t = xp.ascontiguousarray((w_hh * gate_s[:, None]).T)  # (the relay was taken)
    hooked = before is not None or after is not None
    done = None   # the step whose ``after`` is due (run at the next step's start: the loop
    # body leaves by several ``continue``)
    with _blas.one_thread_for(batch * 4 * hs * p if xp is np else 0):
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            if hooked:
                if done is not None and after is not None:
                    after(done)
                if before is not None:
                    before(t)
                done = t
            c_in, c = (cs[t + 1], cs[t]) if reverse else (cs[t], cs[t + 1])
            hprev[t] = h
            a = acts[t]
            if step_mm is not None:
                step_mm(h)
                if fused32 is not None:  # the scales and the bias applied as rec is read
                    hr = raw[t] if w_hr is not None else out[t]
                    fused32.lstm_step_forward_unscaled(a, rec, no_bias if bias is None
                                                       else bias, bias is not None, s,
                                                       shift, c_in, c, tcs[t], hr)
                    h = hr if w_hr is None else xp.matmul(hr, w_hr.T, out=out[t])
                    continue
                rec *= s
            else:
                mm(h, w_t, out=rec)
            if bias is not None:
                rec += bias
            if fused32 is not None:  # the whole step in one loop, tanh included
                hr = raw[t] if w_hr is not None else out[t]
                fused32.lstm_step_forward(a, rec, s, shift, c_in, c, tcs[t], hr)
                h = hr if w_hr is None else xp.matmul(hr, w_hr.T, out=out[t])
                continue
            a += rec
            xp.tanh(a, out=a)
            if fused is not None:  # NOTE [ Fused LSTM layer steps ]
                fused.lstm_gates_cell(a, s, shift, c_in, c)
                o = a[:, 3 * hs:]
            else:
                a *= s
                a += shift
                i, f, g, o = a[:, :hs], a[:, hs:2 * hs], a[:, 2 * hs:3 * hs], a[:, 3 * hs:]
                xp.multiply(f, c_in, out=c)
                xp.multiply(i, g, out=ig)
                c += ig
            xp.tanh(c, out=tcs[t])
            if w_hr is not None:
                xp.multiply(o, tcs[t], out=raw[t])
                h = xp.matmul(raw[t], w_hr.T, out=out[t])
            else:
                h = xp.multiply(o, tcs[t], out=out[t])
    if done is not None and after is not None:
        after(done)
    c_n = cs[0 if reverse else steps]
    _lstm_mlas.leave_for_backward(weights, acts)
    return out, h.copy(), c_n.copy(), acts, cs, tcs, raw, hprev


def _lstm_layer_backward_kernel(xp, g_out, g_h, g_c, x, w_ih, w_hh, w_hr, acts, cs, tcs, raw,
                                hprev, table, indices, *, reverse, needs, x_by_vocab=False):
    """Backward of ``_lstm_layer_kernel`` from its saved arrays; ``x`` is the input as rows
    (T*B, I), or None with ``table`` and ``indices`` given. ``x_by_vocab``: the input's
    gradient as one row per vocabulary entry (NOTE [ An unobserved lookup's gradient ])."""
    dxw, dh, dc, dhs = _lstm_layer_backward_steps(xp, g_out, g_h, g_c, w_hh, w_hr, acts, cs,
                                                  tcs, hprev.shape[2], reverse)
    return _lstm_layer_backward_products(xp, dxw, dh, dc, dhs, x, w_ih, w_hr, raw, hprev,
                                         table, indices, needs, x_by_vocab)


def _lstm_layer_backward_steps(xp, g_out, g_h, g_c, w_hh, w_hr, acts, cs, tcs, p, reverse, *,
                               before=None, after=None, threads=None, dxw=None):
    """Backward through time of ``_lstm_layer_backward_kernel``: the gate gradients dxw
    (T, B, 4H), dh_0, dc_0 and, with a projection, the projected outputs' gradients
    (T, B, P). ``before``, ``after`` and ``threads`` as for ``_lstm_layer_steps``; ``dxw``,
    the array to write the gate gradients into."""
    steps, batch, hs4 = acts.shape
    hs = hs4 // 4
    dt = acts.dtype
    dh = xp.zeros((batch, p), dt) if g_h is None else g_h.astype(dt, copy=True)
    dc = xp.zeros((batch, hs), dt) if g_c is None else g_c.astype(dt, copy=True)
    dxw = xp.empty_like(acts) if dxw is None else dxw
    dhs = xp.empty((steps, batch, p), dt) if w_hr is not None else None
    dct = xp.empty((batch, hs), dt)
    up = xp.empty((batch, hs4), dt)
    k = xp.zeros((batch, hs4), dt)
    k[:, 2 * hs:3 * hs] = 1
    mm = xp.matmul  # held at one thread for the loop where that pays (as the forward)
    fused = _step_kernels(xp, dt)
    one = dt.type(1)
    dh = dh if xp is not np else np.ascontiguousarray(dh)
    # NOTE [ LSTM step products on MLAS ] in _lstm_mlas.py: the forward's packing if it left it
    weights = (_lstm_mlas.recurrent_weights(xp, dt, w_hh, steps, saved=acts, threads=threads,
                                            batch=batch) if p * hs * batch else None)
    step_mm = None if weights is None else weights.product(True, dh)
    hooked = before is not None or after is not None
    # NOTE [ LSTM steps split by hidden units ]
    plan = (None if step_mm is not None or hooked
            else _lstm_units.plan(xp, dt, batch, hs, p))
    if plan is not None:
        dh, dc = np.ascontiguousarray(dh), np.ascontiguousarray(dc)
        if not _lstm_units.backward(plan, g_out, acts, tcs, cs, dh, dc, dxw, dhs, w_hh, w_hr,
                                  reverse):
            plan = None
    with _blas.one_thread_for(batch * 4 * hs * p if xp is np and plan is None else 0):
        done = None   # (as in ``_lstm_layer_steps``)
        for t in ([] if plan is not None else range(steps) if reverse else
                  range(steps - 1, -1, -1)):
            if hooked:
                if done is not None and after is not None:
                    after(done)
                if before is not None:
                    before(t)
                done = t
            c_in = cs[t + 1] if reverse else cs[t]
            if g_out is not None:
                dh = xp.add(dh, g_out[t], out=dh)
            dht = dh
            if w_hr is not None:
                dhs[t] = dht
                dht = dht @ w_hr
            a = acts[t]
            tc = tcs[t]
            d = dxw[t]
            if fused is not None:  # NOTE [ Fused LSTM layer steps ]
                fused.lstm_step_backward(a, tc, c_in, dht, dc, d, one)
                if step_mm is not None:
                    step_mm(d)
                else:
                    mm(d, w_hh, out=dh)
                continue
            i, f, g, o = a[:, :hs], a[:, hs:2 * hs], a[:, 2 * hs:3 * hs], a[:, 3 * hs:]
            # local derivatives (1 - a)(a + k): s (1 - s) for the sigmoid gates (k = 0) and
            # (1 - g)(1 + g) for the g block (k = 1)
            xp.subtract(1, a, out=d)
            xp.add(a, k, out=up)
            d *= up
            # the cell's gradient: dh o (1 - tanh(c)^2) + dc from the step after
            xp.multiply(tc, tc, out=dct)
            xp.subtract(1, dct, out=dct)
            dct *= o
            dct *= dht
            dct += dc
            xp.multiply(dct, g, out=up[:, :hs])
            xp.multiply(dct, c_in, out=up[:, hs:2 * hs])
            xp.multiply(dct, i, out=up[:, 2 * hs:3 * hs])
            xp.multiply(dht, tc, out=up[:, 3 * hs:])
            d *= up
            dc = xp.multiply(dct, f, out=dc)
            if step_mm is not None:
                step_mm(d)
            else:
                mm(d, w_hh, out=dh)
        if done is not None and after is not None:
            after(done)
    return dxw, dh, dc, dhs


def _lstm_layer_backward_products(xp, dxw, dh, dc, dhs, x, w_ih, w_hr, raw, hprev, table,
                                  indices, needs, x_by_vocab):
    """The products over all steps that finish ``_lstm_layer_backward_kernel`` from the gate
    gradients ``dxw``: the input's and the weights' gradients."""
    steps, batch, hs4 = dxw.shape
    hs, p = hs4 // 4, hprev.shape[2]
    dt = dxw.dtype
    d2 = dxw.reshape(steps * batch, hs4)
    need_x, need_wih, need_b, need_h, need_c, need_whh, need_whr = needs[:7]
    need_bhh = len(needs) > 9 and needs[9]
    gx = None
    sums = None
    if table is not None and (need_wih or need_x and x_by_vocab):
        # d2's rows summed by vocabulary entry: one pass where the step kernels are compiled
        # (a third of the time of the embedding's sparse product and its sort)
        fused = _step_kernels(xp, dt)
        if fused is not None:
            sums = xp.zeros((table.shape[0], hs4), dt)
            fused.rows_summed_by_index(d2, indices.reshape(-1), sums)
        else:
            from .nn_ops import _embedding_backward_kernel

            sums = _embedding_backward_kernel(xp, d2, indices, num_weights=table.shape[0],
                                              padding_idx=None)
    if need_x and sums is not None and x_by_vocab:
        gx = _gx_by_vocab(xp, sums, w_ih, indices, (steps, batch, w_ih.shape[1]))
    elif need_x:
        # an array of its own, not a view of the product: the engine's input buffer may add
        # another gradient into it in place (a bidirectional layer's input)
        gx = xp.empty((steps, batch, w_ih.shape[1]), dt)
        _big_mm(xp, d2, w_ih, out=gx.reshape(steps * batch, -1))
    if not need_wih:
        gw_ih = None
    elif table is None:
        gw_ih = _big_mm(xp, d2.T, x)
    else:
        gw_ih = _big_mm(xp, sums.T, table)   # d2.T @ table[indices]
    gb = col_sums(xp, d2) if need_b or need_bhh else None
    # both biases get the same gradient, each its own copy (PyTorch's layer clones it)
    gb_hh = (gb.copy() if need_b else gb) if need_bhh else None
    gb = gb if need_b else None
    gw_hh = _big_mm(xp, d2.T, hprev.reshape(steps * batch, p)) if need_whh else None
    gw_hr = (_big_mm(xp, dhs.reshape(-1, p).T, raw.reshape(-1, hs))
             if w_hr is not None and need_whr else None)
    return gx, gw_ih, gb, dh, dc, gw_hh, gw_hr, gb_hh


# NOTE [ An unobserved lookup's gradient ]
# When the layer's input x is an embedding's output (NOTE [ Lookups a layer can fold ] in
# nn_ops.py), its gradient d2 @ W_ih (T*B rows: as many multiply-adds as the input
# projection the fold saved) reaches the table only through the embedding's backward, which
# sums it by vocabulary entry. That sum is linear: the table sees S(d2 @ W_ih) = S(d2) @
# W_ih, with S(d2) the layer already computes for W_ih's gradient. So where nobody looks at
# x's gradient itself, the layer hands on another one with the same sums: S(d2) @ W_ih (a
# product over the vocabulary) written at the first position of each entry, zeros
# elsewhere. The embedding's backward then gives the table the same gradient, to rounding
# (its padding row and ``scale_grad_by_freq`` act on the sums alike). Nobody looks when, in
# a backward the engine runs, every node from x to the embedding is a ``transpose`` or the
# (dense) ``embedding`` itself, none has hooks of any kind (tensor hooks, retain_grad, node
# pre- or post-hooks), and none is where the backward captures a gradient
# (``autograd.grad``'s or ``backward``'s ``inputs``); other uses of those tensors add their
# own gradients, which the sums take linearly. Anything else (another path, a hook, a
# sparse embedding, a vjp outside the engine) gets the true d2 @ W_ih. The bench's LSTM LM
# saves a (2048, 1024) @ (1024, 256) product a step (2.1-3.3 ms on MLAS): its step 0.965 of
# the true-gradient path's, in-process A/B under ``chrt -f 10`` at machine load 17-20.


def _lookup_grad_unobserved(x):
    """Whether the gradient reaching ``x`` can be handed on by vocabulary entry (NOTE [ An
    unobserved lookup's gradient ])."""
    from ..autograd import _engine

    task = _engine.current_task()
    if task is None:
        return False
    captures = task.captures or ()
    node = x._grad_fn
    for _ in range(4):
        op = getattr(node, "_op", None)
        if op is None or node._hooked or node._post is not None or node in captures:
            return False
        nexts = [n for n, _ in node._next if n is not None]
        if op.name == "embedding":
            return not node._params.get("sparse", False)
        if op.name != "transpose" or len(nexts) != 1:
            return False
        node = nexts[0]
    return False


def _gx_by_vocab(xp, sums, w_ih, indices, shape):
    """The input gradient of NOTE [ An unobserved lookup's gradient ]: ``sums @ w_ih`` at the
    first position of each vocabulary entry in ``indices``, zeros elsewhere."""
    rows = _big_mm(xp, sums, w_ih)
    vocab, first = xp.unique(indices.reshape(-1), return_index=True)
    gx = xp.zeros(shape, rows.dtype)
    gx.reshape(-1, shape[-1])[first] = rows[vocab]
    return gx


def _lstm_layer_replay(x, w_ih, b, h0, c0, w_hh, w_hr, reverse, b_hh=None):
    """The layer in differentiable ops, for create_graph."""
    from .nn_ops import linear

    if b_hh is not None:
        b = b_hh if b is None else b + b_hh
    xw = linear(x, w_ih, b)
    h, c = h0, c0
    outs = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h, c = lstm_step(xw[t], h, c, w_hh)
        if w_hr is not None:
            h = h @ w_hr.t()
        outs[t] = h
    return stack(outs), h, c


def _lstm_layer_vjp(grads, x, w_ih, b, h0, c0, w_hh, w_hr, table, indices, b_hh=None, *,
                    reverse, out, needs_input_grad):
    inputs = (x, w_ih, b, h0, c0, w_hh, w_hr, None, None, b_hh)
    if _dispatch.differentiable_formula(*inputs, *grads):
        from ..autograd import grad as autograd_grad

        with _enable_grad():
            # replay from the saved inputs themselves, so the gradients returned depend on
            # them differentiably
            results = _lstm_layer_replay(*inputs[:7], reverse, b_hh)
        pairs = [(r, g) for r, g in zip(results, grads) if g is not None]
        wanted = [t for t, need in zip(inputs, needs_input_grad) if need]
        grads_in = autograd_grad([r for r, _ in pairs], wanted, [g for _, g in pairs],
                                 create_graph=True, allow_unused=True)
        by_id = {id(t): gi for t, gi in zip(wanted, grads_in)}
        return tuple(by_id.get(id(t)) if need and t is not None else None
                     for t, need in zip(inputs, needs_input_grad))
    _, _, _, acts, cs, tcs, raw, hprev, xf = out
    params = dict(reverse=reverse, needs=tuple(needs_input_grad))
    if table is not None and needs_input_grad[0] and _lookup_grad_unobserved(x):
        params["x_by_vocab"] = True   # NOTE [ An unobserved lookup's gradient ]
    g = _dispatch.apply(lstm_layer_backward_op,
                        (grads[0], grads[1], grads[2], xf, w_ih, w_hh, w_hr,
                         acts, cs, tcs, raw, hprev, table, indices), params)
    return tuple(g[:7]) + (None, None, g[7])


def _enable_grad():
    from ..autograd.grad_mode import enable_grad

    return enable_grad()


lstm_layer_op = Op("lstm_layer", _lstm_layer_kernel, vjp=_lstm_layer_vjp,
                   nondiff_outputs=(3, 4, 5, 6, 7, 8))
# PyTorch's CPU build runs the layer through oneDNN, whose node this is (NOTE [ LSTM layers
# under the profiler ] in ember/profiler/_recorder.py)
lstm_layer_op.node_name = "MkldnnRnnLayerBackward0"
# its gradients handed on in that node's input order: input, w_ih, w_hh, b_ih, b_hh, h0, c0
# (NOTE [ Edge order ] in ember/autograd/_engine.py)
lstm_layer_op.edge_order = (0, 1, 5, 2, 9, 3, 4, 6, 7, 8)


@lstm_layer_op.defjvp
def _lstm_layer_jvp(x_dots, x, w_ih, b, h0, c0, w_hh, w_hr, _table, _indices, b_hh=None, *,
                    reverse, out):
    # forward mode through the layer's steps: the replay (one lstm_cell per step, each
    # with its own formula) inside a dual level of its own
    from ..autograd import _forward

    inputs = (x, w_ih, b, h0, c0, w_hh, w_hr, None, None, b_hh)
    lvl = _forward.enter(nested_ok=True)
    try:
        duals = []
        for t, d in zip(inputs, x_dots):
            if t is not None and d is not None:
                t = t.view_as(t)
                _forward.set_tangent(t, lvl, d)
            duals.append(t)
        results = _lstm_layer_replay(*duals[:7], reverse, duals[9])
        tangents = tuple(_forward.get_tangent(r, lvl) for r in results)
    finally:
        _forward.exit_level(lvl)
    return tangents + (None,) * 6
lstm_layer_backward_op = Op("lstm_layer_backward", _lstm_layer_backward_kernel)


def lstm_layer(x, w_ih, b, h0, c0, w_hh, w_hr=None, *, reverse=False, lookup=None, b_hh=None):
    """One direction of one LSTM layer over an unpacked sequence x (T, B, I), input
    projection included (NOTE [ Fused LSTM layer ]); ``b`` and ``b_hh`` are the input and
    hidden biases (or None), which the op sums, as PyTorch's ``mkldnn_rnn_layer`` does.
    ``lookup``, when given, is (table, indices) with x equal to table[indices] (NOTE
    [ Lookups a layer can fold ] in nn_ops.py). Returns (outputs (T, B, P), h_n, c_n)."""
    table, indices = (None, None) if lookup is None else lookup
    res = _dispatch.apply(lstm_layer_op, (x, w_ih, b, h0, c0, w_hh, w_hr, table, indices,
                                          b_hh), dict(reverse=bool(reverse)))
    return res[0], res[1], res[2]


# ------------------------------------------------------------------------------------------------
# whole-sequence functional forms (torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu)
#
# NOTE [ Functional RNN forms ]
# PyTorch's top-level forms take the weights as one flat list: for each layer, for each
# direction, ``w_ih, w_hh``, then (``has_biases``) ``b_ih, b_hh``, then, for an LSTM whose two
# states differ in size (projections), ``w_hr``. PyTorch's CPU build runs an LSTM on non-empty
# float32 / bfloat16 input (float16 outside grad mode) through oneDNN and everything else
# through its native loop, and the two check their arguments in different orders and with
# different error classes; ``_mkldnn_checks`` and ``_native_checks`` keep both. Both then run
# PyTorch's native composition: the input projection of the whole sequence once per layer
# and direction, then per step the recurrent projection, the in-place sum of the two and the
# gates, broadcasting where PyTorch's broadcasts, so ill-fitting shapes and dtypes fail (or
# broadcast) where PyTorch's do. A well-formed LSTM layer (every tensor of the input's dtype,
# the shapes the gates need) takes the fused step instead (NOTE [ Fused LSTM step ]). The
# directions' outputs are concatenated on the last dim and feed the next layer, with dropout
# between layers when training. The packed-sequence overloads (data, batch_sizes, ...) are
# not implemented.


def _size(t, dim):
    """``t.size(dim)`` with PyTorch's IndexError for a missing dim."""
    if not -max(t.dim(), 1) <= dim < max(t.dim(), 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(t.dim(), 1)}, {max(t.dim(), 1) - 1}], but got {dim})")
    return t.shape[dim] if t.dim() else 1


def _select0(t, index):
    if t.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    if index >= t.shape[0]:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(t.shape)} at dimension 0")


def _takes_mkldnn(input):
    """Whether PyTorch's CPU LSTM runs this input through oneDNN (which checks its arguments
    its own way)."""
    from ..autograd.grad_mode import is_grad_enabled

    name = input.dtype.name
    return input.numel() != 0 and (name in ("float32", "bfloat16") or (
        name == "float16" and not is_grad_enabled()))


def _mkldnn_checks(input, hx, params, per, layers):
    """The oneDNN LSTM's checks, in its order: the weights as a matrix of ``per`` columns,
    then per layer and direction its weights, states and their dtypes."""
    if len(params) % per:
        raise RuntimeError(f"MatrixRef: ArrayRef size {len(params)} not divisible by stride "
                           f"{per}")
    for index in range(layers):
        if (index + 1) * per > len(params):
            raise RuntimeError(f"ArrayRef: invalid slice, N = {index * per}; M = {per}; "
                               f"size = {len(params)}")
        for s in hx:
            _select0(s, index)
        if any(t.dtype != input.dtype for t in params[index * per:(index + 1) * per] + hx):
            raise RuntimeError("get_mkldnn_dtype: unsupported data type")


def _native_checks(n_hidden, params, per, num_layers, dirs):
    """The native loop's checks of the stack: the weights in groups of ``per``, the
    directions' pairs, then one state and one group per layer and direction."""
    if len(params) % per:
        raise RuntimeError("got an incorrect number of RNN parameters")
    groups = len(params) // per
    if dirs == 2 and (n_hidden % 2 or groups % 2):
        raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
    if n_hidden // dirs != num_layers:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if groups // dirs != num_layers:
        raise RuntimeError("Expected more weights in stacked_rnn")


def _chunks(t, n):
    parts = t.chunk(n, 1)
    if len(parts) < n:  # PyTorch reads past the end of its list here
        raise RuntimeError(f"expected the gates' dim to split into {n} chunks, but got "
                           f"{len(parts)} (size {t.shape[1]})")
    return parts


def _native_lstm_step(xw, state, w_hh, b_hh, w_hr):
    from .nn_ops import inplace_result, linear

    h, c = state
    hw = linear(h, w_hh, b_hh)
    gates = inplace_result(hw, hw + xw)
    i, f, g, o = _chunks(gates, 4)
    i, f, o = (inplace_result(t, t.sigmoid()) for t in (i, f, o))
    g = inplace_result(g, g.tanh())
    fc = f * c
    c2 = inplace_result(fc, fc + i * g)
    h2 = o * c2.tanh()
    return [h2 if w_hr is None else h2.matmul(w_hr.t()), c2]


def _native_gru_step(xw, state, w_hh, b_hh, w_hr):
    from .nn_ops import inplace_result, linear

    h = state[0]
    x_r, x_z, x_n = _chunks(xw, 3)
    h_r, h_z, h_n = _chunks(linear(h, w_hh, b_hh), 3)
    r = inplace_result(h_r, h_r + x_r)
    r = inplace_result(r, r.sigmoid())
    z = inplace_result(h_z, h_z + x_z)
    z = inplace_result(z, z.sigmoid())
    n = x_n + inplace_result(h_n, h_n * r)
    n = inplace_result(n, n.tanh())
    d = h - n
    d = inplace_result(d, d * z)
    return [inplace_result(d, d + n)]


def _native_elman_step(nonlinearity):
    def step(xw, state, w_hh, b_hh, w_hr):
        from .nn_ops import inplace_result, linear, relu

        hw = linear(state[0], w_hh, b_hh)
        s = inplace_result(hw, hw + xw)
        return [relu(s) if nonlinearity == "relu" else s.tanh()]
    return step


def _fused_lstm_fits(xw, state, w_hh, b_hh, w_hr):
    """A layer the fused step computes exactly as the composition: one dtype, (L, N, 4H)
    projections, (N, H) states, (4H, H) recurrent weights."""
    h, c = state
    dt = xw.dtype
    # the fused step adds the recurrent product to a projection that holds both biases;
    # PyTorch adds b_hh to the recurrent product first, which decides inf - inf cases
    if b_hh is not None or w_hr is not None or xw.dim() != 3:
        return False
    if not (dt.is_floating_point or dt.is_complex) or any(t.dtype != dt for t in (h, c, w_hh)):
        return False
    n, g = xw.shape[1], xw.shape[2]
    hs = g // 4
    return (g == 4 * hs and tuple(h.shape) == (n, hs) and tuple(c.shape) == (n, hs)
            and tuple(w_hh.shape) == (g, hs))


def _run_layer(kind, step, xw, state, w, reverse):
    """One direction of one layer over the projections ``xw`` (one per step, dim 0): the
    outputs stacked in time order, and the final state."""
    w_hh, b_hh, w_hr = w
    if kind == "lstm" and _fused_lstm_fits(xw, state, w_hh, b_hh, w_hr):
        def step(x, s, *_):
            return list(lstm_step(x, s[0], s[1], w_hh))
    steps = list(xw.unbind(0))
    if not steps:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    outs = [None] * len(steps)
    for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
        state = step(steps[t], state, w_hh, b_hh, w_hr)
        outs[t] = state[0]
    return stack(outs), state


def _run_stack(kind, input, hx, params, has_biases, num_layers, dropout, train,
               bidirectional, batch_first):
    """The whole-sequence RNN forms (NOTE [ Functional RNN forms ]); ``hx`` is the list of
    initial states (two for an LSTM)."""
    from .nn_dropout import dropout as _dropout
    from .nn_ops import linear

    if not isinstance(params, (list, tuple)):
        raise NotImplementedError(f"{kind}: the packed-sequence form (data, batch_sizes, ...) "
                                  "is not implemented in ember; pass a padded input")
    params, hx = list(params), list(hx)
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    projected = mkldnn = False
    if kind == "lstm":
        projected = _size(hx[0], 2) != _size(hx[1], 2)
        mkldnn = _takes_mkldnn(input) and not projected
    if mkldnn:  # extra states and weights are ignored there
        _mkldnn_checks(input, hx, params, per, num_layers * dirs)
    x = input.transpose(0, 1) if batch_first else input
    per += projected
    if not mkldnn:
        for s in hx:  # the states are unbound along dim 0 (one per layer and direction)
            if s.dim() == 0:
                raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        n_hidden = hx[0].shape[0]
        if kind == "lstm" and hx[1].shape[0] < n_hidden:
            raise RuntimeError(f"lstm: {hx[1].shape[0]} cell states for {n_hidden} hidden "
                               "states (PyTorch reads past the end of its list here)")
        _native_checks(n_hidden, params, per, num_layers, dirs)
    step = {"lstm": _native_lstm_step, "gru": _native_gru_step,
            "rnn_tanh": _native_elman_step("tanh"), "rnn_relu": _native_elman_step("relu")}[kind]
    finals = [[] for _ in hx]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            index = layer * dirs + d
            w = params[index * per:(index + 1) * per]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if projected else None
            state = [s[index] for s in hx]
            out, state = _run_layer(kind, step, linear(x, w[0], b_ih), state,
                                    (w[1], b_hh, w_hr), d == 1)
            outs.append(out)
            for i, s in enumerate(state):
                finals[i].append(s)
        x = cat(outs, outs[0].dim() - 1) if dirs == 2 else outs[0]
        if dropout and train and layer < num_layers - 1:
            x = _dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    return (out,) + tuple(stack(f) for f in finals)


_RNN_ARGS = """
    Args:
        input: (L, N, I) (``batch_first``: (N, L, I)) or unbatched (L, I).
        hx: the initial {state}, (num_layers * directions, N, H).
        params: the weights, flat: per layer and direction ``w_ih, w_hh[, b_ih, b_hh]``.
        has_biases: ``params`` holds biases.
        num_layers: the number of stacked layers.
        dropout: the dropout probability between layers (when ``train``).
        train: apply that dropout.
        bidirectional: run a second, reversed direction per layer.
        batch_first: ``input`` and the output are (N, L, ...).
"""


@public(method=False)
def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first):
    """A multi-layer LSTM over a whole sequence (NOTE [ Functional RNN forms ]).
    {args}
    Returns:
        ``(output, h_n, c_n)``: the last layer's hidden states for every step, and each
        layer's final hidden and cell states.

    Example:
        >>> import ember
        >>> p = [ember.zeros(8, 3), ember.zeros(8, 2)]
        >>> out, h, c = ember.lstm(ember.ones(5, 1, 3), [ember.zeros(1, 1, 2)] * 2, p, False,
        ...                        1, 0.0, False, False, False)
        >>> out.shape, h.shape
        (ember.Size([5, 1, 2]), ember.Size([1, 1, 2]))
    """
    if not isinstance(hx, (list, tuple)):  # lstm(data, batch_sizes, hx, params, ...)
        raise NotImplementedError("lstm: the packed-sequence form (data, batch_sizes, ...) "
                                  "is not implemented in ember; pass a padded input")
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _run_stack("lstm", input, hx, params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first)


lstm.__doc__ = lstm.__doc__.replace("{args}", _RNN_ARGS.format(state="``[h_0, c_0]``"))


#: what the functional RNN forms document under "Differences from PyTorch"
_RNN_DIFFERS = {"gru": """
    Differences from PyTorch:
        Complex inputs: results differ from PyTorch's by more than float32 rounding.
"""}


def _single_state_rnn(name, cell):
    def fn(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
           batch_first):
        out, h = _run_stack(name, input, [hx], params, has_biases, num_layers, dropout,
                            train, bidirectional, batch_first)
        return out, h

    what = {"gru": "GRU", "rnn_tanh": "Elman RNN (tanh)", "rnn_relu": "Elman RNN (ReLU)"}[name]
    rows = 3 if name == "gru" else 1
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""A multi-layer {what} over a whole sequence (NOTE [ Functional RNN forms ]).
    {_RNN_ARGS.format(state="hidden state ``h_0``")}
    Returns:
        ``(output, h_n)``: the last layer's hidden states for every step, and each layer's
        final hidden state.
    {_RNN_DIFFERS.get(name, "")}
    Example:
        >>> import ember
        >>> p = [ember.zeros({rows * 2}, 3), ember.zeros({rows * 2}, 2)]
        >>> out, h = ember.{name}(ember.ones(5, 1, 3), ember.zeros(1, 1, 2), p, False, 1, 0.0,
        ...                    False, False, False)
        >>> out.shape
        ember.Size([5, 1, 2])
    """
    return public(fn, method=False)


gru = _single_state_rnn("gru", gru_cell)
rnn_tanh = _single_state_rnn("rnn_tanh", rnn_tanh_cell)
rnn_relu = _single_state_rnn("rnn_relu", rnn_relu_cell)
