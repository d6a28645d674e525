"""Gradients of convolutions with respect to their input and weight, as functions.

Each is the vector-Jacobian product of the matching ``nn.functional.conv*d``, taken through
ember's autograd: a convolution is linear in its input and in its weight, so the product
does not depend on the point it is taken at (see NOTE [ Convolution as three linear ops ] in
ember/_ops/nn_conv.py).
"""

from __future__ import annotations

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _vjp(nd, wrt, input, weight, grad_output, stride, padding, dilation, groups):
    from .. import autograd, enable_grad, zeros
    from . import functional as F

    conv = getattr(F, f"conv{nd}d")
    with enable_grad():
        if wrt == "input":
            x = zeros(tuple(input), dtype=weight.dtype, device=weight.device,
                      requires_grad=True)
            w = weight.detach()
            target = x
        else:
            x = input.detach()
            w = zeros(tuple(weight), dtype=input.dtype, device=input.device,
                      requires_grad=True)
            target = w
        out = conv(x, w, None, stride, padding, dilation, groups)
        (grad,) = autograd.grad(out, target, grad_output)
    return grad


def _make(nd, wrt):
    other = "weight" if wrt == "input" else "input"
    shape = "N, C_in" + ", L" * (nd == 1) + ", H, W" * (nd == 2) + ", D, H, W" * (nd == 3)

    if wrt == "input":
        def fn(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
            return _vjp(nd, wrt, input_size, weight, grad_output, stride, padding, dilation,
                        groups)
    else:
        def fn(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
            return _vjp(nd, wrt, input, weight_size, grad_output, stride, padding, dilation,
                        groups)

    fn.__name__ = fn.__qualname__ = f"conv{nd}d_{wrt}"
    size = "1, 2" + ", 5" * nd
    wsize = "3, 2" + ", 3" * nd
    osize = "1, 3" + ", 3" * nd
    if wrt == "input":
        call = f"conv{nd}d_input(({size}), w, ember.ones({osize}))"
        setup = f">>> w = ember.randn({wsize})"
        result = f"({size})"
        sig = "input_size, weight, grad_output"
    else:
        call = f"conv{nd}d_weight(x, ({wsize}), ember.ones({osize}))"
        setup = f">>> x = ember.randn({size})"
        result = f"({wsize})"
        sig = "input, weight_size, grad_output"
    fn.__doc__ = f"""The gradient of ``conv{nd}d`` with respect to its {wrt}.

    Args:
        {sig.split(', ')[0]}: the {'shape of the input (' + shape + ')' if wrt == 'input'
                                   else 'input tensor (' + shape + ')'}.
        {sig.split(', ')[1]}: the {other if wrt == 'input' else 'shape of the weight'}.
        grad_output (Tensor): the gradient of the convolution's output.
        stride, padding, dilation, groups: as given to the convolution.

    Returns:
        Tensor: the gradient, shaped like the convolution's {wrt}.

    Example:
        >>> import ember
        >>> from ember.nn.grad import conv{nd}d_{wrt}
        {setup}
        >>> tuple({call}.shape)
        {result}
    """
    return fn


conv1d_input = _make(1, "input")
conv1d_weight = _make(1, "weight")
conv2d_input = _make(2, "input")
conv2d_weight = _make(2, "weight")
conv3d_input = _make(3, "input")
conv3d_weight = _make(3, "weight")
