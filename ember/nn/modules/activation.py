"""Activation layers: each holds its options and calls its functional form."""

from __future__ import annotations

from ..._ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _inplace_repr(m):
    return "inplace=True" if m.inplace else ""


class ReLU(Module):
    """Rectified linear unit, ``max(0, x)``, elementwise.

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ReLU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.0000, 0.0000, 0.0000, 1.5000])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return input.relu_() if self.inplace else F.relu(input)

    extra_repr = _inplace_repr


class ReLU6(Module):
    """``min(max(0, x), 6)``, elementwise.

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ReLU6()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.0000, 0.0000, 0.0000, 1.5000])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu6(input, self.inplace)

    extra_repr = _inplace_repr


class LeakyReLU(Module):
    """``x`` for x >= 0, ``negative_slope * x`` otherwise.

    Args:
        negative_slope (float): slope for negative inputs. Default: 0.01.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LeakyReLU(0.1)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.2000, -0.0500,  0.0000,  1.5000])
    """

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class PReLU(Module):
    """LeakyReLU with a learned slope (one shared, or one per channel).

    Args:
        num_parameters (int): 1, or the number of channels (dim 1). Default: 1.
        init (float): initial slope. Default: 0.25.
        device, dtype: where and how to create the slope.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.PReLU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5])).detach()
        tensor([-0.5000, -0.1250,  0.0000,  1.5000])
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU (Xu et al., 2015): in training the negative slope is drawn
    from U(lower, upper) per element; in eval it is ``(lower + upper) / 2``.

    Args:
        lower (float): lower bound of the slope. Default: 1/8.
        upper (float): upper bound of the slope. Default: 1/3.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.RReLU().eval()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.4583, -0.1146,  0.0000,  1.5000])
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")


class ELU(Module):
    """Exponential linear unit: ``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha (float): the negative saturation. Default: 1.0.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.ELU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.8647, -0.3935,  0.0000,  1.5000])
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        alpha (float): Default: 1.0.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.CELU(0.5)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.4908, -0.3161,  0.0000,  1.5000])
    """

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(Module):
    """Scaled ELU (Klambauer et al., 2017), self-normalising with LeCun-normal weights.

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.SELU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-1.5202, -0.6918,  0.0000,  1.5761])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    extra_repr = _inplace_repr


class GELU(Module):
    """Gaussian error linear unit, ``x * Phi(x)`` (Hendrycks & Gimpel, 2016).

    Args:
        approximate (str): ``"none"`` (exact) or ``"tanh"``. Default: ``"none"``.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.GELU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.0455, -0.1543,  0.0000,  1.3998])
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """Sigmoid linear unit (swish), ``x * sigmoid(x)``.

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.SiLU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.2384, -0.1888,  0.0000,  1.2264])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    extra_repr = _inplace_repr


class Mish(SiLU):
    """``x * tanh(softplus(x))`` (Misra, 2019).

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Mish()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.2525, -0.2207,  0.0000,  1.4034])
    """

    def forward(self, input):
        return F.mish(input, self.inplace)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``, elementwise.

    Args:
        (none)

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Sigmoid()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.1192, 0.3775, 0.5000, 0.8176])
    """

    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    """Hyperbolic tangent, elementwise.

    Args:
        (none)

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Tanh()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.9640, -0.4621,  0.0000,  0.9051])
    """

    def forward(self, input):
        return input.tanh()


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold`` for stability.

    Args:
        beta (float): Default: 1.
        threshold (float): above ``beta * x > threshold`` return x. Default: 20.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Softplus()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.1269, 0.4741, 0.6931, 1.7014])
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """``x / (1 + |x|)``.

    Args:
        (none)

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Softsign()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.6667, -0.3333,  0.0000,  0.6000])
    """

    def forward(self, input):
        return F.softsign(input)


class Softshrink(Module):
    """Soft thresholding: ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    The zeros are ``+0.0`` (PyTorch gives ``-0.0`` for a negative input in the band of a
    short tensor, ``+0.0`` in a long one; NOTE [ Shrink and threshold cuts ]).

    Args:
        lambd (float): the threshold. Default: 0.5.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Softshrink(0.5)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-1.5000,  0.0000,  0.0000,  1.0000])
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` where ``|x| > lambd``, else 0.

    Args:
        lambd (float): the threshold. Default: 0.5.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Hardshrink(0.5)
        >>> m(ember.tensor([-2.0, 0.25, 0.0, 1.5]))
        tensor([-2.0000,  0.0000,  0.0000,  1.5000])
    """

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Tanhshrink(Module):
    """``x - tanh(x)``.

    Args:
        (none)

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Tanhshrink()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-1.0360, -0.0379,  0.0000,  0.5949])
    """

    def forward(self, input):
        return F.tanhshrink(input)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``.

    Args:
        min_val (float): Default: -1.
        max_val (float): Default: 1.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Hardtanh(-1.0, 1.0)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-1.0000, -0.5000,  0.0000,  1.0000])
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError("max_val must be greater than min_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class Hardsigmoid(SiLU):
    """Piecewise-linear sigmoid, ``clamp(x / 6 + 1 / 2, 0, 1)``.

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Hardsigmoid()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.1667, 0.4167, 0.5000, 0.7500])
    """

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(SiLU):
    """``x * hardsigmoid(x)`` (Howard et al., 2019).

    Args:
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Hardswish()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-0.3333, -0.2083,  0.0000,  1.1250])
    """

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed stably.

    Args:
        (none)

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LogSigmoid()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-2.1269, -0.9741, -0.6931, -0.2014])
    """

    def forward(self, input):
        return F.logsigmoid(input)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``.

    Args:
        threshold (float): the threshold.
        value (float): the replacement.
        inplace (bool): accepted; the result is written to a new tensor unless True.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Threshold(0.1, 20.0)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([20.0000, 20.0000, 20.0000,  1.5000])
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class GLU(Module):
    """Gated linear unit: splits ``dim`` in halves ``a, b`` and returns ``a * sigmoid(b)``.

    Args:
        dim (int): the dimension to split. Default: -1.

    Shape:
        Input any shape (the size of ``dim`` even); output half ``dim``.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.GLU()
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-1.0000, -0.4088])
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(Module):
    """Softmax along ``dim``: exponentials normalised to sum to one.

    Args:
        dim (int): the dimension to normalise over.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Softmax(dim=0)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.0217, 0.0975, 0.1607, 0.7201])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """``log(softmax(x))`` along ``dim``, computed stably (pair with NLLLoss).

    Args:
        dim (int): the dimension to normalise over.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.LogSoftmax(dim=0)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([-3.8283, -2.3283, -1.8283, -0.3283])
    """

    def forward(self, input):
        return F.log_softmax(input, self.dim)


class Softmin(Softmax):
    """Softmax of ``-x`` along ``dim``.

    Args:
        dim (int): the dimension to normalise over.

    Shape:
        Input any shape; output the same shape.

    Returns:
        The module.

    Example:
        >>> import ember
        >>> m = ember.nn.Softmin(dim=0)
        >>> m(ember.tensor([-2.0, -0.5, 0.0, 1.5]))
        tensor([0.7201, 0.1607, 0.0975, 0.0217])
    """

    def forward(self, input):
        return F.softmin(input, self.dim)


class Softmax2d(Module):
    """Softmax over the channels of each spatial location of a ``(N, C, H, W)`` or
    ``(C, H, W)`` input.

    Args:
        (none)

    Returns:
        The module.

    Example:
        >>> import ember
        >>> y = ember.nn.Softmax2d()(ember.randn(2, 3, 4, 4))
        >>> bool(ember.allclose(y.sum(1), ember.ones(2, 4, 4)))
        True
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


# names PyTorch keeps in this module that ember defines in a module importing this one
_ELSEWHERE = {"MultiheadAttention": ".transformer"}


def __getattr__(name):
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
