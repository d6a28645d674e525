"""Fake-quantize modules (``torch.ao.quantization.fake_quantize``): an observer plus
``ember.fake_quantize_per_*_affine``, used by quantization-aware training.
"""

import math

import numpy as np

import ember

from ... import nn
from ..._core import dtype as _dt
from .. import _qscheme as _qs
from .._fake_quant_ops import (
    fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine,
)
from .observer import (
    FixedQParamsObserver, HistogramObserver, MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _name_factories, _with_args, _with_callable_args, default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
)

__all__ = [
    "FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
    "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "disable_observer",
    "enable_fake_quant", "enable_observer", "default_fake_quant", "default_weight_fake_quant",
    "default_dynamic_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant", "default_symmetric_fixed_qparams_fake_quant",
    "default_affine_fixed_qparams_fake_quant", "default_per_channel_weight_fake_quant",
    "default_embedding_fake_quant", "default_embedding_fake_quant_4bit",
    "default_histogram_fake_quant", "default_fused_act_fake_quant",
    "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "fused_wt_fake_quant_range_neg_127_to_127",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
]

_PER_CHANNEL = (_qs.per_channel_affine, _qs.per_channel_symmetric,
                _qs.per_channel_affine_float_qparams)
_PER_TENSOR = (_qs.per_tensor_affine, _qs.per_tensor_symmetric)
_INT_RANGE = {_dt.qint8: (-128, 127), _dt.quint8: (0, 255), _dt.qint32: (-2 ** 31, 2 ** 31 - 1),
              _dt.quint4x2: (0, 15), _dt.int8: (-128, 127), _dt.uint8: (0, 255),
              _dt.int16: (-2 ** 15, 2 ** 15 - 1), _dt.int32: (-2 ** 31, 2 ** 31 - 1),
              _dt.uint16: (0, 2 ** 16 - 1)}


class FakeQuantizeBase(nn.Module):
    """Base class of the fake-quantize modules: holds the two switches, the buffers
    ``fake_quant_enabled`` and ``observer_enabled`` (uint8, one element each).

    Example:
        >>> fq = FakeQuantize()
        >>> fq.disable_observer(); int(fq.observer_enabled[0])
        0
    """

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define calculate_qparams")

    def enable_fake_quant(self, enabled: bool = True) -> None:
        """Switch fake quantization on (or off with ``enabled=False``)."""
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        """Switch fake quantization off: the module passes its input through."""
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        """Switch statistics collection on (or off with ``enabled=False``)."""
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self):
        """Freeze the scale and zero point: stop observing."""
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs):
        return _with_args(cls, **kwargs)

    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    """Observe the input, then fake-quantize it with the observer's parameters:
    ``(clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale``.

    Args:
        observer: the observer class or factory (``MovingAverageMinMaxObserver``).
        quant_min, quant_max (int, optional): the integer range, passed to the observer.
        is_dynamic (bool): dynamic quantization.
        **observer_kwargs: more arguments for the observer (``dtype``, ``qscheme``, ...).

    Example:
        >>> fq = FakeQuantize(quant_min=0, quant_max=255)
        >>> fq(ember.tensor([0.0, 0.5, 1.0]))
        tensor([0.0000, 0.4980, 1.0000])
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", _dt.quint8)
            if hasattr(observer, "p"):
                dtype = getattr(observer.p, "keywords", {}).get("dtype", dtype)
            lo, hi = _INT_RANGE.get(dtype, (quant_min, quant_max))
            if lo > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > hi:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zp_dtype = ember.float32 if self.activation_post_process.qscheme \
            is _qs.per_channel_affine_float_qparams else ember.int32
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float32))
        self.register_buffer("zero_point", ember.tensor([0], dtype=zp_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if self.qscheme not in _PER_CHANNEL + _PER_TENSOR:
            raise AssertionError("Only per channel and per tensor quantization are supported "
                                 f"in fake quantize got qscheme: {self.qscheme}")
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    def calculate_qparams(self):
        """The observer's ``(scale, zero_point)``."""
        return self.activation_post_process.calculate_qparams()

    def _update_qparams(self, scale, zero_point):
        if self.scale.shape != scale.shape:
            self.scale.resize_(scale.shape)
            self.zero_point.resize_(zero_point.shape)
        self.scale.copy_(scale)
        self.zero_point.copy_(zero_point)

    def forward(self, X):
        """Observe ``X`` (when the observer is on), then fake-quantize it (when that is on)."""
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            self._update_qparams(*self.calculate_qparams())
        if int(self.fake_quant_enabled[0]) == 1:
            qmin = self.activation_post_process.quant_min
            qmax = self.activation_post_process.quant_max
            if self.is_per_channel:
                X = fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                     self.ch_axis, qmin, qmax)
            else:
                X = fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, qmin, qmax)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"dtype={self.dtype}, qscheme={self.qscheme}, ch_axis={self.ch_axis}, "
                f"scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # scale and zero_point may be per channel in the saved state: take their shapes first
        for name in ("scale", "zero_point"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake-quantize with fixed parameters (those of a :class:`FixedQParamsObserver`), for
    outputs of known range such as sigmoid's.

    Args:
        observer: a ``FixedQParamsObserver`` factory.

    Example:
        >>> fq = default_fixed_qparams_range_0to1_fake_quant()
        >>> fq(ember.tensor([0.3]))
        tensor([0.3008])
    """

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 f"{FixedQParamsObserver.__name__}")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if self.qscheme not in _PER_TENSOR:
            raise AssertionError("Only per tensor quantization is supported "
                                 f"FixedQParamsFakeQuantize module, got qscheme:{self.qscheme}")

    def calculate_qparams(self):
        """The fixed ``(scale, zero_point)``."""
        return self.scale, self.zero_point

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}")


# NOTE [ Fused observer and fake quantize ]
# FusedMovingAvgObsFakeQuantize is PyTorch's one-kernel form of FakeQuantize with a moving
# average observer, and its kernel picks scale and zero point its own way, not with the
# observer's formula (NOTE [ Affine quantization parameters ]): in double precision, widening
# [min, max] to hold 0, symmetric schemes first stretching the range to the signed grid and
# fixing the zero point to the grid's middle, scales below 6.1e-5 raised to it, and the zero
# point taken from whichever end gives the smaller rounding error. The two can differ in the
# last bit; QAT numbers match PyTorch's only if this module follows the kernel.
_SMALL_SCALE = np.float32(6.1e-5)


def _choose_qparams(lo, hi, qmin, qmax, symmetric):
    lo, hi = np.float32(lo), np.float32(hi)
    if lo < 0 and hi > 0 and symmetric:
        sym_min = -((qmax - qmin) // 2 + 1)
        sym_max = (qmax - qmin) // 2
        max_scale = max(abs(float(lo) / sym_min), abs(float(hi) / sym_max))
        lo, hi = np.float32(max_scale * sym_min), np.float32(max_scale * sym_max)
    lo, hi = min(lo, np.float32(0)), max(hi, np.float32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(np.float32(1) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        org = scale
        scale = float(_SMALL_SCALE)
        if lo == 0:
            hi = np.float32(_SMALL_SCALE * (qmax - qmin))
        elif hi == 0:
            lo = np.float32(-_SMALL_SCALE * (qmax - qmin))
        else:
            amp = np.float32(_SMALL_SCALE / np.float32(org))
            lo, hi = lo * amp, hi * amp
    zp_from_min = qmin - float(lo) / scale
    zp_from_max = qmax - float(hi) / scale
    err_min = abs(qmin) - abs(float(lo) / scale)
    err_max = abs(qmax) - abs(float(hi) / scale)
    zp = zp_from_min if err_min < err_max else zp_from_max
    if lo < 0 and hi > 0 and symmetric:
        zp = (qmin + qmax) / 2
    zp = qmin if zp < qmin else qmax if zp > qmax else int(np.rint(zp))
    return np.float32(scale), zp


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """Moving-average observation and fake quantization in one step, as PyTorch's fused
    kernel computes them (see NOTE [ Fused observer and fake quantize ]).

    Args:
        observer: ``MovingAverageMinMaxObserver`` or ``MovingAveragePerChannelMinMaxObserver``.
        quant_min, quant_max (int): the integer range (0, 255).
        **observer_kwargs: more arguments for the observer.

    Example:
        >>> fq = FusedMovingAvgObsFakeQuantize()
        >>> fq(ember.tensor([0.0, 0.5, 1.0]))
        tensor([0.0000, 0.4980, 1.0000])
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.int64))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.int64))
        self.is_symmetric_quant = self.qscheme in (_qs.per_tensor_symmetric,
                                                   _qs.per_channel_symmetric)

    def calculate_qparams(self):
        """The observer's ``(scale, zero_point)`` (the observer's formula, not the kernel's)."""
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={self.activation_post_process.reduce_range}")

    def forward(self, X):
        """Update the moving range and qparams (observer on), then fake-quantize (if on)."""
        obs = self.activation_post_process
        qmin, qmax = obs.quant_min, obs.quant_max
        if int(self.observer_enabled[0]) == 1:
            c = obs.averaging_constant
            if self.is_per_channel:
                lo, hi = obs._channel_aminmax(X.detach())
                if obs.min_val.numel() != 0:
                    lo = obs.min_val + c * (lo - obs.min_val)
                    hi = obs.max_val + c * (hi - obs.max_val)
                obs._set(lo, hi)
                pairs = [_choose_qparams(a, b, qmin, qmax, self.is_symmetric_quant)
                         for a, b in zip(lo.tolist(), hi.tolist())]
                scale = ember.tensor([p[0] for p in pairs], dtype=ember.float32)
                zero_point = ember.tensor([p[1] for p in pairs], dtype=ember.int32)
            else:
                lo, hi = ember.aminmax(X.detach().to(ember.float32))
                if not math.isinf(float(obs.min_val)):
                    lo = obs.min_val + c * (lo - obs.min_val)
                if not math.isinf(float(obs.max_val)):
                    hi = obs.max_val + c * (hi - obs.max_val)
                obs.min_val.copy_(lo)
                obs.max_val.copy_(hi)
                s, z = _choose_qparams(float(lo), float(hi), qmin, qmax,
                                       self.is_symmetric_quant)
                scale = ember.tensor([float(s)], dtype=ember.float32)
                zero_point = ember.tensor([z], dtype=ember.int32)
            self._update_qparams(scale, zero_point)
        if int(self.fake_quant_enabled[0]) == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                        self.ch_axis, qmin, qmax)
            return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, qmin, qmax)
        return X


def _is_fake_quant(mod):
    return isinstance(mod, FakeQuantizeBase)


def disable_fake_quant(mod):
    """Switch fake quantization off in ``mod`` if it is a fake-quantize module (for
    ``model.apply(disable_fake_quant)``).

    Args:
        mod (nn.Module): any module.

    Example:
        >>> fq = FakeQuantize(); disable_fake_quant(fq); int(fq.fake_quant_enabled[0])
        0
    """
    if _is_fake_quant(mod):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    """Switch fake quantization on in ``mod`` if it is a fake-quantize module.

    Args:
        mod (nn.Module): any module.

    Example:
        >>> fq = FakeQuantize(); enable_fake_quant(fq); int(fq.fake_quant_enabled[0])
        1
    """
    if _is_fake_quant(mod):
        mod.enable_fake_quant()


def disable_observer(mod):
    """Stop observing in ``mod`` if it is a fake-quantize module (freezes its qparams).

    Args:
        mod (nn.Module): any module.

    Example:
        >>> fq = FakeQuantize(); disable_observer(fq); int(fq.observer_enabled[0])
        0
    """
    if _is_fake_quant(mod):
        mod.disable_observer()


def enable_observer(mod):
    """Start observing in ``mod`` if it is a fake-quantize module.

    Args:
        mod (nn.Module): any module.

    Example:
        >>> fq = FakeQuantize(); enable_observer(fq); int(fq.observer_enabled[0])
        1
    """
    if _is_fake_quant(mod):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=_dt.quint8,
    qscheme=_qs.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dt.qint8,
    qscheme=_qs.per_tensor_symmetric, reduce_range=False)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=_dt.quint8, averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=_dt.qint8, qscheme=_qs.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=_qs.per_channel_affine_float_qparams, dtype=_dt.quint8, quant_min=0,
    quant_max=255, ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=_qs.per_channel_affine_float_qparams, ch_axis=0, dtype=_dt.quint4x2,
    averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=_dt.quint8,
    qscheme=_qs.per_tensor_affine, reduce_range=True)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=_dt.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dt.qint8,
    qscheme=_qs.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=_dt.qint8, qscheme=_qs.per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=_dt.qint8,
    qscheme=_qs.per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=_dt.qint8, qscheme=_qs.per_channel_symmetric, eps=2 ** -12)

_name_factories(globals(), "ember.ao.quantization")
