"""``ember.ao.nn.quantized.dynamic.Linear``."""

import numpy as np

import ember
from ember import nn

from ...._qscheme import per_tensor_affine
from ...._qtensor import QArray, _qtensor
from ..modules import linear as _static
from ..modules.utils import _centered, _quantize_weight, _reals

__all__ = ["Linear"]


def _quantize_input_dynamic(x):
    # per-tensor quint8 with 7 bits, parameters from the input's own range (NOTE [ Quantized
    # kernel arithmetic ])
    from ....quantization.fake_quantize import _choose_qparams  # (imports this package)

    a = x.detach().numpy().astype(np.float32)
    lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    scale, zp = _choose_qparams(lo, hi, 0, 127, False)
    inv = np.float32(1.0) / np.float32(scale)
    t = (a.astype(np.float64) * np.float64(inv) + zp).astype(np.float32)
    ints = np.clip(np.rint(t), 0, 255).astype(np.uint8)
    return _qtensor(QArray(ints, ember.quint8, per_tensor_affine, float(scale), int(zp)))


class Linear(_static.Linear):
    """A linear layer with a qint8 weight that quantizes each float input on the fly (per
    tensor, from its own min and max) and returns float32 (see NOTE [ Quantized kernel
    arithmetic ]). Made by ``quantize_dynamic``.

    Args:
        in_features (int): input size.
        out_features (int): output size.
        bias_ (bool): whether there is a bias.
        dtype: the weight dtype (``ember.qint8``).

    Example:
        >>> m = Linear(2, 1)
        >>> m.set_weight_bias(ember.quantize_per_tensor(ember.tensor([[0.5, 1.0]]), 0.01, 0,
        ...                                             ember.qint8), None)
        >>> m(ember.tensor([[1.0, 2.0]]))  # the input was quantized with 7 bits
        tensor([[2.5039]])
    """

    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def forward(self, x):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"dynamic quantized linear: expected a float input, got "
                               f"{x.dtype}")
        q = _quantize_input_dynamic(x)
        xc, xs = _centered(q)
        wc, ws = _centered(self.weight())
        acc = xc @ wc.T
        return ember.from_numpy(_reals(acc, xs[0], ws, self.bias(), acc.ndim - 1))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The dynamic quantized form of a float ``nn.Linear`` (or fused ``LinearReLU``'s
        linear) with a qconfig."""
        from ...intrinsic import LinearReLU

        if type(mod) not in (nn.Linear, LinearReLU):
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for "
                                 f"nn.Linear, but got: {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if type(mod) is LinearReLU:
            mod = mod[0]
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ....quantization.qconfig import default_dynamic_qconfig

            weight_observer = default_dynamic_qconfig.weight()
        if weight_observer.dtype != ember.qint8:
            raise AssertionError("The only supported dtype for dynamic quantized linear in "
                                 "ember is qint8")
        weight_observer(mod.weight)
        qweight = _quantize_weight(mod.weight.float(), weight_observer)
        q = cls(mod.in_features, mod.out_features, dtype=weight_observer.dtype)
        q.set_weight_bias(qweight, mod.bias)
        return q
