"""Markers for where a model's float region starts and ends (``torch.ao.quantization.stubs``).

Before conversion they pass values through; ``convert`` swaps ``QuantStub`` for a module that
quantizes and ``DeQuantStub`` for one that dequantizes.
"""

from ... import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Where float values enter the quantized region: identity until ``convert``, where it
    becomes ``ember.ao.nn.quantized.Quantize`` with the scale its observer chose.

    Args:
        qconfig (QConfig, optional): the config for this stub (else propagated from the parent).

    Example:
        >>> QuantStub()(ember.tensor([1.5]))
        tensor([1.5000])
    """

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Where values leave the quantized region: identity until ``convert``, where it becomes
    ``ember.ao.nn.quantized.DeQuantize``.

    Args:
        qconfig (QConfig, optional): accepted for symmetry with :class:`QuantStub`.

    Example:
        >>> DeQuantStub()(ember.tensor([1.5]))
        tensor([1.5000])
    """

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """Wrap a module between a :class:`QuantStub` and a :class:`DeQuantStub`, so that the
    whole of it is quantized: ``dequant(module(quant(x)))``.

    Args:
        module (nn.Module): the module to wrap (its ``qconfig``, if any, goes to the stubs).

    Example:
        >>> w = QuantWrapper(nn.Linear(2, 2))
        >>> list(w._modules)
        ['quant', 'dequant', 'module']
    """

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
