"""Sharded streaming data the way webdataset-style loaders write it without the library:
samples serialised with ``torch.save`` into ``io.BytesIO`` and packed into ``.tar`` shards
with ``tarfile`` (``.pth`` tensors, ``.json`` metadata, ``.cls`` labels), an
``IterableDataset`` that splits shards over ``get_worker_info`` workers, groups members by
key, decodes with ``torch.load(weights_only=True)``, shuffles through a seeded buffer,
``ChainDataset`` of two sources, batching with a dict ``collate_fn``, ``itertools.islice``
for a fixed epoch length, and ``torch.save`` of a whole nested batch to bytes and back."""
import io
import itertools
import json
import os
import random
import tarfile
import tempfile

import torch
from torch.utils.data import ChainDataset, DataLoader, IterableDataset, get_worker_info

torch.manual_seed(0)
root = tempfile.mkdtemp()


def write_shard(path, start, n):
    with tarfile.open(path, "w") as tar:
        for i in range(start, start + n):
            key = f"sample{i:05d}"
            buf = io.BytesIO()
            torch.save({"x": torch.randn(3), "mask": torch.arange(4) < (i % 4)}, buf)
            members = {"pth": buf.getvalue(), "json": json.dumps({"id": i, "len": i % 4}).encode(),
                       "cls": str(i % 3).encode()}
            for ext, data in members.items():
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))


shards = []
for s in range(4):
    p = os.path.join(root, f"train-{s:04d}.tar")
    write_shard(p, s * 5, 5)
    shards.append(p)
print("shards", [os.path.basename(p) for p in shards], os.path.getsize(shards[0]) > 0)


def decode(sample):
    out = {"__key__": sample["__key__"]}
    out["x"] = torch.load(io.BytesIO(sample["pth"]), weights_only=True)
    out["meta"] = json.loads(sample["json"])
    out["cls"] = int(sample["cls"])
    return out


class TarStream(IterableDataset):
    def __init__(self, urls, shuffle_buffer=0, seed=0):
        self.urls, self.shuffle_buffer, self.seed = urls, shuffle_buffer, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def shards_for_worker(self):
        info = get_worker_info()
        if info is None:
            return list(self.urls)
        return self.urls[info.id::info.num_workers]

    def samples(self):
        for url in self.shards_for_worker():
            with tarfile.open(url) as tar:
                current = {}
                for member in tar.getmembers():
                    key, ext = member.name.rsplit(".", 1)
                    if current and current["__key__"] != key:
                        yield decode(current)
                        current = {}
                    current["__key__"] = key
                    current[ext] = tar.extractfile(member).read()
                if current:
                    yield decode(current)

    def __iter__(self):
        it = self.samples()
        if not self.shuffle_buffer:
            yield from it
            return
        info = get_worker_info()
        rng = random.Random(self.seed + 1000 * self.epoch + (info.id if info else 0))
        buf = []
        for s in it:
            if len(buf) < self.shuffle_buffer:
                buf.append(s)
                continue
            j = rng.randrange(len(buf))
            buf[j], s = s, buf[j]
            yield s
        rng.shuffle(buf)
        yield from buf


def collate(samples):
    return {"key": [s["__key__"] for s in samples],
            "x": torch.stack([s["x"]["x"] for s in samples]),
            "mask": torch.stack([s["x"]["mask"] for s in samples]),
            "cls": torch.tensor([s["cls"] for s in samples]),
            "len": torch.tensor([s["meta"]["len"] for s in samples])}


plain = list(TarStream(shards))
print(len(plain), plain[0]["__key__"], plain[0]["x"]["x"], plain[0]["meta"], plain[7]["x"]["mask"])

ds = TarStream(shards, shuffle_buffer=4, seed=3)
loader = DataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate)
for epoch in range(2):
    ds.set_epoch(epoch)
    keys, total = [], 0.0
    for batch in loader:
        keys.append([k[-2:] for k in batch["key"]])
        total += batch["x"].sum().item() + batch["mask"].sum().item()
    print(f"epoch {epoch} batches {keys} total {total:.5f}")

chained = ChainDataset([TarStream(shards[:1]), TarStream(shards[3:])])
print("chain", [s["__key__"][-2:] for s in chained])
first = list(itertools.islice(iter(DataLoader(TarStream(shards), batch_size=3, collate_fn=collate)), 2))
print("islice", [b["cls"].tolist() for b in first], first[1]["len"])

buf = io.BytesIO()
torch.save(first[0], buf)
print("nested batch bytes", buf.tell() > 0)
buf.seek(0)
back = torch.load(buf, weights_only=True)
print(sorted(back), torch.equal(back["x"], first[0]["x"]), back["mask"].dtype, back["key"])
