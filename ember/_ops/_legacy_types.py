"""The legacy tensor types: ``ember.FloatTensor``, ``ember.cuda.LongTensor``, ... and
``Tensor.type``.

NOTE [ Legacy tensor types ]
Before dtypes existed, PyTorch named a tensor's element type and device by a class per pair
(``torch.FloatTensor``: float32 on the CPU; ``torch.cuda.LongTensor``: int64 on CUDA). The
names live on in old programs, and PyTorch keeps them with these meanings, which ember
follows:

- A legacy type is a class, but not a subclass of ``Tensor``, and no tensor is an instance
  of it by construction: ``isinstance(x, ember.FloatTensor)`` asks whether ``x`` is a
  Tensor of dtype float32 on the CPU (the metaclass's ``__instancecheck__``).
- Calling it builds a plain ``Tensor``: ``FloatTensor(2, 3)`` is uninitialised of shape
  (2, 3), ``FloatTensor([1, 2])`` copies data into float32, ``FloatTensor()`` is empty, and
  ``FloatTensor(t)`` aliases a tensor ``t`` that already has that dtype and device.
- ``x.type()`` is the type's name ('torch.FloatTensor': programs compare it with torch's
  string, so it keeps torch's spelling), and ``x.type(T)`` converts to a type given as a
  class, its name or a dtype.
- Attribute lookups on the class that it does not define fall through to ``Tensor``
  (``ember.FloatTensor.add`` is ``Tensor.add``), as PyTorch's types copy Tensor's methods.
"""

from __future__ import annotations

import builtins

import numpy as np

from .._core import dtype as _dt
from .._core.checks import as_shape
from .._core.device import as_device
from .._core.layout import strided
from .._core.size import Size
from .._core.tensor import Tensor

# (class name, dtype) of the legacy types PyTorch still defines, on the CPU and on CUDA
_TYPES = [("FloatTensor", _dt.float32), ("DoubleTensor", _dt.float64),
          ("HalfTensor", _dt.float16), ("BFloat16Tensor", _dt.bfloat16),
          ("LongTensor", _dt.int64), ("IntTensor", _dt.int32), ("ShortTensor", _dt.int16),
          ("CharTensor", _dt.int8), ("ByteTensor", _dt.uint8), ("BoolTensor", _dt.bool_)]

_SIGNATURES = (" * (*, torch.device device = None)\n"
               " * (torch.Storage storage)\n"
               " * (Tensor other)\n"
               " * (tuple of ints size, *, torch.device device = None)\n"
               " * (object data, *, torch.device device = None)\n")


def _cuda_available() -> builtins.bool:
    from .. import cuda

    return cuda.is_available()


class tensortype(type):
    """The metaclass of the legacy tensor types (see NOTE [ Legacy tensor types ])."""

    dtype: _dt.dtype
    is_cuda: builtins.bool

    def __instancecheck__(cls, obj) -> builtins.bool:
        if not isinstance(obj, Tensor):
            return False
        try:
            return obj.dtype is cls.dtype and obj.device.type == cls._device_type
        except Exception:  # a half-built tensor has no dtype yet
            return False

    def __subclasscheck__(cls, sub) -> builtins.bool:
        return type.__subclasscheck__(cls, sub)

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(Tensor, name)
        except AttributeError:
            raise AttributeError(
                f"type object '{cls.__module__}.{cls.__name__}' has no attribute '{name}'"
            ) from None

    def __call__(cls, *args, device=None, **kwargs) -> Tensor:
        return _construct(cls, args, device, kwargs)


def _construct(cls, args, device, kwargs) -> Tensor:
    """``cls(*args, device=device)``: see NOTE [ Legacy tensor types ]."""
    full_name = f"{cls.__module__.replace('ember', 'torch', 1)}.{cls.__name__}"
    if cls._device_type == "cuda" and not _cuda_available():
        raise TypeError(
            f"type {full_name} not available: ember found no CUDA device (CuPy and an NVIDIA "
            "GPU are needed); use the CPU type torch."
            f"{cls.__name__} or move tensors with .to('cuda') on a machine with a GPU")
    if kwargs:
        got = ", ".join([type(a).__name__ for a in args] +
                        [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError("new() received an invalid combination of arguments - got "
                        f"({got}), but expected one of:\n{_SIGNATURES}")
    dev = as_device(device) if device is not None else None
    if dev is not None and dev.type != cls._device_type:
        raise RuntimeError(f"legacy constructor expects device type: {cls._device_type} but "
                           f"device type: {dev.type} was passed")
    if dev is None:
        dev = as_device(cls._device_type)
    d = cls.dtype
    from .creation import empty
    from .from_data import _is_seq, _legacy_new, data_to_array

    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src.dtype is not d or src.device.type != cls._device_type:
            raise TypeError(f"expected {full_name} (dtype {d}, device {cls._device_type}) "
                            f"but got a tensor of dtype {src.dtype} on {src.device}; convert "
                            f"it first with .type({full_name})")
        return _legacy_new(Tensor, src)
    if not args:
        return empty(0, dtype=d, device=dev)
    if builtins.all(isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool)
                    for a in args) or (len(args) == 1 and isinstance(args[0], Size)):
        return empty(as_shape(args, "new"), dtype=d, device=dev)
    if len(args) == 1 and (_is_seq(args[0]) or isinstance(args[0], np.ndarray)):
        arr = np.array(data_to_array(args[0], d, "new"), copy=True, order="C")
        from .._core.tensor import wrap

        t = wrap(arr)
        return t if dev.type == "cpu" else t.to(dev)
    if len(args) == 1 and isinstance(args[0], (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
    if len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    got = ", ".join(type(a).__name__ for a in args)
    raise TypeError("new() received an invalid combination of arguments - got "
                    f"({got}), but expected one of:\n{_SIGNATURES}")


def _make(name: str, d: _dt.dtype, device_type: str, module: str) -> tensortype:
    where = "the CPU" if device_type == "cpu" else "a CUDA device"
    doc = f"""Legacy tensor type: {d} tensors on {where}.

    ``{name}(*sizes)`` makes an uninitialised tensor, ``{name}(data)`` copies data into
    {d}, ``{name}()`` is empty, and ``isinstance(x, {name})`` is true for every {d} tensor on
    {where}. See NOTE [ Legacy tensor types ] in ember/_ops/_legacy_types.py.

    Args:
        *args: sizes as ints (or one ``Size``), or one sequence / NumPy array of data, or one
            tensor of this type to alias.
        device: a device of this type's kind (default: {device_type}).

    Returns:
        Tensor: a plain ``Tensor`` of dtype {d}.

    Example::

        >>> ember.{"" if device_type == "cpu" else "cuda."}{name}  # doctest: +SKIP
    """
    cls = tensortype(name, (), {"__module__": module, "__qualname__": name, "__doc__": doc,
                                "dtype": d, "is_cuda": device_type == "cuda",
                                "is_sparse": False, "layout": strided,
                                "_device_type": device_type})
    return cls


cpu_types = {name: _make(name, d, "cpu", "ember") for name, d in _TYPES}
cuda_types = {name: _make(name, d, "cuda", "ember.cuda") for name, d in _TYPES}
_BY_NAME = {f"torch.{n}": (d, "cpu") for n, d in _TYPES}
_BY_NAME.update({f"torch.cuda.{n}": (d, "cuda") for n, d in _TYPES})


def type_name(t: Tensor) -> str:
    """The legacy type name of tensor ``t``: 'torch.FloatTensor', 'torch.cuda.LongTensor'."""
    kind = t.device.type
    prefix = "torch." if kind == "cpu" else f"torch.{kind}."
    return f"{prefix}{t.dtype.scalar_name}Tensor"


def tensor_type(self: Tensor, dtype=None, non_blocking: builtins.bool = False, **kwargs):
    """``Tensor.type``: the type's name, or ``self`` converted to another type.

    Args:
        dtype: None to ask for the name; else the target as a legacy type class
            (``ember.DoubleTensor``), its name (``'torch.DoubleTensor'``), ``ember.Tensor``
            (the default dtype on the CPU) or an ``ember.dtype``.
        non_blocking: accepted for PyTorch compatibility; copies here are synchronous.

    Returns:
        str or Tensor: the name (e.g. ``'torch.FloatTensor'``) when ``dtype`` is None, else
        the converted tensor (``self`` when nothing changes).

    Example::

        >>> x = ember.zeros(2)
        >>> x.type()
        'torch.FloatTensor'
        >>> x.type(ember.DoubleTensor).dtype
        ember.float64
    """
    if dtype is None and "dtype" not in kwargs:
        return type_name(self)
    if dtype is None:
        dtype = kwargs.pop("dtype")
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if isinstance(dtype, str):
        key = "torch." + dtype[len("ember."):] if dtype.startswith("ember.") else dtype
        if key == "torch.Tensor":
            return self.to("cpu", _dt.get_default_dtype())
        if key not in _BY_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        d, kind = _BY_NAME[key]
        return self.to(kind, d, non_blocking=non_blocking)
    if isinstance(dtype, tensortype):
        return self.to(dtype._device_type, dtype.dtype, non_blocking=non_blocking)
    if dtype is Tensor:
        return self.to("cpu", _dt.get_default_dtype())
    if isinstance(dtype, _dt.dtype):
        return self.to(dtype, non_blocking=non_blocking)
    raise TypeError("dtype must be a type, str, or dtype object")
