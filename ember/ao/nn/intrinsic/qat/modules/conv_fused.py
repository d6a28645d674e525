"""Fused convolutions for quantization-aware training: ``ConvBn*``, ``ConvBnReLU*`` and
``ConvReLU*`` in 1, 2 and 3 dimensions."""

import ember

from ember import nn
from ember.nn import functional as F
from ember.nn.parameter import Parameter
from .... import qat as _nnqat
from ... import modules as _nni

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "update_bn_stats", "freeze_bn_stats"]

# NOTE [ Batch norm folding in QAT ]
# After conversion a conv + batch norm becomes one conv whose weight is w * gamma / std, so QAT
# must fake-quantize that folded weight, not w. With the running std:
#   y = conv(x, fake_quant(w * s), 0) / s + b,  s = gamma / sqrt(running_var + eps),
# and y then goes through the (training) batch norm itself, which normalises with the batch's
# statistics and updates the running ones. Dividing by s undoes the fold for the float path
# while the quantization error of the folded weight stays in. (PyTorch's approximate path;
# its exact slow path is not used by default either.)


class _BnFoldMixin:
    # batch-norm folding shared by ConvBn*, ConvBnReLU* and LinearBn1d; subclasses give _raw

    def _init_bn_fold(self, channels, bn_class, eps, momentum, freeze_bn, qconfig, bias):
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = bn_class(channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = Parameter(ember.empty(channels))
        else:
            self.register_parameter("bias", None)
        self.bn.reset_running_stats()
        nn.init.uniform_(self.bn.weight)
        nn.init.zeros_(self.bn.bias)
        if self.bias is not None:
            bound = 1 / (self.weight[0].numel() ** 0.5)
            nn.init.uniform_(self.bias, -bound, bound)
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def update_bn_stats(self):
        """Let the batch norm update its running statistics again."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        """Freeze the batch norm's running statistics (it then normalises with them)."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _folded(self, input):
        # See NOTE [ Batch norm folding in QAT ]
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape = [1] * self.weight.dim()
        weight_shape[0] = -1
        bias_shape = [1] * self.weight.dim()
        bias_shape[1] = -1
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        zero_bias = ember.zeros(self.weight.shape[0], dtype=input.dtype)
        out = self._raw(input, scaled_weight, zero_bias)
        out = out / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            out = out + self.bias.reshape(bias_shape)
        return self.bn(out)

    def forward(self, input):
        return self._folded(input)

    def train(self, mode=True):
        # a frozen batch norm stays in eval mode while the rest trains
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    def _copy_bn(self, bn):
        self.bn.weight = bn.weight
        self.bn.bias = bn.bias
        self.bn.running_mean = bn.running_mean
        self.bn.running_var = bn.running_var
        self.bn.num_batches_tracked = bn.num_batches_tracked


class _ConvBnMixin(_BnFoldMixin):
    _relu = False

    def _raw(self, input, weight, bias):
        return self._conv_forward(input, weight, bias)

    def forward(self, input):
        out = self._folded(input)
        return F.relu(out) if self._relu else out

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT form of a fused conv + batch norm (+ ReLU) that has a ``qconfig``; it
        shares the float modules' parameters and buffers."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight = conv.weight
        qat.bias = conv.bias
        qat._copy_bn(bn)
        return qat

    def to_float(self):
        """The float conv with the batch norm folded in (and the ReLU, if any, after it)."""
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.bias is not None, self.padding_mode)
        conv.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = Parameter(self.bias.detach())
        conv.eval()
        bn = self.bn
        was = bn.training
        bn.eval()
        fused = nn.utils.fuse_conv_bn_eval(conv, bn)
        bn.train(was)
        return nn.Sequential(fused, nn.ReLU()) if self._relu else fused


def _conv_bn_init(self, base, in_channels, out_channels, kernel_size, stride, padding, dilation,
                  groups, bias, padding_mode, eps, momentum, freeze_bn, qconfig, bn_class):
    base.__init__(self, in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                  dilation=dilation, groups=groups, bias=False, padding_mode=padding_mode)
    self._init_bn_fold(out_channels, bn_class, eps, momentum, freeze_bn, qconfig, bias)


class ConvBn1d(_ConvBnMixin, nn.Conv1d, _nni.fused._FusedModule):
    """QAT ``Conv1d`` + ``BatchNorm1d`` with the batch norm folded into the fake-quantized
    weight (see NOTE [ Batch norm folding in QAT ]).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv1d``.
        eps, momentum: the batch norm's.
        freeze_bn (bool): keep the batch-norm statistics fixed.
        qconfig (QConfig): the quantization config (required).

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> ConvBn1d(1, 2, 3, qconfig=default_qat_qconfig)(ember.randn(2, 1, 5)).shape
        ember.Size([2, 2, 3])
    """

    _FLOAT_MODULE = _nni.ConvBn1d
    _FLOAT_CONV_MODULE = nn.Conv1d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        _conv_bn_init(self, nn.Conv1d, in_channels, out_channels, kernel_size, stride, padding,
                      dilation, groups, bias, padding_mode, eps, momentum, freeze_bn, qconfig,
                      nn.BatchNorm1d)


class ConvBn2d(_ConvBnMixin, nn.Conv2d, _nni.fused._FusedModule):
    """QAT ``Conv2d`` + ``BatchNorm2d`` with the batch norm folded into the fake-quantized
    weight (see NOTE [ Batch norm folding in QAT ]).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv2d``.
        eps, momentum: the batch norm's.
        freeze_bn (bool): keep the batch-norm statistics fixed.
        qconfig (QConfig): the quantization config (required).

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> ConvBn2d(1, 2, 3, qconfig=default_qat_qconfig)(ember.randn(2, 1, 5, 5)).shape
        ember.Size([2, 2, 3, 3])
    """

    _FLOAT_MODULE = _nni.ConvBn2d
    _FLOAT_CONV_MODULE = nn.Conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        _conv_bn_init(self, nn.Conv2d, in_channels, out_channels, kernel_size, stride, padding,
                      dilation, groups, bias, padding_mode, eps, momentum, freeze_bn, qconfig,
                      nn.BatchNorm2d)


class ConvBn3d(_ConvBnMixin, nn.Conv3d, _nni.fused._FusedModule):
    """QAT ``Conv3d`` + ``BatchNorm3d`` with the batch norm folded into the fake-quantized
    weight (see NOTE [ Batch norm folding in QAT ]).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode: as ``nn.Conv3d``.
        eps, momentum: the batch norm's.
        freeze_bn (bool): keep the batch-norm statistics fixed.
        qconfig (QConfig): the quantization config (required).

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> ConvBn3d(1, 2, 1, qconfig=default_qat_qconfig)(ember.randn(2, 1, 2, 2, 2)).shape
        ember.Size([2, 2, 2, 2, 2])
    """

    _FLOAT_MODULE = _nni.ConvBn3d
    _FLOAT_CONV_MODULE = nn.Conv3d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        _conv_bn_init(self, nn.Conv3d, in_channels, out_channels, kernel_size, stride, padding,
                      dilation, groups, bias, padding_mode, eps, momentum, freeze_bn, qconfig,
                      nn.BatchNorm3d)


class ConvBnReLU1d(ConvBn1d):
    """QAT ``Conv1d`` + ``BatchNorm1d`` + ``ReLU`` (see :class:`ConvBn1d`).

    Args:
        as :class:`ConvBn1d`.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvBnReLU1d(1, 2, 3, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(2, 1, 5)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvBnReLU1d
    _relu = True


class ConvBnReLU2d(ConvBn2d):
    """QAT ``Conv2d`` + ``BatchNorm2d`` + ``ReLU`` (see :class:`ConvBn2d`).

    Args:
        as :class:`ConvBn2d`.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvBnReLU2d(1, 2, 3, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(2, 1, 5, 5)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvBnReLU2d
    _relu = True


class ConvBnReLU3d(ConvBn3d):
    """QAT ``Conv3d`` + ``BatchNorm3d`` + ``ReLU`` (see :class:`ConvBn3d`).

    Args:
        as :class:`ConvBn3d`.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvBnReLU3d(1, 2, 1, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(2, 1, 2, 2, 2)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvBnReLU3d
    _relu = True


class _ConvReLUMixin:
    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


class ConvReLU1d(_ConvReLUMixin, _nnqat.Conv1d, _nni.fused._FusedModule):
    """QAT ``Conv1d`` followed by ``ReLU``.

    Args:
        as ``ember.ao.nn.qat.Conv1d``.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvReLU1d(1, 2, 3, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(1, 1, 5)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvReLU1d


class ConvReLU2d(_ConvReLUMixin, _nnqat.Conv2d, _nni.fused._FusedModule):
    """QAT ``Conv2d`` followed by ``ReLU``.

    Args:
        as ``ember.ao.nn.qat.Conv2d``.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvReLU2d(1, 2, 3, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(1, 1, 5, 5)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvReLU2d


class ConvReLU3d(_ConvReLUMixin, _nnqat.Conv3d, _nni.fused._FusedModule):
    """QAT ``Conv3d`` followed by ``ReLU``.

    Args:
        as ``ember.ao.nn.qat.Conv3d``.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvReLU3d(1, 2, 1, qconfig=default_qat_qconfig)
        >>> bool((m(ember.randn(1, 1, 2, 2, 2)) >= 0).all())
        True
    """

    _FLOAT_MODULE = _nni.ConvReLU3d


_BN_TYPES = (ConvBn1d, ConvBn2d, ConvBn3d)


def update_bn_stats(mod):
    """Let a QAT conv-bn module's batch norm update its running statistics (for
    ``model.apply(update_bn_stats)``).

    Args:
        mod (nn.Module): any module; only the fused conv-bn QAT ones change.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvBn2d(1, 2, 3, qconfig=default_qat_qconfig); m.apply(freeze_bn_stats)
        ... # doctest: +ELLIPSIS
        ConvBn2d(...)
        >>> _ = m.apply(update_bn_stats); m.freeze_bn
        False
    """
    if isinstance(mod, _BN_TYPES):
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """Freeze a QAT conv-bn module's batch-norm statistics (for ``model.apply(...)``).

    Args:
        mod (nn.Module): any module; only the fused conv-bn QAT ones change.

    Example:
        >>> from ember.ao.quantization import default_qat_qconfig
        >>> m = ConvBn2d(1, 2, 3, qconfig=default_qat_qconfig)
        >>> _ = m.apply(freeze_bn_stats); m.freeze_bn
        True
    """
    if isinstance(mod, _BN_TYPES):
        mod.freeze_bn_stats()
