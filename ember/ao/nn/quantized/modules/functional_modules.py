"""``FloatFunctional`` and ``QFunctional``: element-wise ops (add, mul, cat) as modules, so
eager quantization can observe their outputs and give the quantized op its output scale."""

import numpy as np

import ember
from ember import nn

from ...._qscheme import per_tensor_affine
from ...._qtensor import QArray, _qtensor

__all__ = ["FloatFunctional", "QFunctional"]


class FloatFunctional(nn.Module):
    """Float ``add``/``mul``/``cat``/... whose results pass through
    ``activation_post_process`` (an identity until ``prepare`` puts an observer there).
    Use one instance per call site.

    Example:
        >>> ff = FloatFunctional()
        >>> ff.add_relu(ember.tensor([1.0, -3.0]), ember.tensor([1.0, 1.0]))
        tensor([2., 0.])
    """

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x, y):
        """``x + y``, observed."""
        return self.activation_post_process(ember.add(x, y))

    def add_scalar(self, x, y):
        """``x + y`` for a Python number ``y`` (not observed, as in PyTorch)."""
        return ember.add(x, y)

    def mul(self, x, y):
        """``x * y``, observed."""
        return self.activation_post_process(ember.mul(x, y))

    def mul_scalar(self, x, y):
        """``x * y`` for a Python number ``y`` (not observed, as in PyTorch)."""
        return ember.mul(x, y)

    def cat(self, x, dim=0):
        """``ember.cat(x, dim)``, observed."""
        return self.activation_post_process(ember.cat(x, dim=dim))

    def add_relu(self, x, y):
        """``relu(x + y)``, observed."""
        return self.activation_post_process(ember.relu(ember.add(x, y)))

    def matmul(self, x, y):
        """``x @ y``, observed."""
        return self.activation_post_process(ember.matmul(x, y))


def _floats(q):
    if not getattr(q, "is_quantized", False):
        raise NotImplementedError("QFunctional: expected quantized inputs (the float region "
                                  "ends at a DeQuantStub)")
    a = q._data
    if a.axis is not None:
        raise NotImplementedError("QFunctional: per-channel quantized inputs are not supported")
    # scale * q - scale * zero_point with one rounding, as the vectorized kernels dequantize
    s = np.float32(a.scale)
    return (np.float64(s) * a.ints.astype(np.float64)
            + np.float64(np.float32(-a.zero_point) * s)).astype(np.float32)


class QFunctional(nn.Module):
    """The quantized ``FloatFunctional``: ``add``, ``add_relu``, ``mul`` and ``cat`` on quint8
    tensors, producing quint8 with this module's ``scale`` and ``zero_point`` (the values are
    combined in float32 and quantized once, as PyTorch's kernels do).

    Example:
        >>> qf = QFunctional(); qf.scale, qf.zero_point = 0.1, 0
        >>> a = ember.quantize_per_tensor(ember.tensor([0.5]), 0.1, 0, ember.quint8)
        >>> qf.add(a, a).dequantize()
        tensor([1.])
    """

    def __init__(self):
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = nn.Identity()

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def _out(self, reals):
        inv = np.float32(1.0) / np.float32(self.scale)
        t = (reals.astype(np.float64) * np.float64(inv) + self.zero_point).astype(np.float32)
        ints = np.clip(np.rint(t), 0, 255).astype(np.uint8)
        return _qtensor(QArray(ints, ember.quint8, per_tensor_affine, float(self.scale),
                               int(self.zero_point)))

    def add(self, x, y):
        """Quantized ``x + y``."""
        return self._out((_floats(x) + _floats(y)).astype(np.float32))

    def add_relu(self, x, y):
        """Quantized ``relu(x + y)``."""
        return self._out(np.maximum((_floats(x) + _floats(y)).astype(np.float32), 0))

    def mul(self, x, y):
        """Quantized ``x * y``."""
        return self._out((_floats(x) * _floats(y)).astype(np.float32))

    def cat(self, x, dim=0):
        """Quantized ``cat(x, dim)``."""
        return self._out(np.concatenate([_floats(t) for t in x], axis=dim))

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, *args, **kwargs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs, *args, **kwargs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A ``QFunctional`` with the output parameters ``mod``'s observer chose."""
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of "
                                 "FloatFunctional")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        q = QFunctional()
        q.scale = float(scale)
        q.zero_point = int(zero_point)
        return q
