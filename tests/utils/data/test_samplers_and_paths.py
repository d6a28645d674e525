"""ember.utils.data: torch's import paths, samplers and splits against PyTorch."""

import numpy as np
import pytest

import ember
from ember.utils import data as D

try:
    import torch
    import torch.utils.data as TD

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def test_default_collate_at_torch_paths_is_one_function():
    from ember.utils.data._utils.collate import default_collate
    from ember.utils.data.dataloader import default_collate as from_loader

    assert default_collate is from_loader is D.default_collate


def test_collate_fn_map_extends_to_custom_types():
    from ember.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    fns = {**default_collate_fn_map, Box: lambda batch, *, collate_fn_map: [b.v for b in batch]}
    assert collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fns)[0] == [1, 3]


def test_default_collate_refuses_unknown_type():
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        D.default_collate([object(), object()])


def test_distributed_sampler_at_torch_path():
    from ember.utils.data.distributed import DistributedSampler

    assert DistributedSampler is D.DistributedSampler


def test_distributed_sampler_without_group_raises_value_error():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        D.DistributedSampler(range(3))


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"drop_last": True}, {"shuffle": False}],
                         ids=["pad", "drop_last", "no_shuffle"])
def test_distributed_sampler_shapes_match_torch(kw):
    ours = [list(D.DistributedSampler(range(10), num_replicas=3, rank=r, **kw))
            for r in range(3)]
    theirs = [list(TD.DistributedSampler(range(10), num_replicas=3, rank=r, **kw))
              for r in range(3)]
    assert [len(x) for x in ours] == [len(x) for x in theirs]
    if kw.get("shuffle", True) is False:
        assert ours == theirs
    else:  # every index is drawn (the RNG streams differ, so not the same order)
        assert len(set(sum(ours, []))) == len(set(sum(theirs, [])))


def test_distributed_sampler_set_epoch_reshuffles():
    s = D.DistributedSampler(range(20), num_replicas=2, rank=0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and sorted(first) == sorted(set(first))


@needs_torch
def test_random_split_fraction_sizes_match_torch():
    g = ember.Generator().manual_seed(0)
    ours = D.random_split(range(11), [0.3, 0.3, 0.4], generator=g)
    theirs = TD.random_split(range(11), [0.3, 0.3, 0.4],
                             generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s.indices) == list(range(11))


def test_random_split_seeded_is_reproducible():
    def split():
        return [s.indices for s in D.random_split(range(8), [0.5, 0.5],
                                                  generator=ember.Generator().manual_seed(3))]

    assert split() == split()


def test_random_sampler_replacement_num_samples():
    s = D.RandomSampler(range(5), replacement=True, num_samples=12,
                        generator=ember.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == len(s) == 12 and all(0 <= i < 5 for i in out)


def test_weighted_random_sampler_never_draws_zero_weight():
    s = D.WeightedRandomSampler([0.0, 1.0, 1.0], 50, generator=ember.Generator().manual_seed(0))
    assert 0 not in list(s)


def test_subset_random_sampler_permutes_indices():
    assert sorted(D.SubsetRandomSampler([5, 7, 9])) == [5, 7, 9]


def test_dataset_add_concatenates():
    both = D.TensorDataset(ember.arange(2)) + D.TensorDataset(ember.arange(3))
    assert isinstance(both, D.ConcatDataset) and len(both) == 5 and both[4][0].item() == 2


def test_stack_dataset_dict_form():
    s = D.StackDataset(a=[1, 2], b=[3, 4])
    assert s[1] == {"a": 2, "b": 4}


@needs_torch
def test_public_names_cover_torch():
    names = [n for n in dir(TD) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(D, n)]
    assert len(missing) <= 0.1 * len(names), missing


def test_pin_memory_without_accelerator_returns_batch():
    from ember.utils.data._utils.pin_memory import pin_memory

    batch = {"x": ember.ones(2), "y": [ember.zeros(1)]}
    out = pin_memory(batch)
    assert out["x"].tolist() == [1.0, 1.0] and out["y"][0].tolist() == [0.0]


def test_numpy_scalar_batch_keeps_dtype():
    out = D.default_collate([np.float32(1), np.float32(2)])
    assert out.dtype == ember.float32
