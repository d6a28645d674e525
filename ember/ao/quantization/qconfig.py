"""QConfig: which observer (or fake-quantize) factories watch a module's activations and its
weight (``torch.ao.quantization.qconfig``), the ready-made ones, and the per-backend defaults.
"""

import copy
import warnings
from collections import namedtuple

from ... import nn
from ..._core import dtype as _dt
from .fake_quantize import (
    FakeQuantize, FakeQuantizeBase, FusedMovingAvgObsFakeQuantize, default_dynamic_fake_quant,
    default_embedding_fake_quant, default_embedding_fake_quant_4bit, default_fake_quant,
    default_fused_act_fake_quant, default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
    default_weight_fake_quant, fused_per_channel_wt_fake_quant_range_neg_127_to_127,
    fused_wt_fake_quant_range_neg_127_to_127,
)
from .observer import (
    HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver, NoopObserver,
    ObserverBase, PlaceholderObserver, _PartialWrapper, default_debug_observer,
    default_dynamic_quant_observer, default_float_qparams_observer,
    default_float_qparams_observer_4bit, default_observer, default_per_channel_weight_observer,
    default_placeholder_observer, default_reuse_input_observer, default_weight_observer,
    per_channel_weight_observer_range_neg_127_to_127, weight_observer_range_neg_127_to_127,
)

__all__ = [
    "QConfig", "QConfigDynamic", "QConfigAny", "default_qconfig", "default_debug_qconfig",
    "default_per_channel_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
    "float16_static_qconfig", "per_channel_dynamic_qconfig",
    "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit",
    "default_quint8_weight_qconfig", "default_qat_qconfig", "default_dynamic_qat_qconfig",
    "default_weight_only_qconfig", "default_activation_only_qconfig", "default_qat_qconfig_v2",
    "default_reuse_input_qconfig", "default_symmetric_qnnpack_qconfig",
    "default_per_channel_symmetric_qnnpack_qconfig", "default_symmetric_qnnpack_qat_qconfig",
    "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_embedding_qat_qconfig",
    "default_embedding_qat_qconfig_4bit", "get_default_qconfig", "get_default_qat_qconfig",
    "qconfig_equals",
]

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to observe a module: ``activation`` and ``weight`` are factories (classes or
    ``with_args`` partials) that make a fresh observer or fake-quantize module each call.

    Args:
        activation: factory for the output's observer.
        weight: factory for the weight's observer.

    Raises:
        ValueError: when given observer instances rather than factories.

    Example:
        >>> qc = QConfig(activation=MinMaxObserver.with_args(dtype=ember.quint8),
        ...              weight=default_weight_observer)
        >>> type(qc.activation()).__name__
        'MinMaxObserver'
    """

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    """The old dynamic-quantization config (deprecated: use :class:`QConfig`).

    Args:
        activation: factory for the activation observer (``nn.Identity``).
        weight: factory for the weight observer (``nn.Identity``).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     qc = QConfigDynamic(weight=default_weight_observer)
        >>> qc.activation is nn.Identity
        True
    """

    __slots__ = ()

    def __new__(cls, activation=nn.Identity, weight=nn.Identity):
        warnings.warn("`QConfigDynamic` is going to be deprecated in PyTorch 1.12, please use "
                      "`QConfig` instead", FutureWarning, stacklevel=2)
        if isinstance(weight, nn.Module):
            raise ValueError("QConfigDynamic received observer instance, please pass observer "
                             "class instead. Use MyObserver.with_args(x=1) to override "
                             "arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigAny = QConfig | None

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_debug_qconfig = QConfig(weight=default_weight_observer,
                                activation=default_debug_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=_dt.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=_dt.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=_dt.float16),
                                 weight=PlaceholderObserver.with_args(dtype=_dt.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                 weight=default_float_qparams_observer_4bit)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=nn.Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=nn.Identity)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)
default_reuse_input_qconfig = QConfig(activation=default_reuse_input_observer,
                                      weight=NoopObserver)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=_dt.qint8, reduce_range=False, eps=2 ** -12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=_dt.qint8, reduce_range=False, eps=2 ** -12),
    weight=per_channel_weight_observer_range_neg_127_to_127)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=_dt.float32),
                                        weight=default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(
    activation=NoopObserver.with_args(dtype=_dt.float32),
    weight=default_embedding_fake_quant_4bit)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)
default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dt.qint8,
        reduce_range=False, eps=2 ** -12),
    weight=fused_wt_fake_quant_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dt.qint8,
        reduce_range=False, eps=2 ** -12),
    weight=fused_per_channel_wt_fake_quant_range_neg_127_to_127)


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def get_default_qconfig(backend: str = "x86", version: int = 0):
    """The post-training (static) quantization config for a backend.

    fbgemm and x86 observe activations with a 7-bit histogram observer (``reduce_range``) and
    weights per channel; qnnpack uses the full 8 bits and one weight scale; onednn the full
    8 bits and per-channel weights.

    Args:
        backend (str): ``"x86"`` (default), ``"fbgemm"``, ``"qnnpack"`` or ``"onednn"``.
        version (int): must be 0.

    Returns:
        QConfig: the backend's default.

    Example:
        >>> get_default_qconfig("qnnpack").weight is default_weight_observer
        True
    """
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    reduce_range = backend != "onednn"
    return QConfig(activation=HistogramObserver.with_args(reduce_range=reduce_range),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1):
    """The quantization-aware-training config for a backend.

    Version 1 (the default) uses the fused observer + fake-quantize modules, version 0 the
    separate ones; the ranges are those of :func:`get_default_qconfig`.

    Args:
        backend (str): ``"x86"`` (default), ``"fbgemm"``, ``"qnnpack"`` or ``"onednn"``.
        version (int): 0 or 1.

    Returns:
        QConfig: the backend's QAT default.

    Example:
        >>> get_default_qat_qconfig("qnnpack").weight is default_fused_wt_fake_quant
        True
    """
    _check_backend(backend)
    if version == 0:
        fq, per_channel_w, per_tensor_w = (FakeQuantize, default_per_channel_weight_fake_quant,
                                           default_weight_fake_quant)
    elif version == 1:
        fq, per_channel_w, per_tensor_w = (FusedMovingAvgObsFakeQuantize,
                                           default_fused_per_channel_wt_fake_quant,
                                           default_fused_wt_fake_quant)
    else:
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    if backend == "onednn":
        act = fq.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    else:
        act = fq.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                           reduce_range=backend != "qnnpack")
    return QConfig(activation=act,
                   weight=per_tensor_w if backend == "qnnpack" else per_channel_w)


def _assert_valid_qconfig(qconfig, mod):
    if qconfig is None:
        return
    if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)) \
            and qconfig.weight is not None:
        from .observer import MovingAveragePerChannelMinMaxObserver, PerChannelMinMaxObserver

        if isinstance(qconfig.weight(), (PerChannelMinMaxObserver,
                                         MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Per channel weight observer is not supported yet for "
                                 "ConvTranspose{n}d.")


def _ctr_equals(a, b):
    if isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper):
        ka, kb = copy.copy(a.p.keywords), copy.copy(b.p.keywords)
        same = True
        if "observer" in ka and "observer" in kb:
            same = _ctr_equals(ka.pop("observer"), kb.pop("observer"))
        return same and ka == kb and a.p.func == b.p.func and a.p.args == b.p.args
    return a == b


def qconfig_equals(q1, q2) -> bool:
    """Whether two qconfigs make the same observers (``with_args`` partials compared by their
    class and arguments).

    Args:
        q1, q2 (QConfig or None): the configs.

    Returns:
        bool: True when they are equal.

    Example:
        >>> qconfig_equals(get_default_qconfig("x86"), get_default_qconfig("x86"))
        True
    """
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return _ctr_equals(q1.activation, q2.activation) and _ctr_equals(q1.weight, q2.weight)
    except AttributeError:
        return q1 == q2


def _activation_is_memoryless(qconfig):
    act = qconfig.activation()
    if isinstance(act, FakeQuantizeBase) and hasattr(act, "activation_post_process"):
        act = act.activation_post_process
    return isinstance(act, MovingAverageMinMaxObserver) and act.averaging_constant == 1


def _is_observer_or_fq(m):
    return isinstance(m, (ObserverBase, FakeQuantizeBase))
