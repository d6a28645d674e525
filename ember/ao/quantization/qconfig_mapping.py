"""QConfigMapping: qconfigs keyed by module name, name pattern, module type or op
(``torch.ao.quantization.qconfig_mapping``), and the backends' default mappings."""

import warnings
from collections import OrderedDict

import ember

from ... import nn
from ...nn import functional as F
from .fake_quantize import FixedQParamsFakeQuantize, default_weight_fake_quant
from .observer import (
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer, default_placeholder_observer,
    default_weight_observer,
)
from .qconfig import (
    QConfig, default_quint8_weight_qconfig, default_reuse_input_qconfig, get_default_qat_qconfig,
    get_default_qconfig,
)

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping",
           "get_default_qconfig_dict", "get_default_qat_qconfig_dict"]

_GLOBAL_DICT_KEY = ""
_OBJECT_TYPE_DICT_KEY = "object_type"
_MODULE_NAME_REGEX_DICT_KEY = "module_name_regex"
_MODULE_NAME_DICT_KEY = "module_name"
_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY = "module_name_object_type_order"
_STYLE_ORDER = ["global_qconfig", "object_type_qconfigs", "module_name_regex_qconfigs",
                "module_name_qconfigs", "module_name_object_type_order_qconfigs"]


class QConfigMapping:
    """Which qconfig applies where, by precedence (lowest first): global, object type,
    module-name regex, module name, (module name, object type, call index).

    Each ``set_*`` method returns the mapping, so calls chain.

    Example:
        >>> qm = QConfigMapping().set_global(default_qconfig).set_object_type(nn.Linear, None)
        >>> qm.object_type_qconfigs[nn.Linear] is None
        True
    """

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = OrderedDict()
        self.module_name_regex_qconfigs = OrderedDict()
        self.module_name_qconfigs = OrderedDict()
        self.module_name_object_type_order_qconfigs = OrderedDict()

    def set_global(self, global_qconfig):
        """Set the qconfig for everything not matched otherwise."""
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        """Set the qconfig for a module class, function or method name."""
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex, qconfig):
        """Set the qconfig for modules whose qualified name matches a regex (first set wins)."""
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name, qconfig):
        """Set the qconfig for the module with this qualified name."""
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(self, module_name, object_type, index, qconfig):
        """Set the qconfig for the ``index``-th call of ``object_type`` inside ``module_name``."""
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self):
        out = type(self).__name__ + " ("
        for style in _STYLE_ORDER:
            out += f"\n {style}"
            qconfigs = getattr(self, style)
            if isinstance(qconfigs, OrderedDict) and len(qconfigs) > 0:
                for key, qconfig in qconfigs.items():
                    out += f"\n  {key}: {qconfig}"
            else:
                out += f"\n  {qconfigs}"
        return out + "\n)"

    def to_dict(self):
        """The mapping as the older ``qconfig_dict`` form.

        Returns:
            dict: ``{"": global, "object_type": [(type, qconfig), ...], ...}``.
        """
        return {
            _GLOBAL_DICT_KEY: self.global_qconfig,
            _OBJECT_TYPE_DICT_KEY: list(self.object_type_qconfigs.items()),
            _MODULE_NAME_REGEX_DICT_KEY: list(self.module_name_regex_qconfigs.items()),
            _MODULE_NAME_DICT_KEY: list(self.module_name_qconfigs.items()),
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY: [
                (*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()],
        }

    @classmethod
    def from_dict(cls, qconfig_dict):
        """Build a mapping from the ``qconfig_dict`` form (see :meth:`to_dict`)."""
        m = cls()
        if _GLOBAL_DICT_KEY in qconfig_dict:
            m.set_global(qconfig_dict[_GLOBAL_DICT_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_DICT_KEY, []):
            m.set_object_type(object_type, qconfig)
        for regex, qconfig in qconfig_dict.get(_MODULE_NAME_REGEX_DICT_KEY, []):
            m.set_module_name_regex(regex, qconfig)
        for name, qconfig in qconfig_dict.get(_MODULE_NAME_DICT_KEY, []):
            m.set_module_name(name, qconfig)
        for name, object_type, index, qconfig in qconfig_dict.get(
                _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY, []):
            m.set_module_name_object_type_order(name, object_type, index, qconfig)
        return m


def _fixed_qparams_ops():
    zero_one = default_fixed_qparams_range_0to1_observer
    neg_one = default_fixed_qparams_range_neg1to1_observer
    return [(nn.Hardsigmoid, zero_one), (F.hardsigmoid, zero_one), ("hardsigmoid", zero_one),
            ("hardsigmoid_", zero_one), (nn.Sigmoid, zero_one), (ember.sigmoid, zero_one),
            ("sigmoid", zero_one), ("sigmoid_", zero_one), (nn.Softmax, zero_one),
            (nn.Tanh, neg_one), (ember.tanh, neg_one), ("tanh", neg_one), ("tanh_", neg_one)]


def _default_mapping(is_qat, backend, version):
    if is_qat:
        qconfig = get_default_qat_qconfig(backend, version)
        default_weight = default_weight_fake_quant
    else:
        qconfig = get_default_qconfig(backend, version)
        default_weight = default_weight_observer
    transpose = QConfig(activation=qconfig.activation, weight=default_weight) \
        if backend in ("fbgemm", "x86") else qconfig
    layernorm = QConfig(activation=qconfig.activation, weight=default_placeholder_observer)
    m = (QConfigMapping().set_global(qconfig)
         .set_object_type("reshape", default_reuse_input_qconfig)
         .set_object_type(nn.ConvTranspose1d, transpose)
         .set_object_type(nn.ConvTranspose2d, transpose)
         .set_object_type(nn.ConvTranspose3d, transpose)
         .set_object_type(F.conv_transpose1d, transpose)
         .set_object_type(F.conv_transpose2d, transpose)
         .set_object_type(F.conv_transpose3d, transpose)
         .set_object_type(F.layer_norm, layernorm)
         .set_object_type(nn.LayerNorm, layernorm)
         .set_object_type(nn.PReLU, default_quint8_weight_qconfig))
    for op, observer in _fixed_qparams_ops():
        act = FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat else observer
        m.set_object_type(op, QConfig(activation=act, weight=default_weight))
    return m


def get_default_qconfig_mapping(backend="x86", version=0):
    """The post-training quantization mapping for a backend: the backend's qconfig globally,
    fixed output ranges for sigmoid/tanh/softmax/hardsigmoid, and special cases for
    transposed convolutions, layer norm, PReLU and reshape.

    Args:
        backend (str): ``"x86"``, ``"fbgemm"``, ``"qnnpack"`` or ``"onednn"``.
        version (int): 0.

    Returns:
        QConfigMapping: the mapping.

    Example:
        >>> get_default_qconfig_mapping("qnnpack").global_qconfig.weight is default_weight_observer
        True
    """
    return _default_mapping(False, backend, version)


def get_default_qat_qconfig_mapping(backend="x86", version=1):
    """The quantization-aware-training mapping for a backend (see
    :func:`get_default_qconfig_mapping`).

    Args:
        backend (str): ``"x86"``, ``"fbgemm"``, ``"qnnpack"`` or ``"onednn"``.
        version (int): 0 or 1.

    Returns:
        QConfigMapping: the mapping.

    Example:
        >>> len(get_default_qat_qconfig_mapping().object_type_qconfigs) > 10
        True
    """
    return _default_mapping(True, backend, version)



def get_default_qconfig_dict(backend="x86", version=0):
    """Deprecated: :func:`get_default_qconfig_mapping` as a ``qconfig_dict``.

    Args:
        backend (str): the backend.
        version (int): 0.

    Returns:
        dict: ``get_default_qconfig_mapping(backend, version).to_dict()``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     d = get_default_qconfig_dict()
        >>> sorted(d)[:2]
        ['', 'module_name']
    """
    warnings.warn("`torch.ao.quantization.get_default_qconfig_dict` is deprecated and will be "
                  "removed in a future version. Please use "
                  "`torch.ao.quantization.get_default_qconfig_mapping` instead.",
                  FutureWarning, stacklevel=2)
    return get_default_qconfig_mapping(backend, version).to_dict()


def get_default_qat_qconfig_dict(backend="x86", version=1):
    """Deprecated: :func:`get_default_qat_qconfig_mapping` as a ``qconfig_dict``.

    Args:
        backend (str): the backend.
        version (int): 0 or 1.

    Returns:
        dict: ``get_default_qat_qconfig_mapping(backend, version).to_dict()``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     d = get_default_qat_qconfig_dict()
        >>> d[""] is not None
        True
    """
    warnings.warn("`torch.ao.quantization.get_default_qat_qconfig_dict` is deprecated and will "
                  "be removed in a future version. Please use "
                  "`torch.ao.quantization.get_default_qat_qconfig_mapping` instead.",
                  FutureWarning, stacklevel=2)
    return get_default_qat_qconfig_mapping(backend, version).to_dict()
