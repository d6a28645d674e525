"""Observers: modules that watch the values flowing through a model and choose a scale and a
zero point for quantizing them (``torch.ao.quantization.observer``).

Every observer passes its input through unchanged; ``calculate_qparams()`` turns what it saw
into ``(scale, zero_point)``. See NOTE [ Affine quantization parameters ].
"""

import functools
import warnings

import numpy as np

import ember

from ... import nn
from ..._core import dtype as _dt
from .. import _qscheme as _qs

__all__ = [
    "ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
    "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "PlaceholderObserver",
    "NoopObserver", "RecordingObserver", "FixedQParamsObserver", "ReuseInputObserver",
    "default_observer", "default_placeholder_observer", "default_debug_observer",
    "default_weight_observer", "default_histogram_observer", "default_per_channel_weight_observer",
    "default_dynamic_quant_observer", "default_float_qparams_observer",
    "default_float_qparams_observer_4bit", "default_fixed_qparams_range_neg1to1_observer",
    "default_fixed_qparams_range_0to1_observer", "default_reuse_input_observer",
    "weight_observer_range_neg_127_to_127", "per_channel_weight_observer_range_neg_127_to_127",
    "default_symmetric_fixed_qparams_observer", "default_affine_fixed_qparams_observer",
    "get_observer_state_dict", "load_observer_state_dict",
]

_EPS = float(np.finfo(np.float32).eps)

# NOTE [ Affine quantization parameters ]
# A real value x is stored as the integer q = clamp(round(x / scale) + zero_point, qmin, qmax)
# and read back as (q - zero_point) * scale. From an observed range [min, max] (always widened
# to hold 0, so that 0 is exact):
#   affine:    scale = (max - min) / (qmax - qmin), zero_point = qmin - round(min / scale),
#              clamped into [qmin, qmax];
#   symmetric: scale = max(|min|, max) / ((qmax - qmin) / 2), zero_point = 0 for signed types
#              and 128 (or the middle of a custom range) for unsigned ones;
#   per_channel_affine_float_qparams: scale = (max - min) / (qmax - qmin) (1 where that is
#              below eps), zero_point = -min / scale as a float.
# scale never drops below ``eps`` (float32's), so a constant input still quantizes. All of it is
# float32 arithmetic, round half to even, which is what makes the numbers PyTorch's to the bit.
# ``reduce_range`` halves the integer range (7 bits) for kernels that would otherwise overflow
# their 16-bit intermediate sums (fbgemm's activations).


def _value_text(value):
    """How a bound argument reads in a generated docstring: a class or factory by its name."""
    if isinstance(value, _PartialWrapper):
        return value._public_name or f"a factory of {value._target_name()}"
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, float) and value and abs(value) < 1e-2:
        return f"{value:.6g}"
    return repr(value)


class _PartialDoc:
    """``_PartialWrapper.__doc__``: the class's own docstring on the class, and on an instance
    one written from what the instance wraps and binds (``help(default_observer)`` then says
    which module it makes and with which arguments; its ``repr`` stays torch's)."""

    def __init__(self, class_doc):
        self.class_doc = class_doc

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.class_doc
        return obj._make_doc()


class _PartialWrapper:
    __doc__ = _PartialDoc(
        """A constructor with some keyword arguments bound, as ``Observer.with_args`` returns.

    Calling it makes a fresh instance each time; ``with_args``/``with_callable_args`` bind more.

    Args:
        p (functools.partial): the constructor and the keyword arguments it binds.

    Example:
        >>> f = _PartialWrapper(functools.partial(MinMaxObserver, quant_min=0, quant_max=127))
        >>> f().quant_max
        127
    """)

    # set on the module-level defaults (``default_observer``...) so that their generated
    # docstrings can name them in an example that runs
    _public_name = None

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def _target(self):
        fn = self.p
        while isinstance(fn, functools.partial):
            fn = fn.func
        return fn

    def _target_name(self):
        target = self._target()
        return getattr(target, "__name__", None) or type(target).__name__

    def _bound(self):
        """The keyword arguments bound, outermost last, as one dict."""
        layers, fn = [], self.p
        while isinstance(fn, functools.partial):
            layers.append(fn.keywords or {})
            fn = fn.func
        bound = {}
        for keywords in reversed(layers):
            bound.update(keywords)
        return bound

    def _make_doc(self):
        cls = self._target_name()
        bound = self._bound()
        preset = " with preset arguments" if bound or self.callable_args else ""
        summary = f"Make a new ``{cls}``{preset} on each call."
        lines = [summary, "",
                 f"A factory made by ``{cls}.with_args`` (a qconfig's ``activation`` or "
                 f"``weight``): each call builds a fresh module, so modules never share "
                 f"statistics. Its ``repr`` is the underlying ``functools.partial``.", "",
                 "Args:"]
        for name, value in bound.items():
            lines.append(f"    {name}: bound to ``{_value_text(value)}``; pass it to override.")
        for name, fn in self.callable_args.items():
            label = getattr(fn, "__name__", None) or type(fn).__name__
            lines.append(f"    {name}: bound to the result of calling ``{label}()`` afresh "
                         f"each call; pass it to override.")
        lines += [f"    **kwargs: any other argument of ``{cls}``.", "",
                  "Returns:", f"    {cls}: a new instance.", ""]
        if self._public_name:
            module, _, name = self._public_name.rpartition(".")
            lines += ["Example:",
                      f"    >>> from {module} import {name}",
                      f"    >>> m = {name}()",
                      "    >>> type(m).__name__",
                      f"    '{cls}'",
                      f"    >>> m is {name}()",
                      "    False",
                      "    >>> m(ember.randn(2, 3)).shape",
                      "    ember.Size([2, 3])"]
        return "\n".join(lines) + "\n"

    def __call__(self, *args, **keywords):
        for name, fn in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: fn()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return repr(self.p) + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    """Bind keyword arguments to a constructor, returning a factory of fresh instances.

    Args:
        cls_or_self: the class (or factory) to bind.
        **kwargs: the arguments every instance gets.

    Returns:
        _PartialWrapper: calling it makes a new instance.

    Example:
        >>> f = MinMaxObserver.with_args(dtype=ember.qint8)
        >>> f() is f()
        False
    """
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    result = _PartialWrapper(p=functools.partial(cls_or_self))
    return result.with_callable_args(**kwargs)


def _qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    if has_customized_qrange:
        qrange_len = quant_max - quant_min + 1
        if dtype in (_dt.qint8, _dt.int8) and not 0 < qrange_len <= 256:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=256).")
        if dtype in (_dt.qint32, _dt.int32) and not 0 < qrange_len <= 2 ** 32:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=4294967296).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (_dt.qint8, _dt.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (_dt.quint8, _dt.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (_dt.qint32, _dt.int32):
        return -(2 ** 31), 2 ** 31 - 1
    if dtype is _dt.uint16:
        return 0, 2 ** 16 - 1
    if dtype is _dt.int16:
        return -(2 ** 15), 2 ** 15 - 1
    return 0, 15


def _min_max_valid(min_val, max_val):
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. "
                      "Returning default values.", stacklevel=3)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. "
                          "Returning default values.", stacklevel=3)
            return False
        if float(min_val) > float(max_val):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif bool((min_val > max_val).any()):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class ObserverBase(nn.Module):
    """Base class of the observers: holds the target ``dtype`` and ``is_dynamic``.

    Subclasses define ``forward`` (record, return the input unchanged) and
    ``calculate_qparams``.

    Args:
        dtype: the quantized dtype the observed values will be stored as.
        is_dynamic (bool): whether the parameters are computed at run time (dynamic
            quantization) rather than from calibration.

    Example:
        >>> isinstance(MinMaxObserver(), ObserverBase)
        True
    """

    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define calculate_qparams")

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class UniformQuantizationObserverBase(ObserverBase):
    """Base of the observers that pick an affine or symmetric uniform grid.

    See NOTE [ Affine quantization parameters ] for the formulas.

    Args:
        dtype: ``ember.quint8`` (default), ``ember.qint8``, ``ember.qint32``, ...
        qscheme: ``ember.per_tensor_affine`` (default) or another scheme.
        reduce_range (bool): use 7 of the 8 bits (deprecated in favour of quant_min/max).
        quant_min, quant_max (int, optional): a custom integer range (both or neither).
        factory_kwargs (dict, optional): device/dtype for the buffers.
        eps (float): the smallest scale (float32's machine epsilon).
        is_dynamic (bool): dynamic quantization.

    Example:
        >>> MinMaxObserver(dtype=ember.qint8).quant_min
        -128
    """

    def __init__(self, dtype=_dt.quint8, qscheme=_qs.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future release of "
                          "PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps], **(factory_kwargs or {})))
        if qscheme not in _qs._ALL.values():
            raise AssertionError("Default Observer only works for per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        allowed = (_dt.qint8, _dt.quint8, _dt.quint4x2, _dt.qint32, _dt.int8, _dt.uint8,
                   _dt.int16, _dt.int32, _dt.uint16)
        if dtype not in allowed:
            raise AssertionError(f"Default Observer only works for {allowed} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:
                raise AssertionError("qmin must be strictly less than qmax for "
                                     "user-specified quantization range.")
        self.quant_min, self.quant_max = _qmin_qmax(quant_min, quant_max,
                                                    self.has_customized_qrange, dtype,
                                                    reduce_range)

    def _calculate_qparams(self, min_val, max_val):
        # See NOTE [ Affine quantization parameters ]
        if not _min_max_valid(min_val, max_val):
            return ember.tensor([1.0]), ember.tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = ember.minimum(min_val, ember.zeros_like(min_val))
        max_pos = ember.maximum(max_val, ember.zeros_like(max_val))
        zero_point = ember.zeros(min_neg.shape, dtype=ember.int64)
        if self.qscheme in (_qs.per_tensor_symmetric, _qs.per_channel_symmetric):
            max_pos = ember.maximum(-min_neg, max_pos)
            scale = ember.maximum(max_pos / (float(qmax - qmin) / 2), self.eps)
            if self.dtype in (_dt.quint8, _dt.uint8):
                mid = (qmin + qmax) // 2 if self.has_customized_qrange else 128
                zero_point = ember.full(zero_point.shape, mid, dtype=ember.int64)
            elif self.dtype is _dt.uint16:
                zero_point = ember.full(zero_point.shape, 2 ** 15, dtype=ember.int64)
        elif self.qscheme is _qs.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(qmax - qmin)
            scale = ember.where(scale > self.eps, scale, ember.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = ember.maximum((max_pos - min_neg) / float(qmax - qmin), self.eps)
            zero_point = qmin - ember.round(min_neg / scale).to(ember.int32)
            zero_point = ember.clamp(zero_point, qmin, qmax)
        if scale.dim() == 0:
            scale = scale.reshape(1)
        if zero_point.dim() == 0:
            zero_point = zero_point.reshape(1)
        return scale, zero_point

    def reset_min_max_vals(self):
        raise NotImplementedError(f"{type(self).__name__} has no min/max to reset")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Observe the running minimum and maximum of a tensor, one pair for the whole tensor.

    Args:
        dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic:
            as :class:`UniformQuantizationObserverBase`.

    Example:
        >>> obs = MinMaxObserver()
        >>> _ = obs(ember.tensor([-1.0, 0.0, 2.0]))
        >>> obs.calculate_qparams()
        (tensor([0.0118]), tensor([85], dtype=ember.int32))
    """

    def __init__(self, dtype=_dt.quint8, qscheme=_qs.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        if qscheme not in (_qs.per_tensor_affine, _qs.per_tensor_symmetric):
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        fk = factory_kwargs or {}
        self.register_buffer("min_val", ember.tensor(float("inf"), **fk))
        self.register_buffer("max_val", ember.tensor(float("-inf"), **fk))
        if self.qscheme is _qs.per_tensor_symmetric and self.reduce_range \
                and self.dtype is _dt.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig):
        """Record the input's range; return the input unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        lo, hi = ember.aminmax(x)
        self.min_val.copy_(ember.minimum(lo, self.min_val))
        self.max_val.copy_(ember.maximum(hi, self.max_val))
        return x_orig

    def calculate_qparams(self):
        """``(scale, zero_point)`` for the range seen so far (see NOTE [ Affine quantization
        parameters ])."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={float(self.min_val)}, max_val={float(self.max_val)}"

    def reset_min_max_vals(self):
        """Forget the range seen so far."""
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Like :class:`MinMaxObserver`, but the range is an exponential moving average:
    ``min = min + c * (batch_min - min)`` (the first batch sets it outright).

    Args:
        averaging_constant (float): ``c``, 0.01 by default.
        dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic: as
            :class:`MinMaxObserver`.

    Example:
        >>> obs = MovingAverageMinMaxObserver(averaging_constant=0.5)
        >>> _ = obs(ember.tensor([0.0, 2.0])); _ = obs(ember.tensor([0.0, 4.0]))
        >>> float(obs.max_val)
        3.0
    """

    def __init__(self, averaging_constant=0.01, dtype=_dt.quint8,
                 qscheme=_qs.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if is_dynamic and averaging_constant != 1:
            # dynamic quantization sees each batch afresh: only a constant of 1 (no history)
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic "
                                      "quantization for averaging constant of "
                                      f"{averaging_constant}")
        self.averaging_constant = averaging_constant
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig):
        """Update the moving range; return the input unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        lo, hi = ember.aminmax(x)
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            new_lo, new_hi = lo, hi
        else:
            c = self.averaging_constant
            new_lo = self.min_val + c * (lo - self.min_val)
            new_hi = self.max_val + c * (hi - self.max_val)
        self.min_val.copy_(new_lo)
        self.max_val.copy_(new_hi)
        return x_orig


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Observe the minimum and maximum of each channel (slice along ``ch_axis``).

    Args:
        ch_axis (int): the channel dimension (0 by default: a weight's output channels).
        dtype (default ``ember.quint8``), qscheme (default ``ember.per_channel_affine``),
            reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic: as
            :class:`UniformQuantizationObserverBase`.

    Example:
        >>> obs = PerChannelMinMaxObserver(dtype=ember.qint8,
        ...                                qscheme=ember.per_channel_symmetric)
        >>> _ = obs(ember.tensor([[1.0, -2.0], [0.5, 0.25]]))
        >>> obs.calculate_qparams()[0]
        tensor([0.0157, 0.0039])
    """

    def __init__(self, ch_axis=0, dtype=_dt.quint8, qscheme=_qs.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if not qscheme in (_qs.per_channel_affine, _qs.per_channel_symmetric,  # noqa: E713
                           _qs.per_channel_affine_float_qparams):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support "
                                      "torch.per_channel_symmetric, torch.per_channel_affine "
                                      "and torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic "
                                      "quantization for activation")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        fk = factory_kwargs or {}
        self.register_buffer("min_val", ember.tensor([], **fk))
        self.register_buffer("max_val", ember.tensor([], **fk))
        if self.qscheme is _qs.per_channel_symmetric and self.reduce_range \
                and self.dtype is _dt.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _channel_aminmax(self, x):
        axes = list(range(x.dim()))
        axes[self.ch_axis], axes[0] = 0, self.ch_axis
        y = ember.flatten(x.permute(axes).to(self.min_val.dtype), start_dim=1)
        return ember.aminmax(y, dim=1)

    def _set(self, lo, hi):
        self.min_val.resize_(lo.shape)
        self.max_val.resize_(hi.shape)
        self.min_val.copy_(lo)
        self.max_val.copy_(hi)

    def forward(self, x_orig):
        """Record each channel's range; return the input unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        lo, hi = self._channel_aminmax(x_orig.detach())
        if self.min_val.numel() != 0 and self.max_val.numel() != 0:
            lo, hi = ember.minimum(lo, self.min_val), ember.maximum(hi, self.max_val)
        self._set(lo, hi)
        return x_orig

    def calculate_qparams(self):
        """Per-channel ``(scales, zero_points)`` (see NOTE [ Affine quantization parameters ])."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the per-channel buffers start empty: take the saved shapes before copying
        for name in ("min_val", "max_val"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def reset_min_max_vals(self):
        """Forget the ranges seen so far."""
        self._set(ember.tensor([]), ember.tensor([]))


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel ranges kept as exponential moving averages (see
    :class:`MovingAverageMinMaxObserver`).

    Args:
        averaging_constant (float): the averaging weight of a new batch (0.01).
        ch_axis, dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic: as
            :class:`PerChannelMinMaxObserver`.

    Example:
        >>> obs = MovingAveragePerChannelMinMaxObserver(averaging_constant=0.5)
        >>> _ = obs(ember.ones(2, 3)); _ = obs(3 * ember.ones(2, 3))
        >>> obs.max_val
        tensor([2., 2.])
    """

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=_dt.quint8,
                 qscheme=_qs.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if not qscheme in (_qs.per_channel_affine, _qs.per_channel_symmetric,  # noqa: E713
                           _qs.per_channel_affine_float_qparams):
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only "
                                      "support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support "
                                      "dynamic quantization for activation")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig):
        """Update each channel's moving range; return the input unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        lo, hi = self._channel_aminmax(x_orig.detach())
        if self.min_val.numel() != 0 and self.max_val.numel() != 0:
            c = self.averaging_constant
            lo = self.min_val + c * (lo - self.min_val)
            hi = self.max_val + c * (hi - self.max_val)
        self._set(lo, hi)
        return x_orig


class HistogramObserver(UniformQuantizationObserverBase):
    """Keep a histogram of the values seen and choose the range that minimises the L2
    quantization error (outliers at either end are cut off).

    The histogram has ``bins`` bins over the running [min, max]; when the range grows, the old
    histogram is spread over the new bins (each old bin split into ``upsample_rate`` pieces).
    ``calculate_qparams`` then narrows [min, max] bin by bin from whichever end holds less
    mass, while the estimated error of quantizing the histogram to 2**bits levels falls.

    Args:
        bins (int): number of histogram bins (2048).
        dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic:
            as :class:`UniformQuantizationObserverBase`.

    Example:
        >>> obs = HistogramObserver()
        >>> _ = obs(ember.linspace(-1, 1, 101))
        >>> obs.calculate_qparams()[1]
        tensor([128], dtype=ember.int32)
    """

    def __init__(self, bins: int = 2048, dtype=_dt.quint8, qscheme=_qs.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in (_qs.per_tensor_affine, _qs.per_tensor_symmetric):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization "
                                      "for activation")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(bins))
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
        self.dst_nbins = 2 ** (8 if dtype.itemsize == 1 else 8 * dtype.itemsize)
        self.upsample_rate = 16

    @staticmethod
    def _histc(x, bins, lo, hi):
        # histc's binning, in float32: values at hi land in the last bin
        x = np.asarray(x, np.float32).ravel()
        lo, hi = np.float32(lo), np.float32(hi)
        if lo == hi:
            lo, hi = lo - np.float32(1), hi + np.float32(1)
        x = x[(x >= lo) & (x <= hi)]
        pos = ((x - lo) * np.float32(bins) / (hi - lo)).astype(np.int64)
        pos = np.minimum(pos, bins - 1)
        return np.bincount(pos, minlength=bins).astype(np.float32)

    def _quantization_error(self, hist, bin_width, start, end):
        dst_width = bin_width * (end - start + 1) / self.dst_nbins
        if dst_width == 0.0:
            return 0.0
        src = np.arange(self.bins, dtype=np.float32)
        begin = ((src - start) * np.float32(bin_width)).astype(np.float32)
        stop = begin + np.float32(bin_width)
        dw = np.float32(dst_width)
        of_begin = np.clip(np.floor(begin / dw), 0, self.dst_nbins - 1)
        of_end = np.clip(np.floor(stop / dw), 0, self.dst_nbins - 1)
        density = hist / np.float32(bin_width)

        def l2(d_begin, d_end):
            return density * ((d_end * d_end * d_end - d_begin * d_begin * d_begin) / 3)

        norm = l2(begin - (of_begin + np.float32(0.5)) * dw, np.full(self.bins, dw / 2, np.float32))
        norm = norm + (of_end - of_begin - 1) * l2(np.float32(-dw / 2), np.float32(dw / 2))
        norm = norm + l2(np.float32(-dw / 2), stop - (of_end * dw + dw / 2))
        return float(norm.astype(np.float32).sum(dtype=np.float32))

    def _search_range(self):
        hist = self.histogram.numpy().astype(np.float32)
        lo, hi = float(self.min_val), float(self.max_val)
        bin_width = float(np.float32((np.float32(hi) - np.float32(lo)) / np.float32(self.bins)))
        total = float(hist.sum(dtype=np.float32))
        csum = np.cumsum(hist, dtype=np.float32)
        step, alpha, beta = 1e-5, 0.0, 1.0
        start, end = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + step, beta - step
            left, right = start, end
            while left < end and csum[left] < next_alpha * total:
                left += 1
            while right > start and csum[right] > next_beta * total:
                right -= 1
            next_start, next_end = start, end
            if (left - start) > (end - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start and next_end == end:
                continue
            norm = self._quantization_error(hist, bin_width, next_start, next_end)
            if norm > norm_min:
                break
            norm_min, start, end = norm, next_start, next_end
        width = (self.max_val - self.min_val) / self.bins
        return self.min_val + width * start, self.min_val + width * (end + 1)

    def _upscale(self, hist, orig_lo, orig_hi, new_lo, new_hi):
        rate = self.upsample_rate
        fine = np.repeat(hist, rate) / np.float32(rate)
        size = np.float32((np.float32(orig_hi) - np.float32(orig_lo))
                          / np.float32(self.bins * rate))
        mids = _linspace32(orig_lo, orig_hi, self.bins * rate + 1)[:-1] + np.float32(0.5) * size
        edges = _linspace32(new_lo, new_hi, self.bins + 1)
        idx = np.searchsorted(edges, mids, side="right") - 1
        idx = np.clip(idx, 0, self.bins - 1)
        return np.bincount(idx, weights=fine, minlength=self.bins).astype(np.float32)

    def forward(self, x_orig):
        """Add the input's values to the histogram; return the input unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(ember.float32).numpy().ravel()
        if np.isinf(x).any():
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[~np.isinf(x)]
            if x.size == 0:
                return x_orig
        x_lo, x_hi = np.float32(x.min()), np.float32(x.max())
        cur_lo, cur_hi = float(self.min_val), float(self.max_val)
        if cur_lo == float("inf") or cur_hi == float("-inf"):
            new_lo, new_hi = x_lo, x_hi
            hist = self._histc(x, self.bins, x_lo, x_hi)
        else:
            new_lo, new_hi = min(np.float32(cur_lo), x_lo), max(np.float32(cur_hi), x_hi)
            update = self._histc(x, self.bins, new_lo, new_hi)
            old = self.histogram.numpy().astype(np.float32)
            if new_lo == cur_lo and new_hi == cur_hi:
                hist = old + update
            elif cur_lo == cur_hi:
                hist = self._histc(np.array([cur_lo]), self.bins, new_lo, new_hi) * old.sum(
                    dtype=np.float32) + update
            else:
                hist = update + self._upscale(old, cur_lo, cur_hi, new_lo, new_hi)
        self.histogram.copy_(ember.from_numpy(hist.astype(np.float32)))
        self.min_val.copy_(ember.tensor(float(new_lo)))
        self.max_val.copy_(ember.tensor(float(new_hi)))
        return x_orig

    def calculate_qparams(self):
        """``(scale, zero_point)`` for the error-minimising range of the histogram."""
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ", stacklevel=2)
            return ember.tensor([1.0]), ember.tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        lo, hi = self._search_range()
        return self._calculate_qparams(lo, hi)

    def extra_repr(self):
        return f"min_val={float(self.min_val)}, max_val={float(self.max_val)}"


def _linspace32(start, end, steps):
    # ember.linspace's float32 values: from the start for the first half, from the end after
    # (a float32 step, multiplied and added in double)
    start, end = np.float32(start), np.float32(end)
    step = np.float64((end - start) / np.float32(steps - 1))
    i = np.arange(steps)
    return np.where(i < steps // 2, np.float64(start) + step * i,
                    np.float64(end) - step * (steps - 1 - i)).astype(np.float32)


class PlaceholderObserver(ObserverBase):
    """An observer that records nothing: it carries the ``dtype`` (and for dynamic
    quantization the scheme) to the convert step, which computes parameters itself.

    Args:
        dtype: the target dtype (``ember.float32`` by default; ``ember.float16`` for fp16).
        custom_op_name (str): an operator name for custom backends.
        compute_dtype: deprecated; use ``is_dynamic``.
        quant_min, quant_max (int, optional): the integer range.
        qscheme: the scheme (optional).
        eps (float, optional): the smallest scale.
        is_dynamic (bool): dynamic quantization.

    Example:
        >>> PlaceholderObserver(dtype=ember.float16)
        PlaceholderObserver(dtype=ember.float16, is_dynamic=False)
    """

    def __init__(self, dtype=_dt.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = _qs.per_tensor_affine
        if eps is None:
            eps = _EPS
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.qscheme = qscheme
        self.eps = eps
        self.custom_op = custom_op_name
        if compute_dtype:
            self.is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.", stacklevel=2)

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


class RecordingObserver(ObserverBase):
    """Keep every tensor passed through it (for debugging), in ``tensor_val``.

    Args:
        dtype: the target dtype (``ember.quint8``).

    Example:
        >>> obs = RecordingObserver()
        >>> _ = obs(ember.ones(2))
        >>> len(obs.get_tensor_value())
        1
    """

    __annotations__ = {"tensor_val": list}

    def __init__(self, dtype=_dt.quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")  # noqa: TRY002

    def get_tensor_value(self):
        """The list of recorded tensors."""
        return self.tensor_val


class NoopObserver(ObserverBase):
    """An observer that does nothing; its dtype (``ember.float16`` by default) tells convert
    what to produce.

    Args:
        dtype: the target dtype.
        custom_op_name (str): an operator name for custom backends.

    Example:
        >>> NoopObserver()(ember.ones(1))
        tensor([1.])
    """

    def __init__(self, dtype=_dt.float16, custom_op_name=""):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.dtype = dtype
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")  # noqa: TRY002


class ReuseInputObserver(ObserverBase):
    """An observer whose output takes its input's quantization parameters (for ops such as
    reshape that do not change values); it records nothing.

    Example:
        >>> ReuseInputObserver()(ember.ones(1))
        tensor([1.])
    """

    def __init__(self):
        super().__init__(_dt.quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")  # noqa: TRY002


class FixedQParamsObserver(ObserverBase):
    """An observer with fixed parameters, for ops whose output range is known (sigmoid: [0, 1],
    tanh: [-1, 1]).

    Args:
        scale (float): the scale.
        zero_point (int): the zero point.
        dtype: ``ember.quint8`` by default.
        qscheme: ``ember.per_tensor_affine`` by default.
        quant_min, quant_max (int): the integer range (0, 255).
        is_dynamic (bool): must be False.

    Example:
        >>> FixedQParamsObserver(scale=1.0 / 256.0, zero_point=0).calculate_qparams()
        (tensor([0.0039]), tensor([0], dtype=ember.int32))
    """

    scale: "ember.Tensor"
    zero_point: "ember.Tensor"

    def __init__(self, scale, zero_point, dtype=_dt.quint8, qscheme=_qs.per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.register_buffer("scale", ember.tensor([scale], dtype=ember.float32))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.int32))
        self.dtype = dtype
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        """The fixed ``(scale, zero_point)``."""
        return self.scale, self.zero_point


def get_observer_state_dict(mod):
    """The observer statistics of a prepared model: the entries of ``mod.state_dict()`` under
    an ``activation_post_process``.

    Args:
        mod (nn.Module): a prepared model.

    Returns:
        OrderedDict: those entries (with the state dict's ``_metadata``).

    Example:
        >>> m = nn.Sequential(nn.Linear(2, 2))
        >>> m[0].activation_post_process = MinMaxObserver()
        >>> list(get_observer_state_dict(m))
        ['0.activation_post_process.eps', '0.activation_post_process.min_val', \
'0.activation_post_process.max_val']
    """
    from collections import OrderedDict

    full = mod.state_dict()
    od = OrderedDict((k, v) for k, v in full.items() if "activation_post_process" in k)
    od._metadata = getattr(full, "_metadata", None)
    return od


def load_observer_state_dict(mod, obs_dict):
    """Load observer statistics saved by :func:`get_observer_state_dict` into a model
    prepared the same way.

    Args:
        mod (nn.Module): the prepared model.
        obs_dict (dict): the saved statistics.

    Raises:
        Exception: naming an observer key that is missing or unexpected.

    Example:
        >>> m = nn.Sequential(nn.Linear(2, 2))
        >>> m[0].activation_post_process = MinMaxObserver()
        >>> load_observer_state_dict(m, get_observer_state_dict(m))
    """
    from .fake_quantize import FakeQuantizeBase

    missing_keys, unexpected_keys = [], []
    for name, module in mod.named_modules():
        if isinstance(module, (ObserverBase, FakeQuantizeBase)):
            module._load_from_state_dict(obs_dict, name + ".", {}, False, missing_keys,
                                         unexpected_keys, [])
    for k in missing_keys:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Missing keys for observer {k} in state_dict")  # noqa: TRY002
    for k in unexpected_keys:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Unexpected keys for observer {k} in state_dict")  # noqa: TRY002


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_weight_observer = MinMaxObserver.with_args(dtype=_dt.qint8,
                                                   qscheme=_qs.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=_dt.qint8, qscheme=_qs.per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=_dt.qint8, qscheme=_qs.per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=_dt.qint8, qscheme=_qs.per_channel_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=_dt.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=_dt.quint8, qscheme=_qs.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=_dt.quint4x2, qscheme=_qs.per_channel_affine_float_qparams, ch_axis=0)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=_dt.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=_dt.quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
default_reuse_input_observer = ReuseInputObserver


def _name_factories(namespace, module):
    """Give each ``with_args`` factory in ``namespace["__all__"]`` its public name (the first
    of its aliases), which its generated docstring's example imports."""
    for name in namespace["__all__"]:
        obj = namespace.get(name)
        if isinstance(obj, _PartialWrapper) and obj._public_name is None:
            obj._public_name = f"{module}.{name}"


_name_factories(globals(), "ember.ao.quantization")
