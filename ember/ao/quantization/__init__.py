"""ember.ao.quantization: eager-mode quantization, as ``torch.ao.quantization``.

Observers and fake-quantize modules (float side), qconfigs saying which to use, and the
workflow functions: fuse_modules → prepare / prepare_qat → calibrate or train → convert.
See NOTE [ Eager quantization workflow ] in quantize.py.
"""

from .fake_quantize import *  # noqa: F403
from .fake_quantize import __all__ as _fq_all
from .fuse_modules import fuse_known_modules, fuse_modules, fuse_modules_qat
from .fuser_method_mappings import (
    fuse_conv_bn, fuse_conv_bn_relu, fuse_convtranspose_bn, fuse_linear_bn, get_fuser_method,
)
from .observer import *  # noqa: F403
from .observer import __all__ as _obs_all
from .qconfig import *  # noqa: F403
from .qconfig import __all__ as _qconfig_all
from .qconfig_mapping import (
    QConfigMapping, get_default_qat_qconfig_dict, get_default_qat_qconfig_mapping,
    get_default_qconfig_dict, get_default_qconfig_mapping,
)
from .quantization_mappings import *  # noqa: F403
from .quantization_mappings import __all__ as _mappings_all
from .quantize import (
    add_quant_dequant, convert, default_eval_fn, prepare, prepare_qat, propagate_qconfig_,
    quantize, quantize_dynamic, quantize_qat, swap_module,
)
from .stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = sorted(set(_fq_all) | set(_obs_all) | set(_qconfig_all) | set(_mappings_all) | {
    "fuse_known_modules", "fuse_modules", "fuse_modules_qat", "fuse_conv_bn",
    "fuse_conv_bn_relu", "fuse_convtranspose_bn", "fuse_linear_bn", "get_fuser_method",
    "add_quant_dequant", "convert", "prepare", "prepare_qat", "propagate_qconfig_",
    "quantize", "quantize_dynamic", "quantize_qat", "swap_module", "DeQuantStub", "QuantStub",
    "QuantWrapper",
    "QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping",
    "get_default_qconfig_dict", "get_default_qat_qconfig_dict", "default_eval_fn",
})
