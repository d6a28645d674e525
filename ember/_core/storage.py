"""Storages: the flat buffers tensors view.

A storage is the memory that owns a tensor's bytes. On the CPU that is the NumPy array that
owns its buffer (NumPy keeps ``.base`` pointing at the owner, so every view of one buffer
reaches the same root); a storage object is a thin, comparable handle on that root. Tensors
created by an op own fresh memory, so no storage object is made until someone asks.
"""

from __future__ import annotations

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


class UntypedStorage:
    """A flat byte buffer shared by all the tensors that view it."""

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

    def is_shared(self) -> bool:
        return getattr(self._array, "_ember_shared", False)

    def tolist(self):
        return self._bytes().tolist()

    def __getitem__(self, i):
        return self._bytes()[i].tolist() if isinstance(i, slice) else int(self._bytes()[i])

    def __setitem__(self, i, v):
        self._bytes()[i] = v

    def fill_(self, value):
        self._bytes()[...] = value
        return self

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


class TypedStorage:
    """A storage seen as elements of one dtype (``Tensor.storage()``; legacy API)."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, untyped, dtype):
        self._untyped = untyped
        self.dtype = dtype

    def untyped(self):
        return self._untyped

    def _elements(self):
        return self._untyped._bytes().view(_dt.to_np[self.dtype])

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.itemsize

    __len__ = size

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped.data_ptr()

    @property
    def device(self):
        return self._untyped.device

    def tolist(self):
        return self._elements().tolist()

    def __getitem__(self, i):
        return self._elements()[i].tolist()

    def __repr__(self):
        vals = "\n".join(f" {v}" for v in self.tolist())
        return f"{vals}\n[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) " \
               f"of size {self.size()}]"
