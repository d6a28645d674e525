"""Identity and Linear."""

from __future__ import annotations

import math

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Return the input unchanged (a placeholder; constructor arguments are ignored).

    Args:
        (none)

    Shape:
        any.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Identity(54, unused='x')
        >>> tuple(m(ember.randn(2, 3)).shape)
        (2, 3)
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """Affine map ``y = x W^T + b``.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(*, in_features)`` -> ``(*, out_features)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Linear(20, 30)
        >>> tuple(m(ember.randn(128, 20)).shape)
        (128, 30)
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """Bilinear map ``y = x1^T A x2 + b``.

    Args:
        in1_features: size of the first input.
        in2_features: size of the second input.
        out_features: size of each output sample.
        bias: learn an additive bias. Default: True.
        device: where to create the parameters.
        dtype: the dtype of the parameters.

    Shape:
        ``(*, in1)``, ``(*, in2)`` -> ``(*, out_features)``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Bilinear(5, 4, 3)
        >>> tuple(m(ember.randn(2, 5), ember.randn(2, 4)).shape)
        (2, 3)
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


# names PyTorch keeps in this module that ember defines in a module importing this one
_ELSEWHERE = {"LazyLinear": ".lazy", "NonDynamicallyQuantizableLinear": ".transformer"}


def __getattr__(name):
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
