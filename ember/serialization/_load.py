"""Reading checkpoints: the zip format, the legacy stream format, safetensors by file name,
with ``map_location`` (NOTE [ Storage locations ]) and ``weights_only`` (NOTE [ Safe
loading ]) applied to both pickle formats."""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import warnings
import zipfile

import numpy as np

from . import _config, _locations, _unpickle
from ._rebuild import ForeignDtype, StorageType, typed_storage
from ._save import MAGIC_NUMBER, PROTOCOL_VERSION

_TRUE = ("1", "y", "yes", "true")


def _env_flag(name):
    return os.getenv(name, "0").lower() in _TRUE


def _resolve_weights_only(weights_only, pickle_module):
    """``weights_only`` after its default and the TORCH_FORCE_*_WEIGHTS_ONLY_LOAD
    environment variables (forcing on beats everything; forcing off only fills the
    default)."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force_on = _env_flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    force_off = _env_flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    if force_on and force_off:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force_on:
        return True
    if force_off and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected: since "
                      "`weights_only` was not passed to `load`, loading with "
                      "weights_only=False.", UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip or legacy format), or
    the tensors of a ``.safetensors`` file.

    Args:
        f: a path, ``os.PathLike`` or readable, seekable binary file object.
        map_location: where storages go: a device string or ``device``, a dict from saved
            locations to new ones (``{"cuda:0": "cpu"}``), or a callable
            ``fn(storage, location)`` returning the placed storage or None for the default.
        pickle_module: the ``pickle`` module for a full load (implies
            ``weights_only=False`` when that is not given).
        weights_only: refuse every global outside the allow-list (NOTE [ Safe loading ]);
            the default unless ``pickle_module`` is given.
        mmap: map storages from the file instead of reading them (zip files at a path).
        **pickle_load_args: passed to the unpickler, e.g. ``encoding``.

    Returns:
        The saved object.

    Example:
        >>> import ember, io
        >>> buf = io.BytesIO(); ember.save([ember.arange(3)], buf); _ = buf.seek(0)
        >>> ember.load(buf, map_location="cpu")
        [tensor([0, 1, 2])]
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.load: only the standard pickle module is supported")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    pickle_load_args.setdefault("encoding", "utf-8")
    if mmap is None:
        mmap = False
    is_path = isinstance(f, (str, os.PathLike))
    if is_path and os.fspath(f).endswith(".safetensors"):
        return _load_safetensors(f, map_location)
    raw = open(f, "rb") if is_path else f  # noqa: SIM115 - closed below
    try:
        if not (hasattr(raw, "seek") and hasattr(raw, "read")):
            raise AttributeError(f"ember.load: expected a path or a readable binary file "
                                 f"object, got {type(f)}")
        start = raw.tell()
        is_zip = raw.read(4) == b"PK\x03\x04"
        raw.seek(start)
        restore = _locations.restore_location_fn(map_location)
        if is_zip:
            if mmap and not is_path:
                raise ValueError("f must be a file path in order to use the mmap argument")
            return _load_zip(raw, restore, weights_only, os.fspath(f) if mmap else None,
                             pickle_load_args)
        if mmap:
            name = f"{f}, " if isinstance(f, str) else ""
            raise RuntimeError(
                "mmap can only be used with files saved with "
                f"`torch.save({name}_use_new_zipfile_serialization=True), please torch.save "
                "your checkpoint with this option in order to use mmap.")
        return _load_legacy(raw, restore, weights_only, pickle_load_args)
    finally:
        if is_path:
            raw.close()


def _unpickler(file, persistent_load, weights_only, pickle_load_args):
    if weights_only:
        return _unpickle.WeightsOnlyUnpickler(file, persistent_load,
                                              encoding=pickle_load_args["encoding"])
    return _unpickle.FullUnpickler(file, persistent_load, **pickle_load_args)


def _storage_dtype(storage_type):
    if isinstance(storage_type, StorageType):
        return storage_type.dtype
    if isinstance(storage_type, ForeignDtype):
        return storage_type
    from .._core import dtype as _dt

    return _dt.lookup(storage_type)


def _place(restore, data, dtype, location):
    """The loaded bytes as a TypedStorage, placed by ``restore`` (NOTE [ Storage
    locations ])."""
    from .._core.storage import TypedStorage, UntypedStorage

    placed = restore(UntypedStorage._of_root(data), location)
    if isinstance(placed, TypedStorage):
        placed = placed.untyped()
    if not isinstance(placed, UntypedStorage):
        raise TypeError(f"map_location: expected the callable to return a storage or None, "
                        f"got {type(placed).__name__}")
    return TypedStorage(placed, dtype)


def _swap_bytes(data, dtype):
    if not isinstance(dtype, ForeignDtype) and dtype.itemsize > 1:
        data.view(dtype.np).byteswap(inplace=True)


def _needs_swap(byteorder):
    if byteorder is None:
        fallback = _config.get_default_load_endianness()
        if fallback is None or fallback is _config.LoadEndianness.NATIVE:
            return False
        byteorder = "little" if fallback is _config.LoadEndianness.LITTLE else "big"
    return byteorder != sys.byteorder


# ------------------------------------------------------------------------------------------------
# zip format


def _entry_offset(raw, info):
    """Where an entry's bytes start: read from its local header (PyTorch files may carry
    zero CRCs, so zipfile's reader is not trusted with payloads)."""
    raw.seek(info.header_offset)
    header = raw.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _read_exact(raw, offset, size, name):
    raw.seek(offset)
    arr = np.empty(size, dtype=np.uint8)
    view = memoryview(arr)
    got = 0
    while got < size:
        n = raw.readinto(view[got:])
        if not n:
            raise RuntimeError(f"ember.load: the checkpoint is truncated ({name})")
        got += n
    return arr


def _open_zip(raw):
    try:
        zf = zipfile.ZipFile(raw)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"ember.load: the checkpoint is not a valid zip file ({e})") from None
    infos = zf.infolist()
    folder = infos[0].filename.split("/", 1)[0]
    return zf, folder, {i.filename: i for i in infos}


def _load_zip(raw, restore, weights_only, mmap_path, pickle_load_args):
    zf, folder, by_name = _open_zip(raw)
    with zf:
        if f"{folder}/constants.pkl" in by_name:
            raise RuntimeError("ember.load: the file is a TorchScript archive (torch.jit.save), "
                               "which ember cannot load")

        def record(name):
            info = by_name[f"{folder}/{name}"]
            return _read_exact(raw, _entry_offset(raw, info), info.file_size, name).tobytes()

        byteorder = record("byteorder").decode() if f"{folder}/byteorder" in by_name else None
        swap = _needs_swap(byteorder)
        mapped = None
        if mmap_path is not None:
            shared = _config.get_default_mmap_options() == _config.MAP_SHARED
            mapped = np.memmap(mmap_path, dtype=np.uint8, mode="r+" if shared else "c")
        loaded = {}

        def persistent_load(pid):
            kind, storage_type, key, location, numel = pid[:5]
            kind = kind.decode() if isinstance(kind, bytes) else kind
            if kind != "storage":
                raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
            dtype = _storage_dtype(storage_type)
            if key not in loaded:
                info = by_name[f"{folder}/data/{key}"]
                if _config.skipping_data():
                    data = np.zeros(info.file_size, np.uint8)
                elif mapped is not None:
                    start = _entry_offset(raw, info)
                    data = np.asarray(mapped[start:start + info.file_size])
                else:
                    data = _read_exact(raw, _entry_offset(raw, info), info.file_size, key)
                if swap:
                    _swap_bytes(data, dtype)
                location = location.decode() if isinstance(location, bytes) else location
                loaded[key] = _place(restore, data, dtype, location)
            storage = loaded[key]
            return typed_storage(storage.untyped()._array, dtype) \
                if storage.dtype is not dtype else storage

        return _run(io.BytesIO(record("data.pkl")), persistent_load, weights_only,
                    pickle_load_args)


def _run(file, persistent_load, weights_only, pickle_load_args):
    try:
        return _unpickler(file, persistent_load, weights_only, pickle_load_args).load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:
        if weights_only and isinstance(e, (AttributeError, TypeError, ValueError, KeyError,
                                            IndexError)):
            raise pickle.UnpicklingError(
                f"Weights only load failed. The checkpoint could not be unpickled: "
                f"{type(e).__name__}: {e}") from e
        raise


# ------------------------------------------------------------------------------------------------
# legacy stream format (see NOTE [ Checkpoint layout ] in _save.py)


def _load_legacy(raw, restore, weights_only, pickle_load_args):
    def header():
        return _run(raw, None, weights_only, pickle_load_args)

    try:
        magic = header()
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        if isinstance(e, pickle.UnpicklingError) and "Weights only" in str(e):
            raise
        raise pickle.UnpicklingError(
            f"ember.load: the file is neither a zip checkpoint nor PyTorch's legacy format "
            f"({type(e).__name__}: {e})") from None
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version = header()
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = header()
    swap = _needs_swap("little" if sys_info.get("little_endian", True) else "big")
    storages = {}  # key -> (bytes array, dtype, placed TypedStorage)

    def persistent_load(pid):
        kind = pid[0].decode() if isinstance(pid[0], bytes) else pid[0]
        if kind == "module":  # a whole module's class, saved with its source
            return pid[1]
        if kind != "storage":
            raise RuntimeError(f"Unknown saved id type: {pid[0]}")
        storage_type, key, location, numel, view = pid[1:6]
        dtype = _storage_dtype(storage_type)
        if key not in storages:
            location = location.decode() if isinstance(location, bytes) else location
            data = np.zeros(numel * dtype.itemsize, np.uint8)
            storages[key] = (data, dtype, _place(restore, data, dtype, location))
        data, root_dtype, placed = storages[key]
        if view is not None:
            view_key, offset, size = view
            if view_key not in storages:
                item = root_dtype.itemsize
                part = placed.untyped()._array[offset * item:(offset + size) * item]
                storages[view_key] = (part, root_dtype, typed_storage(part, root_dtype))
            return storages[view_key][2]
        return placed

    result = _unpickler(raw, persistent_load, weights_only, pickle_load_args).load()
    keys = header()
    if not _config.skipping_data():
        for key in keys:
            data, dtype, placed = storages[key]
            numel = struct.unpack("<q", raw.read(8))[0]
            chunk = _read_exact(raw, raw.tell(), numel * dtype.itemsize, str(key))
            if swap:
                _swap_bytes(chunk, dtype)
            # the storage may have been placed on another device before its bytes were read
            target = placed.untyped()._array
            target[:] = chunk if type(target) is np.ndarray else _to_like(chunk, target)
    return result


def _to_like(chunk, target):
    module = __import__(type(target).__module__.split(".")[0])
    return module.asarray(chunk)


def _load_safetensors(f, map_location):
    from ._safetensors import safetensors_load

    if isinstance(map_location, dict):
        raise RuntimeError("Loading safetensors file with dict map_location is not supported. "
                           "Use a device string or torch.device instead.")
    if callable(map_location) and not isinstance(map_location, str):
        from .._core.device import device as _device

        if not isinstance(map_location, _device):
            raise RuntimeError("Loading safetensors file with callable map_location is not "
                               "supported. Use a device string or torch.device instead.")
    return safetensors_load(os.fspath(f), device=str(map_location or "cpu"))


# ------------------------------------------------------------------------------------------------


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The globals a zip checkpoint's pickle names that ``weights_only=True`` would refuse
    (neither allowed by default nor by ``add_safe_globals``), found without unpickling.

    Args:
        f: a path or binary file object of a zip checkpoint.

    Returns:
        A list of full names such as ``"numpy.ndarray"``.

    Example:
        >>> import ember, io
        >>> buf = io.BytesIO(); ember.save({"w": ember.ones(2)}, buf); _ = buf.seek(0)
        >>> get_unsafe_globals_in_checkpoint(buf)
        []
    """
    is_path = isinstance(f, (str, os.PathLike))
    raw = open(f, "rb") if is_path else f  # noqa: SIM115 - closed below
    try:
        start = raw.tell()
        if raw.read(4) != b"PK\x03\x04":
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        raw.seek(start)
        zf, folder, by_name = _open_zip(raw)
        with zf:
            if f"{folder}/constants.pkl" in by_name:
                raise ValueError("Expected input to be a checkpoint returned by torch.save but "
                                 "got a torchscript checkpoint")
            info = by_name[f"{folder}/data.pkl"]
            data = _read_exact(raw, _entry_offset(raw, info), info.file_size, "data.pkl")
    finally:
        if is_path:
            raw.close()
    safe = set(_unpickle._allowed()) | set(_unpickle._user_allowed())
    return [g for g in _unpickle.globals_in_pickle(data.tobytes()) if g not in safe]
