"""Record-level access to checkpoint archives, as ``torch.PyTorchFileReader`` and
``torch.PyTorchFileWriter`` give it: the zip files ``ember.save`` writes (one folder named
after the archive, uncompressed entries whose payloads start on 64-byte boundaries), read or
written record by record. Programs use the reader to load one tensor of a large checkpoint
lazily, and tools use the writer to build archives by hand.
"""

from __future__ import annotations

import io
import os
import sys
import zipfile

import numpy as np

from .._core import dtype as _dt
from ._load import _entry_offset, _open_zip, _read_exact
from ._save import _write_entry

__all__ = ["PyTorchFileReader", "PyTorchFileWriter"]

_ERROR_HINT = (" If you are seeing this error, there is a high likelihood that your checkpoint "
               "file is corrupted.")


def _open_source(where, mode):
    """A binary file object for a path or an already open buffer (owned: whether we opened
    it)."""
    if isinstance(where, (str, os.PathLike)):
        try:
            return open(where, mode), True  # noqa: SIM115  (closed by the reader/writer)
        except OSError as e:
            raise RuntimeError(f"open file failed because of errno {e.errno} on fopen: "
                               f"{e.strerror}, file path: {os.fspath(where)}") from None
    if not (hasattr(where, "read") or hasattr(where, "write")):
        raise TypeError(f"expected a file name or a file-like object, got "
                        f"{type(where).__name__}")
    return where, False


class PyTorchFileReader:
    """Reads the records of a checkpoint archive one at a time.

    Record names are relative to the archive's folder (``"data.pkl"``, ``"data/0"``).

    Args:
        file (str, os.PathLike or file-like): the archive, by path or as a binary buffer.

    Returns:
        PyTorchFileReader: the open reader; RuntimeError when the file is missing or is not
        a zip archive.

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> ember.save({"w": ember.ones(2)}, buf)
        >>> reader = ember.PyTorchFileReader(io.BytesIO(buf.getvalue()))
        >>> reader.has_record("data.pkl"), "data/0" in reader.get_all_records()
        (True, True)
    """

    def __init__(self, file):
        raw, self._owned = _open_source(file, "rb")
        try:
            self._zf, self._folder, by_name = _open_zip(raw)
        except RuntimeError:
            if self._owned:
                raw.close()
            raise RuntimeError("PytorchStreamReader failed reading zip archive: not a ZIP "
                               "archive." + _ERROR_HINT) from None
        self._raw = raw
        prefix = self._folder + "/"
        self._infos = {n[len(prefix):]: i for n, i in by_name.items() if n.startswith(prefix)}

    def _info(self, name: str):
        info = self._infos.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               "found." + _ERROR_HINT)
        return info

    def get_all_records(self) -> list:
        """The names of all records, in archive order.

        Returns:
            list of str: names relative to the archive's folder.
        """
        return list(self._infos)

    def has_record(self, name: str) -> bool:
        """Whether the archive holds record ``name``.

        Args:
            name (str): the record's name.

        Returns:
            bool: True when present.
        """
        return name in self._infos

    def get_record(self, name: str) -> bytes:
        """The bytes of record ``name`` (RuntimeError when absent).

        Args:
            name (str): the record's name.

        Returns:
            bytes: its payload.
        """
        info = self._info(name)
        return _read_exact(self._raw, _entry_offset(self._raw, info), info.file_size,
                           name).tobytes()

    def get_record_size(self, name: str) -> int:
        """The payload size of record ``name`` in bytes.

        Args:
            name (str): the record's name.

        Returns:
            int: its size.
        """
        return self._info(name).file_size

    def get_record_offset(self, name: str) -> int:
        """Where the payload of record ``name`` starts in the file (for memory mapping).

        Args:
            name (str): the record's name.

        Returns:
            int: the byte offset.
        """
        return _entry_offset(self._raw, self._info(name))

    def get_record_header_offset(self, name: str) -> int:
        """Where the local zip header of record ``name`` starts in the file.

        Args:
            name (str): the record's name.

        Returns:
            int: the byte offset.
        """
        return self._info(name).header_offset

    def get_record_offset_no_read(self, zipfile_header_offset: int, filename: str, size: int,
                                  storage_alignment: int) -> int:
        """Where a record's payload starts, computed from its header offset as a writer
        aligning payloads to ``storage_alignment`` places it, without reading the file.

        Args:
            zipfile_header_offset (int): the record's header offset.
            filename (str): the record's name (inside the archive's folder).
            size (int): its payload size (ZIP64 records carry a larger header).
            storage_alignment (int): the payload alignment in bytes.

        Returns:
            int: the byte offset.
        """
        full = f"{self._folder}/{filename}".encode()
        start = zipfile_header_offset + 30 + len(full) + (20 if size > 0x7FFFFFFF else 0) + 4
        return start + (-start) % storage_alignment

    def get_storage_from_record(self, name: str, numel: int, dtype):
        """Record ``name`` as the storage of ``numel`` elements of ``dtype``, held by an
        empty tensor (``t.untyped_storage()``, or ``set_`` it into a tensor of your shape).

        Args:
            name (str): the record's name.
            numel (int): the number of elements.
            dtype (ember.dtype): their type.

        Returns:
            Tensor: a 0-element tensor of ``dtype`` whose storage holds the record.
        """
        from .._ops.from_data import from_numpy

        info = self._info(name)
        npd = np.dtype(_dt.to_np[dtype])
        nbytes = int(numel) * npd.itemsize
        if nbytes > info.file_size:
            raise RuntimeError(f"get_storage_from_record: record {name} holds "
                               f"{info.file_size} bytes, fewer than {numel} elements of "
                               f"{dtype}")
        data = _read_exact(self._raw, _entry_offset(self._raw, info), nbytes, name)
        return from_numpy(data.view(npd))[:0]

    def serialization_id(self) -> str:
        """The archive's serialization id (empty when it has none).

        Returns:
            str: the id ``ember.save`` wrote.
        """
        if ".data/serialization_id" not in self._infos:
            return ""
        return self.get_record(".data/serialization_id").decode()

    def __del__(self):
        raw = getattr(self, "_raw", None)
        if raw is not None and self._owned:
            raw.close()


class PyTorchFileWriter:
    """Writes a checkpoint archive record by record, as ``ember.save`` lays them out.

    ``write_end_of_file()`` adds the ``version``, ``byteorder`` and serialization-id records
    and closes the archive; records cannot be written after it, or twice.

    Args:
        file (str, os.PathLike or file-like): where to write (a path or a binary buffer).
        compute_crc32 (bool): accepted as torch does (zip CRCs are always written).
        storage_alignment (int): payload alignment in bytes (64).

    Returns:
        PyTorchFileWriter: the open writer; the folder inside is named after the file
        (``"archive"`` for a buffer).

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> w = ember.PyTorchFileWriter(buf)
        >>> w.write_record("note", b"hello", 5)
        >>> w.write_end_of_file()
        >>> ember.PyTorchFileReader(io.BytesIO(buf.getvalue())).get_record("note")
        b'hello'
    """

    def __init__(self, file, compute_crc32: bool = True, storage_alignment: int = 64):
        if storage_alignment != 64:
            raise RuntimeError("PyTorchFileWriter: ember writes payloads aligned to 64 bytes; "
                               f"storage_alignment={storage_alignment} is not supported")
        self._out, self._owned = _open_source(file, "wb")
        if isinstance(file, (str, os.PathLike)):
            base = os.path.basename(os.fspath(file))
            self._name = base.rsplit(".", 1)[0] if "." in base else base
        else:
            self._name = "archive"
        self._zf = zipfile.ZipFile(self._out, "w", zipfile.ZIP_STORED)
        self._written: set = set()
        self._min_version = 3
        self._finalized = False
        self._id = None

    def archive_name(self) -> str:
        """The folder name records are written under.

        Returns:
            str: the archive's name.
        """
        return self._name

    def set_min_version(self, version: int) -> None:
        """Raise the format version written to the ``version`` record.

        Args:
            version (int): the least version a reader must support.
        """
        self._min_version = max(self._min_version, int(version))

    def write_record(self, name: str, data, size: int) -> None:
        """Write ``size`` bytes of ``data`` as record ``name``.

        Args:
            name (str): the record's name.
            data (bytes, str or storage): the payload (its first ``size`` bytes).
            size (int): how many bytes to write.
        """
        if self._finalized:
            raise RuntimeError("PyTorchFileWriter: the archive is already finished "
                               "(write_end_of_file was called)")
        if name in self._written:
            raise RuntimeError(f"Tried to serialize file twice: {name}")
        if isinstance(data, str):
            data = data.encode()
        elif hasattr(data, "untyped"):  # a typed storage
            data = data.untyped()
        if hasattr(data, "_array"):  # an untyped storage
            data = np.ascontiguousarray(data._array).reshape(-1).view(np.uint8).tobytes()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"write_record(): expected bytes, str or a storage, got "
                            f"{type(data).__name__}")
        payload = bytes(data)[:int(size)]
        _write_entry(self._zf, f"{self._name}/{name}", payload)
        self._written.add(name)

    def write_record_metadata(self, name: str, size: int) -> None:
        """Reserve record ``name`` of ``size`` zero bytes (its payload is filled later by
        whoever writes the file in place).

        Args:
            name (str): the record's name.
            size (int): the payload size.
        """
        self.write_record(name, bytes(int(size)), size)

    def get_all_written_records(self) -> set:
        """The names of the records written so far.

        Returns:
            set of str: record names.
        """
        return set(self._written)

    def serialization_id(self) -> str:
        """The id written to ``.data/serialization_id`` (made on first use).

        Returns:
            str: a decimal id.
        """
        if self._id is None:
            self._id = str(int.from_bytes(os.urandom(8), "little")).zfill(40)
        return self._id

    def write_end_of_file(self) -> None:
        """Write the trailing records and close the archive."""
        if self._finalized:
            return
        for name, data in (("version", f"{self._min_version}\n".encode()),
                           ("byteorder", sys.byteorder.encode()),
                           (".data/serialization_id", self.serialization_id().encode())):
            if name not in self._written:
                self.write_record(name, data, len(data))
        self._zf.close()
        self._finalized = True
        if self._owned:
            self._out.close()
        elif isinstance(self._out, io.IOBase):
            self._out.flush()

    def __del__(self):
        if not getattr(self, "_finalized", True):
            try:
                self.write_end_of_file()
            except Exception:  # noqa: BLE001  (interpreter shutdown: nothing to report to)
                pass
