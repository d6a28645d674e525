"""Tensor creation: filled tensors (``zeros``, ``full``, ``empty_strided``, ...), their
``*_like`` and ``Tensor.new_*`` forms, and the in-place fills ``fill_`` / ``zero_``; plus the
helpers every creation module shares.

Tensors from data (``tensor``, ``as_tensor``, ``from_numpy``, ``Tensor(...)``) live in
``from_data.py``, ranges and grids (``arange``, ``linspace``, ``eye``, ``meshgrid``, ...) in
``ranges.py`` and random sampling in ``random_ops.py``. Those modules build on the helpers
here, so this module imports none of them (import them from where they live).
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.checks import as_shape
from .._core.device import as_device
from .._core.size import Size
from .._core.tensor import CONSTRUCTOR_REFUSAL, Tensor, wrap
from ._memory_format import empty_preserving
from ._registry import Op, method, public

_PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)

# PyTorch's C++ type names, used in its overflow messages
_C_NAMES = {
    _dt.bool_: "bool", _dt.uint8: "uint8_t", _dt.int8: "int8_t", _dt.int16: "int16_t",
    _dt.int32: "int", _dt.int64: "int64_t", _dt.float16: "c10::Half",
    _dt.bfloat16: "c10::BFloat16", _dt.float32: "float", _dt.float64: "double",
    _dt.complex64: "c10::complex<float>", _dt.complex128: "c10::complex<double>",
    **{d: "c10::" + d.scalar_name for d in _dt.float8_dtypes},
    _dt.uint16: "uint16_t", _dt.uint32: "uint32_t", _dt.uint64: "uint64_t",
}


# ------------------------------------------------------------------------------------------------
# helpers shared by the creation modules (from_data, ranges, random_ops)


def xp_for(device):
    """The array namespace for a ``device=`` argument (None means CPU)."""
    dev = as_device(device)
    if dev is None or dev.type == "cpu":
        return np
    from .conversion import _device_backend

    return _device_backend(dev).xp


def finish(array, requires_grad=False, device=None):
    """Wrap a fresh host (NumPy) array, moving it to ``device`` and setting requires_grad."""
    dev = as_device(device)
    if dev is not None and dev.type != "cpu":
        from .conversion import _device_backend

        array = _device_backend(dev).to_device(array)
    t = wrap(array)
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t


def resolve_dtype(dtype, default=None, out=None):
    """The ember dtype for a ``dtype=`` argument; when it is None, a factory given ``out=``
    produces ``out``'s dtype (as PyTorch does), else ``default``."""
    if dtype is not None:
        return _dt.lookup(dtype)
    if isinstance(out, Tensor):
        return out.dtype
    return default


def size_arg(op_name, size, kwargs):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(Size)`` or ``f(size=(2, 3))``."""
    if kwargs:
        if "size" in kwargs and not size and len(kwargs) == 1:
            size = (kwargs["size"],)
        else:
            bad = next(k for k in kwargs if k != "size" or size)
            raise TypeError(f"{op_name}() got an unexpected keyword argument '{bad}'")
    if not size:
        raise TypeError(f'{op_name}() missing 1 required positional arguments: "size"')
    return as_shape(size, op_name)


def host(a):
    """A backend array as a NumPy array (no copy on the CPU)."""
    return a if type(a) is np.ndarray else a.get()


def _limits(d):
    """(lowest, highest) storable value: PyTorch's overflow check accepts -max..max for
    unsigned integers (negative values wrap around) and finite values up to max for floats."""
    if d.category == 1:
        info = np.iinfo(d.np)
        return (-int(info.max) if info.min == 0 else int(info.min)), int(info.max)
    limit = float(np.finfo(d.to_real().np).max)
    return -limit, limit


_LIMITS = {d: _limits(d) for d in _dt.all_dtypes + _dt.shell_dtypes
           if d.category in (1, 2, 3) and d not in (_dt.float16, _dt.bfloat16)}
# float16/bfloat16 refuse finite numbers past their largest as well (torch 2.13: ``full((2,),
# 65505., dtype=float16)`` raises; inf and NaN are stored)
_LIMITS.update({d: (-float(_dt.finfo(d).max), float(_dt.finfo(d).max))
                for d in (_dt.float16, _dt.bfloat16)})
# float8 (NOTE [ Float8 dtypes ]): finite values up to max; only float8_e5m2 stores inf
_LIMITS.update({d: (-_dt.finfo(d).max, _dt.finfo(d).max) for d in _dt.float8_dtypes})
_NO_INF = frozenset(d for d in _dt.float8_dtypes if d is not _dt.float8_e5m2)


def check_value_fits(value, d, op_name="", numel=None):
    """PyTorch refuses to store a scalar that overflows the target dtype (``full``, ``fill_``);
    bool takes anything. ``numel``: the filled tensor's size, where known: torch fills a
    one-element float16/bfloat16 tensor with the number checked as a double and rounded,
    past the range to inf (``full((), 70000., dtype=float16)`` is inf, ``full((2,), ...)``
    raises)."""
    if type(value) is int and not -2 ** 63 <= value < 2 ** 64:  # torch's argument parser's
        raise OverflowError("int too big to convert" if value > 0 else
                            "can't convert negative int to unsigned")
    limits = _LIMITS.get(d)
    if limits is None or type(value) is bool or isinstance(value, np.bool_):
        return
    if numel == 1 and d in (_dt.float16, _dt.bfloat16):
        d = _dt.float64  # (checked as a double: a complex with an imaginary part refused)
        limits = _LIMITS[d]
    lo, hi = limits
    if isinstance(value, (complex, np.complexfloating)):
        if d.category < 3 and value.imag != 0:
            bad = True
        else:
            v = value.real if d.category < 3 else abs(value)
            bad = math.isfinite(v) and not lo <= v <= hi
    elif d.category == 1:
        if lo < 0 < -lo == hi and isinstance(value, (float, np.floating)):
            lo = 0  # an unsigned dtype wraps negative integers around, never a float
        bad = not lo <= value <= hi  # also refuses nan and inf
    else:
        bad = not lo <= value <= hi and not (math.isinf(value) or math.isnan(value))
        bad = bad or (d in _NO_INF and math.isinf(value))
    if bad:
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES[d]} without overflow")


# NOTE [ NaN from a Python number in bfloat16 ]
# torch turns one number into a bfloat16 with c10's scalar rounding, which writes every NaN
# as the positive quiet NaN 0x7FC0 (sign and payload dropped); ml_dtypes keeps the sign. So
# ``tensor([-nan], dtype=bfloat16)``, ``full``/``fill_`` with a NaN give torch's bits (seen
# through ``view(int16)``). Copies of whole tensors follow torch's copy kernel instead
# (NOTE [ NaN in float32 to bfloat16 copies ]); the NaN that bfloat16 arithmetic makes
# depends on torch's vector code per op and CPU, and is left to ml_dtypes.
_BF16_NAN = np.array(0x7FC0, np.uint16).view(_dt.bfloat16.np)


def bf16_scalar_nans(r):
    """``r`` (a bfloat16 host array) with each NaN written as 0x7FC0 (NOTE [ NaN from a
    Python number in bfloat16 ]); ``r`` itself when it holds none.

    Args:
        r: a NumPy array of ``ml_dtypes.bfloat16``.

    Returns:
        The array (a copy when a NaN was rewritten).

    Example:
        >>> bf16_scalar_nans(np.array([-np.nan], _dt.bfloat16.np)).view(np.uint16)
        array([32704], dtype=uint16)
    """
    nan = np.isnan(r)
    if not nan.any():
        return r
    r = np.array(r)
    r[nan] = _BF16_NAN
    return r


def scalar_as(value, npd):
    """A Python or NumPy number in the form to store into dtype ``npd`` the way PyTorch
    stores scalars: complex to real keeps the real part, floats truncate toward zero into
    integers, and integers wrap around (-1 into uint8 is 255)."""
    kind = npd.kind
    if npd in _dt._OPAQUE_NP:  # NOTE [ Opaque dtypes ]
        raise NotImplementedError(f'"fill_cpu" not implemented for '
                                  f"'{_dt._OPAQUE_NP[npd].scalar_name}'")
    if npd in _dt._FLOAT8_NP:  # PyTorch's rounding and saturation (NOTE [ Float8 dtypes ])
        v = value.real if isinstance(value, (complex, np.complexfloating)) else value
        return _dt.to_float8(np.array(v, np.float64), npd)[()]
    if kind == "f" or kind == "c" or kind == "V":
        if kind != "c" and isinstance(value, (complex, np.complexfloating)):
            value = value.real
        if kind == "V" and value != value and npd == _BF16_NAN.dtype:
            return _BF16_NAN  # NOTE [ NaN from a Python number in bfloat16 ]
        if kind == "V" and type(value) is int and not -2 ** 63 <= value < 2 ** 63:
            value = float(value)  # (ml_dtypes takes no int past int64; torch its double)
        if npd == np.float16 and isinstance(value, (float, np.float64)):
            # through float32, as PyTorch (NOTE [ Doubles to half through float ])
            with np.errstate(over="ignore"):
                return np.float16(np.float32(value))
        if (npd == np.float16 or kind == "V") and isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
            # (a one-element fill past the range rounds to inf: ``check_value_fits``)
            with np.errstate(over="ignore"):
                return np.array(float(value)).astype(npd)[()]
        return value
    if kind == "b":
        return np.bool_(value != 0)
    if isinstance(value, (complex, np.complexfloating)):
        value = value.real
    v = math.trunc(value) if isinstance(value, (float, np.floating)) else int(value)
    if v < 0 and kind == "u":
        v += 1 << (8 * npd.itemsize)
    return npd.type(v)


def scalar_value(x, op_name, name):
    """A Python number from a number or a one-element tensor argument."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError(
                f"{op_name}(): argument '{name}' must be a number or a one-element tensor, got "
                f"a tensor of shape {list(x.shape)}")
        return x.item()
    if isinstance(x, (np.bool_,)):
        return builtins.bool(x)
    if isinstance(x, np.number):
        return x.item()
    if isinstance(x, _PY_SCALARS):
        return x
    raise TypeError(
        f"{op_name}(): argument '{name}' must be Number, not {type(x).__name__}")


def cast(arr, npd):
    """``arr`` as dtype ``npd`` (complex to real drops the imaginary part, as PyTorch does)."""
    if arr.dtype == npd:
        return arr
    if arr.dtype.kind == "c" and npd.kind != "c":
        arr = arr.real
    return arr.astype(npd)


def int_arg(x, op_name, name):
    """An int argument (Python or NumPy int, or an integer one-element tensor); not bool."""
    if isinstance(x, builtins.bool) or not isinstance(x, (builtins.int, np.integer, Tensor)):
        raise TypeError(f"{op_name}(): argument '{name}' must be int, not {type(x).__name__}")
    return operator.index(x)


# ------------------------------------------------------------------------------------------------
# filled tensors


def filled(op_name, shape, fill, d, device, requires_grad):
    """A new tensor of ``shape`` and dtype ``d`` filled with ``fill`` (None: uninitialised)."""
    xp = xp_for(device)
    if fill is None:
        arr = xp.empty(shape, d.np)
    elif fill == 0 and (type(fill) is int or type(fill) is bool or
                        type(fill) is float and math.copysign(1.0, fill) > 0):
        arr = xp.zeros(shape, d.np)  # (a -0.0 or a complex zero keeps its signs below)
    else:
        check_value_fits(fill, d, op_name, math.prod(shape))
        arr = xp.full(shape, scalar_as(fill, d.np), d.np)
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t


# NOTE [ Plain factory calls ]
# ``zeros(10)``, ``ones(3, 4)``, ``zeros((2, 3))``: non-negative Python int sizes (spread
# out, or as one tuple, list or Size) and no keyword but the defaults is most factory calls,
# and the general route (``size_arg``, dtype and device resolution, ``filled``, ``_out``) is
# five frames around one NumPy call. Such a call makes its array in the default dtype and
# wraps it at once; anything else (a bool or NumPy integer size, a negative one and its
# error, any keyword) takes the general route. Modes still see the call: the door
# (``_dispatch.entrance``) stands above.
_default_dtype = _dt._default
_SHAPE_TYPES = (tuple, list, Size)


def _plain_shape(size):
    """The shape of a plain factory call's sizes (ints >= 0, or one tuple, list or Size of
    them: NOTE [ Plain factory calls ]), else None."""
    shape = size[0] if len(size) == 1 and size[0].__class__ in _SHAPE_TYPES else size
    for s in shape:
        if type(s) is not int or s < 0:
            return None
    return shape


def _out(op_name, t, out):
    return t if out is None else _dispatch.write_out(op_name, out, t)


@public(method=False)
@_dispatch.entrance("zeros")
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, **kwargs) -> Tensor:
    """A tensor of zeros of shape ``size`` (ints, or one sequence of ints).

    Example::

        >>> ember.zeros(2, 3).shape
        ember.Size([2, 3])
    """
    if out is None and dtype is None and device is None and not requires_grad and \
            not kwargs and size:
        shape = _plain_shape(size)  # NOTE [ Plain factory calls ]
        if shape is not None:
            return wrap(np.zeros(shape, _default_dtype[0].np))
    shape = size_arg("zeros", size, kwargs)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    return _out("zeros", filled("zeros", shape, 0, d, device, requires_grad), out)


@public(method=False)
@_dispatch.entrance("ones")
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False, **kwargs) -> Tensor:
    """A tensor of ones of shape ``size``.

    Example::

        >>> ember.ones(2, dtype=ember.int32)
        tensor([1, 1], dtype=ember.int32)
    """
    if out is None and dtype is None and device is None and not requires_grad and \
            not kwargs and size:
        shape = _plain_shape(size)  # NOTE [ Plain factory calls ]
        if shape is not None:
            return wrap(np.ones(shape, _default_dtype[0].np))
    shape = size_arg("ones", size, kwargs)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    return _out("ones", filled("ones", shape, 1, d, device, requires_grad), out)


@public(method=False)
@_dispatch.entrance("empty")
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None, **kwargs) -> Tensor:
    """An uninitialised tensor of shape ``size``."""
    shape = size_arg("empty", size, kwargs)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    t = filled("empty", shape, None, d, device, requires_grad)
    if memory_format in (_layout.channels_last, _layout.channels_last_3d):
        t = _strided_like_format(t, memory_format)
    return _out("empty", t, out)


def _strided_like_format(t, memory_format):
    """An uninitialised tensor like ``t`` laid out channels-last."""
    nd = 4 if memory_format is _layout.channels_last else 5
    if t.dim() != nd:
        raise RuntimeError(f"required rank {nd} tensor to use {memory_format} format")
    perm = (0, 2, 3, 1) if nd == 4 else (0, 2, 3, 4, 1)
    a = t._data
    xp = _dispatch.xp_of(a)
    b = xp.empty(tuple(a.shape[p] for p in perm), a.dtype).transpose(np.argsort(perm))
    r = wrap(b)
    r._rg = t._rg
    return r


def _fill_dtype(fill_value):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return fill_value, _dt.scalar_dtype(fill_value)


@public(method=False)
@_dispatch.entrance("full")
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``; the dtype follows the value
    (bool, int64, the default float or complex dtype) unless ``dtype`` is given.

    Example::

        >>> ember.full((2,), True)
        tensor([True, True])
    """
    if isinstance(size, (builtins.int, np.integer)) or not hasattr(size, "__iter__"):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    shape = as_shape((size,), "full")
    fill_value, inferred = _fill_dtype(fill_value)
    d = resolve_dtype(dtype, inferred, out=out)
    return _out("full", filled("full", shape, fill_value, d, device, requires_grad), out)


@public(method=False)
@_dispatch.entrance("empty_strided")
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor with the given ``size`` and ``stride`` (in elements).

    Example::

        >>> ember.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    shape = as_shape((size,), "empty_strided")
    strides = tuple(operator.index(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality "
                           f"of strides ({len(strides)})")
    if builtins.any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    d = resolve_dtype(dtype, _dt.get_default_dtype())
    xp = xp_for(device)
    n = 0 if 0 in shape else 1 + builtins.sum((s - 1) * st for s, st in zip(shape, strides))
    buf = xp.empty(n, d.np)
    item = d.itemsize
    # an empty tensor keeps the strides it is given too, as in PyTorch
    arr = xp.lib.stride_tricks.as_strided(buf, shape, tuple(s * item for s in strides))
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t


# -- *_like ---------------------------------------------------------------------------------------


def _order_for(a):
    """NumPy order that keeps ``a``'s layout, as memory_format=preserve_format does: dense
    non-overlapping inputs keep their strides, anything else gets contiguous strides."""
    if a.flags.c_contiguous:
        return "C"
    for n, s in zip(a.shape, a.strides):
        if s == 0 and n > 1:
            return "C"
    return "K"


def like(op_name, input, fill, dtype, device, requires_grad, memory_format):
    """A new tensor shaped like ``input`` (dtype and device kept unless overridden)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op_name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    a = input._data
    npd = a.dtype if dtype is None else _dt.lookup(dtype).np
    fmt = memory_format
    if device is None and fmt is None and type(a) is np.ndarray and a.flags.c_contiguous:
        # the common case: same device, contiguous input
        if fill is None:
            arr = np.empty(a.shape, npd)
        elif fill == 0 and (type(fill) is int or type(fill) is bool or
                            type(fill) is float and math.copysign(1.0, fill) > 0):
            arr = np.zeros(a.shape, npd)  # (a -0.0 keeps its sign below)
        else:
            check_value_fits(fill, _dt.from_np[npd], op_name, a.size)
            arr = np.full(a.shape, scalar_as(fill, npd), npd)
        t = wrap(arr)
        if requires_grad:
            t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
        return t
    d = _dt.from_np[npd]
    dev = as_device(device)
    if dev is None or dev == input.device:
        xp = _dispatch.xp_of(a)
    else:
        xp = xp_for(dev)
    if fmt in (_layout.channels_last, _layout.channels_last_3d):
        t = _strided_like_format(wrap(xp.empty(a.shape, d.np)), fmt)
        arr = t._data
    elif (fmt is None or fmt is _layout.preserve_format) and xp is np and type(a) is np.ndarray:
        arr = empty_preserving(a, d.np)  # NOTE [ Result strides ] in _memory_format.py
    elif (fmt is None or fmt is _layout.preserve_format) and xp is _dispatch.xp_of(a):
        arr = xp.empty_like(a, dtype=d.np, order=_order_for(a))
    else:
        arr = xp.empty(a.shape, d.np)
    if fill is not None:
        check_value_fits(fill, d, op_name, arr.size)
        arr[...] = scalar_as(fill, d.np)
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t


@public(method=False)
@_dispatch.entrance("zeros_like")
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """Zeros with the shape (and, unless overridden, dtype, device and layout) of ``input``."""
    return like("zeros_like", input, 0, dtype, device, requires_grad, memory_format)


@public(method=False)
@_dispatch.entrance("ones_like")
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """Ones with the shape (and, unless overridden, dtype and device) of ``input``."""
    return like("ones_like", input, 1, dtype, device, requires_grad, memory_format)


@public(method=False)
@_dispatch.entrance("empty_like")
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    """An uninitialised tensor with the shape (dtype, device, layout) of ``input``."""
    return like("empty_like", input, None, dtype, device, requires_grad, memory_format)


@public(method=False)
@_dispatch.entrance("full_like")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """``fill_value`` in the shape of ``input``; the dtype is ``input``'s unless given."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = resolve_dtype(dtype, input.dtype if isinstance(input, Tensor) else None)
    if d is not None and d.category == 1 and isinstance(fill_value, float) and \
            math.isfinite(fill_value):
        check_value_fits(fill_value, d, "full_like")  # (the float: -1.0 never wraps)
        fill_value = math.trunc(fill_value)
    return like("full_like", input, fill_value, d, device, requires_grad, memory_format)


# -- Tensor.new_* ---------------------------------------------------------------------------------
# (entrances of the door, as PyTorch's ``aten::new_*``: under ``vmap`` the new tensor is batched
# like ``self``, so a dropout mask made from its input draws per example: NOTE [ vmap batching ])


def _new_opts(self, dtype, device):
    return (resolve_dtype(dtype, self.dtype),
            as_device(device) if device is not None else self.device)


@method
@_dispatch.entrance("new_zeros")
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False, **kwargs) -> Tensor:
    """Zeros of shape ``size`` with ``self``'s dtype and device unless overridden."""
    d, dev = _new_opts(self, dtype, device)
    return filled("new_zeros", size_arg("new_zeros", size, kwargs), 0, d, dev, requires_grad)


@method
@_dispatch.entrance("new_ones")
def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False, **kwargs) -> Tensor:
    """Ones of shape ``size`` with ``self``'s dtype and device unless overridden."""
    d, dev = _new_opts(self, dtype, device)
    return filled("new_ones", size_arg("new_ones", size, kwargs), 1, d, dev, requires_grad)


@method
@_dispatch.entrance("new_empty")
def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False, **kwargs) -> Tensor:
    """An uninitialised tensor of shape ``size`` with ``self``'s dtype and device."""
    d, dev = _new_opts(self, dtype, device)
    return filled("new_empty", size_arg("new_empty", size, kwargs), None, d, dev,
                  requires_grad)


@method
def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False) -> Tensor:
    """An uninitialised tensor with the given ``size`` and ``stride`` (in elements), with
    ``self``'s dtype and device unless overridden (see :func:`empty_strided`).

    Example::

        >>> ember.ones(1).new_empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    d, dev = _new_opts(self, dtype, device)
    return empty_strided(size, stride, dtype=d, device=dev, requires_grad=requires_grad)


@method
@_dispatch.entrance("new_full")
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False) -> Tensor:
    """``fill_value`` in shape ``size`` with ``self``'s dtype (not the value's) and device."""
    if isinstance(size, (builtins.int, np.integer)) or not hasattr(size, "__iter__"):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, "
                        f"not {type(size).__name__}")
    d, dev = _new_opts(self, dtype, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return filled("new_full", as_shape((size,), "new_full"), fill_value, d, dev,
                  requires_grad)


# ------------------------------------------------------------------------------------------------
# in-place fills: fill_ / zero_


def _fill_kernel(xp, a, v):
    if a.dtype == _BF16_NAN.dtype and v.dtype != a.dtype and xp is np:
        v = bf16_scalar_nans(v.real.astype(a.dtype))  # one number: torch's scalar rule
    return xp.broadcast_to(v.astype(a.dtype) if v.dtype != a.dtype else v, a.shape).copy() \
        if v.dtype.kind != "c" or a.dtype.kind == "c" else \
        xp.broadcast_to(v.real.astype(a.dtype), a.shape).copy()


def _fill_vjp(g, _self, _value):
    return zeros_like(g), g.sum()  # self's old history gets zeros, as in PyTorch


# NOTE [ Overwriting a tensor in a graph ]
# An in-place op whose values do not depend differentiably on ``self`` (a comparison
# ``y.gt_(0)``, a random refill ``y.uniform_()``) leaves ``self`` requiring grad but passing
# zeros back to its old history, as PyTorch's GtBackward1 or UniformBackward0 do. The one
# in-place protocol (``_dispatch.commit_inplace_result``) records this op for such results.


def _overwrite_kernel(xp, a, *, value):
    return value if value.dtype == a.dtype else value.astype(a.dtype)


def _overwrite_vjp(g, _a, *, value):
    return zeros_like(g)


overwrite_op = Op("_overwrite", _overwrite_kernel, vjp=_overwrite_vjp)
overwrite_op.defjvp(lambda x_dots, _a, *, value, out=None: None)  # constant values: a zero tangent


def _nondiff_overwrite(self, result):
    return _dispatch.apply(overwrite_op, (self,), {"value": result._data})


_dispatch.nondiff_overwrite = _nondiff_overwrite


fill_op = Op("fill", _fill_kernel, vjp=_fill_vjp)


@fill_op.defjvp
def _fill_jvp(x_dots, a, _value, *, out=None):
    # the value broadcast over ``a``: linear in the value, independent of ``a``
    vd = x_dots[1]
    return None if vd is None else _dispatch.apply(fill_op, (a, vd), {})


def check_inplace(self, op_name):
    """Autograd's refusal of in-place writes (leaf that requires grad under grad mode), via
    the dispatcher's hook when autograd is loaded."""
    if _dispatch.check_inplace is not None:
        _dispatch.check_inplace(self, op_name)
    elif self._rg and self._grad_fn is None and _dispatch.state.grad_enabled:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation.")


def _fill_value(self, value, op_name):
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op_name} only supports 0-dimension value tensor but got "
                               f"tensor with {value.dim()} dimensions.")
        return value
    if not isinstance(value, _PY_SCALARS + (np.number, np.bool_)):
        raise TypeError(f"{op_name}(): argument 'value' must be Number, not "
                        f"{type(value).__name__}")
    check_value_fits(value, self.dtype, op_name, self.numel())
    return value


@public(inplace=None, method=False, name="fill_")
@_dispatch.entrance("fill_", inplace=True)
def fill_(input, value) -> Tensor:
    """Fill ``input`` with ``value`` (a number or a zero-dim tensor) in place; returns it.

    Example::

        >>> ember.zeros(3).fill_(2)
        tensor([2., 2., 2.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"fill_(): argument 'input' must be Tensor, not {type(input).__name__}")
    value = _fill_value(input, value, "fill_")
    if input._rg or (isinstance(value, Tensor) and value._rg):
        if not isinstance(value, Tensor):
            value = wrap(np.asarray(value))
        elif type(value._data) is not type(input._data):
            value = value.to(input.device)
        return _dispatch.commit_inplace_result(
            "fill_", input, lambda: _dispatch.apply(fill_op, (input, value), {}))
    check_inplace(input, "fill_")
    sd = input._data
    if isinstance(value, Tensor):
        v = value._data
        if v.dtype.kind == "c" and sd.dtype.kind != "c":
            v = v.real
        if sd.dtype == _BF16_NAN.dtype and v.dtype != sd.dtype and type(v) is np.ndarray:
            v = bf16_scalar_nans(v.astype(sd.dtype))  # the value as one number
        if type(v) is not type(sd):
            v = _dispatch.backends_by_type[type(sd)].to_device(v)
        sd[...] = v
    else:
        sd[...] = scalar_as(value, sd.dtype)
    input._bump()
    return input


@public(method=False, name="zero_")
@_dispatch.entrance("zero_", inplace=True)
def zero_(input) -> Tensor:
    """Fill ``input`` with zeros in place; returns it."""
    if isinstance(input, Tensor) and input._data.dtype in _dt._OPAQUE_NP:
        # clears the bytes, which PyTorch does for dtypes no kernel reads (NOTE [ Opaque
        # dtypes ])
        return input.copy_(wrap(np.zeros_like(input._data)))
    return fill_(input, 0)


Tensor.fill_ = fill_
Tensor.zero_ = zero_



@public(method=False)
def fill(input, value) -> Tensor:
    """A new tensor of ``input``'s shape, dtype and device holding ``value`` everywhere (the
    out-of-place :meth:`Tensor.fill_`). Differentiable in a tensor ``value``.

    Args:
        input (Tensor): the tensor whose shape, dtype and device the result takes.
        value (Number or 0-dim Tensor): the value.

    Returns:
        Tensor

    Example::

        >>> ember.fill(ember.zeros(2, dtype=ember.int64), 3.7)
        tensor([3, 3])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"fill(): argument 'input' must be Tensor, not {type(input).__name__}")
    value = _fill_value(input, value, "fill_")
    if not isinstance(value, Tensor):
        value = wrap(np.asarray(scalar_as(value, input._data.dtype)))
    if type(value._data) is not type(input._data):
        value = value.to(input.device)
    return _dispatch.apply(fill_op, (input, value), {})


@public(method=False)
def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """A 0-dim tensor holding the number ``s``, of the default dtype unless ``dtype`` is
    given (even for an integer or bool ``s``).

    Args:
        s (Number): the value.
        dtype (dtype, optional): the dtype. Default: the default dtype.
        device (device, optional): the device.
        requires_grad (bool): whether autograd records operations on it.

    Returns:
        Tensor

    Example::

        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    if isinstance(s, Tensor):
        s = s.item()
    d = resolve_dtype(dtype, _dt.get_default_dtype())
    if isinstance(s, complex) and d.category != _dt.COMPLEX:
        raise RuntimeError(f"value cannot be converted to type {d.scalar_name.lower()} "
                           "without overflow")
    return filled("scalar_tensor", (), s, d, device, requires_grad)


@public(method=False)
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False) -> Tensor:
    """An uninitialised tensor of shape ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is a
    channels-last tensor.

    Args:
        size (tuple of int): the logical shape.
        physical_layout (tuple of int): a permutation of ``range(len(size))``.
        dtype, device, requires_grad: as :func:`empty`.

    Returns:
        Tensor

    Example::

        >>> ember.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
        (3, 1, 6)
    """
    shape = as_shape((size,), "empty_permuted")
    perm = tuple(operator.index(p) for p in physical_layout)
    if len(perm) != len(shape):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(shape)} is not equal to len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(shape))):
        if len(set(perm)) != len(perm):
            raise RuntimeError("Duplicate dim not allowed")
        raise IndexError(f"empty_permuted: physical_layout {list(perm)} is not a permutation "
                         f"of the {len(shape)} dims")
    d = resolve_dtype(dtype, _dt.get_default_dtype())
    phys = xp_for(device).empty(tuple(shape[p] for p in perm), d.np)
    t = wrap(phys.transpose(tuple(int(i) for i in np.argsort(perm))))
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t
