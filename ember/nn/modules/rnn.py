"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, packed sequences) and their
single-step cells.

A layer runs each (layer, direction) as: one GEMM projecting the whole input sequence, then
a Python loop of fused steps (NOTE [ Fused LSTM step ] in ember/_ops/nn_rnn.py). Packed
sequences shrink the active batch as sequences end; rows that are not running keep their
state, so one loop handles both directions.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ... import _dispatch
from ..._core.dtype import bfloat16, float32
from ..._ops import _lstm_directions, _lstm_wavefront, nn_ops, nn_rnn
from ..._ops._registry import observing_profiler, profiler_session
from ..._ops.creation import empty, zeros
from ..._ops.join import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_projection_warned = [False]  # PyTorch warns once per process


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU: the stacked, optionally bidirectional
    weights ``weight_ih_l{k}``, ``weight_hh_l{k}`` (and biases) and the loop over time.

    Args:
        mode (str): ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input_size, hidden_size, num_layers, bias, batch_first: as for the concrete classes.
        dropout, bidirectional, proj_size, device, dtype: as for the concrete classes.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.RNNBase("GRU", 4, 8)
        >>> [name for name, _ in m.named_parameters()][:2]
        ['weight_ih_l0', 'weight_hh_l0']
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_h = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_h * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                params = [("weight_ih" + sfx, (gate, in_size)),
                          ("weight_hh" + sfx, (gate, real_h))]
                if bias:
                    params += [("bias_ih" + sfx, (gate,)), ("bias_hh" + sfx, (gate,))]
                if proj_size > 0:
                    params.append(("weight_hr" + sfx, (proj_size, hidden_size)))
                for name, shape in params:
                    setattr(self, name, Parameter(empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers *
                                                (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    @property
    def _all_weights(self):
        # the parameter names per layer and direction, as PyTorch keeps them: initialisation
        # code walks them (``for names in lstm._all_weights: for name in names: ...``)
        per = len(self._flat_weights_names) // (self.num_layers *
                                                (2 if self.bidirectional else 1))
        n = self._flat_weights_names
        return [list(n[i:i + per]) for i in range(0, len(n), per)]

    def flatten_parameters(self):
        """Kept for API compatibility (the weights are used in place)."""

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- the recurrence ---------------------------------------------------------------------------

    def _weights(self, layer, direction):
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def _run_direction(self, x, h, c, layer, direction, batch_sizes, lookup=None):
        """Run one direction of one layer over x (T, B, in) or packed rows; returns the
        outputs (list of per-step tensors) and final (h, c). ``lookup`` is (table, indices)
        when x is an embedding's table[indices] (``_lookup``)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)
        mode = self.mode
        if mode == "LSTM":
            if batch_sizes is None:
                # whole sequence in one fused op (NOTE [ Fused LSTM layer ]), which sums the
                # biases itself
                return nn_rnn.lstm_layer(x, w_ih, b_ih, h, c, w_hh, w_hr,
                                         reverse=bool(direction), lookup=lookup, b_hh=b_hh)
            # both biases enter the input projection, summed once rather than added to
            # every step's (T, B, 4H) projection
            bias = b_ih if b_hh is None else (b_hh if b_ih is None else b_ih + b_hh)
            xw = F.linear(x, w_ih, bias)
        else:
            xw = F.linear(x, w_ih, b_ih)
        steps = len(batch_sizes) if batch_sizes is not None else x.shape[0]
        order = range(steps - 1, -1, -1) if direction else range(steps)
        if batch_sizes is not None:
            offsets = [0]
            for b in batch_sizes[:-1]:
                offsets.append(offsets[-1] + b)
        outputs = [None] * steps
        if mode != "LSTM" and batch_sizes is None and observing_profiler() is not None:
            # PyTorch's CPU steps, their rows and nodes: the projection unbound, the cells'
            # updates in place (the same numbers)
            xs = xw.unbind(0)
            for t in order:
                if mode == "GRU":
                    h = nn_rnn.gru_step_as_torch(xs[t], h, w_hh, b_hh)
                else:
                    pre = F.linear(h, w_hh, b_hh).add_(xs[t])
                    h = pre.tanh() if mode == "RNN_TANH" else F.relu(pre)
                outputs[t] = h
            return outputs, h, c
        for t in order:
            if batch_sizes is not None:
                bs = batch_sizes[t]
                xt = xw[offsets[t]:offsets[t] + bs]
            else:
                bs = None
                xt = xw[t]
            h_act = h if bs is None or bs == h.shape[0] else h[:bs]
            if mode == "LSTM":
                c_act = c if bs is None or bs == c.shape[0] else c[:bs]
                h_new, c_new = nn_rnn.lstm_step(xt, h_act, c_act, w_hh)
                if w_hr is not None:
                    h_new = F.linear(h_new, w_hr)
            elif mode == "GRU":
                hw = F.linear(h_act, w_hh, b_hh)
                x_r, x_z, x_n = xt.chunk(3, 1)
                h_r, h_z, h_n = hw.chunk(3, 1)
                r = (x_r + h_r).sigmoid()
                z = (x_z + h_z).sigmoid()
                n = (x_n + r * h_n).tanh()
                h_new = n + z * (h_act - n)
            else:
                pre = xt + F.linear(h_act, w_hh, b_hh)
                h_new = pre.tanh() if mode == "RNN_TANH" else F.relu(pre)
            outputs[t] = h_new
            if bs is None or bs == h.shape[0]:
                h = h_new
                if mode == "LSTM":
                    c = c_new
            else:
                h = cat([h_new, h[bs:]])
                if mode == "LSTM":
                    c = cat([c_new, c[bs:]])
        return outputs, h, c

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        dirs = 2 if self.bidirectional else 1
        real_h = self.proj_size if self.proj_size > 0 else self.hidden_size
        if packed:
            data, batch_sizes_t, sorted_idx, unsorted_idx = input
            batch_sizes = batch_sizes_t.tolist()
            batch = batch_sizes[0] if batch_sizes else 0
            x = data
            batched = True
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                # PyTorch's words: its class's own name (a subclass's is not used), and
                # "tensor" only in RNN's
                name = "RNN" if self.mode.startswith("RNN") else self.mode
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                    f"{' tensor' if name == 'RNN' else ''} instead")
            x = input if batched else input.unsqueeze(1)
            # under the profiler the transposes are PyTorch's, inside its ``aten::lstm``
            # (``_profiled_layers``)
            inside = batched and self.batch_first and _dispatch.intercept and \
                bool(_dispatch.state.modes) and profiler_session() is not None
            if batched and self.batch_first and not inside:
                x = x.transpose(0, 1)
            batch_sizes = None
            sorted_idx = unsorted_idx = None
            batch = x.shape[0 if inside else 1]
            if x.shape[1 if inside else 0] == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            if x.shape[-1] != self.input_size:
                raise RuntimeError(
                    f"input.size(-1) must be equal to input_size. Expected "
                    f"{self.input_size}, got {x.shape[-1]}")
        w_dtype = self.weight_ih_l0.dtype
        if x.dtype != w_dtype and not (packed and self.mode == "LSTM"):
            # (PyTorch's packed LSTM fails later, in the input projection's matmul, and so
            # does ember's)
            raise ValueError(
                f"RNN input dtype ({x.dtype}) does not match weight dtype ({w_dtype}). "
                f"Convert input: input.to({w_dtype}), or convert model: model.to({x.dtype})")
        h0, c0 = self._initial_state(hx, x, batch, dirs, real_h, batched, sorted_idx)
        if self.proj_size > 0 and not _projection_warned[0]:
            x0 = input.data if packed else input
            if x0.device.type == "cpu" and x0.dtype in (float32, bfloat16):
                # PyTorch's CPU build says once that its oneDNN kernel has no projections,
                # when the kernel runs (after the input and state checks)
                _projection_warned[0] = True
                warnings.warn("LSTM with projections is not supported with oneDNN. Using "
                              "default implementation.", UserWarning, stacklevel=1)
        lookup = None if packed else self._lookup(input, x, batched)
        run_args = (x, h0, c0, dirs, batch_sizes, lookup, packed)
        session = profiler_session() if _dispatch.intercept and _dispatch.state.modes \
            else None
        if session is None:
            layer_input, h_n, c_n = self._layers(*run_args)
        else:
            layer_input, h_n, c_n = self._profiled_layers(
                session, input if batched and not packed else x,
                batch_sizes_t if packed else None, h0, c0, run_args)
            inside = not packed and batched and self.batch_first   # (transposed back there)
        if unsorted_idx is not None:
            h_n = h_n.index_select(1, unsorted_idx)
            if c_n is not None:
                c_n = c_n.index_select(1, unsorted_idx)
        if packed:
            output = PackedSequence(layer_input, batch_sizes_t, sorted_idx, unsorted_idx)
        else:
            output = layer_input
            if batched and self.batch_first and not inside:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
        return output, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _layers(self, x, h0, c0, dirs, batch_sizes, lookup, packed):
        """The recurrence over every layer and direction: (output, h_n, c_n or None)."""
        h_finals, c_finals = [], []
        layer_input = x
        if c0 is None and batch_sizes is None and observing_profiler() is not None:
            h0 = h0.unbind(0)   # (as PyTorch's CPU layers take the initial states)
        pairs = self._pairs(x, c0, dirs, batch_sizes, h0)
        for layer in range(self.num_layers):
            if pairs == "bidir":   # NOTE [ LSTM directions on two threads ]
                layer_input, s0, s1 = _lstm_directions.lstm_bidir(
                    layer_input, self._pair_weights(layer, h0, c0, 0),
                    self._pair_weights(layer, h0, c0, 1), lookup if layer == 0 else None)
                h_finals += [s0[0], s1[0]]
                c_finals += [s0[1], s1[1]]
                if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                    layer_input = F.dropout(layer_input, self.dropout, True)
                continue
            if layer in pairs:   # NOTE [ LSTM layers in a wavefront ] in _lstm_wavefront.py
                mask = None
                if self.dropout > 0 and self.training:
                    # the factors ``F.dropout`` would draw after the first layer, drawn here
                    # (the layer draws no random numbers: the same stream position)
                    mask = layer_input.new_empty(tuple(layer_input.shape[:2]) + (
                        self.hidden_size,)).bernoulli_(1 - self.dropout).div_(1 - self.dropout)
                layer_input, s0, s1 = _lstm_wavefront.lstm_pair(
                    layer_input, self._pair_weights(layer, h0, c0),
                    self._pair_weights(layer + 1, h0, c0), lookup if layer == 0 else None,
                    mask)
                if mask is not None and layer + 1 < self.num_layers - 1:
                    layer_input = F.dropout(layer_input, self.dropout, True)
                h_finals += [s0[0], s1[0]]
                c_finals += [s0[1], s1[1]]
                continue
            if layer - 1 in pairs:
                continue
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                o, h, c = self._run_direction(layer_input, h0[k], None if c0 is None else
                                              c0[k], layer, d, batch_sizes,
                                              lookup if layer == 0 else None)
                outs.append(o if not isinstance(o, list) else (cat(o) if packed else stack(o)))
                h_finals.append(h)
                if c0 is not None:
                    c_finals.append(c)
            layer_output = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output
        h_n = stack(h_finals)
        c_n = stack(c_finals) if c0 is not None else None
        return layer_input, h_n, c_n

    def _pairs(self, x, c0, dirs, batch_sizes, h0):
        """Which layers run on two threads: the first layers of the pairs that run as one
        wavefront (NOTE [ LSTM layers in a wavefront ] in ember/_ops/_lstm_wavefront.py:
        layers 0 and 1, 2 and 3, ...), or "bidir" when every bidirectional layer runs its
        two directions side by side (NOTE [ LSTM directions on two threads ] in
        ember/_ops/_lstm_directions.py); () for none."""
        if self.mode != "LSTM" or c0 is None or batch_sizes is not None \
                or isinstance(h0, (tuple, list)) or observing_profiler() is not None \
                or not _lstm_wavefront.applies(x, self.hidden_size, self.proj_size):
            return ()
        if dirs == 2:
            return "bidir"
        if self.num_layers < 2 or self.dropout >= 1 and self.training:
            return ()
        return set(range(0, self.num_layers - 1, 2))

    def _pair_weights(self, layer, h0, c0, direction=0):
        w_ih, w_hh, b_ih, b_hh, _ = self._weights(layer, direction)
        k = 2 * layer + direction if self.bidirectional else layer
        return w_ih, w_hh, b_ih, b_hh, h0[k], c0[k]

    def _profiled_layers(self, session, x, batch_sizes, h0, c0, run_args):
        """``_layers`` recorded as PyTorch's one op for the whole recurrence (``aten::lstm``,
        ``aten::gru``, ``aten::rnn_tanh``...) with its arguments, the layers' ops under it
        (NOTE [ LSTM layers under the profiler ] in ember/profiler/_recorder.py)."""
        from ...profiler._recorder import note_call

        hx = h0 if c0 is None else [h0, c0]   # (PyTorch's gru and rnn take one Tensor)
        settings = (self.bias, self.num_layers, float(self.dropout), self.training,
                    self.bidirectional)
        if batch_sizes is None:
            def inputs():
                return (x, hx, self._flat_weights, *settings, self.batch_first)
        else:
            def inputs():
                return (x, batch_sizes, hx, self._flat_weights, *settings)
        note_call("aten::lstm", self.num_layers, self.bidirectional,
                  self.batch_first and batch_sizes is None, self.training)
        transposed = batch_sizes is None and self.batch_first and x.dim() == 3

        def run(x, *rest):
            # PyTorch's op takes the time-major view, which its oneDNN LSTM layer copies to
            # a contiguous one first, and gives the output back batch-major
            if transposed:
                x = x.transpose(0, 1)
            if self.mode == "LSTM" and batch_sizes is None and self.proj_size == 0 and \
                    nn_rnn._takes_mkldnn(x) and not x.is_contiguous():
                x = x.contiguous()
            out, h_n, c_n = self._layers(x, *rest)
            return (out.transpose(0, 1) if transposed else out), h_n, c_n

        try:
            return session.composite("aten::" + self.mode.lower(), inputs, run, run_args, {})
        finally:
            session.noted.pop("aten::lstm", None)

    def _lookup(self, input, x, batched):
        """(table, indices (T, B)) when ``input`` is an embedding's unchanged output and the
        vocabulary is at most half the tokens, so the fused LSTM layer projects the table
        instead of every token (NOTE [ Lookups a layer can fold ] in ember/_ops/nn_ops.py)."""
        if self.mode != "LSTM":
            return None
        found = nn_ops.lookup_source(input)
        if found is None:
            return None
        table, indices = found
        if 2 * table.shape[0] > x.shape[0] * x.shape[1]:
            return None
        if not batched:
            indices = indices.unsqueeze(1)
        elif self.batch_first:
            indices = indices.transpose(0, 1)
        return table, indices

    def _initial_state(self, hx, x, batch, dirs, real_h, batched, sorted_idx):
        n = self.num_layers * dirs
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = zeros(n, batch, real_h, dtype=x.dtype, device=x.device)
            c0 = zeros(n, batch, self.hidden_size, dtype=x.dtype, device=x.device) if lstm \
                else None
            return h0, c0
        if lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: expected hx to be a tuple (h_0, c_0)")
            h0, c0 = hx
        else:
            h0, c0 = hx, None
        if not batched:
            if h0.dim() != 2:
                raise RuntimeError(
                    f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D "
                    "tensor")
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        expected = (n, batch, real_h)
        # PyTorch's words: the expected size as a tuple, the one got as a list, and an
        # LSTM's two states named hidden[0] and hidden[1]
        if tuple(h0.shape) != expected:
            which = "hidden[0]" if lstm else "hidden"
            raise RuntimeError(f"Expected {which} size {expected}, got {list(h0.shape)}")
        if c0 is not None and tuple(c0.shape) != (n, batch, self.hidden_size):
            raise RuntimeError(f"Expected hidden[1] size {(n, batch, self.hidden_size)}, got "
                               f"{list(c0.shape)}")
        if sorted_idx is not None:
            h0 = h0.index_select(1, sorted_idx)
            c0 = c0.index_select(1, sorted_idx) if c0 is not None else None
        return h0, c0


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu), over a
    sequence; accepts a PackedSequence.

    Args:
        nonlinearity: ``"tanh"`` or ``"relu"``. Default: tanh.

    Shape:
        input ``(L, N, H_in)`` (or ``(N, L, H_in)`` with batch_first, or unbatched ``(L, H_in)``).

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.RNN(10, 20, num_layers=2)
        >>> out, h = m(ember.randn(5, 3, 10))
        >>> tuple(out.shape), tuple(h.shape)
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if "nonlinearity" in kwargs:
            nonlinearity = kwargs.pop("nonlinearity")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args,
                         **kwargs)
        # printed as RNNBase prints it: PyTorch's RNN does not show its nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (Hochreiter & Schmidhuber, 1997) over a sequence; accepts a
    PackedSequence; ``forward(input, (h_0, c_0))``.

    Args:
        (none)

    Shape:
        input ``(L, N, H_in)`` (or ``(N, L, H_in)`` with batch_first, or unbatched).

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LSTM(10, 20, num_layers=2)
        >>> out, (h, c) = m(ember.randn(5, 3, 10))
        >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
        ((5, 3, 20), (2, 3, 20), (2, 3, 20))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit (Cho et al., 2014) over a sequence; accepts a PackedSequence.

    Args:
        (none)

    Shape:
        input ``(L, N, H_in)`` (or ``(N, L, H_in)`` with batch_first, or unbatched).

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.GRU(10, 20, num_layers=2)
        >>> out, h = m(ember.randn(5, 3, 10))
        >>> tuple(out.shape), tuple(h.shape)
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """Shared machinery of RNNCell, LSTMCell and GRUCell: weights ``weight_ih``,
    ``weight_hh`` with ``num_chunks * hidden_size`` rows (and biases).

    Args:
        input_size (int): features of the input.
        hidden_size (int): features of the hidden state.
        bias (bool): learn biases.
        num_chunks (int): gates stacked in the weights (1, 3 or 4).
        device, dtype: where and how to create the parameters.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> cell = ember.nn.RNNCellBase(4, 8, True, 3)
        >>> tuple(cell.weight_ih.shape)
        (24, 4)
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device,
                                         dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device,
                                         dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device,
                                           dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device,
                                           dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prep(self, input, hx, lstm=False):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            z = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            hx = (z, z) if lstm else z
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx) if lstm else hx.unsqueeze(0)
        return x, hx, batched


class RNNCell(RNNCellBase):
    """One step of an Elman RNN.

    Args:
        input_size: number of features of each input step.
        hidden_size: number of features in the hidden state.
        bias: learn an additive bias. Default: True.
        nonlinearity: ``"tanh"`` or ``"relu"``. Default: tanh.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, input_size)`` and optional ``h`` -> ``(N, hidden_size)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.RNNCell(10, 20)
        >>> tuple(m(ember.randn(3, 10)).shape)
        (3, 20)
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        fn = nn_rnn.rnn_tanh_cell if self.nonlinearity == "tanh" else nn_rnn.rnn_relu_cell
        out = fn(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM; returns ``(h, c)``.

    Args:
        input_size: number of features of each input step.
        hidden_size: number of features in the hidden state.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, input_size)`` and optional ``(h, c)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LSTMCell(10, 20)
        >>> h, c = m(ember.randn(3, 10))
        >>> tuple(h.shape), tuple(c.shape)
        ((3, 20), (3, 20))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prep(input, hx, lstm=True)
        h2, c2 = nn_rnn.lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih,
                                  self.bias_hh)
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a GRU.

    Args:
        input_size: number of features of each input step.
        hidden_size: number of features in the hidden state.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(N, input_size)`` and optional ``h`` -> ``(N, hidden_size)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.GRUCell(10, 20)
        >>> tuple(m(ember.randn(3, 10)).shape)
        (3, 20)
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        out = nn_rnn.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih,
                              self.bias_hh)
        return out if batched else out.squeeze(0)
