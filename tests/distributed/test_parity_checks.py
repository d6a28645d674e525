"""Refusals and orders the random DDP/collective comparisons found differing from PyTorch,
checked in one process (a world of one needs no mpi4py): PREMUL_SUM under gloo, dtype and
list-length checks of the collectives, SyncBatchNorm on CPU, and the order in which a
linear layer's gradients reach their hooks (DDP builds its buckets from it)."""

import pytest

import ember
import ember.distributed as dist
from tests.distributed.conftest import free_port


@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_premul_sum_is_refused_by_gloo(world1):
    op = dist._make_nccl_premul_sum(2.0)
    assert op == dist.ReduceOp.PREMUL_SUM
    t = ember.ones(2)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.PREMUL_SUM with Gloo"):
        dist.all_reduce(t, op=op)
    with pytest.raises(RuntimeError, match="PREMUL_SUM"):
        dist.reduce_scatter_tensor(ember.zeros(1), ember.ones(1), op=op)
    assert t.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("call", [
    lambda: dist.all_gather([ember.zeros(2, dtype=ember.float64)], ember.ones(2)),
    lambda: dist.all_to_all_single(ember.zeros(2, dtype=ember.int32), ember.ones(2)),
    lambda: dist.reduce_scatter(ember.zeros(2), [ember.ones(2, dtype=ember.float64)]),
    lambda: dist.all_to_all([ember.zeros(1)], [ember.ones(1, dtype=ember.int64)]),
])
def test_collectives_refuse_mixed_dtypes(world1, call):
    with pytest.raises(ValueError, match="Invalid usage of tensors with different dtypes"):
        call()


def test_all_gather_wrong_list_length_is_runtime_error(world1):
    outs = [ember.zeros(2), ember.zeros(2)]
    with pytest.raises(RuntimeError, match="expected length 1, got 2"):
        dist.all_gather(outs, ember.ones(2))
    assert outs[0].tolist() == [0.0, 0.0]


def test_sync_batchnorm_refuses_cpu_under_a_group(world1):
    net = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.SyncBatchNorm(3))
    with pytest.raises(ValueError, match="SyncBatchNorm layers only work with GPU modules"):
        ember.nn.parallel.DistributedDataParallel(net)
    bn = net[1]
    before = bn.num_batches_tracked.item()
    with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
        bn(ember.randn(4, 3))
    assert bn.num_batches_tracked.item() == before  # refused before touching the stats
    bn.eval()
    assert tuple(bn(ember.randn(4, 3)).shape) == (4, 3)


def test_sync_batchnorm_without_group_is_batchnorm():
    assert tuple(ember.nn.SyncBatchNorm(3)(ember.randn(4, 3)).shape) == (4, 3)


def _hook_order(fw):
    nn = fw.nn
    net = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 8, bias=False),
                        nn.Linear(8, 3))
    order = []
    for name, p in net.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: order.append(name))
    net(fw.ones(4, 6)).sum().backward()
    return order


def test_linear_hands_bias_gradient_on_first():
    # torch's addmm: the bias's gradient is ready before the weight's (through TBackward0)
    assert _hook_order(ember) == ["3.bias", "3.weight", "2.weight", "1.weight", "1.bias",
                                  "0.bias", "0.weight"]
    torch = pytest.importorskip("torch")
    assert _hook_order(ember) == _hook_order(torch)
