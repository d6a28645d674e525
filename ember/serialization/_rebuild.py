"""What the globals of a checkpoint's pickle become in ember: storage types, dtypes and the
``torch._utils._rebuild_*`` functions that turn (storage, offset, size, stride) into tensors.

A loaded storage is an ember ``TypedStorage`` over an ``UntypedStorage`` whose array is the
storage's flat bytes (``uint8``); tensors are strided views of it, so tensors that shared a
storage when saved share memory after loading.
"""

from __future__ import annotations

import collections

import numpy as np

from .._core import dtype as _dt
from .._core.storage import TypedStorage, UntypedStorage
from .._core.tensor import Tensor, wrap

# legacy typed-storage class names, by dtype (what PyTorch writes for these dtypes)
STORAGE_NAMES = {
    _dt.float32: "FloatStorage", _dt.float64: "DoubleStorage", _dt.float16: "HalfStorage",
    _dt.bfloat16: "BFloat16Storage", _dt.int64: "LongStorage", _dt.int32: "IntStorage",
    _dt.int16: "ShortStorage", _dt.int8: "CharStorage", _dt.uint8: "ByteStorage",
    _dt.bool_: "BoolStorage", _dt.complex64: "ComplexFloatStorage",
    _dt.complex128: "ComplexDoubleStorage", _dt.qint8: "QInt8Storage",
    _dt.quint8: "QUInt8Storage", _dt.qint32: "QInt32Storage",
}
STORAGE_DTYPES = {v: k for k, v in STORAGE_NAMES.items()}

# dtypes PyTorch may name in a checkpoint that ember cannot hold
_FOREIGN_DTYPES = ("complex32", "qint8", "qint32", "quint8", "quint4x2", "quint2x4")


class StorageType:
    """What a legacy storage class such as ``torch.FloatStorage`` unpickles to: the dtype
    of the storage it names.

    Args:
        name: the class name, e.g. ``"FloatStorage"``.

    Example:
        >>> StorageType("FloatStorage").dtype
        ember.float32
    """

    def __init__(self, name: str):
        if name not in STORAGE_DTYPES:
            raise KeyError(name)
        self._name = name
        self.dtype = STORAGE_DTYPES[name]

    def __str__(self):
        return f"StorageType(dtype={self.dtype})"


class ForeignDtype:
    """A PyTorch dtype ember has no counterpart for (``torch.uint16``, float8...): it
    unpickles, and building a tensor of it raises."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def typed_storage(data: np.ndarray, dtype) -> TypedStorage:
    """A TypedStorage over the flat byte array ``data``."""
    return TypedStorage(UntypedStorage._of_root(data), dtype)


def _elements(storage, dtype=None):
    """The storage's flat array seen as ``dtype`` (its own dtype when None)."""
    if isinstance(storage, TypedStorage):
        dtype = dtype or storage.dtype
        storage = storage.untyped()
    if isinstance(dtype, ForeignDtype):
        raise RuntimeError(f"ember.load: the checkpoint holds a tensor of dtype {dtype!r}, "
                           "which ember does not support")
    arr = storage._array
    flat = arr.reshape(-1) if arr.ndim != 1 else arr
    return flat.view(dtype.np) if flat.dtype != dtype.np else flat


def _as_strided(arr, offset, size, stride):
    size, stride = tuple(size), tuple(stride)
    if not size:
        return arr[offset:offset + 1].reshape(())
    if any(s == 0 for s in size):
        return arr[:0].reshape(size) if arr.size else arr[:0].reshape(size)
    xp = np if isinstance(arr, np.ndarray) else __import__(type(arr).__module__.split(".")[0])
    item = arr.itemsize
    if xp is np and arr.dtype in _dt._NO_MATH_NP:  # as_strided cannot spell these types
        raw = np.dtype(f"u{item}")
        return _as_strided(arr.view(raw), offset, size, stride).view(arr.dtype)
    return xp.lib.stride_tricks.as_strided(arr[offset:], shape=size,
                                           strides=tuple(s * item for s in stride))


def _rebuild_tensor(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor``: a strided view of ``storage``."""
    return wrap(_as_strided(_elements(storage), storage_offset, size, stride))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    """``torch._utils._rebuild_tensor_v2``: a view of a typed storage."""
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t._rg = True
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """``torch._utils._rebuild_tensor_v3``: a view of an untyped storage as ``dtype``."""
    t = wrap(_as_strided(_elements(storage, dtype), storage_offset, size, stride))
    if requires_grad:
        t._rg = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    """``torch._utils._rebuild_parameter``: wrap ``data`` as a Parameter."""
    from ..nn.parameter import Parameter

    p = Parameter(data, requires_grad)
    if state:
        _set_state(p, state)
    return p


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks, state)


def _set_state(obj, state):
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
        for k, v in (slots or {}).items():
            setattr(obj, k, v)
    if state:
        obj.__dict__.update(state)


def _rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: a tensor subclass or a tensor with Python
    attributes: rebuild the tensor, then its type and ``__dict__``."""
    t = func(*args)
    if type(t) is not new_type and isinstance(new_type, type) and issubclass(new_type, Tensor):
        t = t.as_subclass(new_type)
    setstate = getattr(type(t), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        t.__setstate__(state)
    else:
        _set_state(t, state)
    return t


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    t = data.to(dtype=dtype, device=device)
    if requires_grad:
        t._rg = True
    return t


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    from .. import from_numpy

    t = from_numpy(np.asarray(data)).to(dtype=dtype, device=device)
    if requires_grad:
        t._rg = True
    return t


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    from .. import empty_strided

    return empty_strided(size, stride, dtype=dtype, device="meta", requires_grad=requires_grad)


def _unsupported(kind):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"ember.load: the checkpoint holds {kind}, which ember does not "
                           "support yet")

    rebuild.__name__ = f"_rebuild_{kind.replace(' ', '_')}"
    return rebuild


def get_layout(name):
    """``torch.serialization._get_layout``: the layout object named ``torch.<name>``."""
    from .._core import layout

    found = getattr(layout, name.rpartition(".")[2], None)
    if not isinstance(found, layout.layout):
        raise RuntimeError(f"ember.load: layout {name} is not supported")
    return found


def _rebuild_sparse_tensor(layout, data):
    """``torch._utils._rebuild_sparse_tensor``: a COO or CSR/CSC tensor from its parts."""
    from ..sparse._ops import rebuild

    return rebuild(layout, data)


def rebuild_functions():
    """``torch._utils`` names of the functions PyTorch writes into a checkpoint, mapped to
    ember's versions (the unsupported kinds raise when called)."""
    from ..ao._qserial import rebuild_qtensor  # NOTE [ Quantized tensors in checkpoints ]

    table = {
        "_rebuild_tensor": _rebuild_tensor,
        "_rebuild_tensor_v2": _rebuild_tensor_v2,
        "_rebuild_tensor_v3": _rebuild_tensor_v3,
        "_rebuild_parameter": _rebuild_parameter,
        "_rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "_rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor_from_cpu_tensor,
        "_rebuild_device_tensor_from_numpy": _rebuild_device_tensor_from_numpy,
        "_rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
        "_rebuild_qtensor": rebuild_qtensor,
        "_rebuild_sparse_tensor": _rebuild_sparse_tensor,
        "_rebuild_nested_tensor": _unsupported("nested tensors"),
        "_rebuild_wrapper_subclass": _unsupported("wrapper tensor subclasses"),
    }
    return {f"torch._utils.{k}": v for k, v in table.items()}


def allowed_globals():
    """The globals ``weights_only=True`` accepts without ``add_safe_globals``: PyTorch's
    default allow-list, by full name, mapped to ember's objects."""
    import codecs

    from .. import nn
    from .._core.device import device
    from .._core.size import Size

    table = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": nn.Parameter,
        "torch.serialization._get_layout": get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": device,
        "_codecs.encode": codecs.encode,  # how protocol 2 spells bytes
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.UntypedStorage": StorageType("ByteStorage"),
        "torch.storage.UntypedStorage": StorageType("ByteStorage"),
    }
    table.update(rebuild_functions())
    from ..distributed.tensor._api import _rebuild_dtensor  # plain values only

    table["ember.distributed.tensor._api._rebuild_dtensor"] = _rebuild_dtensor
    for name in STORAGE_DTYPES:
        table[f"torch.{name}"] = StorageType(name)
    for d in (*_dt.all_dtypes, *_dt.shell_dtypes, *_dt.float8_dtypes, *_dt.opaque_dtypes):
        table[f"torch.{d.name}"] = d
    for name in _FOREIGN_DTYPES:
        table[f"torch.{name}"] = ForeignDtype(name)
    from ..ao import _qscheme

    for d in _dt.quantized_dtypes:  # held by ember (NOTE [ Quantized tensors in checkpoints ])
        table[f"torch.{d.name}"] = d
    for scheme in _qscheme._ALL.values():
        table[f"torch.{scheme.name}"] = scheme
    from .. import __dict__ as names

    for name in STORAGE_DTYPES:  # legacy tensor classes, where ember has them
        cls = names.get(name.replace("Storage", "Tensor"))
        if cls is not None:
            table[f"torch.{name.replace('Storage', 'Tensor')}"] = cls
    return table
