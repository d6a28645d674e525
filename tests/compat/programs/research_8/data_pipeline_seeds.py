"""Data pipelines the way training repos assemble them, with the seeding details that make
runs repeatable: ``random_split`` by fractions with a seeded generator, ``Subset``,
``StackDataset`` and ``ChainDataset``, ``default_collate`` of dicts, namedtuples, numpy
arrays and strings, ``default_convert``, a ``BatchSampler`` passed as ``sampler`` with
``batch_size=None``, a ``DataLoader`` with two workers whose ``worker_init_fn`` seeds
NumPy from ``torch.initial_seed()`` (as the PyTorch reproducibility notes suggest) and
reads ``get_worker_info()``, ``prefetch_factor``, ``persistent_workers`` reusing workers
across epochs, ``drop_last``, a ``WeightedRandomSampler`` without replacement, and
``torch.utils.data.Dataset`` arithmetic (``+``)."""
import random
from collections import namedtuple

import numpy as np
import torch
from torch.utils.data import (BatchSampler, ChainDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, SequentialSampler, StackDataset, Subset,
                              TensorDataset, WeightedRandomSampler, default_collate,
                              get_worker_info, random_split)
from torch.utils.data._utils.collate import default_convert


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


seed_everything(0)
Sample = namedtuple("Sample", ["x", "y"])


class Noisy(Dataset):
    """Each item draws NumPy noise: which worker draws it decides the numbers."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if isinstance(i, list):  # a whole batch from a BatchSampler given as ``sampler``
            return default_collate([self[j] for j in i])
        info = get_worker_info()
        noise = np.random.rand()
        return {"idx": i, "noise": np.float32(noise), "worker": -1 if info is None else info.id,
                "vec": torch.full((2,), float(i))}


def worker_init_fn(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)
    random.seed(worker_seed)
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2


base = TensorDataset(torch.arange(20.0)[:, None], torch.arange(20) % 3)
train, val, test = random_split(base, [0.6, 0.2, 0.2], generator=torch.Generator().manual_seed(42))
print("split sizes:", len(train), len(val), len(test), "val indices:", val.indices)
sub = Subset(base, [1, 3, 5])
print("subset:", sub[1], "concat len:", len(train + val))
stacked = StackDataset(a=sub, b=Subset(base, [0, 2, 4]))
print("stack:", stacked[2])

batch = default_collate([Sample(np.array([1.0, 2.0]), 3), Sample(np.array([4.0, 5.0]), 6)])
print("namedtuple collate:", type(batch).__name__, batch.x, batch.x.dtype, batch.y)
batch = default_collate([{"a": "s1", "b": (1, 2.5)}, {"a": "s2", "b": (3, 4.5)}])
print("dict collate:", batch)
print("convert:", default_convert({"n": np.arange(3), "t": (np.float64(1.5),)}))

g = torch.Generator().manual_seed(7)
loader = DataLoader(Noisy(12), batch_size=None,
                    sampler=BatchSampler(RandomSampler(range(12), generator=g), 4, drop_last=True))
for b in loader:
    print("batch-sampler batch:", b["idx"].tolist())

loader = DataLoader(Noisy(10), batch_size=3, shuffle=True, num_workers=2,
                    worker_init_fn=worker_init_fn, prefetch_factor=2,
                    persistent_workers=True, drop_last=True,
                    generator=torch.Generator().manual_seed(123))
for epoch in range(2):
    for b in loader:
        print(f"epoch {epoch} idx {b['idx'].tolist()} worker {b['worker'].tolist()} "
              f"noise {[round(float(v), 6) for v in b['noise']]}")
print("vec batch:", b["vec"].shape, b["noise"].dtype)

w = torch.tensor([0.1, 0.1, 5.0, 0.1, 5.0, 0.1])
ws = WeightedRandomSampler(w, num_samples=4, replacement=False,
                           generator=torch.Generator().manual_seed(3))
print("weighted without replacement:", list(ws))
print("sequential batches:", list(BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)))


class Stream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


chain = ChainDataset([Stream(0, 3), Stream(10, 12)])
print("chain:", list(chain), [b.tolist() for b in DataLoader(chain, batch_size=2)])
torch.manual_seed(5)
print("after loaders:", torch.rand(2), np.random.rand())
