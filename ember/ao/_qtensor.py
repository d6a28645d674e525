"""Quantized tensors: ``ember.quantize_per_tensor``, ``ember.quantize_per_channel`` and the
``Tensor`` methods that read them (``int_repr``, ``q_scale``, ``dequantize``, ...).

NOTE [ Quantized tensors ]
A quantized tensor is an ordinary ``ember.Tensor`` whose ``_data`` is a ``QArray`` instead of
an ndarray: the integer values (an int8/uint8/int32 ndarray) plus the scheme, scale(s), zero
point(s) and channel axis. Nothing on the path of ordinary tensors changes or tests for it:

- the dispatcher already picks kernels by the *array type* of the first input (NOTE [ Hot
  path ] in ember/_dispatch.py), so ``QArray`` gets a backend entry of its own (not a device:
  it is in ``backends_by_type`` only, with the CPU device) whose namespace adapts every kernel
  it is asked for (``__ember_kernel__``, as the meta device does). Ops PyTorch runs on
  quantized tensors without requantizing (views and reshapes, indexing, clone, relu) run on
  the integers and keep the parameters, and ``==``/``!=`` compare the values; every other op
  raises NotImplementedError naming the op and the 'QuantizedCPU' backend, as PyTorch does.
  (The element-wise entrances cast their inputs to the computation's dtype before looking up
  the kernel: ``QArray.astype`` accepts only its own storage type, a no-op.)
- ``QArray.dtype`` is a tag standing for the quantized dtype, registered here in
  ``ember._core.dtype.from_np`` (the array-dtype -> ember-dtype table), so ``Tensor.dtype``,
  ``is_floating_point`` and friends work unchanged and ``Tensor.is_quantized`` reads the
  dtype. The tag's ``kind`` is ``"q"``, a kind NumPy never uses, so code that branches on
  float/int/complex kinds takes none of those branches and reaches the kernel lookup, where
  the op's name is known for the error (and ``requires_grad_`` refuses, as for integers);
  code that would treat the array as NumPy's otherwise (``astype``, ``sum``, ...) finds
  nothing on the tag or the array and raises NotImplementedError, the error PyTorch gives for
  an op with no quantized kernel. Arithmetic with a Python number raises PyTorch's
  RuntimeError (it would need a quantized output it cannot allocate);
- no ``__torch_function__`` and no Tensor subclass are involved, so the slow path that either
  would switch on for every op (``_dispatch.slow``) stays off.
"""

import functools

import numpy as np

from .._core import dtype as _dt
from .._core.backend import Backend, backends_by_type
from .._core.device import device as _device
from .._core.tensor import Tensor, wrap
from .._ops.from_data import from_numpy
from . import _qscheme as _qs

__all__ = ["quantize_per_tensor", "quantize_per_channel", "dequantize"]

_STORAGE = {_dt.qint8: (np.int8, -128, 127), _dt.quint8: (np.uint8, 0, 255),
            _dt.qint32: (np.int32, -(2 ** 31), 2 ** 31 - 1)}


def _no_quantized_kernel(what):
    return NotImplementedError(
        f"Could not run '{what}' with arguments from the 'QuantizedCPU' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build).")


class _DtypeTag:
    """What a ``QArray`` reports as its ``dtype``: a key of ``from_np`` and nothing else."""

    __slots__ = ("qdtype",)
    kind = "q"  # see NOTE [ Quantized tensors ]

    def __init__(self, qdtype):
        self.qdtype = qdtype

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_quantized_kernel(f"aten::{name}")

    def __repr__(self):
        return repr(self.qdtype)


_TAGS = {d: _DtypeTag(d) for d in (_dt.qint8, _dt.quint8, _dt.qint32)}
_dt.from_np.update({tag: d for d, tag in _TAGS.items()})


class QArray:
    """The data of a quantized tensor: integers and how they map back to reals."""

    __slots__ = ("ints", "qdtype", "dtype", "qscheme", "scale", "zero_point", "axis")

    def __init__(self, ints, qdtype, qscheme, scale, zero_point, axis=None):
        self.ints = ints
        self.qdtype = qdtype
        self.dtype = _TAGS[qdtype]
        self.qscheme = qscheme
        self.scale = scale  # float, or float64 ndarray per channel
        self.zero_point = zero_point  # int, or int64 ndarray per channel
        self.axis = axis

    shape = property(lambda self: self.ints.shape)
    ndim = property(lambda self: self.ints.ndim)
    size = property(lambda self: self.ints.size)
    itemsize = property(lambda self: self.ints.itemsize)
    strides = property(lambda self: self.ints.strides)
    nbytes = property(lambda self: self.ints.nbytes)
    flags = property(lambda self: self.ints.flags)

    def like(self, ints):
        return QArray(ints, self.qdtype, self.qscheme, self.scale, self.zero_point, self.axis)

    def __getitem__(self, index):
        if self.axis is not None:
            raise _no_quantized_kernel("aten::index")
        return self.like(self.ints[index])

    def copy(self):
        return self.like(self.ints.copy())

    def astype(self, dtype, copy=True):
        # element-wise entrances cast inputs to the computation's dtype first; a quantized
        # input only "casts" to its own storage type (which leaves it as it is, for the
        # kernels below); any real conversion has no quantized kernel
        if np.dtype(dtype) == self.ints.dtype:
            return self
        raise _no_quantized_kernel("aten::_to_copy")

    def get(self):
        # what .tolist() and printing would copy out: PyTorch refuses to load the scalars
        raise RuntimeError("load_scalar: invalid type")

    def item(self):
        # Tensor.item() of a one-element quantized tensor: the real value it stands for, a
        # Python float, as PyTorch gives
        return float(self.floats().reshape(()))

    def __getattr__(self, name):
        # any NumPy method an op would call (astype, sum, ...): no quantized kernel for it
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_quantized_kernel(f"aten::{name}")

    def floats(self):
        """The dequantized values, float32."""
        q = self.ints.astype(np.int64)
        if self.axis is None:
            return np.asarray(np.float32(self.scale) * (q - self.zero_point).astype(np.float32))
        shape = [1] * q.ndim
        shape[self.axis] = -1
        diff = q - self.zero_point.reshape(shape)
        return (diff * self.scale.reshape(shape)).astype(np.float32)


def _cpu_of(_a):
    return _device("cpu")


def _not_movable(a):
    raise RuntimeError("quantized tensors stay on the CPU in ember")


# ops that only move or select values: they run on the integers and keep the parameters
_SAME_PARAMS = frozenset({
    "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t",
    "contiguous", "clone", "getitem", "expand", "narrow", "select", "slice", "unflatten",
    "movedim", "chunk", "split", "detach", "alias",
    "view_as", "reshape_as", "expand_as", "flip", "roll", "repeat", "tile",
})
_COMPARE = frozenset({"eq", "ne", "equal"})
# arithmetic that PyTorch refuses with a RuntimeError when one side is a number
_ARITHMETIC = frozenset({"add", "sub", "mul", "div", "true_divide", "floor_divide",
                         "remainder", "pow", "rsub"})


def _arithmetic(name):
    def kernel(*args, **kwargs):
        if any(isinstance(a, (int, float, np.number)) for a in args):
            raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                               "https://github.com/pytorch/pytorch/issues/74540")
        raise _no_quantized_kernel(f"aten::{name}")

    return kernel


def _not_supported(name):
    def kernel(*args, **kwargs):
        raise _no_quantized_kernel(f"aten::{name}")

    return kernel


def _first_qarray(args):
    for a in args:
        if type(a) is QArray:
            return a
        if isinstance(a, (list, tuple)):
            for b in a:
                if type(b) is QArray:
                    return b
    return None


def _unwrap(x):
    if type(x) is QArray:
        return x.ints
    if isinstance(x, (list, tuple)) and any(type(b) is QArray for b in x):
        return type(x)(_unwrap(b) for b in x)
    return x


def _rewrap(q, out):
    if isinstance(out, np.ndarray):
        return q.like(out)
    if isinstance(out, (list, tuple)):
        return type(out)(_rewrap(q, o) for o in out)
    return out


def _numpy_kernel(op):
    if op.kernel is not None:
        return functools.partial(op.kernel, np)
    if op.ufunc is not None:
        return getattr(np, op.ufunc)
    return None


class _QuantizedNamespace:
    """The array namespace of the quantized backend (see NOTE [ Quantized tensors ])."""

    @staticmethod
    def asarray(a, dtype=None):
        return a if type(a) is QArray else np.asarray(a, dtype=dtype)

    @staticmethod
    def __ember_kernel__(op, fn):
        name = op.name
        base = _numpy_kernel(op)
        if base is None:
            return _not_supported(name)
        if name in _SAME_PARAMS:
            def same_params(*args, **kwargs):
                q = _first_qarray(args)
                if q.axis is not None and name not in ("clone", "contiguous", "detach",
                                                       "alias"):
                    return _not_supported(name)()
                out = base(*[_unwrap(a) for a in args], **kwargs)
                return _rewrap(q, out)

            return same_params
        if name in ("relu", "relu_"):
            def relu(a, *args, **kwargs):
                if a.axis is not None:
                    return _not_supported(name)()
                return a.like(np.maximum(a.ints, np.asarray(a.zero_point, a.ints.dtype)))

            return relu
        if name in _ARITHMETIC:
            return _arithmetic(name)
        if name == "_to_copy":  # q.float(), q.to(dtype): PyTorch asks for dequantize()
            def to_copy(*args, **kwargs):
                raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                                   "torch.quint8; call .dequantize() for the float values")

            return to_copy
        if name in _COMPARE:
            def compare(*args, **kwargs):
                return base(*[a.floats() if type(a) is QArray else a for a in args], **kwargs)

            return compare
        return _not_supported(name)


backends_by_type[QArray] = Backend("QuantizedCPU", _QuantizedNamespace(), QArray, _cpu_of,
                                   _not_movable)


def _qtensor(qarray):
    from .._settings import warn_at_caller

    # every quantized tensor torch 2.13 creates says this, once per process
    warn_at_caller("torch.quantize_per_tensor, torch.quantize_per_channel and other quantized "
                   "tensor creation functions that produce tensors with dtype torch.quint8, "
                   "torch.qint8, and torch.qint32 are deprecated and will be removed in a "
                   "future PyTorch release. Please see "
                   "https://github.com/pytorch/pytorch/issues/184982 for more information.",
                   once=True)
    return wrap(qarray)


def _check_float_input(x):
    if not isinstance(x, Tensor) or type(x._data) is not np.ndarray \
            or not x.dtype.is_floating_point:
        got = x.dtype.scalar_name if isinstance(x, Tensor) else type(x).__name__
        raise RuntimeError(f"Quantize only works on Float Tensor, got {got}")


def _storage_of(dtype):
    if dtype not in _STORAGE:
        name = dtype.scalar_name if isinstance(dtype, _dt.dtype) else dtype
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")
    return _STORAGE[dtype]


def _fma32(x, inv_scale, zero_point):
    # x * (1 / scale) + zero_point in float32 with one rounding (a fused multiply-add), as
    # PyTorch's quantize kernels compute it: exact in double, then rounded once
    return (x.astype(np.float64) * np.asarray(inv_scale, np.float64) + zero_point).astype(
        np.float32)


def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float tensor with one scale and zero point:
    ``q = clamp(round(input / scale) + zero_point, qmin, qmax)``.

    Args:
        input (Tensor or list of Tensor): float values.
        scale (float or Tensor): the step between representable values.
        zero_point (int or Tensor): the integer that stands for 0.0.
        dtype (ember.dtype): ``ember.quint8``, ``ember.qint8`` or ``ember.qint32``.

    Returns:
        Tensor: a quantized tensor (``is_quantized``), or a list of them for a list input.

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([-1.0, 0.0, 0.26]), 0.1, 10, ember.quint8)
        >>> q.int_repr()
        tensor([ 0, 10, 13], dtype=ember.uint8)
    """
    if isinstance(input, (list, tuple)):
        scales = scale.tolist() if isinstance(scale, Tensor) else [scale] * len(input)
        zps = zero_point.tolist() if isinstance(zero_point, Tensor) else [zero_point] * len(input)
        return [quantize_per_tensor(x, s, z, dtype) for x, s, z in zip(input, scales, zps)]
    _check_float_input(input)
    np_type, qmin, qmax = _storage_of(dtype)
    scale = float(scale)
    zero_point = int(zero_point)
    x = input.detach().numpy().astype(np.float32)
    inv = np.float32(1.0) / np.float32(scale)
    ints = np.clip(np.rint(_fma32(x, inv, zero_point)), qmin, qmax).astype(np_type)
    return _qtensor(QArray(ints, dtype, _qs.per_tensor_affine, scale, zero_point))


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """Quantize a float tensor with a scale and zero point per slice along ``axis``.

    Args:
        input (Tensor): float values.
        scales (Tensor): 1-D, one scale per channel.
        zero_points (Tensor): 1-D integer tensor, one zero point per channel.
        axis (int): the channel dimension.
        dtype (ember.dtype): ``ember.quint8``, ``ember.qint8`` or ``ember.qint32``.

    Returns:
        Tensor: a per-channel quantized tensor.

    Example:
        >>> w = ember.tensor([[0.5, -0.5], [1.0, 2.0]])
        >>> q = ember.quantize_per_channel(w, ember.tensor([0.1, 0.2]), ember.tensor([0, 0]),
        ...                                0, ember.qint8)
        >>> q.int_repr()
        tensor([[ 5, -5],
                [ 5, 10]], dtype=ember.int8)
    """
    _check_float_input(input)
    np_type, qmin, qmax = _storage_of(dtype)
    axis = axis + input.dim() if axis < 0 else axis
    if not 0 <= axis < input.dim():
        raise RuntimeError(f"quantize_per_channel: axis {axis} is out of range for a "
                           f"{input.dim()}-d input")
    s = np.asarray(scales.detach().numpy(), np.float64).reshape(-1)
    z = np.asarray(zero_points.detach().numpy()).reshape(-1).astype(np.int64)
    if s.size != input.shape[axis] or z.size != input.shape[axis]:
        raise RuntimeError(f"quantize_per_channel: expected {input.shape[axis]} scales and "
                           f"zero points (the size of axis {axis}), got {s.size} and {z.size}")
    shape = [1] * input.dim()
    shape[axis] = -1
    x = input.detach().numpy().astype(np.float32)
    inv = (np.float32(1.0) / s.astype(np.float32)).reshape(shape)
    ints = np.clip(np.rint(_fma32(x, inv, z.reshape(shape))), qmin, qmax).astype(np_type)
    return _qtensor(QArray(ints, dtype, _qs.per_channel_affine, s, z, axis))


def dequantize(tensor):
    """The float32 values a quantized tensor stands for: ``(q - zero_point) * scale``; a float
    tensor comes back as it is.

    Args:
        tensor (Tensor or list of Tensor): quantized (or float) tensors.

    Returns:
        Tensor: float values (a list for a list input).

    Example:
        >>> q = ember.quantize_per_tensor(ember.tensor([0.26]), 0.1, 10, ember.quint8)
        >>> ember.dequantize(q)
        tensor([0.3000])
    """
    if isinstance(tensor, (list, tuple)):
        return [dequantize(t) for t in tensor]
    if type(tensor._data) is not QArray:
        return tensor
    return from_numpy(tensor._data.floats())


# -- Tensor methods: see NOTE [ Quantized tensors ] ---------------------------------------------


def _q(self, op):
    a = self._data
    if type(a) is not QArray:
        raise NotImplementedError(
            f"Could not run 'aten::{op}' with arguments from the 'CPU' backend. This could be "
            "because the operator doesn't exist for this backend, or was omitted during the "
            "selective/custom build process (if using custom build).")
    return a


def _per_tensor(self, op):
    a = _q(self, op)
    if a.axis is not None:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.")
    return a


def _per_channel(self, op):
    a = _q(self, op)
    if a.axis is None:
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                           "quantizer->qscheme() == kPerChannelAffineFloatQParams to be true, "
                           "but got false.")
    return a


def int_repr(self):
    """The integers a quantized tensor stores, as a uint8/int8/int32 tensor.

    Example::

        >>> ember.quantize_per_tensor(ember.tensor([0.5]), 0.1, 0, ember.qint8).int_repr()
        tensor([5], dtype=ember.int8)
    """
    return from_numpy(_q(self, "int_repr").ints.copy())


def q_scale(self):
    """The scale of a per-tensor quantized tensor, a float.

    Example::

        >>> ember.quantize_per_tensor(ember.tensor([0.5]), 0.1, 0, ember.qint8).q_scale()
        0.1
    """
    return float(_per_tensor(self, "q_scale").scale)


def q_zero_point(self):
    """The zero point of a per-tensor quantized tensor, an int.

    Example::

        >>> ember.quantize_per_tensor(ember.tensor([0.5]), 0.1, 3, ember.qint8).q_zero_point()
        3
    """
    return int(_per_tensor(self, "q_zero_point").zero_point)


def q_per_channel_scales(self):
    """The scales of a per-channel quantized tensor (float64).

    Example::

        >>> q = ember.quantize_per_channel(ember.ones(2, 2), ember.tensor([0.1, 0.2]),
        ...                                ember.tensor([0, 0]), 0, ember.qint8)
        >>> q.q_per_channel_scales()
        tensor([0.1000, 0.2000], dtype=ember.float64)
    """
    return from_numpy(_per_channel(self, "q_per_channel_scales").scale.copy())


def q_per_channel_zero_points(self):
    """The zero points of a per-channel quantized tensor (int64).

    Example::

        >>> q = ember.quantize_per_channel(ember.ones(2, 2), ember.tensor([0.1, 0.2]),
        ...                                ember.tensor([0, 1]), 0, ember.qint8)
        >>> q.q_per_channel_zero_points()
        tensor([0, 1])
    """
    return from_numpy(_per_channel(self, "q_per_channel_zero_points").zero_point.copy())


def q_per_channel_axis(self):
    """The channel axis of a per-channel quantized tensor.

    Example::

        >>> q = ember.quantize_per_channel(ember.ones(2, 2), ember.tensor([0.1, 0.2]),
        ...                                ember.tensor([0, 0]), 1, ember.qint8)
        >>> q.q_per_channel_axis()
        1
    """
    return int(_per_channel(self, "q_per_channel_axis").axis)


def qscheme(self):
    """The quantization scheme (``ember.per_tensor_affine``, ``ember.per_channel_affine``).

    Example::

        >>> ember.quantize_per_tensor(ember.tensor([0.5]), 0.1, 0, ember.qint8).qscheme()
        ember.per_tensor_affine
    """
    return _q(self, "qscheme").qscheme


def _dequantize_method(self):
    """The float32 values of a quantized tensor (a float tensor is returned as it is).

    Example::

        >>> ember.quantize_per_tensor(ember.tensor([0.26]), 0.1, 0, ember.qint8).dequantize()
        tensor([0.3000])
    """
    return dequantize(self)


_dequantize_method.__name__ = "dequantize"

for _fn in (int_repr, q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points,
            q_per_channel_axis, qscheme, _dequantize_method):
    setattr(Tensor, _fn.__name__, _fn)


def _repr(t):
    """``repr`` of a quantized tensor: its dequantized values, then size, dtype and the
    quantization parameters, laid out as PyTorch does."""
    from .._core import _print

    a = t._data
    values = wrap(a.floats())
    prefix = "tensor("
    text = _print.tensor_str(values, len(prefix)) if a.size else "[]"
    suffixes = [f"size={tuple(a.shape)}", f"dtype={a.qdtype}",
                f"quantization_scheme={a.qscheme}"]
    if a.axis is None:
        suffixes += [f"scale={a.scale}", f"zero_point={a.zero_point}"]
    else:
        suffixes += [f"scale={from_numpy(a.scale)!r}",
                     f"zero_point={from_numpy(a.zero_point)!r}", f"axis={a.axis}"]
    return _print._add_suffixes(prefix + text, suffixes, len(prefix))
