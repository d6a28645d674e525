"""Storages: the flat buffers tensors view.

A storage is the memory that owns a tensor's bytes. On the CPU that is the NumPy array that
owns its buffer (NumPy keeps ``.base`` pointing at the owner, so every view of one buffer
reaches the same root); a storage object is a thin, comparable handle on that root. Tensors
created by an op own fresh memory, so no storage object is made until someone asks.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import dtype as _dt
from .backend import backends_by_name, backends_by_type
from .device import as_device


def _root(a):
    """The array that owns ``a``'s memory (``a`` itself for a fresh result)."""
    base = a.base
    while base is not None and hasattr(base, "base"):
        if hasattr(base, "dtype"):
            a = base
        elif not hasattr(base, "__array_interface__"):
            break
        # else: the stand-in NumPy's as_strided puts between a view and its array; look
        # through it to the array (shape ops build strided views with as_strided)
        base = base.base
    return a


def storage_of(a) -> UntypedStorage:
    return UntypedStorage._of_root(_root(a))


class StorageBase:
    """The base class of :class:`UntypedStorage` (``torch._C.StorageBase``): a marker for
    ``isinstance`` checks.

    Example::

        >>> isinstance(ember.ones(2).untyped_storage(), ember.StorageBase)
        True
    """

    __slots__ = ()


class UntypedStorage(StorageBase):
    """A flat byte buffer shared by all the tensors that view it (``Tensor.untyped_storage()``).

    Args:
        size (int): the number of bytes, zero-filled. Default: 0.
        device (ember.device, optional): where the bytes live. Default: the CPU. Keyword-only.

    Example:
        >>> x = ember.zeros(3)
        >>> s = x.untyped_storage()
        >>> s.nbytes(), x[1:].untyped_storage().data_ptr() == s.data_ptr()
        (12, True)
    """

    __slots__ = ("_array", "__weakref__")

    def __init__(self, size=0, *, device=None):
        dev = as_device(device)
        if dev is not None and dev.type != "cpu":
            self._array = backends_by_name[dev.type].xp.zeros(int(size), np.uint8)
        else:
            self._array = np.zeros(int(size), np.uint8)

    @classmethod
    def _of_root(cls, root):
        s = object.__new__(cls)
        s._array = root
        return s

    def _bytes(self):
        """The buffer as a flat uint8 array (a view, no copy)."""
        a = self._array
        flat = a.reshape(-1, order="A" if a.flags.f_contiguous and not a.flags.c_contiguous
                         else "C")
        return flat.view(np.uint8) if flat.dtype != np.uint8 else flat

    def nbytes(self) -> int:
        return self._array.nbytes

    def size(self) -> int:
        return self._array.nbytes

    __len__ = size

    def data_ptr(self) -> int:
        a = self._array
        return a.__array_interface__["data"][0] if type(a) is np.ndarray else a.data.ptr

    @property
    def device(self):
        return backends_by_type[type(self._array)].device_of(self._array)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def element_size(self) -> int:
        return 1

    def untyped(self):
        """This storage itself (what a typed storage's ``untyped()`` gives; safetensors
        calls it on any storage)."""
        return self

    def is_shared(self) -> bool:
        return getattr(self._array, "_ember_shared", False)

    def tolist(self):
        return self._bytes().tolist()

    def __getitem__(self, i):
        # a slice is a storage over those bytes (shared, as torch's), an index one byte's value
        if isinstance(i, slice):
            return UntypedStorage._of_root(self._bytes()[i])
        return int(self._bytes()[i])

    def __setitem__(self, i, v):
        self._bytes()[i] = v

    def fill_(self, value):
        self._bytes()[...] = value
        return self

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count=-1, offset=0, *, dtype=None):
        """A CPU storage holding a copy of a bytes-like object's contents.

        Args:
            buffer: any object with the buffer protocol (``bytes``, ``bytearray``, arrays).
            byte_order (str): ``"native"``, ``"little"`` or ``"big"``: how ``dtype``'s
                elements are laid out in ``buffer`` (required for elements of more than one
                byte). Default: None.
            count (int): how many elements to take; -1: all. Default: -1.
            offset (int): bytes to skip first. Default: 0.
            dtype (ember.dtype): the element type read (required, as in PyTorch).

        Returns:
            UntypedStorage: the bytes, in native order.

        Example::

            >>> UntypedStorage.from_buffer(b"abc", dtype=ember.uint8).tolist()
            [97, 98, 99]
        """
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        arr = _from_buffer(buffer, byte_order, int(count), int(offset), _dt.lookup(dtype),
                           cls.__name__)
        return cls._of_root(arr.view(np.uint8).reshape(-1))

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A CPU storage over the bytes of a file, memory-mapped (how safetensors loads).

        Args:
            filename (str): the file.
            shared (bool): writes reach the file (and other processes mapping it); the file is
                created or extended to ``nbytes``. False: writes stay private to this
                storage, and the file must hold at least ``nbytes`` bytes. Default: False.
            nbytes (int): how many bytes to map, from the file's start. Default: 0.

        Returns:
            UntypedStorage: the mapped bytes.

        Example::

            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "b.bin")
            >>> with open(path, "wb") as f:
            ...     _ = f.write(bytes([1, 2, 3]))
            >>> UntypedStorage.from_file(path, nbytes=3).tolist()
            [1, 2, 3]
        """
        import os

        nbytes = int(nbytes)
        if shared:
            if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
                with open(filename, "ab") as f:
                    f.truncate(nbytes)
        elif os.path.getsize(filename) < nbytes:
            raise RuntimeError(
                f"from_file: the file {filename} holds {os.path.getsize(filename)} bytes, "
                f"fewer than nbytes={nbytes}")
        if nbytes == 0:
            return cls(0)
        import mmap

        with open(filename, "r+b" if shared else "rb") as f:
            mapped = mmap.mmap(f.fileno(), nbytes,
                               access=mmap.ACCESS_WRITE if shared else mmap.ACCESS_COPY)
        # a plain array over the mapping (the mapping stays open while the array lives)
        return cls._of_root(np.frombuffer(mapped, dtype=np.uint8))

    def copy_(self, other):
        if other.nbytes() != self.nbytes():
            raise RuntimeError(
                f"copy_: storages have different sizes ({other.nbytes()} vs {self.nbytes()})")
        self._bytes()[...] = other._bytes()
        return self

    def clone(self):
        return UntypedStorage._of_root(self._bytes().copy())

    def __eq__(self, other):
        return isinstance(other, UntypedStorage) and other._array is self._array

    def __hash__(self):
        return id(self._array)

    def __repr__(self):
        return f"ember.UntypedStorage of {self.nbytes()} bytes on {self.device}"


# NOTE [ TypedStorage deprecation warning ]
# PyTorch deprecates typed storages and says so once per process: on the first
# ``tensor.storage()`` or typed-storage constructor a program calls, whatever the warnings
# filters (a second use is silent even under ``-W always``). ember's own typed storages
# (serialization, ``clone``) are built through the internal ``(untyped, dtype)`` form and
# never warn, as torch's internal ones do not.

_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
    "the only storage class. This should only matter to you if you are using storages "
    "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
    "tensor.storage()")
_typed_storage_warned = False


def warn_typed_storage_removal(stacklevel=2):
    """Warn, the first time in this process only, that typed storages are deprecated;
    ``stacklevel`` counts from the caller, as for ``warnings.warn``."""
    global _typed_storage_warned
    if not _typed_storage_warned:
        _typed_storage_warned = True
        warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=stacklevel + 1)


class TypedStorage:
    """A storage seen as elements of one dtype (``Tensor.storage()``; legacy API).

    ``TypedStorage(untyped, dtype)`` wraps a byte storage (ember's own use);
    ``TypedStorage(size_or_sequence, dtype=None)`` and ``TypedStorage(wrap_storage=...,
    dtype=...)`` build one as PyTorch's constructor does (dtype: the default dtype).

    Args:
        *args: ``(untyped, dtype)``, a size, or a sequence of values.
        wrap_storage (UntypedStorage, optional): the bytes to view. Keyword-only.
        dtype (ember.dtype, optional): the element type. Default: the default dtype.
        device (ember.device, optional): where a new storage lives. Default: the CPU.

    Example::

        >>> ember.TypedStorage([1, 2], dtype=ember.int64).tolist()
        [1, 2]
    """

    __slots__ = ("_untyped", "dtype")

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None):
        if len(args) == 2 and isinstance(args[0], UntypedStorage) and wrap_storage is None:
            self._untyped, self.dtype = args[0], _dt.lookup(args[1])
            return
        warn_typed_storage_removal(stacklevel=2)
        if dtype is None:
            dtype = _dt.get_default_dtype()
        _init_typed(self, type(self).__name__, args, wrap_storage, _dt.lookup(dtype), device)

    def untyped(self):
        return self._untyped

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count=-1, offset=0, *, dtype=None):
        """A CPU storage holding a copy of the elements a bytes-like object holds.

        Args:
            buffer: any object with the buffer protocol (``bytes``, ``bytearray``, arrays).
            byte_order (str): ``"native"``, ``"little"`` or ``"big"`` (required for elements
                of more than one byte). Default: None.
            count (int): how many elements to take; -1: all. Default: -1.
            offset (int): bytes to skip first. Default: 0.
            dtype (ember.dtype): the element type (a legacy class such as
                ``ember.FloatStorage`` knows its own; ``TypedStorage`` needs it).

        Returns:
            TypedStorage: of ``dtype``.

        Example::

            >>> ember.FloatStorage.from_buffer(b"\\x00\\x00\\x80?", "little").tolist()
            [1.0]
        """
        own = getattr(cls, "_dtype", None)
        if own is not None:
            if dtype is not None and _dt.lookup(dtype) is not own:
                raise RuntimeError(f"{cls.__name__}.from_buffer(): dtype cannot be given "
                                   f"(it is {own})")
            dtype = own
        elif dtype is None:
            raise RuntimeError("TypedStorage.from_buffer(): a dtype is required")
        dtype = _dt.lookup(dtype)
        arr = _from_buffer(buffer, byte_order, int(count), int(offset), dtype, cls.__name__)
        return TypedStorage(UntypedStorage._of_root(arr.view(np.uint8).reshape(-1)), dtype)

    @classmethod
    def _from_buffer(cls, *args, dtype=None, device=None, **kwargs):
        """:meth:`from_buffer` with a target device (the private spelling libraries use).

        Args:
            *args, **kwargs: as :meth:`from_buffer`.
            dtype (ember.dtype, optional): as :meth:`from_buffer`.
            device (ember.device, optional): where the storage lives. Default: the CPU.

        Returns:
            TypedStorage.

        Example::

            >>> ember.ByteStorage._from_buffer(b"ab").tolist()
            [97, 98]
        """
        s = cls.from_buffer(*args, dtype=dtype, **kwargs)
        if device is not None and as_device(device).type != "cpu":
            xp = backends_by_name[as_device(device).type].xp
            s = TypedStorage(UntypedStorage._of_root(xp.asarray(s._untyped._array)), s.dtype)
        return s

    def _elements(self):
        return self._untyped._bytes().view(_np_of(self.dtype))

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.itemsize

    __len__ = size

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped.data_ptr()

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped.is_cuda

    def is_shared(self) -> bool:
        return self._untyped.is_shared()

    def tolist(self):
        return self._elements().tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._elements()[i].tolist()

    def __setitem__(self, i, v):
        self._elements()[i] = v

    def fill_(self, value):
        self._elements()[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        self._elements()[...] = source._elements().astype(_np_of(self.dtype))
        return self

    def clone(self):
        return TypedStorage(self._untyped.clone(), self.dtype)

    def cpu(self):
        if self.device.type == "cpu":
            return self
        return _typed_from_array(self._elements().get(), self.dtype)

    def _to(self, dtype):
        return _typed_from_array(self._elements().astype(_np_of(dtype)), dtype)

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name (``'torch.FloatStorage'``), or a copy as another storage
        class when ``dtype`` names one."""
        if dtype is None:
            return "torch." + _ALL_LEGACY_NAMES[self.dtype]
        target = getattr(dtype, "dtype", None)
        return self._to(_dt.lookup(dtype if target is None else target))

    def pickle_storage_type(self) -> str:
        return _ALL_LEGACY_NAMES[self.dtype]

    def __repr__(self):
        vals = "\n".join(f" {v}" for v in self.tolist())
        return f"{vals}\n[{_dt.printed_module[0]}.storage.TypedStorage(dtype={self.dtype}, " \
               f"device={self.device}) of size {self.size()}]"

    __str__ = __repr__


for _method, _target in [("double", "float64"), ("float", "float32"), ("half", "float16"),
                         ("bfloat16", "bfloat16"), ("long", "int64"), ("int", "int32"),
                         ("short", "int16"), ("char", "int8"), ("byte", "uint8"),
                         ("bool", "bool"), ("complex_float", "complex64"),
                         ("complex_double", "complex128")]:
    def _cast(self, _d=_target):
        return self if self.dtype.name == _d else self._to(_dt.lookup(_d))

    _cast.__name__ = _method
    _cast.__doc__ = f"A copy as {_target} elements (itself if already so)."
    setattr(TypedStorage, _method, _cast)


# quantized storages hold the raw integers (NOTE [ Quantized tensors ] in ember/ao/_qtensor.py)
_QUANTIZED_NP = {_dt.qint8: np.int8, _dt.quint8: np.uint8, _dt.qint32: np.int32,
                 _dt.quint4x2: np.uint8, _dt.quint2x4: np.uint8}


def _np_of(dtype):
    """The NumPy type of a storage's elements."""
    npd = _dt.to_np.get(dtype)
    return _QUANTIZED_NP[dtype] if npd is None and dtype in _QUANTIZED_NP else _dt.to_np[dtype]


def _typed_from_array(arr, dtype):
    flat = np.ascontiguousarray(arr).reshape(-1)
    return TypedStorage(UntypedStorage._of_root(flat), dtype)


def _from_buffer(buffer, byte_order, count, offset, dtype, cls_name):
    """The elements of ``dtype`` a bytes-like ``buffer`` holds, copied into a NumPy array
    (``from_buffer`` of the storage classes)."""
    npd = np.dtype(_np_of(dtype))
    if byte_order is None:
        if npd.itemsize > 1:
            raise RuntimeError("function missing required argument 'byte_order' (pos 2): "
                               f"{cls_name}.from_buffer() of {dtype} elements needs 'native', "
                               "'little' or 'big'")
        byte_order = "native"
    if byte_order not in ("native", "little", "big"):
        raise ValueError(f"{cls_name}.from_buffer(): byte_order must be 'native', 'little' or "
                         f"'big', got {byte_order!r}")
    if npd.itemsize > 1 and byte_order != "native":
        npd = npd.newbyteorder("<" if byte_order == "little" else ">")
    raw = memoryview(buffer).cast("B")
    if offset < 0 or offset > len(raw):
        raise RuntimeError(f"{cls_name}.from_buffer(): offset {offset} is outside the buffer "
                           f"of {len(raw)} bytes")
    avail = (len(raw) - offset) // npd.itemsize
    if count < 0:
        if (len(raw) - offset) % npd.itemsize:
            raise RuntimeError(f"{cls_name}.from_buffer(): the buffer's size {len(raw) - offset}"
                               f" is not a multiple of the element size {npd.itemsize}")
        count = avail
    elif count > avail:
        raise RuntimeError(f"{cls_name}.from_buffer(): asked for {count} elements, the buffer "
                           f"holds {avail}")
    arr = np.frombuffer(raw, dtype=npd, count=count, offset=offset)
    return arr.astype(npd.newbyteorder("="), copy=True)


def _init_typed(self, cls_name, args, wrap_storage, dtype, device):
    """Fill a TypedStorage from PyTorch's constructor forms: (), (size), (sequence) or
    (wrap_storage=untyped)."""
    if wrap_storage is not None:
        if args:
            raise TypeError(f"{cls_name}(): no positional arguments allowed with wrap_storage")
        if not isinstance(wrap_storage, UntypedStorage):
            raise TypeError(f"{cls_name}(): expected wrap_storage to be an UntypedStorage, got "
                            f"{type(wrap_storage).__name__}")
        self._untyped, self.dtype = wrap_storage, dtype
        return
    if len(args) > 1:
        raise TypeError(f"{cls_name}(): expected no arguments, a size or a sequence, got "
                        f"{len(args)} arguments")
    data = args[0] if args else 0
    npd = _np_of(dtype)
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        if data < 0:
            raise RuntimeError(f"{cls_name}(): size must be non-negative, got {data}")
        arr = np.zeros(int(data), npd)
    elif isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    else:
        arr = np.asarray(list(data)).astype(npd).reshape(-1)
    if device is not None and as_device(device).type != "cpu":
        xp = backends_by_name[as_device(device).type].xp
        arr = xp.asarray(arr)
    self._untyped, self.dtype = UntypedStorage._of_root(arr), dtype


# ------------------------------------------------------------------------------------------------
# NOTE [ Legacy storage classes ]
# ``torch.FloatStorage`` and its siblings are TypedStorage subclasses fixed to one dtype.
# A storage made by ``tensor.storage()`` is a plain TypedStorage, yet PyTorch answers
# ``isinstance(x.storage(), torch.FloatStorage)`` by the storage's dtype -- the metaclass
# below does the same. Constructors take (), a size or a sequence, on the CPU only.


class _LegacyStorageMeta(type):
    @property
    def dtype(cls):
        return cls._dtype

    def __instancecheck__(cls, instance):
        if type(instance) is TypedStorage:
            return instance.dtype is cls.dtype and instance.device.type == "cpu"
        return type.__instancecheck__(cls, instance)


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    __slots__ = ()
    _dtype = None

    def __init__(self, *args, wrap_storage=None, **kwargs):
        if kwargs:
            raise RuntimeError(f"{type(self).__name__}(): keyword argument "
                               f"'{next(iter(kwargs))}' cannot be specified")
        warn_typed_storage_removal(stacklevel=2)
        _init_typed(self, type(self).__name__, args, wrap_storage, type(self)._dtype, None)


_LEGACY_NAMES = {
    _dt.float32: "FloatStorage", _dt.float64: "DoubleStorage", _dt.float16: "HalfStorage",
    _dt.bfloat16: "BFloat16Storage", _dt.int64: "LongStorage", _dt.int32: "IntStorage",
    _dt.int16: "ShortStorage", _dt.int8: "CharStorage", _dt.uint8: "ByteStorage",
    _dt.bool_: "BoolStorage", _dt.complex64: "ComplexFloatStorage",
    _dt.complex128: "ComplexDoubleStorage",
}
# CPU only (torch.cuda has no quantized storage classes), so kept apart from the table above
_QUANTIZED_LEGACY_NAMES = {
    _dt.qint8: "QInt8Storage", _dt.quint8: "QUInt8Storage", _dt.qint32: "QInt32Storage",
    _dt.quint4x2: "QUInt4x2Storage", _dt.quint2x4: "QUInt2x4Storage",
}
_ALL_LEGACY_NAMES = {**_LEGACY_NAMES, **_QUANTIZED_LEGACY_NAMES}


def _make_legacy(d, name):
    cls = _LegacyStorageMeta(name, (_LegacyStorage,), {
        "__slots__": (), "_dtype": d, "__module__": "ember",
        "__doc__": f"The legacy typed storage of {d} elements (a TypedStorage with dtype "
                   f"{d}).\n\nArgs:\n    *args: a size, or a sequence of values.\n"
                   f"    wrap_storage (UntypedStorage, optional): the bytes to view instead.\n"
                   f"\nExample::\n\n    >>> len(ember.{name}(3))\n    3\n"})
    return cls


#: name -> class, for ``ember.FloatStorage`` and its siblings
legacy_storage_classes = {name: _make_legacy(d, name) for d, name in _ALL_LEGACY_NAMES.items()}
_LEGACY_BY_DTYPE = {d: legacy_storage_classes[n] for d, n in _ALL_LEGACY_NAMES.items()}


def legacy_storage_class(dtype):
    """The legacy storage class of ``dtype`` (``ember.FloatStorage`` for float32)."""
    return _LEGACY_BY_DTYPE[dtype]
