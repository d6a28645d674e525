"""Group ``data``: DataLoader throughput over an in-memory TensorDataset, ember vs PyTorch.

60,000 1x28x28 images, batch 64; one timed call iterates a fixed number of batches from a
fresh iterator (worker start-up included for ``num_workers=2``, as a user pays it each
epoch without persistent workers). Lower time per call = more batches per second.
"""

from __future__ import annotations

import numpy as np

from bench.common import workload

N_IMAGES = 60_000
BATCHES = 100


def _loader(fw, num_workers):
    rng = np.random.default_rng(0)
    images = fw.from_numpy(rng.standard_normal((N_IMAGES, 1, 28, 28)).astype(np.float32))
    labels = fw.from_numpy(rng.integers(0, 10, N_IMAGES))
    ds = fw.utils.data.TensorDataset(images, labels)
    return fw.utils.data.DataLoader(ds, batch_size=64, shuffle=False, num_workers=num_workers)


def _epoch_slice(loader):
    def run():
        total = 0
        for i, (x, _) in enumerate(loader):
            total += x.shape[0]
            if i + 1 == BATCHES:
                break
        return total

    return run


@workload("data", f"DataLoader {BATCHES} batches of 64x1x28x28, num_workers=0", check=None)
def loader0(fw):
    return _epoch_slice(_loader(fw, 0))


@workload("data", f"DataLoader {BATCHES} batches of 64x1x28x28, num_workers=2", check=None)
def loader2(fw):
    return _epoch_slice(_loader(fw, 2))
