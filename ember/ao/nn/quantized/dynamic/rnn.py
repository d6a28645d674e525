"""``ember.ao.nn.quantized.dynamic.LSTM``: an LSTM whose weights are qint8 and whose matrix
products quantize their float inputs on the fly."""

import ember
from ember import nn

from ...._qserial import cell_params_from_weights, weights_from_cell_params
from ..modules.utils import _centered, _quantize_weight, _reals
from .linear import _quantize_input_dynamic

__all__ = ["LSTM", "PackedParameter"]

# NOTE [ Dynamic quantized LSTM ]
# Each layer and direction keeps W_ih, W_hh (qint8, one scale each) and the float biases.
# As PyTorch's CPU kernel does, the input-to-hidden product is computed for the whole
# sequence at once (so the input is quantized with one scale from the whole sequence's
# range), the hidden-to-hidden product once per step (the hidden state quantized afresh each
# step); both are dynamic quantized linears (NOTE [ Quantized kernel arithmetic ]) with their
# bias. The gates' nonlinearities and the cell update are ordinary float32 ops.


class PackedParameter(nn.Module):
    """Holds one layer-direction's packed weights, saved under the key ``param``.

    Args:
        param (tuple): ``(w_ih, w_hh, b_ih, b_hh)``, the weights quantized.

    Example:
        >>> PackedParameter((None, None, None, None)).param[0] is None
        True
    """

    def __init__(self, param):
        super().__init__()
        self.param = param

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # saved as PyTorch saves it (NOTE [ Packed RNN weights in checkpoints ])
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = cell_params_from_weights(*self.param)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        key = prefix + "param"
        if key in state_dict:
            param = state_dict.pop(key)
            self.param = tuple(param) if isinstance(param, (tuple, list)) else \
                weights_from_cell_params(param)
        elif strict:
            missing_keys.append(key)


def _dynamic_linear(x2d, w, b):
    q = _quantize_input_dynamic(x2d)
    xc, xs = _centered(q)
    wc, ws = _centered(w)
    acc = xc @ wc.T
    return ember.from_numpy(_reals(acc, xs[0], ws, b, 1))


class LSTM(nn.Module):
    """A dynamically quantized LSTM (see NOTE [ Dynamic quantized LSTM ]). Made by
    ``quantize_dynamic(model, {nn.LSTM}, dtype=ember.qint8)``.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: as
            ``nn.LSTM``.
        dtype: ``ember.qint8``.

    Example:
        >>> from ember.ao.quantization import quantize_dynamic
        >>> q = quantize_dynamic(nn.Sequential(nn.LSTM(3, 4)), {nn.LSTM})[0]
        >>> out, (h, c) = q(ember.randn(5, 2, 3))
        >>> out.shape, h.shape
        (ember.Size([5, 2, 4]), ember.Size([1, 2, 4]))
    """

    _FLOAT_MODULE = nn.LSTM

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=ember.qint8):
        super().__init__()
        self.mode = "LSTM"
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        self.training = False
        # NOTE [ Placeholder weights of a quantized LSTM ]
        # PyTorch's constructor packs random placeholder weights (randn, quantized at scale
        # 0.1) for every layer and direction, which from_float then replaces: drawing them
        # here too keeps the global random stream where PyTorch leaves it, so a program that
        # draws data after quantize_dynamic draws the same data.
        gate_size = 4 * hidden_size
        weights = []
        for layer in range(num_layers):
            for _ in range(2 if bidirectional else 1):
                layer_input = input_size if layer == 0 else hidden_size * (
                    2 if bidirectional else 1)
                w_ih = ember.randn(gate_size, layer_input)
                w_hh = ember.randn(gate_size, hidden_size)
                b_ih, b_hh = ember.randn(gate_size), ember.randn(gate_size)
                weights.append(PackedParameter((
                    ember.quantize_per_tensor(w_ih, 0.1, 0, ember.qint8),
                    ember.quantize_per_tensor(w_hh, 0.1, 0, ember.qint8), b_ih, b_hh)))
        self._all_weight_values = nn.ModuleList(weights)

    def _get_name(self):
        return "DynamicQuantizedLSTM"

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
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

    def __repr__(self):
        # the packed weights print as part of the layer's line, as PyTorch shows them
        return f"{self._get_name()}({self.extra_repr()})"

    def _run_direction(self, seq, h, c, params, reverse):
        w_ih, w_hh, b_ih, b_hh = params
        steps, batch = seq.shape[0], seq.shape[1]
        igates = _dynamic_linear(seq.reshape(steps * batch, -1), w_ih, b_ih)
        igates = igates.reshape(steps, batch, -1)
        outs = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            gates = _dynamic_linear(h, w_hh, b_hh) + igates[t]
            i, f, g, o = gates.chunk(4, 1)
            c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
            h = ember.sigmoid(o) * ember.tanh(c)
            outs[t] = h
        return ember.stack(outs), h, c

    def forward(self, input, hx=None):
        """Run the LSTM: ``output, (h_n, c_n)``, as ``nn.LSTM``."""
        if not isinstance(input, ember.Tensor):
            raise NotImplementedError("DynamicQuantizedLSTM: packed sequences are not "
                                      "supported by ember; pass a padded tensor")
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if self.batch_first and batched:
            x = x.transpose(0, 1)
        dirs = 2 if self.bidirectional else 1
        n = x.shape[1]
        if hx is None:
            h0 = ember.zeros(self.num_layers * dirs, n, self.hidden_size)
            c0 = ember.zeros(self.num_layers * dirs, n, self.hidden_size)
        else:
            h0, c0 = hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = self._run_direction(layer_in, h0[k], c0[k],
                                                self._all_weight_values[k].param, d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if dirs == 1 else ember.cat(outs, 2)
        output = layer_in
        if self.batch_first and batched:
            output = output.transpose(0, 1)
        h_n, c_n = ember.stack(hs), ember.stack(cs)
        if not batched:
            output, h_n, c_n = output.squeeze(1), h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The dynamic quantized form of a float ``nn.LSTM`` with a qconfig."""
        if type(mod) is not nn.LSTM:
            raise AssertionError("nn.quantized.dynamic.LSTM.from_float only works for nn.LSTM")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("DynamicQuantizedLSTM: proj_size is not supported")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            make_observer = mod.qconfig.weight
        else:
            from ....quantization.qconfig import default_dynamic_qconfig

            make_observer = default_dynamic_qconfig.weight
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                mod.dropout, mod.bidirectional)
        if make_observer().dtype != ember.qint8:
            raise AssertionError("The only supported dtype for dynamic quantized LSTM in "
                                 "ember is qint8")

        def quantized(w):
            obs = make_observer()
            obs(w)
            return _quantize_weight(w.float(), obs)

        q._all_weight_values = nn.ModuleList()
        for layer in range(mod.num_layers):
            for d in range(2 if mod.bidirectional else 1):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                b_ih, b_hh = getattr(mod, "bias_ih" + sfx), getattr(mod, "bias_hh" + sfx)
                q._all_weight_values.append(PackedParameter((
                    quantized(getattr(mod, "weight_ih" + sfx)),
                    quantized(getattr(mod, "weight_hh" + sfx)), b_ih, b_hh)))
        return q

