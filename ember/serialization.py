"""``ember.save`` / ``ember.load``: PyTorch's zip checkpoint format, and safetensors.

Files written here load in PyTorch (``torch.load(f, weights_only=True)``) and files written
by PyTorch load here without PyTorch installed. See ../shared/design/FORMATS.md.

NOTE [ Checkpoint layout ]
A checkpoint is an uncompressed zip whose entries sit under one folder: ``data.pkl`` (a
protocol-2 pickle of the object, tensors replaced by ``torch._utils._rebuild_tensor_v2``
calls whose storage argument is a persistent id), then ``.format_version``,
``.storage_alignment``, ``byteorder``, one ``data/<key>`` entry per storage (its raw
bytes, starting at a 64-byte aligned file offset), ``version`` and
``.data/serialization_id``. A storage shared by several tensors is written once, so views
keep sharing memory after loading.

NOTE [ Safe loading ]
``weights_only=True`` (the default) unpickles with an allow-list: tensors, storages,
OrderedDict, dtypes, Size, device and primitive containers. Any other global raises
``UnpicklingError`` *before* it is imported or called, so a crafted file cannot run code.
``add_safe_globals`` extends the list; ``weights_only=False`` trusts the file.
"""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import struct
import tempfile
import zipfile

import numpy as np

from ._core import dtype as _dt
from ._core.device import device as _device
from ._core.size import Size
from ._core.storage import _root
from ._core.tensor import Tensor, wrap

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "save_file", "load_file", "safetensors_save", "safetensors_load"]

_ALIGN = 64

# legacy typed-storage class names, by dtype (what PyTorch writes for these dtypes)
_STORAGE_NAMES = {
    _dt.float32: "FloatStorage", _dt.float64: "DoubleStorage", _dt.float16: "HalfStorage",
    _dt.bfloat16: "BFloat16Storage", _dt.int64: "LongStorage", _dt.int32: "IntStorage",
    _dt.int16: "ShortStorage", _dt.int8: "CharStorage", _dt.uint8: "ByteStorage",
    _dt.bool_: "BoolStorage", _dt.complex64: "ComplexFloatStorage",
    _dt.complex128: "ComplexDoubleStorage",
}
_STORAGE_DTYPES = {v: k for k, v in _STORAGE_NAMES.items()}


# ------------------------------------------------------------------------------------------------
# saving


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
_ORDERED_DICT = collections.OrderedDict


class _StorageRef:
    __slots__ = ("key", "dtype", "numel", "location")

    def __init__(self, key, dtype, numel, location):
        self.key, self.dtype, self.numel, self.location = key, dtype, numel, location


class _Pickler(pickle._Pickler):
    """Protocol-2 pickler that writes tensors the way PyTorch does (see NOTE [ Checkpoint
    layout ]); the pure-Python pickler lets us emit globals by name."""

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self.storages = storages  # id(root) -> (key, root array, dtype)

    def save(self, obj, save_persistent_id=True):
        if type(obj) is _Global:
            self._write_global(obj)
            return
        if type(obj) is _dt.dtype:  # torch pickles a dtype as the bare global torch.<name>
            self._write_global(_DTYPE_GLOBALS[obj])
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
            return ("storage", _Global("torch", _STORAGE_NAMES[obj.dtype]), obj.key,
                    obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter

        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                return (_REBUILD_PARAMETER, (_plain(obj), obj.requires_grad, _ORDERED_DICT()))
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        a = t._data
        if type(a) is not np.ndarray:
            a = a.get()
        root = _root(a)
        d = t.dtype
        key_info = self.storages.get(id(root))
        if key_info is None:
            key_info = (str(len(self.storages)), root, d)
            self.storages[id(root)] = key_info
        key, root, sdt = key_info
        itemsize = sdt.itemsize
        numel = root.nbytes // itemsize
        offset = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0])
        stride = tuple(s // itemsize for s in a.strides)
        location = "cpu" if t.is_cpu else str(t.device)
        if sdt is not d:
            # a view with another dtype than its storage's first user: write it on its own
            a = np.ascontiguousarray(a)
            root, offset, stride = a, 0, tuple(s // a.itemsize for s in a.strides)
            key = str(len(self.storages))
            self.storages[id(a)] = (key, a, d)
            numel = a.size
        ref = _StorageRef(key, d, numel, location)
        return (_REBUILD_TENSOR, (ref, offset // itemsize, tuple(a.shape), stride, t._rg,
                                  _ORDERED_DICT()))


_DTYPE_GLOBALS = {d: _Global("torch", d.name) for d in _dt.all_dtypes}


def _plain(p):
    t = wrap(p._data)
    t._vc = p._vc
    t._rg = p._rg
    return t


def _write_entry(zf, name, data):
    """Add an uncompressed entry whose payload starts at a 64-byte aligned offset."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    offset = zf.fp.tell()
    header = 30 + len(name.encode("utf-8"))
    pad = (-(offset + header + 4)) % _ALIGN
    # an extra field: 2-byte id, 2-byte length, then padding (PyTorch uses id "FB")
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=len(data) > 0x7FFFFFFF) as f:
        f.write(data)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, state_dicts, containers, or any picklable object) to ``f`` (a
    path, ``os.PathLike`` or binary file object) in PyTorch's checkpoint format.

    Saving to a path is atomic: an interrupted save leaves the previous file intact.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save: only the standard pickle module is supported")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.splitext(os.path.basename(path))[0] or "archive"
        fd, tmp = tempfile.mkstemp(prefix=".ember-save-", dir=os.path.dirname(path) or ".")
        try:
            with os.fdopen(fd, "wb") as out:
                _save_to(obj, out, folder)
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
    _save_to(obj, f, "archive")


def _save_to(obj, out, folder):
    storages = {}
    buf = io.BytesIO()
    _Pickler(buf, storages).dump(obj)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _write_entry(zf, f"{folder}/data.pkl", buf.getvalue())
        _write_entry(zf, f"{folder}/.format_version", b"1")
        _write_entry(zf, f"{folder}/.storage_alignment", str(_ALIGN).encode())
        _write_entry(zf, f"{folder}/byteorder", b"little")
        for key, root, _ in sorted(storages.values(), key=lambda kv: int(kv[0])):
            _write_entry(zf, f"{folder}/data/{key}", _as_bytes(root))
        _write_entry(zf, f"{folder}/version", b"3\n")
        _write_entry(zf, f"{folder}/.data/serialization_id",
                     str(int.from_bytes(os.urandom(8), "little")).encode())


def _as_bytes(root):
    if root.flags.c_contiguous:
        return memoryview(np.ascontiguousarray(root).reshape(-1).view(np.uint8))
    if root.flags.f_contiguous:
        return memoryview(root.T.reshape(-1).view(np.uint8))
    return np.ascontiguousarray(root).tobytes()


# ------------------------------------------------------------------------------------------------
# loading

_safe_globals: dict = {}


def add_safe_globals(safe_globals):
    """Allow these objects (or ``(object, "module.name")`` pairs) when ``weights_only``."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
        else:
            obj, name = g, f"{g.__module__}.{g.__qualname__}"
        _safe_globals[name] = obj


def get_safe_globals():
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


class safe_globals:
    """Context manager: ``add_safe_globals`` for the duration of a block."""

    def __init__(self, globals_list):
        self.globals_list = globals_list
        self.saved = None

    def __enter__(self):
        self.saved = dict(_safe_globals)
        add_safe_globals(self.globals_list)

    def __exit__(self, *exc):
        _safe_globals.clear()
        _safe_globals.update(self.saved)
        return False


class _StorageType:
    """What ``torch.FloatStorage`` and friends unpickle to: a dtype holder."""

    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False,
                    backward_hooks=None, metadata=None):
    arr, _ = storage
    itemsize = arr.itemsize
    if not size:
        view = arr[storage_offset:storage_offset + 1].reshape(())
    elif any(s == 0 for s in size):
        view = arr[:0].reshape(size) if arr.size else np.zeros(size, arr.dtype)
    else:
        view = np.lib.stride_tricks.as_strided(arr[storage_offset:], shape=tuple(size),
                                               strides=tuple(s * itemsize for s in stride))
    t = wrap(view)
    if requires_grad:
        t._rg = True
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    arr, _ = storage
    storage = (arr.view(dtype.np) if arr.dtype != dtype.np else arr, None)
    return _rebuild_tensor(storage, storage_offset, size, stride, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    from .nn.parameter import Parameter

    p = Parameter(data, requires_grad)
    if state:
        p.__dict__.update(state)
    return p


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks, state)


def _make_safe_table():
    import codecs

    table = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch", "Size"): Size,
        ("torch", "device"): _device,
        ("_codecs", "encode"): codecs.encode,  # how protocol 2 spells bytes
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "bytearray"): bytearray,
        ("builtins", "slice"): slice,
        ("builtins", "complex"): complex,
    }
    for name, d in _STORAGE_DTYPES.items():
        table[("torch", name)] = _StorageType(d)
    for d in _dt.all_dtypes:
        table[("torch", d.name)] = d
    for alias, d in [("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                     ("long", _dt.int64), ("int", _dt.int32), ("short", _dt.int16),
                     ("bool", _dt.bool_), ("cfloat", _dt.complex64),
                     ("cdouble", _dt.complex128)]:
        table[("torch", alias)] = d
    table[("torch", "UntypedStorage")] = _StorageType(_dt.uint8)
    return table


_SAFE = _make_safe_table()
# ember's own spellings of the same objects, for files ember wrote with weights_only=False
_EMBER_ALIASES = {
    ("ember.serialization", "_rebuild_tensor"): _rebuild_tensor,
    ("ember.serialization", "_rebuild_parameter"): _rebuild_parameter,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, persistent_load, weights_only):
        super().__init__(file, encoding="utf-8")
        self._persistent_load = persistent_load
        self.weights_only = weights_only

    def persistent_load(self, pid):
        return self._persistent_load(pid)

    def find_class(self, module, name):
        key = (module, name)
        if key in _SAFE:
            return _SAFE[key]
        if key in _EMBER_ALIASES:
            return _EMBER_ALIASES[key]
        full = f"{module}.{name}"
        if full in _safe_globals:
            return _safe_globals[full]
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed. Unsupported global: GLOBAL {full} was not an "
                "allowed global by default. Please use `ember.serialization.add_safe_globals"
                f"([{name}])` to allowlist this global if you trust it, or load with "
                "weights_only=False if you trust the whole file (it may run arbitrary code).")
        if module.startswith("torch"):
            raise pickle.UnpicklingError(
                f"ember.load: the checkpoint needs {full}, which has no ember counterpart")
        return super().find_class(module, name)


def _open_zip_reader(f):
    """(ZipFile, raw file object) for a path or file object."""
    if isinstance(f, (str, os.PathLike)):
        raw = open(f, "rb")  # noqa: SIM115 - closed by load()
    else:
        raw = f
    if not zipfile.is_zipfile(raw):
        raise RuntimeError(
            "ember.load: not a zip checkpoint (PyTorch >= 1.6 format); legacy formats are not "
            "supported")
    raw.seek(0)
    return zipfile.ZipFile(raw), raw


def _payload(zf, raw, info):
    """Read an entry's bytes from its local header (PyTorch files may carry zero CRCs)."""
    raw.seek(info.header_offset)
    header = raw.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    return raw.read(info.file_size), info.header_offset + 30 + name_len + extra_len


def _read_payload_into_array(raw, info):
    """An entry's bytes read straight into a fresh (writable) NumPy buffer: one copy."""
    raw.seek(info.header_offset)
    header = raw.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    arr = np.empty(info.file_size, dtype=np.uint8)
    view = memoryview(arr)
    got = 0
    while got < info.file_size:
        n = raw.readinto(view[got:])
        if not n:
            raise RuntimeError(f"ember.load: the checkpoint is truncated ({info.filename})")
        got += n
    return arr


def _resolve_location(location, map_location):
    if map_location is None:
        return location
    if isinstance(map_location, dict):
        return map_location.get(location, location)
    if isinstance(map_location, (str, _device)):
        return str(map_location)
    return location


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load an object saved by ``ember.save`` or ``torch.save``.

    Args:
        f: a path, ``os.PathLike`` or binary file object.
        map_location: where tensors go: a device string or object, a dict mapping saved
            locations to new ones, or a callable ``fn(storage, location)``.
        weights_only: refuse every global outside the allow-list (NOTE [ Safe loading ]).
        mmap: map storages from the file instead of reading them (paths only).
    """
    if weights_only is None:
        weights_only = True
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    zf, raw = _open_zip_reader(f)
    try:
        infos = zf.infolist()
        folder = infos[0].filename.split("/", 1)[0]
        by_name = {i.filename: i for i in infos}
        if f"{folder}/constants.pkl" in by_name and f"{folder}/data.pkl" not in by_name:
            raise RuntimeError("ember.load: TorchScript archives are not supported")
        byteorder = "little"
        if f"{folder}/byteorder" in by_name:
            byteorder = _payload(zf, raw, by_name[f"{folder}/byteorder"])[0].decode()
        cache = {}
        path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None

        def persistent_load(pid):
            kind, storage_type, key, location, numel = pid[:5]
            if kind != "storage":
                raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
            dt = storage_type.dtype if isinstance(storage_type, _StorageType) else \
                _dt.lookup(storage_type)
            if key not in cache:
                info = by_name[f"{folder}/data/{key}"]
                if mmap:
                    _, offset = _payload(zf, raw, info)
                    arr = np.memmap(path, dtype=np.uint8, mode="c",
                                    offset=offset, shape=(info.file_size,))
                    arr = np.asarray(arr).view(dt.np) if info.file_size else \
                        np.zeros(0, dt.np)
                else:
                    arr = _read_payload_into_array(raw, info).view(dt.np)
                if byteorder != "little" and dt.itemsize > 1:
                    arr = arr.byteswap()
                cache[key] = arr
            arr = cache[key]
            if arr.dtype != dt.np:
                arr = arr.view(dt.np)
            loc = _resolve_location(location, map_location)
            if callable(map_location) and not isinstance(map_location, (dict, str, _device)):
                res = map_location(arr, location)
                if res is not None:
                    arr = res if isinstance(res, np.ndarray) else arr
            return (arr, loc)

        data, _ = _payload(zf, raw, by_name[f"{folder}/data.pkl"])
        result = _Unpickler(io.BytesIO(data), persistent_load, weights_only).load()
    finally:
        zf.close()
        if isinstance(f, (str, os.PathLike)):
            raw.close()
    return _move_locations(result, map_location)


def _move_locations(obj, map_location):
    """Honour map_location for non-CPU targets (CPU tensors stay as loaded)."""
    if map_location is None or callable(map_location) and not isinstance(
            map_location, (dict, str, _device)):
        return obj
    target = map_location if isinstance(map_location, (str, _device)) else None
    if target is None or str(target) == "cpu":
        return obj
    return _map_tensors(obj, lambda t: t.to(target))


def _map_tensors(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, collections.OrderedDict):
        out = collections.OrderedDict((k, _map_tensors(v, fn)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_tensors(v, fn) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_map_tensors(v, fn) for v in obj)
    return obj


# ------------------------------------------------------------------------------------------------
# safetensors

_ST_DTYPES = {
    _dt.float64: "F64", _dt.float32: "F32", _dt.float16: "F16", _dt.bfloat16: "BF16",
    _dt.int64: "I64", _dt.int32: "I32", _dt.int16: "I16", _dt.int8: "I8", _dt.uint8: "U8",
    _dt.bool_: "BOOL", _dt.complex64: "C64",
}
_ST_BY_NAME = {v: k for k, v in _ST_DTYPES.items()}


def safetensors_save(tensors, filename=None, metadata=None):
    """Write a dict of tensors in the safetensors format (to ``filename``, or return the
    bytes). Shared storages are written as separate copies, as the format requires."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if not isinstance(t, Tensor):
            raise TypeError(f"safetensors: value for {name!r} is not a Tensor")
        a = t.detach()._data
        a = a if type(a) is np.ndarray else a.get()
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((-len(head)) % 8)
    blob = struct.pack("<Q", len(head)) + head + b"".join(chunks)
    if filename is None:
        return blob
    tmp = os.fspath(filename) + ".tmp"
    with open(tmp, "wb") as out:
        out.write(blob)
    os.replace(tmp, filename)
    return None


def safetensors_load(data_or_filename, device="cpu"):
    """Read a safetensors file (path or bytes) into a dict of tensors."""
    if isinstance(data_or_filename, (bytes, bytearray, memoryview)):
        blob = bytes(data_or_filename)
    else:
        with open(data_or_filename, "rb") as fh:
            blob = fh.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        d = _ST_BY_NAME[info["dtype"]]
        begin, end = info["data_offsets"]
        arr = np.frombuffer(bytearray(blob[base + begin:base + end]), dtype=d.np)
        t = wrap(arr.reshape(info["shape"]))
        out[name] = t if str(device) == "cpu" else t.to(device)
    return out


save_file = safetensors_save
load_file = safetensors_load
