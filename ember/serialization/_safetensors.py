"""safetensors: 8-byte little-endian header length N, N bytes of JSON (name -> dtype, shape,
data offsets; optional ``__metadata__``), then the tensors' bytes, C-order, little-endian,
no sharing (tensors that share memory are written as copies)."""

from __future__ import annotations

import json
import os
import struct

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap

_ST_DTYPES = {
    _dt.float64: "F64", _dt.float32: "F32", _dt.float16: "F16", _dt.bfloat16: "BF16",
    _dt.int64: "I64", _dt.int32: "I32", _dt.int16: "I16", _dt.int8: "I8", _dt.uint8: "U8",
    _dt.bool_: "BOOL", _dt.complex64: "C64",
}
_ST_BY_NAME = {v: k for k, v in _ST_DTYPES.items()}


def safetensors_save(tensors, filename=None, metadata=None):
    """Write a dict of tensors in the safetensors format.

    Args:
        tensors: ``{name: Tensor}``; tensors sharing memory are written as copies.
        filename: where to write (atomically); None returns the bytes instead.
        metadata: optional ``{str: str}`` stored under ``__metadata__``.

    Returns:
        The file's bytes when ``filename`` is None, else None.

    Example:
        >>> import ember
        >>> blob = safetensors_save({"w": ember.ones(2)})
        >>> safetensors_load(blob)["w"]
        tensor([1., 1.])
    """
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
    """Read safetensors data into a dict of tensors.

    Args:
        data_or_filename: a path, or the file's bytes.
        device: where the tensors go.

    Returns:
        ``{name: Tensor}``.

    Example:
        >>> import ember
        >>> safetensors_load(safetensors_save({"b": ember.zeros(1)}))["b"]
        tensor([0.])
    """
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
