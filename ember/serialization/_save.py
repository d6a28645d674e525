"""Writing checkpoints: the zip format (NOTE [ Checkpoint layout ]) and the legacy stream
format that ``_use_new_zipfile_serialization=False`` selects.

NOTE [ Checkpoint layout ]
A checkpoint is an uncompressed zip whose entries sit under one folder: ``data.pkl`` (a
protocol-2 pickle of the object, tensors replaced by ``torch._utils._rebuild_tensor_v2``
calls whose storage argument is a persistent id), then ``.format_version``,
``.storage_alignment``, ``byteorder``, one ``data/<key>`` entry per storage (its raw
bytes, starting at a 64-byte aligned file offset), ``version`` and
``.data/serialization_id``. A storage shared by several tensors is written once, so views
keep sharing memory after loading.

The legacy format is a stream of pickles: a magic number, the protocol version (1001), a
``sys_info`` dict, the object (storage persistent ids carry a sixth field, a view or None),
the sorted list of storage keys, then per key an 8-byte little-endian element count and the
storage's bytes.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import stat
import struct
import sys
import tempfile
import zipfile
import zlib

import numpy as np

from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.device import device as _device
from .._core.size import Size
from .._core.storage import _root
from .._core.tensor import Tensor, wrap
from . import _config
from ._rebuild import STORAGE_NAMES

ALIGN = 64
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


class _Global:
    """A global written by name (``torch.FloatStorage``...) without importing its module."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):  # pickle insists reduce functions be callable
        raise TypeError("placeholder for a global in a checkpoint")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_TENSOR = _Global("torch", "Tensor")
_DTYPE_GLOBALS = {d: _Global("torch", d.name) for d in (*_dt.all_dtypes, *_dt.quantized_dtypes)}
# dtypes with no legacy storage class (float8, uint16...) go as PyTorch writes them: a view of
# an untyped (byte) storage, rebuilt by ``_rebuild_tensor_v3`` with the dtype as an argument
_DTYPE_GLOBALS.update({d: _Global("torch", d.name)
                       for d in (*_dt.shell_dtypes, *_dt.float8_dtypes, *_dt.opaque_dtypes)})
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_UNTYPED_STORAGE = _Global("torch.storage", "UntypedStorage")
# NOTE [ Quantized tensors in checkpoints ] (ember/ao/_qserial.py)
_REBUILD_QTENSOR = _Global("torch._utils", "_rebuild_qtensor")
_QSCHEME_GLOBALS = {}
_SCRIPT_OBJECT = _Global("torch", "ScriptObject")


class _StorageRef:
    __slots__ = ("key", "dtype", "numel", "location")

    def __init__(self, key, dtype, numel, location):
        self.key, self.dtype, self.numel, self.location = key, dtype, numel, location


class _Pickler(pickle._Pickler):
    """Protocol-2 pickler that writes tensors the way PyTorch does (see NOTE [ Checkpoint
    layout ]); the pure-Python pickler lets us emit globals by name."""

    def __init__(self, file, storages, protocol=2, legacy=False):
        super().__init__(file, protocol=protocol)
        self.storages = storages  # id(root) -> (key, root array, dtype)
        self.legacy = legacy

    def save(self, obj, save_persistent_id=True):
        if type(obj) is _Global:
            self._write_global(obj)
            return
        if type(obj) is _dt.dtype:  # torch pickles a dtype as the bare global torch.<name>
            self._write_global(_DTYPE_GLOBALS[obj])
            return
        # (ember's classes are named torch's under the alias: NOTE [ Class names under the
        # alias ] in ember/compat/_names.py)
        if type(obj).__name__ == "qscheme" and type(obj).__module__ in ("ember.ao._qscheme",
                                                                        "torch"):
            g = _QSCHEME_GLOBALS.setdefault(obj.name, _Global("torch", obj.name))
            self._write_global(g)
            return
        if type(obj).__name__ == "TorchScriptObject" and obj.__module__ in ("ember.ao._qserial",
                                                                            "torch.ao._qserial"):
            # as torch pickles a ScriptObject (NOTE [ Packed RNN weights in checkpoints ])
            self._write_global(_SCRIPT_OBJECT)
            self.write(pickle.EMPTY_TUPLE + pickle.NEWOBJ)
            self.memoize(obj)
            super().save((obj.state, obj.qualified_name))
            self.write(pickle.BUILD)
            return
        super().save(obj, save_persistent_id)

    def _write_global(self, g):
        memo_key = id(g)
        if memo_key in self.memo:
            self.write(self.get(self.memo[memo_key][0]))
            return
        self.write(pickle.GLOBAL + f"{g.module}\n{g.name}\n".encode())
        self.memoize(g)

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            name = STORAGE_NAMES.get(obj.dtype)
            cls = _UNTYPED_STORAGE if name is None else _Global("torch", name)
            pid = ("storage", cls, obj.key,
                   obj.location, obj.numel)
            return pid + (None,) if self.legacy else pid
        return None

    def reducer_override(self, obj):
        from ..nn.parameter import Parameter

        if isinstance(obj, Tensor):
            if type(obj._data).__name__ == "QArray":  # NOTE [ Quantized tensors in checkpoints ]
                from ..ao._qserial import qparams

                a = obj._data
                args = self._reduce_tensor(obj, a.ints, a.qdtype)[1]
                return (_REBUILD_QTENSOR, args[:4] + (qparams(a), obj._rg,
                                                      collections.OrderedDict()))
            if getattr(obj, "_lay", None) is not None:  # sparse (NOTE [ Sparse tensors ])
                from ..sparse._tensor import pickle_data

                return (_REBUILD_SPARSE, (obj.layout, pickle_data(obj)))
            if getattr(type(obj), "_saved_by_reduce", False):  # a DTensor: its own rebuild
                return obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
            if isinstance(obj, Parameter):
                return (_REBUILD_PARAMETER, (_plain(obj), obj.requires_grad,
                                             collections.OrderedDict()))
            state = obj.__dict__ if type(obj) is Tensor else None
            if state:  # Python attributes on a plain tensor go along, as torch writes them
                func, args = self._reduce_tensor(obj)
                return (_REBUILD_FROM_TYPE, (func, _TENSOR, args, dict(state)))
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        if isinstance(obj, _layout.layout):
            return (_Global("torch.serialization", "_get_layout"), ("torch." + obj.name,))
        return NotImplemented

    def _reduce_tensor(self, t, a=None, d=None):
        # a, d: the array and dtype to write when not t's own (a quantized tensor's integers)
        from ._locations import location_tag

        a = t._data if a is None else a
        if type(a) is not np.ndarray:
            a = a.get()
        root = _root(a)
        d = t.dtype if d is None else d
        key_info = self.storages.get(id(root))
        if key_info is None:
            key_info = (str(len(self.storages)), root, d)
            self.storages[id(root)] = key_info
        key, root, sdt = key_info
        itemsize = sdt.itemsize
        numel = root.nbytes // itemsize
        offset = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0])
        stride = tuple(s // itemsize for s in a.strides)
        location = location_tag(t)
        if sdt is not d or offset % itemsize or any(s % itemsize for s in a.strides):
            # a view with another dtype than its storage's first user: write it on its own
            a = np.ascontiguousarray(a)
            root, offset, stride = a, 0, tuple(s // a.itemsize for s in a.strides)
            key = str(len(self.storages))
            self.storages[id(a)] = (key, a, d)
            numel = a.size
            itemsize = d.itemsize
        if d not in STORAGE_NAMES:  # an untyped storage, its size in bytes
            ref = _StorageRef(key, d, numel * itemsize, location)
            return (_REBUILD_TENSOR_V3, (ref, offset // itemsize, tuple(a.shape), stride,
                                         t._rg, collections.OrderedDict(), d))
        ref = _StorageRef(key, d, numel, location)
        return (_REBUILD_TENSOR, (ref, offset // itemsize, tuple(a.shape), stride, t._rg,
                                  collections.OrderedDict()))


def _plain(p):
    t = wrap(p._data)
    t._vc = p._vc
    t._rg = p._rg
    return t


def _as_bytes(root):
    if _config.skipping_data():
        return bytes(root.nbytes)
    if root.flags.c_contiguous:
        return memoryview(np.ascontiguousarray(root).reshape(-1).view(np.uint8))
    if root.flags.f_contiguous:
        return memoryview(root.T.reshape(-1).view(np.uint8))
    return np.ascontiguousarray(root).tobytes()


def _write_entry(zf, name, data, crc=None):
    """Add an uncompressed entry whose payload starts at a 64-byte aligned offset (``crc``:
    the payload's CRC-32 when already computed: NOTE [ CRCs ahead of the writes ])."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    offset = zf.fp.tell()
    header = 30 + len(name.encode("utf-8"))
    pad = (-(offset + header + 4)) % ALIGN
    # an extra field: 2-byte id, 2-byte length, then padding (PyTorch uses id "FB")
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    size = memoryview(data).nbytes
    with zf.open(info, "w", force_zip64=size > 0x7FFFFFFF) as f:
        if crc is None or not _PRESET_CRC:
            f.write(data)
        else:
            # the stored entry's bytes as ``f.write`` writes them, with the CRC it would
            # compute; ``close`` then fills in the local header as usual
            zf.fp.write(data)
            f._file_size = size
            f._crc = crc


# NOTE [ CRCs ahead of the writes ]
# Every zip entry carries the CRC-32 of its bytes, and zipfile computes it as it writes: for
# a 100 MB state_dict about 40 ms of CRC then about 50 ms of copying into the page cache,
# one after the other. Both release the GIL, so a worker thread computes the CRC of the next
# storage while this one writes the current one, and the entry is written with the CRC
# already known (through the two fields zipfile's entry writer keeps, checked to exist
# below: without them every entry is written the plain way). The archive's bytes are the
# same either way. Small checkpoints (under _CRC_AHEAD_MIN bytes of storages) or a single
# thread (``set_num_threads(1)``) keep the plain way.
_PRESET_CRC = {"_crc", "_file_size"} <= set(zipfile._ZipWriteFile.__init__.__code__.co_names)
_CRC_AHEAD_MIN = 8 << 20


def _storage_entries(entries):
    """``(key, bytes, crc or None)`` for each storage, the CRCs computed one storage ahead on
    a worker thread when that pays (NOTE [ CRCs ahead of the writes ])."""
    total = sum(root.nbytes for _, root, _ in entries)
    if total < _CRC_AHEAD_MIN or not _PRESET_CRC or len(entries) < 2 or _threads() < 2:
        for key, root, _ in entries:
            yield key, _as_bytes(root), None
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="ember-save-crc") as pool:
        data = [_as_bytes(entries[0][1])]
        ahead = pool.submit(zlib.crc32, data[0])
        for i, (key, _, _) in enumerate(entries):
            current, crc = data.pop(), ahead.result()
            if i + 1 < len(entries):
                data.append(_as_bytes(entries[i + 1][1]))
                ahead = pool.submit(zlib.crc32, data[0])
            yield key, current, crc
            current = None


def _threads():
    from .. import _parallel

    return _parallel._threads()


def save_zip(obj, out, folder, protocol):
    storages = {}
    buf = io.BytesIO()
    _Pickler(buf, storages, protocol).dump(obj)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _write_entry(zf, f"{folder}/data.pkl", buf.getvalue())
        _write_entry(zf, f"{folder}/.format_version", b"1")
        _write_entry(zf, f"{folder}/.storage_alignment", str(ALIGN).encode())
        _write_entry(zf, f"{folder}/byteorder", sys.byteorder.encode())
        entries = sorted(storages.values(), key=lambda kv: int(kv[0]))
        for key, data, crc in _storage_entries(entries):
            _write_entry(zf, f"{folder}/data/{key}", data, crc)
        _write_entry(zf, f"{folder}/version", b"3\n")
        _write_entry(zf, f"{folder}/.data/serialization_id",
                     str(int.from_bytes(os.urandom(8), "little")).encode())


def save_legacy(obj, out, protocol):
    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": struct.calcsize("=h"), "int": struct.calcsize("=i"),
                               "long": struct.calcsize("=l")}}
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        pickle.dump(header, out, protocol=protocol)
    storages = {}
    _Pickler(out, storages, protocol, legacy=True).dump(obj)
    entries = sorted(storages.values(), key=lambda kv: kv[0])
    pickle.dump([key for key, _, _ in entries], out, protocol=protocol)
    for _, root, d in entries:
        out.write(struct.pack("<q", root.nbytes // d.itemsize))
        out.write(_as_bytes(root))


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (tensors, state_dicts, modules, optimizers, any picklable object) in
    PyTorch's checkpoint format.

    Saving to a path is atomic (an interrupted save leaves the previous file intact) and the
    new file gets the permissions ``open()`` would give it (0666 less the umask).

    Args:
        obj: what to save.
        f: a path, ``os.PathLike`` or writable binary file object.
        pickle_module: the standard ``pickle`` module (others are refused).
        pickle_protocol: the pickle protocol, 2 by default as in PyTorch.
        _use_new_zipfile_serialization: False writes PyTorch's legacy (pre-1.6) format.

    Returns:
        None.

    Example:
        >>> import ember, io
        >>> buf = io.BytesIO()
        >>> ember.save({"w": ember.ones(2)}, buf)
        >>> _ = buf.seek(0); ember.load(buf)["w"]
        tensor([1., 1.])
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save: only the standard pickle module is supported")

    def write(out, folder):
        if _use_new_zipfile_serialization:
            save_zip(obj, out, folder, pickle_protocol)
        else:
            save_legacy(obj, out, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.splitext(os.path.basename(path))[0] or "archive"
        fd, tmp = tempfile.mkstemp(prefix=".ember-save-", dir=os.path.dirname(path) or ".")
        try:
            # mkstemp makes the file 0600; give it what open(path, "wb") would have: the
            # old file's mode, or 0666 less the umask for a new file
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except OSError:
                mode = 0o666 & ~_umask()
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as out:
                write(out, folder)
            # the rename is atomic: a save interrupted before it leaves the old file intact
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    if not hasattr(f, "write"):
        raise AttributeError(
            f"ember.save: expected a path or a writable binary file object, got {type(f)}")
    write(f, "archive")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
