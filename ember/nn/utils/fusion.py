"""Folding an eval-mode BatchNorm into the preceding convolution or linear layer."""

from __future__ import annotations

import copy

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The weight and bias of one convolution equal to a convolution followed by an
    eval-mode BatchNorm.

    Args:
        conv_w, conv_b (Tensor): the convolution's weight and bias (bias may be None).
        bn_rm, bn_rv (Tensor): the BatchNorm running mean and variance.
        bn_eps (float): the BatchNorm epsilon.
        bn_w, bn_b (Tensor): the BatchNorm affine weight and bias (may be None).
        transpose (bool): the convolution is transposed. Default: False.

    Returns:
        tuple: ``(weight, bias)`` Parameters.

    Example:
        >>> import ember
        >>> w, b = fuse_conv_bn_weights(ember.ones(2, 1, 3), None, ember.zeros(2),
        ...                              ember.ones(2), 0.0, ember.ones(2), ember.zeros(2))
        >>> tuple(w.shape), tuple(b.shape)
        ((2, 1, 3), (2,))
    """
    from ... import ones_like, zeros_like

    dtype = conv_w.dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    shape = [1] * conv_w.dim()
    shape[1 if transpose else 0] = -1
    w = (conv_w * scale.reshape(shape)).to(dtype)
    b = ((conv_b - bn_rm) * scale + bn_b).to(dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` whose weights absorb ``bn``, for inference (both must be in
    eval mode).

    Args:
        conv (Module): a ``Conv*d`` (or transposed, with ``transpose=True``).
        bn (Module): the BatchNorm that follows it.
        transpose (bool): the convolution is transposed. Default: False.

    Returns:
        Module: the fused convolution.

    Example:
        >>> import ember
        >>> conv, bn = ember.nn.Conv2d(3, 4, 3).eval(), ember.nn.BatchNorm2d(4).eval()
        >>> fused = fuse_conv_bn_eval(conv, bn)
        >>> x = ember.randn(1, 3, 5, 5)
        >>> bool(ember.allclose(fused(x), bn(conv(x)), atol=1e-5))
        True
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias of one Linear layer equal to a Linear followed by an eval-mode
    BatchNorm1d.

    Args:
        linear_w, linear_b (Tensor): the Linear weight and bias (bias may be None).
        bn_rm, bn_rv (Tensor): the BatchNorm running mean and variance.
        bn_eps (float): the BatchNorm epsilon.
        bn_w, bn_b (Tensor): the BatchNorm affine weight and bias.

    Returns:
        tuple: ``(weight, bias)`` Parameters.

    Example:
        >>> import ember
        >>> w, b = fuse_linear_bn_weights(ember.ones(2, 3), None, ember.zeros(2), ember.ones(2),
        ...                               0.0, ember.ones(2), ember.zeros(2))
        >>> tuple(w.shape), tuple(b.shape)
        ((2, 3), (2,))
    """
    from ... import zeros_like

    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    w = linear_w * scale.unsqueeze(-1)
    b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weights absorb ``bn`` (both in eval mode).

    Args:
        linear (Module): an ``nn.Linear``.
        bn (Module): the ``BatchNorm1d`` that follows it.

    Returns:
        Module: the fused Linear.

    Example:
        >>> import ember
        >>> lin, bn = ember.nn.Linear(3, 4).eval(), ember.nn.BatchNorm1d(4).eval()
        >>> x = ember.randn(2, 3)
        >>> bool(ember.allclose(fuse_linear_bn_eval(lin, bn)(x), bn(lin(x)), atol=1e-5))
        True
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
