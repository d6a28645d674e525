"""The fused float modules: ``nn.Sequential`` subclasses whose class says which modules they
hold (``ConvReLU2d(conv, relu)``), made by ``fuse_modules`` and swapped whole by ``prepare_qat``
and ``convert``.
"""

from ember import nn

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "BNReLU2d", "BNReLU3d",
           "LinearBn1d", "LinearLeakyReLU", "LinearTanh", "ConvAdd2d", "ConvAddReLU2d"]


class _FusedModule(nn.Sequential):
    """Base of the fused modules: a Sequential that checks the types of what it holds.

    Subclasses set ``_TYPES``, the classes of their parts in order.
    """

    _TYPES = ()

    def __init__(self, *mods):
        if len(mods) != len(self._TYPES) or any(type(m) is not t
                                                 for m, t in zip(mods, self._TYPES)):
            raise AssertionError("Incorrect types for input modules: "
                                 + " and ".join(type(m).__name__ for m in mods))
        super().__init__(*mods)


class ConvReLU1d(_FusedModule):
    """``Conv1d`` followed by ``ReLU``, fused.

    Args:
        conv (nn.Conv1d): the convolution.
        relu (nn.ReLU): the activation.

    Example:
        >>> m = ConvReLU1d(nn.Conv1d(1, 2, 3), nn.ReLU())
        >>> m(ember.ones(1, 1, 5)).shape
        ember.Size([1, 2, 3])
    """

    _TYPES = (nn.Conv1d, nn.ReLU)


class ConvReLU2d(_FusedModule):
    """``Conv2d`` followed by ``ReLU``, fused.

    Args:
        conv (nn.Conv2d): the convolution.
        relu (nn.ReLU): the activation.

    Example:
        >>> m = ConvReLU2d(nn.Conv2d(1, 2, 3), nn.ReLU())
        >>> bool((m(ember.randn(1, 1, 5, 5)) >= 0).all())
        True
    """

    _TYPES = (nn.Conv2d, nn.ReLU)


class ConvReLU3d(_FusedModule):
    """``Conv3d`` followed by ``ReLU``, fused.

    Args:
        conv (nn.Conv3d): the convolution.
        relu (nn.ReLU): the activation.

    Example:
        >>> ConvReLU3d(nn.Conv3d(1, 2, 1), nn.ReLU())(ember.ones(1, 1, 2, 2, 2)).shape
        ember.Size([1, 2, 2, 2, 2])
    """

    _TYPES = (nn.Conv3d, nn.ReLU)


class ConvBn1d(_FusedModule):
    """``Conv1d`` followed by ``BatchNorm1d``, fused (for QAT).

    Args:
        conv (nn.Conv1d): the convolution.
        bn (nn.BatchNorm1d): the batch norm.

    Example:
        >>> ConvBn1d(nn.Conv1d(1, 2, 3), nn.BatchNorm1d(2))[1].num_features
        2
    """

    _TYPES = (nn.Conv1d, nn.BatchNorm1d)


class ConvBn2d(_FusedModule):
    """``Conv2d`` followed by ``BatchNorm2d``, fused (for QAT).

    Args:
        conv (nn.Conv2d): the convolution.
        bn (nn.BatchNorm2d): the batch norm.

    Example:
        >>> ConvBn2d(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))[1].num_features
        2
    """

    _TYPES = (nn.Conv2d, nn.BatchNorm2d)


class ConvBn3d(_FusedModule):
    """``Conv3d`` followed by ``BatchNorm3d``, fused (for QAT).

    Args:
        conv (nn.Conv3d): the convolution.
        bn (nn.BatchNorm3d): the batch norm.

    Example:
        >>> ConvBn3d(nn.Conv3d(1, 2, 1), nn.BatchNorm3d(2))[1].num_features
        2
    """

    _TYPES = (nn.Conv3d, nn.BatchNorm3d)


class ConvBnReLU1d(_FusedModule):
    """``Conv1d``, ``BatchNorm1d`` and ``ReLU``, fused (for QAT).

    Args:
        conv (nn.Conv1d): the convolution.
        bn (nn.BatchNorm1d): the batch norm.
        relu (nn.ReLU): the activation.

    Example:
        >>> len(ConvBnReLU1d(nn.Conv1d(1, 2, 3), nn.BatchNorm1d(2), nn.ReLU()))
        3
    """

    _TYPES = (nn.Conv1d, nn.BatchNorm1d, nn.ReLU)


class ConvBnReLU2d(_FusedModule):
    """``Conv2d``, ``BatchNorm2d`` and ``ReLU``, fused (for QAT).

    Args:
        conv (nn.Conv2d): the convolution.
        bn (nn.BatchNorm2d): the batch norm.
        relu (nn.ReLU): the activation.

    Example:
        >>> len(ConvBnReLU2d(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU()))
        3
    """

    _TYPES = (nn.Conv2d, nn.BatchNorm2d, nn.ReLU)


class ConvBnReLU3d(_FusedModule):
    """``Conv3d``, ``BatchNorm3d`` and ``ReLU``, fused (for QAT).

    Args:
        conv (nn.Conv3d): the convolution.
        bn (nn.BatchNorm3d): the batch norm.
        relu (nn.ReLU): the activation.

    Example:
        >>> len(ConvBnReLU3d(nn.Conv3d(1, 2, 1), nn.BatchNorm3d(2), nn.ReLU()))
        3
    """

    _TYPES = (nn.Conv3d, nn.BatchNorm3d, nn.ReLU)


class BNReLU2d(_FusedModule):
    """``BatchNorm2d`` followed by ``ReLU``, fused.

    Args:
        batch_norm (nn.BatchNorm2d): the batch norm.
        relu (nn.ReLU): the activation.

    Example:
        >>> len(BNReLU2d(nn.BatchNorm2d(2), nn.ReLU()))
        2
    """

    _TYPES = (nn.BatchNorm2d, nn.ReLU)


class BNReLU3d(_FusedModule):
    """``BatchNorm3d`` followed by ``ReLU``, fused.

    Args:
        batch_norm (nn.BatchNorm3d): the batch norm.
        relu (nn.ReLU): the activation.

    Example:
        >>> len(BNReLU3d(nn.BatchNorm3d(2), nn.ReLU()))
        2
    """

    _TYPES = (nn.BatchNorm3d, nn.ReLU)


class LinearReLU(_FusedModule):
    """``Linear`` followed by ``ReLU``, fused.

    Args:
        linear (nn.Linear): the linear layer.
        relu (nn.ReLU): the activation.

    Example:
        >>> m = LinearReLU(nn.Linear(3, 2), nn.ReLU())
        >>> bool((m(ember.randn(4, 3)) >= 0).all())
        True
    """

    _TYPES = (nn.Linear, nn.ReLU)


class LinearBn1d(_FusedModule):
    """``Linear`` followed by ``BatchNorm1d``, fused (for QAT).

    Args:
        linear (nn.Linear): the linear layer.
        bn (nn.BatchNorm1d): the batch norm.

    Example:
        >>> LinearBn1d(nn.Linear(3, 2), nn.BatchNorm1d(2))[1].num_features
        2
    """

    _TYPES = (nn.Linear, nn.BatchNorm1d)


class LinearLeakyReLU(_FusedModule):
    """``Linear`` followed by ``LeakyReLU``, fused.

    Args:
        linear (nn.Linear): the linear layer.
        leaky_relu (nn.LeakyReLU): the activation.

    Example:
        >>> len(LinearLeakyReLU(nn.Linear(3, 2), nn.LeakyReLU()))
        2
    """

    _TYPES = (nn.Linear, nn.LeakyReLU)


class LinearTanh(_FusedModule):
    """``Linear`` followed by ``Tanh``, fused.

    Args:
        linear (nn.Linear): the linear layer.
        tanh (nn.Tanh): the activation.

    Example:
        >>> len(LinearTanh(nn.Linear(3, 2), nn.Tanh()))
        2
    """

    _TYPES = (nn.Linear, nn.Tanh)


class ConvAdd2d(_FusedModule):
    """``Conv2d`` whose output is added to a second input: ``add(conv(x1), x2)``.

    Args:
        conv (nn.Conv2d): the convolution.
        add (callable): the addition (``ember.add``).

    Example:
        >>> m = ConvAdd2d(nn.Conv2d(1, 1, 1), ember.add)
        >>> m(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 2, 2)).shape
        ember.Size([1, 1, 2, 2])
    """

    def __init__(self, conv, add):
        nn.Sequential.__init__(self, conv)
        self.add = add

    def forward(self, x1, x2):
        return self.add(self[0](x1), x2)


class ConvAddReLU2d(_FusedModule):
    """``Conv2d`` added to a second input, then ``ReLU``: ``relu(add(conv(x1), x2))``.

    Args:
        conv (nn.Conv2d): the convolution.
        add (callable): the addition (``ember.add``).
        relu (nn.ReLU): the activation.

    Example:
        >>> m = ConvAddReLU2d(nn.Conv2d(1, 1, 1), ember.add, nn.ReLU())
        >>> m(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 2, 2)).shape
        ember.Size([1, 1, 2, 2])
    """

    def __init__(self, conv, add, relu):
        nn.Sequential.__init__(self, conv)
        self.add = add
        self.relu = relu

    def forward(self, x1, x2):
        return self.relu(self.add(self[0](x1), x2))
