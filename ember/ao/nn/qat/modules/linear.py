"""``ember.ao.nn.qat.Linear``: a Linear layer with a fake-quantized weight."""

from ember import nn
from ember.nn import functional as F

__all__ = ["Linear"]


class Linear(nn.Linear):
    """``nn.Linear`` whose weight is fake-quantized by ``qconfig.weight()`` on each forward;
    the output's observer is added by ``prepare_qat``.

    Args:
        in_features (int): size of each input sample.
        out_features (int): size of each output sample.
        bias (bool): learn an additive bias (True).
        qconfig (QConfig): the quantization config (required).
        device, dtype: where and how to make the parameters.

    Example:
        >>> from ember.ao.quantization import get_default_qat_qconfig
        >>> m = Linear(3, 2, qconfig=get_default_qat_qconfig("x86"))
        >>> m(ember.ones(1, 3)).shape
        ember.Size([1, 2])
    """

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(in_features, out_features, bias, **factory_kwargs)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT twin of a float ``nn.Linear`` (or fused ``LinearReLU``'s linear) that has a
        ``qconfig``; it shares ``mod``'s parameters."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        from ....nn.intrinsic import LinearReLU

        if type(mod) is LinearReLU:
            mod = mod[0]
        qat = cls(mod.in_features, mod.out_features, bias=mod.bias is not None,
                  qconfig=mod.qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self):
        """A plain ``nn.Linear`` with this layer's (float) parameters."""
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear
