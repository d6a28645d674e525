"""Copies and conversions: to / type casts / clone / contiguous / copy_ / detach / devices."""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.device import as_device, device
from .._core.tensor import Tensor, wrap
from . import _memory_format as _mf
from ._legacy_types import tensor_type
from ._registry import Op, method, profiler_session, public


def _astype(xp, a, dtype):
    if dtype in _dt._OPAQUE_NP or a.dtype in _dt._OPAQUE_NP:  # NOTE [ Opaque dtypes ]
        d = _dt._OPAQUE_NP.get(dtype) or _dt._OPAQUE_NP[a.dtype]
        raise NotImplementedError(f'"copy_" not implemented for \'{d.scalar_name}\'')
    if dtype in _dt._FLOAT8_NP and xp is np:  # PyTorch's saturation rules
        return _dt.to_float8(a, dtype)
    if a.dtype.kind == "c" and dtype.kind == "b":  # nonzero when either part is
        return a != 0
    if a.dtype.kind == "c" and dtype.kind != "c":
        a = a.real
    if dtype == _BF16 and xp is np and (a.dtype == np.float32 or a.dtype == np.float16):
        return _float_to_bf16(a)
    if dtype == np.float16 and a.dtype == np.float64:  # NOTE [ Doubles to half through float ]
        a = a.astype(np.float32)
    return a.astype(dtype, copy=True)


# NOTE [ Doubles to half through float ]
# PyTorch converts a double to float16 through float32 (c10::Half is built from a float), in
# its copy kernel, ``torch.tensor`` of Python floats, ``full`` and scalars alike: two
# roundings, so a double just above a float16 halfway point that float32 cannot tell from the
# halfway point rounds to even, and doubles in [65519.998, 65520) become inf (float32 rounds
# them to 65520). NumPy's float64 -> float16 cast rounds once; the conversions here go
# through float32 first. bfloat16 (ml_dtypes) already converts through float32.


# NOTE [ NaN in float32 to bfloat16 copies ]
# torch's x86 copy kernel converts float32 to bfloat16 eight or sixteen lanes at a time and
# writes every NaN lane as 0xFFFF (a negative NaN: ``signbit`` is True, ``view(int16)`` is
# -1); when the innermost stride is not 1 it converts one element at a time with c10's
# rounding, which writes 0x7FC0, as it does for every float16 source. ml_dtypes keeps the
# NaN's sign instead. float64 sources are left to ml_dtypes: torch's answer there depends on
# the block size (whole blocks of 16 get 0xFFFF, the rest 0x7FC0).
_BF16 = _dt.bfloat16.np
_BF16_LANE_NAN = np.array(0xFFFF, np.uint16).view(_BF16)
_BF16_ONE_NAN = np.array(0x7FC0, np.uint16).view(_BF16)


def _float_to_bf16(a):
    """float32 or float16 host array ``a`` as bfloat16, each NaN written as torch's copy
    kernel writes it (NOTE [ NaN in float32 to bfloat16 copies ])."""
    r = a.astype(_BF16, copy=True)
    nan = np.isnan(a)
    if nan.any():
        inner = min((abs(st) for st, n in zip(a.strides, a.shape) if n > 1), default=4)
        lanes = a.dtype == np.float32 and inner == a.itemsize
        r[nan] = _BF16_LANE_NAN if lanes else _BF16_ONE_NAN
    return r


def _identity_vjp(g, _a, **params):
    return g


def _to_copy(xp, a, dtype):
    # the cast keeps ``a``'s layout as preserve_format does (NOTE [ Result strides ])
    return _mf.preserve(_astype(xp, a, dtype), a)


to_copy_op = Op("_to_copy", _to_copy, vjp=_identity_vjp, linear=True)


def _device_backend(dev):
    """The backend holding arrays for ``dev``, importing it on first use (CUDA is lazy)."""
    b = _dispatch.backends_by_name.get(dev.type)
    if b is None and dev.type == "cuda":
        from ..cuda import _runtime

        _runtime.require_gpu()  # torch's AssertionError on a machine without CUDA (no CuPy)
        try:
            from .. import cuda as _cuda

            _cuda._lazy_init()
        except (ImportError, AttributeError, RuntimeError) as e:
            raise RuntimeError(
                f"ember: cannot use device '{dev}': CUDA is not available on this machine "
                f"(install ember[cuda] on a machine with an NVIDIA GPU). ({e})") from None
        b = _dispatch.backends_by_name.get("cuda")
    if b is None:
        raise RuntimeError(f"ember: no backend is registered for device type '{dev.type}'")
    return b


def _transfer_kernel(xp, a, *, target, index=None, non_blocking=False):
    if index is not None or non_blocking:  # NOTE [ Pinned memory and non_blocking copies ]
        from ..cuda import _copy

        return _copy.transfer(a, target, index, non_blocking)
    return _dispatch.backends_by_name[target].to_device(a)


def _transfer_vjp(g, a, *, target, index=None, non_blocking=False):
    return g.to(a.device)


transfer_op = Op("_to_device", _transfer_kernel, vjp=_transfer_vjp, linear=True)


def _parse_to(args, kwargs):
    dev = dtype = None
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if "device" in kwargs:
        dev = kwargs.pop("device")
    if "dtype" in kwargs:
        dtype = kwargs.pop("dtype")
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    flags = 0  # positional bools: ``non_blocking``, then ``copy``
    for a in args:
        if a is None:  # a positional ``device=None`` or ``dtype=None``: unchanged
            continue
        if isinstance(a, Tensor):
            dev, dtype = a.device, a.dtype
        elif isinstance(a, _dt.dtype) or isinstance(a, type) and a in (float, int, bool,
                                                                         complex):
            dtype = a
        elif isinstance(a, (str, device, int)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            flags += 1
            if flags == 2:
                copy = copy or a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {a!r}")
    return as_device(dev), (None if dtype is None else _dt.lookup(dtype)), copy, memory_format


@method
def to(self, *args, **kwargs):
    """Convert dtype and/or device: ``t.to(ember.float64)``, ``t.to('cpu')``,
    ``t.to(other)``, ``t.to(device, dtype)``. Returns ``self`` when nothing changes and
    ``copy`` is False."""
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None:   # PyTorch's ``aten::to`` row, even where nothing changes
            return session.composite("aten::to", lambda: _to_event_inputs(self, args, kwargs),
                                     _to, (self,) + args, kwargs)
    return _to(self, *args, **kwargs)


def _to_event_inputs(self, args, kwargs):
    """The arguments of the ``aten::to`` overload PyTorch's ``Tensor.to`` calls: ``dtype``
    (a dtype alone), ``device`` (a device and a dtype, or another tensor) or
    ``dtype_layout`` (a device alone)."""
    dev, dtype, copy, memory_format = _parse_to(args, dict(kwargs))
    blocking = bool(kwargs.get("non_blocking", False))
    if dev is None and dtype is not None:
        return (self, dtype, blocking, copy, memory_format)
    if dev is not None and dtype is not None:
        return (self, dev, dtype, blocking, copy, memory_format)
    return (self, dtype, None, dev, None, blocking, copy, memory_format)


def _to(self, *args, **kwargs):
    dev, dtype, copy, memory_format = _parse_to(args, dict(kwargs))
    t = self
    if dev is not None and dev != t.device:
        _device_backend(dev)
        params = {"target": dev.type}
        if "cuda" in (dev.type, t.device.type) and (
                dev.index is not None or kwargs.get("non_blocking")):
            params.update(index=dev.index, non_blocking=bool(kwargs.get("non_blocking")))
        t = _dispatch.apply(transfer_op, (t,), params)
        copy = False
    if dtype is not None and dtype.np != t._data.dtype:
        t = _dispatch.apply(to_copy_op, (t,), {"dtype": dtype.np})
        copy = False
    if copy:
        t = clone(t)
    if memory_format is not None and memory_format is not _layout.preserve_format:
        # torch returns ``self`` only when its strides suggest the format asked for; a tensor
        # that is both (one channel, say) gets the asked format's own strides
        want = {_layout.channels_last: "cl", _layout.channels_last_3d: "cl3d"}.get(
            memory_format)
        if want is not None and type(t._data) is np.ndarray and t._data.size and \
                _mf.suggest_format(t._data) != want and \
                t.is_contiguous(memory_format=memory_format):
            return clone(t, memory_format=memory_format)
        t = t.contiguous(memory_format=memory_format)
    return t


def _cast_method(name, d):
    def cast(self, memory_format=None):
        return to(self, d) if memory_format is None else to(self, d,
                                                              memory_format=memory_format)

    cast.__name__ = name
    cast.__doc__ = f"``self.to({d})``."
    method(cast)


for _name, _d in [("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                  ("bfloat16", _dt.bfloat16), ("long", _dt.int64), ("int", _dt.int32),
                  ("short", _dt.int16), ("char", _dt.int8), ("byte", _dt.uint8),
                  ("bool", _dt.bool_), ("cfloat", _dt.complex64), ("cdouble", _dt.complex128)]:
    _cast_method(_name, _d)

# legacy type names by dtype, for messages (ember/autograd/_nodes.py)
_LEGACY = {_dt.float32: "FloatTensor", _dt.float64: "DoubleTensor", _dt.float16: "HalfTensor",
           _dt.bfloat16: "BFloat16Tensor", _dt.int64: "LongTensor", _dt.int32: "IntTensor",
           _dt.int16: "ShortTensor", _dt.int8: "CharTensor", _dt.uint8: "ByteTensor",
           _dt.bool_: "BoolTensor", _dt.complex64: "ComplexFloatTensor",
           _dt.complex128: "ComplexDoubleTensor"}


@method(name="type")
def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()``: the legacy type name ('torch.FloatTensor'); ``x.type(T)``: ``x``
    converted to type ``T`` (a legacy type, its name or a dtype). See ``tensor_type`` in
    ember/_ops/_legacy_types.py.

    Example::

        >>> ember.zeros(2).type()
        'torch.FloatTensor'
    """
    return tensor_type(self, dtype, non_blocking, **kwargs)


@method
def type_as(self, other):
    """``self.to(other.dtype)``."""
    return to(self, other.dtype)


@method
def cpu(self, memory_format=None):
    return to(self, "cpu")


@method
def cuda(self, device=None, non_blocking=False, memory_format=None):
    dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else
                                         device)
    return to(self, dev, non_blocking=non_blocking)


# ------------------------------------------------------------------------------------------------
# clone / contiguous


#: the dim orders, outermost first, of the channels-last formats (``order`` of ``clone_op``)
_CHANNELS_LAST_ORDERS = {"cl": (0, 2, 3, 1), "cl3d": (0, 2, 3, 4, 1)}


def _clone_kernel(xp, a, *, order):
    perm = _CHANNELS_LAST_ORDERS.get(order)
    if perm is not None:  # a fresh channels-last copy, its size-1 dims strided as torch's
        inverse = tuple(int(i) for i in np.argsort(perm))
        return xp.array(a.transpose(perm), order="C", copy=True).transpose(inverse)
    r = xp.array(a, order=order, copy=True)
    return _mf.preserve(r, a) if order == "K" else r  # NOTE [ Result strides ]


clone_op = Op("clone", _clone_kernel, vjp=_identity_vjp, linear=True)


def _order(memory_format):
    if memory_format is None or memory_format is _layout.preserve_format:
        return "K"
    if memory_format is _layout.contiguous_format:
        return "C"
    return memory_format


@public
def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own storage (gradients flow back to ``input``)."""
    order = _order(memory_format)
    if not isinstance(order, str):
        return _channels_last_copy(input, memory_format)
    return _dispatch.apply(clone_op, (input,), {"order": order})


def _channels_last_copy(t, memory_format):
    order, want = ("cl", 4) if memory_format is _layout.channels_last else ("cl3d", 5)
    if t.dim() != want:
        raise RuntimeError(
            f"required rank {want} tensor to use {memory_format} format, got rank {t.dim()}")
    return _dispatch.apply(clone_op, (t,), {"order": order})


@method
def contiguous(self, memory_format=None):
    """``self`` if it is already contiguous in ``memory_format``, else a contiguous copy."""
    fmt = _layout.contiguous_format if memory_format is None else memory_format
    if self.is_contiguous(memory_format=fmt):
        return self
    if fmt is _layout.contiguous_format:
        if _dispatch.intercept:
            session = profiler_session()
            if session is not None:
                # PyTorch's ``aten::contiguous`` around the ``aten::clone`` that copies
                return session.composite("aten::contiguous", lambda: (self, memory_format),
                                         _dispatch.apply, (clone_op, (self,), {"order": "C"}),
                                         {})
        return _dispatch.apply(clone_op, (self,), {"order": "C"})
    if fmt in (_layout.channels_last, _layout.channels_last_3d):
        want = 4 if fmt is _layout.channels_last else 5
        if self.dim() != want:
            raise RuntimeError(
                f"required rank {want} tensor to use {fmt} format, got rank {self.dim()}")
        return _channels_last_copy(self, fmt)
    raise RuntimeError(f"contiguous(): unsupported memory format {fmt}")


# ------------------------------------------------------------------------------------------------
# copy_


def _copy_kernel(xp, dst, src):
    return xp.broadcast_to(_astype(xp, src, dst.dtype) if src.dtype != dst.dtype else src,
                           dst.shape)


def _copy_vjp(g, _dst, _src):
    return g * 0, g


# named apart from the ``copy_`` entrance that dispatch modes see (NOTE [ Dispatch ])
copy_op = Op("_copy", _copy_kernel, vjp=_copy_vjp, linear=True)
copy_op.node_name = "CopyBackwards"  # PyTorch's name


@_dispatch.entrance("copy_", inplace=True)
def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, any dtype, any device) into ``self``; returns ``self``."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    sd, rd = self._data, src._data
    try:
        both = np.broadcast_shapes(rd.shape, sd.shape)
    except ValueError:
        from ._elementwise import _clash_message

        raise RuntimeError(_clash_message([sd.shape, rd.shape])) from None
    if both != sd.shape:
        raise RuntimeError(
            f"output with shape {list(sd.shape)} doesn't match the broadcast shape {list(both)}")
    if type(rd) is not type(sd):
        src = src.to(self.device)
    if src._rg or self._rg:
        if _dispatch.check_inplace is not None:
            _dispatch.check_inplace(self, "copy_")
        if _dispatch.state.grad_enabled and _dispatch.record is not None:
            return _dispatch.commit_inplace_result(
                "copy_", self, lambda: _dispatch.apply(copy_op, (self, src), {}))
    _dispatch.check_overlap("copy_", self)
    if src._data is not self._data:
        rd = src._data
        if rd.dtype.kind == "c" and sd.dtype.kind != "c":
            rd = rd != 0 if sd.dtype.kind == "b" else rd.real
        if rd.dtype != sd.dtype and (sd.dtype in _dt._NO_MATH_NP or rd.dtype in _dt._OPAQUE_NP
                                     or sd.dtype == np.float16 and rd.dtype == np.float64):
            # PyTorch's float8 rules; opaque dtypes raise; NOTE [ Doubles to half through float ]
            rd = _astype(np, rd, sd.dtype)
        sd[...] = rd
    self._bump()
    return self


Tensor.copy_ = copy_


# ------------------------------------------------------------------------------------------------
# detach / data


@method
def detach(self):
    """A new tensor sharing storage (and version counter) with ``self`` but outside the
    graph."""
    t = wrap(self._data)
    vc = self._vc
    if vc is None:
        vc = self._vc = [0]
    t._vc = vc
    t._base = self._base
    return t


@method
def detach_(self):
    """Detach ``self`` from the graph in place, making it a leaf."""
    if self._base is not None and self._base._rg:
        raise RuntimeError(
            "Can't detach views in-place. Use detach() instead. If you are using DistributedDataP"
            "arallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients "
            "are views of DDP buckets, and hence detach_() cannot be called on these gradients. "
            "To fix this error, please refer to the Optimizer.zero_grad() function in "
            "torch/optim/optimizer.py as the solution.")
    self._grad_fn = None
    self._rg = False
    return self


def _get_data(self):
    t = wrap(self._data)
    t._vc = [0]
    return t


def _set_data(self, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
    self._data = value._data


Tensor.data = property(_get_data, _set_data,
                       doc="The tensor's data outside autograd; assigning swaps the storage.")


# ------------------------------------------------------------------------------------------------
# pickling and deep copies (copies, as PyTorch documents; ember.multiprocessing shares instead)


def _rebuild_from_array(array, requires_grad, state=None):
    t = wrap(array)
    if requires_grad:
        t._rg = True
    if state:  # Python attributes set on the tensor (a Buffer's tag among them)
        t.__dict__.update(state)
    return t


def _reduce_ex(self, protocol):
    a = self._data
    a = a if type(a) is np.ndarray else _dispatch.backends_by_name["cpu"].to_device(a)
    args = (np.require(a, requirements="C"), self._rg)  # keeps 0-d
    state = getattr(self, "__dict__", None)
    return (_rebuild_from_array, args + (dict(state),) if state else args)


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    new = type(self).__new__(type(self)) if type(self) is not Tensor else None
    t = wrap(self._data.copy())
    if new is not None:
        new._data, new._rg, new._grad_fn, new._base, new._vc = t._data, False, None, None, None
        t = new
    t._rg = self._rg
    memo[id(self)] = t
    g = self.grad
    if g is not None:
        import copy

        t._grad = copy.deepcopy(g, memo)
    d = getattr(self, "__dict__", None)
    if d:
        import copy

        t.__dict__.update(copy.deepcopy(d, memo))
    return t


Tensor.__reduce_ex__ = _reduce_ex
Tensor.__deepcopy__ = _deepcopy


# ------------------------------------------------------------------------------------------------
# shared memory (ember.multiprocessing holds the mechanism; NOTE [ Sharing storages ])


def _share_memory_(self):
    """Move this tensor's storage to shared memory (a no-op if it already is); returns self."""
    from ..multiprocessing import _shared

    return _shared.share_storage(self)


Tensor.share_memory_ = _share_memory_
