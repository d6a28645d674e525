"""DataLoader, datasets, samplers and collation."""

import collections
import os
import signal
import time

import numpy as np
import pytest

import ember
from tests.conftest import fails_if_hung
from ember.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, DistributedSampler, IterableDataset,
    RandomSampler, SequentialSampler, StackDataset, Subset, TensorDataset,
    WeightedRandomSampler, default_collate, default_convert, get_worker_info, random_split,
)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return ember.tensor([float(i * i)]), i


class Failing(Squares):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample 5")
        return super().__getitem__(i)


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(3)
        return super().__getitem__(i)


class Suicidal(Squares):
    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class WorkerIdentity(Squares):
    def __getitem__(self, i):
        info = get_worker_info()
        return ember.tensor([info.id, info.seed]), ember.rand(1)


def _values(loader):
    return [b[1].tolist() for b in loader]


def test_default_collate_stacks_and_converts():
    b = default_collate([(ember.ones(2), 1, 2.5, "a"), (ember.zeros(2), 2, 3.5, "b")])
    assert b[0].shape == (2, 2)
    assert b[1].dtype == ember.int64 and b[2].dtype == ember.float64
    assert b[3] == ("a", "b")  # strings stay as the transposed tuple, as in PyTorch
    d = default_collate([{"x": np.ones(3)}, {"x": np.zeros(3)}])
    assert d["x"].shape == (2, 3) and d["x"].dtype == ember.float64
    P = collections.namedtuple("P", "a b")
    p = default_collate([P(1, 2), P(3, 4)])
    assert isinstance(p, P) and p.a.tolist() == [1, 3]


def test_default_collate_errors_like_pytorch():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])


def test_default_convert_turns_arrays_into_tensors():
    out = default_convert({"a": np.arange(3), "b": [np.float32(1.0)]})
    assert isinstance(out["a"], ember.Tensor) and isinstance(out["b"][0], ember.Tensor)


def test_datasets_combine():
    t = TensorDataset(ember.arange(4), ember.arange(4) * 2)
    assert t[2][1].item() == 4 and len(t) == 4
    c = ConcatDataset([t, t])
    assert len(c) == 8 and c[5][0].item() == 1 and c[-1][0].item() == 3
    s = Subset(t, [3, 1])
    assert s[0][0].item() == 3
    st = StackDataset(t, t)
    assert len(st[0]) == 2
    parts = random_split(range(10), [0.5, 0.5], generator=ember.Generator().manual_seed(0))
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    with pytest.raises(ValueError):
        random_split(range(10), [3, 3])


def test_samplers():
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    g = ember.Generator().manual_seed(1)
    r = list(RandomSampler(range(10), generator=g))
    assert sorted(r) == list(range(10))
    assert len(list(RandomSampler(range(5), replacement=True, num_samples=40))) == 40
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(range(5), 2, drop_last=True)) == [[0, 1], [2, 3]]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0], 20))
    assert w == [1] * 20
    shards = [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
              for r in range(3)]
    assert sorted(sum(shards, [])) == sorted(list(range(10)) + [0, 1])
    with pytest.raises(ValueError):
        BatchSampler(range(3), 0, False)


def test_dataloader_argument_checks():
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(range(3), sampler=SequentialSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(range(3), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(range(3), persistent_workers=True)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(range(3), num_workers=-1)


def test_single_process_batches_and_len():
    loader = DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert batches[0][0].shape == (4, 1) and batches[-1][1].tolist() == [8, 9]
    assert len(DataLoader(Squares(10), batch_size=4, drop_last=True)) == 2
    assert [b[1] for b in DataLoader(Squares(3), batch_size=None)] == [0, 1, 2]


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_workers_preserve_batch_order(ctx):
    base = _values(DataLoader(Squares(23), batch_size=3))
    got = _values(DataLoader(Squares(23), batch_size=3, num_workers=2,
                             multiprocessing_context=ctx))
    assert got == base


def test_worker_seeds_and_info():
    loader = DataLoader(WorkerIdentity(4), batch_size=1, num_workers=2)
    rows = [b[0][0].tolist() for b in loader]
    ids = [r[0] for r in rows]
    seeds = [r[1] for r in rows]
    assert ids == [0, 1, 0, 1]
    assert seeds[1] == seeds[0] + 1


def test_iterable_dataset_sharded_by_workers():
    got = sorted(x for b in DataLoader(Stream(10), batch_size=2, num_workers=2)
                 for x in b.tolist())
    assert got == list(range(10))


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_worker_exception_is_reraised_with_type_and_origin(ctx):
    loader = DataLoader(Failing(10), batch_size=2, num_workers=2, multiprocessing_context=ctx)
    with pytest.raises(ValueError, match="in DataLoader worker process") as e:
        list(loader)
    assert "bad sample 5" in str(e.value)


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_killed_worker_is_reported_not_hung(ctx):
    loader = DataLoader(Suicidal(10), batch_size=1, num_workers=2, multiprocessing_context=ctx)
    # (how soon depends on the machine's load: spawned workers import ember first)
    with fails_if_hung(), pytest.raises(RuntimeError, match="DataLoader worker \\(pid"):
        list(loader)


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_timeout_raises(ctx):
    loader = DataLoader(Slow(4), batch_size=1, num_workers=1, timeout=0.5,
                        multiprocessing_context=ctx)
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        next(iter(loader))


def test_breaking_out_shuts_workers_down():
    loader = DataLoader(Squares(50), batch_size=1, num_workers=2)
    it = iter(loader)
    next(it)
    workers = list(it._workers)
    del it
    for w in workers:
        w.join(timeout=10)
        assert not w.is_alive()


def test_persistent_workers_reuse_processes():
    loader = DataLoader(Squares(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = _values(loader)
    pids = [w.pid for w in loader._iterator._workers]
    second = _values(loader)
    assert first == second and [w.pid for w in loader._iterator._workers] == pids
    loader._iterator._shutdown()


def _shm_files():
    return {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_no_shared_memory_left_after_killed_workers(ctx):
    import ember.multiprocessing as emp

    before = _shm_files()
    emp.set_sharing_strategy("file_system")
    try:
        loader = DataLoader(Suicidal(12), batch_size=2, num_workers=2,
                            multiprocessing_context=ctx)
        with pytest.raises(RuntimeError, match="DataLoader worker"):
            list(loader)
        del loader
        import gc

        gc.collect()
        from ember.multiprocessing._shared import sweep_dead_files

        sweep_dead_files()  # what interpreter exit runs: dead workers' segments go
    finally:
        emp.set_sharing_strategy("file_descriptor")
    assert _shm_files() - before == set()


def test_interpreter_exit_does_not_hang_with_live_workers():
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import ember
        from ember.utils.data import DataLoader, TensorDataset
        ds = TensorDataset(ember.arange(100.0))
        it = iter(DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True))
        next(it)
        print("exiting")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "exiting" in r.stdout


def test_pin_memory_without_accelerator_warns():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        list(DataLoader(Squares(2), pin_memory=True))
