"""``ember.ao.nn.quantized.Linear`` (static) and its packed-parameter holder."""

import ember
from ember import nn

from ...._qtensor import quantize_per_tensor
from .utils import (
    _centered, _check_quantized_input, _quantize_weight, _reals, _requantize,
)

__all__ = ["Linear", "LinearPackedParams"]


class LinearPackedParams(nn.Module):
    """Holds a quantized linear layer's weight and bias, saved as
    ``_packed_params.dtype`` and ``_packed_params._packed_params`` (a (weight, bias) pair).

    Args:
        dtype: ``ember.qint8`` (or ``ember.float16`` for dynamic fp16).

    Example:
        >>> p = LinearPackedParams()
        >>> p.dtype
        ember.qint8
    """

    _version = 3  # the state-dict layout PyTorch's loader expects (dtype + a pair)

    def __init__(self, dtype=ember.qint8):
        super().__init__()
        self.dtype = dtype
        self._packed_params = (quantize_per_tensor(ember.zeros(1, 1), 1.0, 0, ember.qint8),
                               None)

    def set_weight_bias(self, weight, bias):
        """Store the quantized weight and the float bias (or None)."""
        self._packed_params = (weight, bias)

    def _weight_bias(self):
        return self._packed_params

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        self.dtype = state_dict.pop(prefix + "dtype", self.dtype)
        packed = state_dict.pop(prefix + "_packed_params", None)
        if packed is not None:
            self.set_weight_bias(*packed)
        elif strict:
            missing_keys.append(prefix + "_packed_params")


def _hide_packed_repr(module):
    # the packed parameters print as part of the layer's own line, as PyTorch shows them
    lines = [module.extra_repr()] if module.extra_repr() else []
    for name, child in module._modules.items():
        if isinstance(child, LinearPackedParams):
            continue
        text = repr(child).replace("\n", "\n  ")
        lines.append(f"({name}): {text}")
    main = module._get_name() + "("
    if len(lines) == 1 and not module._modules.keys() - {"_packed_params"}:
        return main + lines[0] + ")"
    return main + "\n  " + "\n  ".join(lines) + "\n)" if lines else main + ")"


class Linear(nn.Module):
    """A linear layer on quantized tensors: quint8 input, qint8 weight, float bias, quint8
    output with its own ``scale`` and ``zero_point`` (see NOTE [ Quantized kernel
    arithmetic ]). Made by ``convert`` from an observed ``nn.Linear``.

    Args:
        in_features (int): input size.
        out_features (int): output size.
        bias_ (bool): whether there is a bias.
        dtype: the weight dtype (``ember.qint8``).

    Example:
        >>> m = Linear(2, 1)
        >>> m.set_weight_bias(ember.quantize_per_tensor(ember.tensor([[0.5, 1.0]]), 0.01, 0,
        ...                                             ember.qint8), None)
        >>> m.scale, m.zero_point = 0.05, 0
        >>> x = ember.quantize_per_tensor(ember.tensor([[1.0, 2.0]]), 0.1, 0, ember.quint8)
        >>> m(x).dequantize()
        tensor([[2.5000]])
    """

    _version = 3
    _FLOAT_MODULE = (nn.Linear,)
    _RELU = False

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features) if bias_ else None
        qweight = quantize_per_tensor(ember.zeros(out_features, in_features), 1.0, 0,
                                      ember.qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_repr(self)

    def weight(self):
        """The quantized weight."""
        return self._packed_params._weight_bias()[0]

    def bias(self):
        """The float bias (or None)."""
        return self._packed_params._weight_bias()[1]

    def set_weight_bias(self, w, b):
        """Set the quantized weight ``w`` and float bias ``b``."""
        self._packed_params.set_weight_bias(w, b)

    def forward(self, x):
        _check_quantized_input("linear", x)
        xc, xs = _centered(x)
        w = self.weight()
        wc, ws = _centered(w)
        acc = xc @ wc.T
        reals = _reals(acc, xs[0], ws, self.bias(), acc.ndim - 1)
        return _requantize(reals, self.scale, self.zero_point, self._RELU)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        self.scale = float(state_dict.pop(prefix + "scale", self.scale))
        self.zero_point = int(state_dict.pop(prefix + "zero_point", self.zero_point))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs, *args, **kwargs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized form of an observed float (or QAT) linear layer."""
        if hasattr(mod, "weight_fake_quant"):
            weight_post_process = mod.weight_fake_quant
            act = mod.activation_post_process
        else:
            if type(mod) not in cls._FLOAT_MODULE:
                names = ", ".join(c.__name__ for c in cls._FLOAT_MODULE)
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names}, "
                                     f"but got: {type(mod)}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            act = mod.activation_post_process
            if isinstance(mod, nn.Sequential):  # a fused LinearReLU
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        if weight_post_process.dtype != ember.qint8:
            raise AssertionError("Weight observer must have dtype torch.qint8")
        act_scale, act_zp = act.calculate_qparams()
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        q = cls(mod.in_features, mod.out_features, dtype=weight_post_process.dtype)
        q.set_weight_bias(qweight, None if mod.bias is None else mod.bias)
        q.scale = float(act_scale)
        q.zero_point = int(act_zp)
        return q

