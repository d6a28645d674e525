"""Tensor creation: ``tensor``, ``as_tensor``, ``from_numpy``, filled tensors and ranges."""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import as_shape
from .._core.device import as_device
from .._core.tensor import Tensor, wrap
from ._registry import public


def _xp_for(device):
    """The array namespace for a ``device=`` argument (None means CPU)."""
    dev = as_device(device)
    if dev is None or dev.type == "cpu":
        return np
    from .conversion import _device_backend

    return _device_backend(dev).xp


def _finish(array, requires_grad=False, device=None):
    """Wrap a fresh NumPy array, moving it to ``device`` and setting requires_grad."""
    dev = as_device(device)
    if dev is not None and dev.type != "cpu":
        from .conversion import _device_backend

        array = _device_backend(dev).to_device(array)
    t = wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _resolve_dtype(dtype):
    return None if dtype is None else _dt.lookup(dtype)


# ------------------------------------------------------------------------------------------------
# tensor / as_tensor / from_numpy


def _infer_array(data, op_name):
    """NumPy array for nested Python data, with PyTorch's dtype inference: Python floats
    become the default dtype, ints int64, complex the default complex; NumPy arrays and
    tensors inside keep their dtypes."""
    if isinstance(data, Tensor):
        return data._data if type(data._data) is np.ndarray else data._data.get()
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (np.generic,)):
        return np.asarray(data)
    if isinstance(data, (list, tuple)):
        flat_kinds = set()
        arr = _nested_to_array(data, flat_kinds, op_name)
        if arr.dtype == object:
            raise TypeError(f"{op_name}(): could not infer dtype of nested sequence")
        kind = arr.dtype.kind
        if "py" in flat_kinds or arr.dtype in (np.float64, np.complex128, np.int64, np.bool_):
            if kind == "f" and "np" not in flat_kinds:
                return arr.astype(_dt.get_default_dtype().np, copy=False)
            if kind == "c" and "np" not in flat_kinds:
                return arr.astype(_dt.default_complex().np, copy=False)
            if kind in "iu" and "np" not in flat_kinds:
                return arr.astype(np.int64, copy=False)
        return arr
    if isinstance(data, builtins.bool):
        return np.asarray(data)
    if isinstance(data, builtins.int):
        try:
            return np.asarray(data, dtype=np.int64)
        except OverflowError:
            raise RuntimeError(f"Overflow when unpacking long: {data}") from None
    if isinstance(data, builtins.float):
        return np.asarray(data, dtype=_dt.get_default_dtype().np)
    if isinstance(data, builtins.complex):
        return np.asarray(data, dtype=_dt.default_complex().np)
    if hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        return np.asarray(data)
    if hasattr(data, "__dlpack__"):
        return np.from_dlpack(data)
    raise TypeError(
        f"{op_name}(): could not infer dtype of {type(data).__name__}")


def _nested_to_array(data, kinds, op_name):
    """Validate nesting (PyTorch's 'expected sequence of length' error) and convert."""
    shape = []
    probe = data
    while isinstance(probe, (list, tuple)):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    leaves = []
    _collect(data, shape, 0, leaves, kinds, op_name)
    if not leaves:
        return np.zeros(shape, dtype=_dt.get_default_dtype().np)
    arr = np.array(leaves)
    if arr.dtype == object:
        return arr
    return arr.reshape(shape + list(arr.shape[1:]))


def _collect(data, shape, depth, leaves, kinds, op_name):
    if depth < len(shape) and isinstance(data, (list, tuple)):
        if len(data) != shape[depth]:
            raise ValueError(
                f"expected sequence of length {shape[depth]} at dim {depth} (got {len(data)})")
        for x in data:
            _collect(x, shape, depth + 1, leaves, kinds, op_name)
        return
    if depth < len(shape):
        raise TypeError(f"{op_name}(): not a sequence at dim {depth}")
    if isinstance(data, (list, tuple)):
        raise ValueError(f"expected sequence of length {len(shape)} at dim {depth}")
    if isinstance(data, Tensor):
        if data.numel() != 1 and data.dim() > 0:
            raise ValueError(
                "only one element tensors can be converted to Python scalars")
        kinds.add("np")
        leaves.append(data._data.reshape(()) if type(data._data) is np.ndarray else
                      data._data.get().reshape(()))
        return
    if isinstance(data, (np.generic, np.ndarray)):
        kinds.add("np")
    elif isinstance(data, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        kinds.add("py")
    else:
        raise TypeError(
            f"{op_name}(): new(): invalid data type '{type(data).__name__}'")
    leaves.append(data)


@public(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists/tuples, scalars, NumPy arrays,
    tensors), with PyTorch's dtype inference.

    Example::

        >>> ember.tensor([[1., 2.]])
        tensor([[1., 2.]])
    """
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
            "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
            "ember.tensor(sourceTensor).", UserWarning, stacklevel=2)
    arr = _infer_array(data, "tensor")
    d = _resolve_dtype(dtype)
    if d is not None:
        arr = _cast(arr, d.np)
    arr = np.array(arr, copy=True, order="C")
    return _finish(arr, requires_grad, device)


def _cast(arr, npd):
    if arr.dtype == npd:
        return arr
    if arr.dtype.kind == "c" and npd.kind != "c":
        arr = arr.real
    with np.errstate(invalid="ignore"):
        return arr.astype(npd)


@public(method=False)
def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` (a tensor or NumPy array) when no
    conversion is needed."""
    d = _resolve_dtype(dtype)
    dev = as_device(device)
    if isinstance(data, Tensor):
        return data.to(device=dev, dtype=d)
    if isinstance(data, np.ndarray) and data.dtype in _dt.from_np and (dev is None or
                                                                       dev.type == "cpu"):
        arr = data if d is None else _cast(data, d.np)
        return wrap(arr)
    arr = _infer_array(data, "as_tensor")
    if d is not None:
        arr = _cast(arr, d.np)
    if arr is data:
        return wrap(arr)
    return _finish(np.ascontiguousarray(arr), False, dev)


public(as_tensor, name="asarray", method=False)


@public(method=False)
def from_numpy(ndarray):
    """A tensor sharing memory with the NumPy array ``ndarray`` (writes show through both
    ways)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in _dt.from_np:
        raise TypeError(
            f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool.")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().)")
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    return wrap(ndarray)


@public(method=False)
def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object exporting ``__dlpack__`` (NumPy, CuPy, JAX)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    dev_type, _ = ext_tensor.__dlpack_device__()
    if dev_type == 1:  # kDLCPU
        return wrap(np.from_dlpack(ext_tensor))
    if dev_type == 2:  # kDLCUDA
        from .conversion import _device_backend
        from .._core.device import device

        return wrap(_device_backend(device("cuda")).xp.from_dlpack(ext_tensor))
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {dev_type}")


# ------------------------------------------------------------------------------------------------
# filled tensors


def _filled(op_name, size, fill, dtype, device, requires_grad, default=None):
    shape = as_shape(size, op_name)
    d = _resolve_dtype(dtype) or default or _dt.get_default_dtype()
    xp = _xp_for(device)
    if fill is None:
        arr = xp.empty(shape, d.np)
    elif fill == 0:
        arr = xp.zeros(shape, d.np)
    else:
        arr = xp.full(shape, fill, d.np)
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


@public(method=False)
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """A tensor of zeros of shape ``size``."""
    t = _filled("zeros", size, 0, dtype, device, requires_grad)
    return t if out is None else _dispatch.write_out("zeros", out, t)


@public(method=False)
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ones of shape ``size``."""
    t = _filled("ones", size, 1, dtype, device, requires_grad)
    return t if out is None else _dispatch.write_out("ones", out, t)


@public(method=False)
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None):
    """An uninitialised tensor of shape ``size``."""
    t = _filled("empty", size, None, dtype, device, requires_grad)
    return t if out is None else _dispatch.write_out("empty", out, t)


@public(method=False)
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor of shape ``size`` filled with ``fill_value``; the dtype is inferred from the
    fill value as PyTorch does (bool, int64, default float, default complex)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = _dt.scalar_dtype(fill_value)
    t = _filled("full", (size,), fill_value, dtype, device, requires_grad, default)
    return t if out is None else _dispatch.write_out("full", out, t)
