"""``LinearReLU`` and ``LinearBn1d`` for quantization-aware training."""

from ember import nn
from ember.nn import functional as F
from ....qat import Linear as _QATLinear
from ... import modules as _nni
from .conv_fused import _BnFoldMixin

__all__ = ["LinearReLU", "LinearBn1d"]


class LinearReLU(_QATLinear, _nni.fused._FusedModule):
    """QAT ``Linear`` followed by ``ReLU``: ``relu(linear(x, fake_quant(weight), bias))``.

    Args:
        in_features, out_features, bias: as ``nn.Linear``.
        qconfig (QConfig): the quantization config (required).

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = LinearReLU(3, 2, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(4, 3)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.LinearReLU

    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        _QATLinear.__init__(self, in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT form of a fused ``LinearReLU`` that has a ``qconfig``."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        linear = mod[0]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None,
                  qconfig=mod.qconfig)
        qat.weight = linear.weight
        qat.bias = linear.bias
        return qat


class LinearBn1d(_BnFoldMixin, nn.Linear, _nni.fused._FusedModule):
    """QAT ``Linear`` + ``BatchNorm1d``: the batch norm's scale is folded into the weight
    before fake quantization (see NOTE [ Batch norm folding in QAT ]).

    Args:
        in_features, out_features, bias: as ``nn.Linear``.
        eps, momentum: the batch norm's.
        freeze_bn (bool): keep the batch-norm statistics fixed.
        qconfig (QConfig): the quantization config (required).

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> LinearBn1d(3, 2, qconfig=default_qat_qconfig)(ember.randn(4, 3)).shape
        ember.Size([4, 2])
    """

    _FLOAT_MODULE = _nni.LinearBn1d

    def __init__(self, in_features, out_features, bias=True, eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nn.Linear.__init__(self, in_features, out_features, bias)
        self._init_bn_fold(out_features, nn.BatchNorm1d, eps, momentum, freeze_bn, qconfig,
                           bias)

    def _raw(self, input, weight, bias):
        return F.linear(input, weight, bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT form of a fused ``LinearBn1d`` that has a ``qconfig``."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        linear, bn = mod[0], mod[1]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None, bn.eps,
                  bn.momentum, False, mod.qconfig)
        qat.weight = linear.weight
        qat.bias = linear.bias
        qat._copy_bn(bn)
        return qat

