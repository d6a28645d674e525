"""ember.distributed before any process group: the single-process path, vs PyTorch."""

import pytest

import ember
import ember.distributed as dist

try:
    import torch  # noqa: F401
    import torch.distributed as tdist

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def test_distributed_not_available_nor_initialized():
    assert dist.is_available() is False and dist.is_initialized() is False


@needs_torch
@pytest.mark.parametrize("name", ["get_rank", "get_world_size", "barrier", "get_backend"])
def test_distributed_group_functions_raise_as_torch(name):
    with pytest.raises(ValueError) as theirs:
        getattr(tdist, name)()
    with pytest.raises(ValueError) as ours:
        getattr(dist, name)()
    assert str(ours.value) == str(theirs.value)


def test_distributed_init_process_group_names_missing_feature():
    with pytest.raises(NotImplementedError, match="process groups"):
        dist.init_process_group("gloo")


@needs_torch
def test_distributed_constants_match_torch():
    assert dist.Backend.NCCL == tdist.Backend.NCCL and dist.group.WORLD is tdist.group.WORLD
    assert dist.ReduceOp.SUM.name == "SUM"
    assert dist.is_torchelastic_launched() == tdist.is_torchelastic_launched()


def test_distributed_all_reduce_raises_value_error():
    with pytest.raises(ValueError):
        dist.all_reduce(ember.ones(1))
