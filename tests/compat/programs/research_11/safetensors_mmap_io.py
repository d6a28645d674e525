"""Tensor files and NumPy interop the way loaders write them: ``torch.save`` then
``torch.load(weights_only=True, mmap=True)`` (views sharing the file, ``map_location``), a
safetensors-style file written by hand (an 8-byte little-endian header length, a JSON header
with dtypes, shapes and ``data_offsets``, the raw bytes from ``untyped_storage()`` or
``numpy().tobytes()``) and read back through ``torch.frombuffer`` and ``UntypedStorage.from_file``,
``torch.from_numpy`` sharing memory both ways, ``numpy()`` of views, ``as_tensor`` copying or
not, and ``default_collate`` on nested dicts, namedtuples, strings and numbers."""
import collections
import json
import os
import struct

import numpy as np
import torch
from torch.utils.data import default_collate

torch.manual_seed(0)
DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
          torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL", torch.float64: "F64"}
FROM_CODE = {v: k for k, v in DTYPES.items()}

state = {
    "embed.weight": torch.randn(5, 4),
    "norm.weight": torch.ones(4, dtype=torch.float16) * 1.5,
    "head.weight": torch.randn(3, 4).to(torch.bfloat16),
    "step": torch.tensor(17, dtype=torch.int64),
    "mask": torch.tensor([True, False, True]),
    "ids": torch.arange(6, dtype=torch.int32).reshape(2, 3),
    "transposed": torch.randn(3, 2).t(),
}


def save_file(tensors, path, metadata=None):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        nbytes = t.numel() * t.element_size()
        raw = bytes(t.untyped_storage())[t.storage_offset() * t.element_size():][:nbytes]
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + nbytes]}
        blobs.append(raw)
        offset += nbytes
    if metadata:
        header["__metadata__"] = metadata
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for raw in blobs:
            f.write(raw)
    return 8 + len(hb), offset


def load_file(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        dtype = FROM_CODE[info["dtype"]]
        buf = bytearray(data[8 + n + start:8 + n + end])
        t = torch.frombuffer(buf, dtype=dtype) if end > start else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"])
    return out, meta


start, size = save_file(state, "model.safetensors", {"format": "pt"})
print("header bytes", start, "data bytes", size, os.path.getsize("model.safetensors"))
loaded, meta = load_file("model.safetensors")
print(meta, sorted(loaded))
for k in sorted(state):
    print(k, loaded[k].dtype, tuple(loaded[k].shape), torch.equal(loaded[k], state[k]))

# the same bytes through UntypedStorage.from_file, sliced at the header offset
storage = torch.UntypedStorage.from_file("model.safetensors", shared=False,
                                         nbytes=os.path.getsize("model.safetensors"))
hdr = json.loads(bytes(storage[8:start]).decode())
s, e = hdr["embed.weight"]["data_offsets"]
emb = torch.tensor([], dtype=torch.float32).set_(storage[start + s:start + e]).view(5, 4)
print("from_file embed", torch.equal(emb, state["embed.weight"]), emb.dtype, emb.is_contiguous())

# numpy bytes are the same as the storage bytes
arr = state["embed.weight"].numpy()
print("tobytes equal", arr.tobytes() == bytes(state["embed.weight"].untyped_storage()))
print("bf16 storage nbytes", state["head.weight"].untyped_storage().nbytes(),
      state["head.weight"].view(torch.int16)[0])

# torch.save + mmap loading
torch.save(state, "ckpt.pt")
mm = torch.load("ckpt.pt", weights_only=True, mmap=True, map_location="cpu")
print("mmap keys", sorted(mm), mm["transposed"].stride(), mm["transposed"].is_contiguous())
print("mmap equal", all(torch.equal(mm[k], state[k]) for k in state))
print(mm["embed.weight"].sum().item(), mm["step"].item(), mm["head.weight"].float().sum().item())
legacy = torch.load("ckpt.pt", weights_only=True, map_location=lambda storage, loc: storage)
print("map_location fn", legacy["ids"].tolist())

# from_numpy shares memory both ways; as_tensor does not copy matching arrays; tensor copies
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = torch.from_numpy(a)
a[0, 0] = 100.0
t[1, 2] = -1.0
print("shared", t.tolist(), a.tolist())
print("as_tensor shares", torch.as_tensor(a).data_ptr() == t.data_ptr(),
      "tensor copies", torch.tensor(a).data_ptr() == t.data_ptr())
col = t[:, 1].numpy()
col[0] = 7.0
print("view numpy", col.strides, t[0].tolist(), a.flags["C_CONTIGUOUS"], col.flags["OWNDATA"])
b = np.arange(4, dtype=np.float64)[::-1].copy()
print(torch.from_numpy(b).dtype, torch.from_numpy(np.array([1, 2], dtype=np.int16)).dtype,
      torch.as_tensor([1.5, 2.5], dtype=torch.float16))
r = torch.randn(3, requires_grad=True)
try:
    r.numpy()
except RuntimeError as e:
    print("numpy error:", e)
print(r.detach().numpy().dtype, r.numpy(force=True).shape)

# default_collate on nested structures
Sample = collections.namedtuple("Sample", ["image", "label", "meta"])
batch = [Sample(torch.full((2,), float(i)), i, {"name": f"s{i}", "score": 0.5 * i,
                                                 "arr": np.ones(2) * i, "pair": (i, i + 1)})
         for i in range(3)]
out = default_collate(batch)
print(type(out).__name__, out.image, out.label, out.meta["name"], out.meta["score"],
      out.meta["arr"], out.meta["pair"])
nested = default_collate([{"a": {"b": torch.tensor([i])}, "c": [i, 2 * i]} for i in range(2)])
print(nested)
os.remove("model.safetensors")
os.remove("ckpt.pt")
