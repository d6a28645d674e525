"""Data pipelines the way NLP and audio repositories write them: a map-style Dataset of
variable-length sequences, a custom collate_fn padding with pad_sequence and returning a
dict with lengths and a mask, a BucketBatchSampler subclassing Sampler that sorts by length
within shuffled chunks, a DistributedSampler with explicit num_replicas/rank and set_epoch,
WeightedRandomSampler with a seeded Generator, an IterableDataset sharding by
get_worker_info across two workers, ConcatDataset/Subset/random_split, and default_collate
on nested structures."""
import math

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              DistributedSampler, IterableDataset, RandomSampler, Sampler,
                              Subset, WeightedRandomSampler, default_collate, get_worker_info,
                              random_split)

torch.manual_seed(0)


class SequenceDataset(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(3)
        self.lengths = torch.randint(2, 9, (n,), generator=g).tolist()
        self.items = [torch.arange(1, L + 1) * (i + 1) for i, L in enumerate(self.lengths)]
        self.labels = [i % 3 for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return {"tokens": self.items[idx], "label": self.labels[idx], "id": idx}


def pad_collate(batch):
    tokens = [b["tokens"] for b in batch]
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=0)
    mask = torch.arange(padded.size(1))[None, :] < lengths[:, None]
    return {"tokens": padded, "lengths": lengths, "mask": mask,
            "labels": torch.tensor([b["label"] for b in batch]),
            "ids": [b["id"] for b in batch]}


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, bucket_size_multiplier=3, generator=None):
        self.lengths, self.batch_size = lengths, batch_size
        self.bucket_size = batch_size * bucket_size_multiplier
        self.generator = generator

    def __iter__(self):
        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        batches = []
        for i in range(0, len(order), self.bucket_size):
            bucket = sorted(order[i:i + self.bucket_size], key=lambda j: self.lengths[j])
            batches += [bucket[k:k + self.batch_size]
                        for k in range(0, len(bucket), self.batch_size)]
        for b in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[b]

    def __len__(self):
        return sum(math.ceil(min(self.bucket_size, len(self.lengths) - i) / self.batch_size)
                   for i in range(0, len(self.lengths), self.bucket_size))


ds = SequenceDataset(20)
loader = DataLoader(ds, batch_sampler=BucketBatchSampler(ds.lengths, 4,
                                                         generator=torch.Generator().manual_seed(1)),
                    collate_fn=pad_collate)
print("buckets", len(loader))
for batch in loader:
    print(" ", batch["ids"], tuple(batch["tokens"].shape), batch["lengths"].tolist(),
          int(batch["mask"].sum()), batch["tokens"].sum().item())
    break
waste = sum((b["tokens"].numel() - int(b["mask"].sum())) for b in loader)
print("padding waste", waste)

sampler = DistributedSampler(ds, num_replicas=3, rank=1, shuffle=True, seed=7, drop_last=False)
for epoch in range(2):
    sampler.set_epoch(epoch)
    print("rank 1 epoch", epoch, list(sampler), len(sampler))

weights = [3.0 if lbl == 0 else 1.0 for lbl in ds.labels]
wsampler = WeightedRandomSampler(weights, num_samples=30, replacement=True,
                                 generator=torch.Generator().manual_seed(5))
drawn = [ds.labels[i] for i in wsampler]
print("weighted", [drawn.count(c) for c in range(3)])
bs = BatchSampler(RandomSampler(range(10), generator=torch.Generator().manual_seed(2)),
                  batch_size=4, drop_last=True)
print("batch sampler", list(bs))


class ShardedRange(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:
            iter_start, iter_end = self.start, self.end
        else:
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        for i in range(iter_start, iter_end):
            yield torch.tensor([i, i * i])


it_ds = ShardedRange(3, 14)
print("single", [x[0].item() for x in DataLoader(it_ds, batch_size=None)][:5])
multi = DataLoader(it_ds, batch_size=3, num_workers=2)
print("two workers", [b[:, 0].tolist() for b in multi])

parts = random_split(ds, [0.6, 0.2, 0.2], generator=torch.Generator().manual_seed(42))
print("split", [len(p) for p in parts], parts[1].indices)
joined = ConcatDataset([Subset(ds, [0, 1, 2]), parts[2]])
print("concat", len(joined), joined.cumulative_sizes, joined[4]["id"])
nested = default_collate([{"x": torch.ones(2) * i, "meta": (i, f"s{i}"), "f": float(i)}
                          for i in range(3)])
print("default_collate", nested["x"].tolist(), nested["meta"][0].tolist(), nested["meta"][1],
      nested["f"].dtype)
