"""ember.distributed in one process: before init, init with world size 1, errors as torch."""

import datetime

import pytest

import ember
import ember.distributed as dist
from tests.distributed.conftest import free_port, needs_mpi

try:
    import torch.distributed as tdist

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


@needs_torch
@pytest.mark.parametrize("name", ["get_rank", "get_world_size", "barrier", "get_backend"])
def test_group_functions_before_init_raise_as_torch(name):
    with pytest.raises(ValueError) as theirs:
        getattr(tdist, name)()
    with pytest.raises(ValueError) as ours:
        getattr(dist, name)()
    assert str(ours.value) == str(theirs.value)


def test_all_reduce_before_init_raises_value_error():
    with pytest.raises(ValueError):
        dist.all_reduce(ember.ones(1))


def test_destroy_before_init_raises_assertion_error():
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()


@needs_torch
def test_constants_match_torch():
    assert dist.Backend.NCCL == tdist.Backend.NCCL and dist.group.WORLD is tdist.group.WORLD
    assert {op for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR")} <= \
        set(dist.ReduceOp.__members__)
    assert dist.is_torchelastic_launched() == tdist.is_torchelastic_launched()


@needs_torch
def test_nccl_without_gpu_raises_as_torch():
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                                world_size=1)
    assert not dist.is_initialized()


@needs_torch
@pytest.mark.skipif(ember.cuda.is_available(), reason="messages of a CPU-only installation")
@pytest.mark.parametrize("device", [0, "cpu", "cuda", "cuda:0"])
def test_device_id_without_accelerator_raises_as_torch(device):
    import torch

    def message(fw, mod):
        d = device if isinstance(device, int) else fw.device(device)
        with pytest.raises(ValueError) as e:
            mod.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}",
                                   rank=0, world_size=1, device_id=d)
        return str(e.value)

    assert message(ember, dist) == message(torch, tdist)
    assert not dist.is_initialized()


@needs_mpi
def test_env_init_without_rank_raises_value_error(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="RANK expected"):
        dist.init_process_group("gloo", init_method="env://")


@needs_mpi
def test_world_size_one_group_runs_collectives():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=30))
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "gloo"
        t = ember.tensor([1.0, 2.0])
        work = dist.all_reduce(t, dist.ReduceOp.AVG, async_op=True)
        assert work.wait() and work.is_completed()
        assert t.tolist() == [1.0, 2.0]
        with pytest.raises(RuntimeError, match="non-integral"):
            dist.all_reduce(ember.ones(1), dist.ReduceOp.BAND)
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=0,
                                    world_size=1)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None


@needs_mpi
def test_ddp_world_size_one_keeps_gradients():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        ember.manual_seed(0)
        net = ember.nn.Linear(3, 2)
        ddp = ember.nn.parallel.DistributedDataParallel(net)
        ddp(ember.ones(4, 3)).sum().backward()
        assert net.weight.grad.tolist() == [[4.0] * 3] * 2
    finally:
        dist.destroy_process_group()


def test_ddp_without_group_raises_value_error():
    with pytest.raises(ValueError, match="init_process_group"):
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(1, 1))
