"""Which float module becomes which QAT or quantized module
(``torch.ao.quantization.quantization_mappings``)."""

import copy

from ... import nn
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.quantized import dynamic as nnqd
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from .fake_quantize import (
    default_fixed_qparams_range_0to1_fake_quant, default_fixed_qparams_range_neg1to1_fake_quant,
)
from .stubs import DeQuantStub, QuantStub

__all__ = ["DEFAULT_QAT_MODULE_MAPPINGS", "DEFAULT_MODULE_TO_ACT_POST_PROCESS",
           "DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "get_default_qat_module_mappings",
           "get_default_qconfig_propagation_list", "get_default_static_quant_module_mappings",
           "get_static_quant_module_class", "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS",
           "get_default_dynamic_quant_module_mappings", "get_dynamic_quant_module_class"]

# the static conversions ember has quantized modules for (a subset of PyTorch's table; an
# observed module of another class stays float after convert)
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Conv2d: nnq.Conv2d,
    nn.Linear: nnq.Linear,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.LinearReLU: nniq.LinearReLU,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear,
    nnqat.Conv2d: nnq.Conv2d,
    nnq.FloatFunctional: nnq.QFunctional,
}

DEFAULT_QAT_MODULE_MAPPINGS = {
    nn.Conv2d: nnqat.Conv2d,
    nn.Conv3d: nnqat.Conv3d,
    nn.Linear: nnqat.Linear,
    nni.ConvBn1d: nniqat.ConvBn1d,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBn3d: nniqat.ConvBn3d,
    nni.ConvBnReLU1d: nniqat.ConvBnReLU1d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvBnReLU3d: nniqat.ConvBnReLU3d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.ConvReLU3d: nniqat.ConvReLU3d,
    nni.LinearReLU: nniqat.LinearReLU,
    nni.LinearBn1d: nniqat.LinearBn1d,
}

# the dynamic conversions ember has modules for (PyTorch also converts the recurrent layers
# and embeddings)
DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {
    nn.Linear: nnqd.Linear,
    nn.LSTM: nnqd.LSTM,
    nni.LinearReLU: nnqd.Linear,
}

DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}

# NOTE [ Which modules get observers ]
# prepare() puts an output observer on each leaf module whose class some conversion knows:
# the float classes that static or dynamic quantization swaps, the QAT classes, and
# Sequential. The float side is listed here on its own so that prepare needs none of the
# quantized modules; convert's mappings (get_default_static_quant_module_mappings) use the
# same classes as keys. nn.ReLU is not among them: it runs on quantized tensors as it is.
_STATIC_QUANT_FLOAT_TYPES = {
    QuantStub, DeQuantStub, nn.BatchNorm2d, nn.BatchNorm3d, nn.Dropout, nn.Conv1d, nn.Conv2d,
    nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.ELU,
    nn.Embedding, nn.EmbeddingBag, nn.GroupNorm, nn.Hardswish, nn.InstanceNorm1d,
    nn.InstanceNorm2d, nn.InstanceNorm3d, nn.LayerNorm, nn.LeakyReLU, nn.Linear, nn.ReLU6,
    nn.PReLU, nni.BNReLU2d, nni.BNReLU3d, nni.ConvReLU1d, nni.ConvReLU2d, nni.ConvReLU3d,
    nni.ConvAdd2d, nni.ConvAddReLU2d, nni.LinearReLU, nni.LinearLeakyReLU, nni.LinearTanh,
    nniqat.ConvBn1d, nniqat.ConvBn2d, nniqat.ConvBn3d, nniqat.ConvBnReLU1d,
    nniqat.ConvBnReLU2d, nniqat.ConvBnReLU3d, nniqat.ConvReLU2d, nniqat.ConvReLU3d,
    nniqat.LinearReLU, nniqat.LinearBn1d, nnqat.Linear, nnqat.Conv2d, nnqat.Conv3d,
}
_DYNAMIC_QUANT_FLOAT_TYPES = {
    nn.GRUCell, nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nni.LinearReLU,
    nn.EmbeddingBag, nn.Embedding,
}


def get_default_qat_module_mappings():
    """A copy of the float → QAT module mapping that ``prepare_qat`` uses.

    Returns:
        dict: float class → QAT class.

    Example:
        >>> get_default_qat_module_mappings()[nn.Linear].__module__
        'ember.ao.nn.qat.modules.linear'
    """
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_static_quant_module_mappings():
    """A copy of the float/QAT → quantized module mapping that ``convert`` uses.

    Returns:
        dict: class → quantized class.

    Example:
        >>> get_default_static_quant_module_mappings()[nn.Linear].__name__
        'Linear'
    """
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference=False):
    """The quantized class ``convert`` swaps ``float_module_class`` for.

    Args:
        float_module_class (type): the float (or QAT) class.
        additional_static_quant_mapping (dict, optional): more entries, which win.
        is_reference (bool): must be False.

    Returns:
        type: the quantized class.

    Raises:
        AssertionError: when the class has no quantized counterpart.

    Example:
        >>> get_static_quant_module_class(nn.Conv2d).__name__
        'Conv2d'
    """
    mapping = {**DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, **(additional_static_quant_mapping or {})}
    cls = mapping.get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             "a corresponding quantized module class")
    return copy.deepcopy(cls)


def get_default_dynamic_quant_module_mappings():
    """A copy of the float → dynamic quantized module mapping ``quantize_dynamic`` uses.

    Returns:
        dict: float class → dynamic quantized class.

    Example:
        >>> get_default_dynamic_quant_module_mappings()[nn.Linear]._get_name(None)
        'DynamicQuantizedLinear'
    """
    return copy.deepcopy(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    """The dynamic quantized class for ``float_module_class``.

    Args:
        float_module_class (type): the float class.
        additional_dynamic_quant_mapping (dict, optional): more entries, which win.

    Returns:
        type: the dynamic quantized class.

    Raises:
        AssertionError: when there is none.

    Example:
        >>> get_dynamic_quant_module_class(nn.Linear).__module__
        'ember.ao.nn.quantized.dynamic.linear'
    """
    mapping = {**DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS,
               **(additional_dynamic_quant_mapping or {})}
    cls = mapping.get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             "a corresponding quantized module class")
    return copy.deepcopy(cls)


def get_default_qconfig_propagation_list():
    """The module classes that ``prepare`` gives an output observer (when they are leaves
    with a qconfig). See NOTE [ Which modules get observers ].

    Returns:
        set of type: the classes.

    Example:
        >>> nn.Linear in get_default_qconfig_propagation_list()
        True
        >>> nn.ReLU in get_default_qconfig_propagation_list()
        False
    """
    return (set(_STATIC_QUANT_FLOAT_TYPES) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | set(_DYNAMIC_QUANT_FLOAT_TYPES) | {nn.Sequential})


def _has_special_act_post_process(module):
    return module.training and type(module) in DEFAULT_MODULE_TO_ACT_POST_PROCESS


def _get_special_act_post_process(module):
    return DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type(module))
