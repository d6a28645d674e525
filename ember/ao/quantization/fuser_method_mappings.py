"""Which module sequences ``fuse_modules`` can fuse, and how
(``torch.ao.quantization.fuser_method_mappings``)."""

from ... import nn
from ..nn import intrinsic as nni

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn",
           "get_fuser_method"]


def fuse_conv_bn(is_qat, conv, bn):
    """Fuse a convolution and the batch norm after it.

    For QAT the result is ``ConvBn{1,2,3}d(conv, bn)`` (folded during training by
    ``prepare_qat``); otherwise the batch norm is folded into the conv's weight and bias now,
    which needs both in eval mode.

    Args:
        is_qat (bool): fusing for quantization-aware training.
        conv (nn.Conv1d/2d/3d): the convolution.
        bn (nn.BatchNorm1d/2d/3d): the batch norm.

    Returns:
        nn.Module: the fused module.

    Example:
        >>> conv, bn = nn.Conv2d(1, 2, 3).eval(), nn.BatchNorm2d(2).eval()
        >>> type(fuse_conv_bn(False, conv, bn)).__name__
        'Conv2d'
    """
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    fused = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d, nn.Conv3d: nni.ConvBn3d}
    if is_qat:
        _check_bn(bn, conv.out_channels, "Output channel of Conv2d must match num_features of "
                  "BatchNorm2d")
        cls = fused.get(type(conv))
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
        return cls(conv, bn)
    return nn.utils.fuse_conv_bn_eval(conv, bn)


def _check_bn(bn, channels, message):
    if bn.num_features != channels:
        raise AssertionError(message)
    if not bn.affine:
        raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError("Only support fusing BatchNorm2d with tracking_running_stats "
                             "set to True")


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Fuse a convolution, batch norm and ReLU.

    For QAT the result is ``ConvBnReLU{1,2,3}d``; otherwise the batch norm is folded into the
    conv (eval mode only) and the result is ``ConvReLU{1,2,3}d(folded_conv, relu)``.

    Args:
        is_qat (bool): fusing for quantization-aware training.
        conv (nn.Conv1d/2d/3d): the convolution.
        bn (nn.BatchNorm1d/2d/3d): the batch norm.
        relu (nn.ReLU): the activation.

    Returns:
        nn.Module: the fused module.

    Example:
        >>> m = fuse_conv_bn_relu(False, nn.Conv2d(1, 2, 3).eval(), nn.BatchNorm2d(2).eval(),
        ...                       nn.ReLU().eval())
        >>> type(m).__name__
        'ConvReLU2d'
    """
    if not conv.training == bn.training == relu.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        fused = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d,
                 nn.Conv3d: nni.ConvBnReLU3d}
        _check_bn(bn, conv.out_channels, "Output channel of Conv must match num_features of "
                  "BatchNorm")
        cls = fused.get(type(conv))
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return cls(conv, bn, relu)
    fused = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d, nn.Conv3d: nni.ConvReLU3d}
    cls = fused.get(type(conv))
    if cls is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return cls(nn.utils.fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Fuse a linear layer and the batch norm after it: ``LinearBn1d`` for QAT, otherwise the
    batch norm folded into the linear's weight and bias (eval mode only).

    Args:
        is_qat (bool): fusing for quantization-aware training.
        linear (nn.Linear): the linear layer.
        bn (nn.BatchNorm1d): the batch norm.

    Returns:
        nn.Module: the fused module.

    Example:
        >>> m = fuse_linear_bn(False, nn.Linear(3, 2).eval(), nn.BatchNorm1d(2).eval())
        >>> type(m).__name__
        'Linear'
    """
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != linear.out_features:
            raise AssertionError("Output features of Linear must match num_features of "
                                 "BatchNorm1d")
        if not bn.affine:
            raise AssertionError("Only support fusing BatchNorm1d with affine set to True")
        if not bn.track_running_stats:
            raise AssertionError("Only support fusing BatchNorm1d with tracking_running_stats "
                                 "set to True")
        return nni.LinearBn1d(linear, bn)
    return nn.utils.fusion.fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """Fold a batch norm into the transposed convolution before it (eval mode only; QAT
    fusion of transposed convolutions is not supported, as in PyTorch).

    Args:
        is_qat (bool): must be False.
        convt (nn.ConvTranspose1d/2d/3d): the transposed convolution.
        bn (nn.BatchNorm1d/2d/3d): the batch norm.

    Returns:
        nn.Module: the folded transposed convolution.

    Example:
        >>> m = fuse_convtranspose_bn(False, nn.ConvTranspose2d(2, 2, 3).eval(),
        ...                           nn.BatchNorm2d(2).eval())
        >>> type(m).__name__
        'ConvTranspose2d'
    """
    if convt.training != bn.training:
        raise AssertionError("ConvTranspose and BN both must be in the same mode (train or "
                             "eval).")
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")  # noqa: TRY002
    return nn.utils.fusion.fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(sequential):
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)

    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _sequential_wrapper2(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _sequential_wrapper2(nni.BNReLU3d),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The function that fuses modules of the given types, or None.

    Args:
        op_list (tuple of type): the module classes, in order.
        additional_fuser_method_mapping (dict, optional): more fusions, which win.

    Returns:
        callable or None: ``fuser(is_qat, *modules)``.

    Example:
        >>> get_fuser_method((nn.Conv2d, nn.BatchNorm2d)) is fuse_conv_bn
        True
    """
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    return mapping.get(tuple(op_list))

