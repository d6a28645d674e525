"""``ember.cuda.gds``: reading and writing storages straight from and to files.

NOTE [ GPUDirect Storage through the host ]
PyTorch's ``GdsFile`` moves a CUDA storage's bytes to or from a file with NVIDIA's cuFile
(GPUDirect Storage: DMA between the NVMe drive and GPU memory). cuFile itself falls back to a
"compatibility mode" -- an ordinary read into host memory, then a copy to the device --
where the file system or driver does not support GDS. ember always takes that path: the
file is opened with the given flags (``O_DIRECT`` is not added, since buffered host I/O has
no alignment rules), ``save_storage`` copies the storage to the host and writes it at the
offset, ``load_storage`` reads ``storage.nbytes()`` bytes at the offset and copies them into
the storage in place. So it works for storages on any device, the CPU included, and a file
written by either framework reads back in the other (raw bytes at an offset).
``gds_register_buffer``/``gds_deregister_buffer`` pin nothing in this mode; they check the
storage and keep the registration so that deregistering an unknown buffer fails as cuFile's.

Example::

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
    >>> f = ember.cuda.gds.GdsFile(path, os.O_CREAT | os.O_RDWR)
    >>> x = ember.arange(4.0)
    >>> f.save_storage(x.untyped_storage(), offset=0)
    >>> y = ember.zeros(4)
    >>> f.load_storage(y.untyped_storage(), offset=0)
    >>> y
    tensor([0., 1., 2., 3.])
"""

from __future__ import annotations

import os
import sys

import numpy as np

__all__ = ["GdsFile", "gds_register_buffer", "gds_deregister_buffer"]

_registered: set = set()


def _storage_array(storage):
    untyped = storage.untyped() if hasattr(storage, "untyped") else storage
    if not hasattr(untyped, "_bytes"):
        raise TypeError(f"expected a storage, got {type(storage).__name__}")
    return untyped._bytes()


def gds_register_buffer(s) -> None:
    """Register a storage's memory with cuFile for GPUDirect transfers (see NOTE
    [ GPUDirect Storage through the host ]: nothing needs pinning in ember's mode).

    Args:
        s (UntypedStorage): the storage.

    Example::

        >>> s = ember.zeros(4).untyped_storage()
        >>> ember.cuda.gds.gds_register_buffer(s)
        >>> ember.cuda.gds.gds_deregister_buffer(s)
    """
    _storage_array(s)
    _registered.add(s.data_ptr())


def gds_deregister_buffer(s) -> None:
    """Undo :func:`gds_register_buffer`.

    Args:
        s (UntypedStorage): a registered storage.

    Raises:
        RuntimeError: the storage was not registered.

    Example::

        >>> s = ember.zeros(4).untyped_storage()
        >>> ember.cuda.gds.gds_register_buffer(s)
        >>> ember.cuda.gds.gds_deregister_buffer(s)
    """
    ptr = s.data_ptr()
    if ptr not in _registered:
        raise RuntimeError("cuFileBufDeregister failed: the buffer was not registered")
    _registered.discard(ptr)


class GdsFile:
    """A file that storages are saved into and loaded from at byte offsets (PyTorch's cuFile
    wrapper; see NOTE [ GPUDirect Storage through the host ]).

    Args:
        filename (str): the file's path.
        flags (int): ``os.open`` flags (``os.O_RDWR | os.O_CREAT`` to write a new file).

    Example::

        >>> import os, tempfile
        >>> f = ember.cuda.gds.GdsFile(os.path.join(tempfile.mkdtemp(), "a.bin"),
        ...                            os.O_CREAT | os.O_RDWR)
        >>> f.handle is not None
        True
    """

    def __init__(self, filename: str, flags: int):
        if sys.platform == "win32":
            raise RuntimeError("GdsFile is not supported on this platform.")
        self.filename = filename
        self.flags = flags
        self.handle = None
        self.fd = os.open(filename, flags)
        self.register_handle()

    def __del__(self):
        fd = getattr(self, "fd", None)
        if fd is not None:
            self.handle = None
            os.close(fd)
            self.fd = None

    def register_handle(self) -> None:
        """Register the file with cuFile (done by the constructor)."""
        self.handle = self.fd

    def deregister_handle(self) -> None:
        """Deregister the file; saving or loading then raises AssertionError."""
        self.handle = None

    def save_storage(self, storage, offset: int = 0) -> None:
        """Write a storage's bytes into the file at ``offset``.

        Args:
            storage (UntypedStorage): the source.
            offset (int): byte offset in the file. Default: 0.
        """
        if self.handle is None:
            raise AssertionError("Cannot save data to a file that is not registered.")
        from .._core.backend import _to_cpu

        data = np.ascontiguousarray(_to_cpu(_storage_array(storage)))
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += os.pwrite(self.fd, view[written:], offset + written)

    def load_storage(self, storage, offset: int = 0) -> None:
        """Read ``storage.nbytes()`` bytes of the file at ``offset`` into the storage.

        Args:
            storage (UntypedStorage): the destination (changed in place).
            offset (int): byte offset in the file. Default: 0.

        Raises:
            RuntimeError: the file ends before the storage is filled.
        """
        if self.handle is None:
            raise AssertionError("Cannot load data from a file that is not registered.")
        from .._core.backend import backend_of

        dst = _storage_array(storage)
        n = dst.nbytes
        chunks, got = [], 0
        while got < n:
            chunk = os.pread(self.fd, n - got, offset + got)
            if not chunk:
                raise RuntimeError(f"GdsFile.load_storage: {self.filename} ends after "
                                   f"{offset + got} bytes; {n} bytes were asked at {offset}")
            chunks.append(chunk)
            got += len(chunk)
        host = np.frombuffer(b"".join(chunks), np.uint8)
        dst[...] = host if type(dst) is np.ndarray else backend_of(dst).to_device(host)
