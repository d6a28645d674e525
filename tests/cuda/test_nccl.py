"""The "nccl" backend on a real GPU (NOTE [ NCCL backend ] in ember/distributed/_nccl.py):
a world of one process, the size a one-GPU machine can run. Every collective on CUDA
tensors, its ``Work`` handle, and a DDP step on the GPU equal to the local step; the
all-reduce time at DDP's bucket sizes is printed (run with ``-s``; tools/gpu_session.sh's
``nccl`` stage does). Skipped without CuPy, NCCL and an NVIDIA GPU (CI)."""

import time

import numpy as np
import pytest

import ember
import ember.distributed as dist
from tests.distributed.conftest import free_port

pytestmark = pytest.mark.skipif(
    not (ember.cuda.is_available() and dist.is_nccl_available()),
    reason="needs CuPy with NCCL and an NVIDIA GPU")


@pytest.fixture
def nccl_world():
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def _cuda(a):
    return ember.from_numpy(np.ascontiguousarray(a)).cuda()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64])
def test_all_reduce_ops_in_a_world_of_one(nccl_world, dtype):
    assert dist.get_backend() == "nccl"
    a = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
               dist.ReduceOp.PRODUCT):
        t = _cuda(a)
        dist.all_reduce(t, op=op)
        assert t.device.type == "cuda"
        np.testing.assert_array_equal(t.cpu().numpy(), a)
    t = _cuda(a)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    work.wait()
    assert work.is_completed()
    np.testing.assert_array_equal(t.cpu().numpy(), a)


def test_other_collectives_in_a_world_of_one(nccl_world):
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    t = _cuda(a)
    dist.broadcast(t, src=0)
    dist.reduce(t, dst=0)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    out = ember.empty((4, 5), device="cuda")
    dist.all_gather_into_tensor(out, _cuda(a))
    np.testing.assert_array_equal(out.cpu().numpy(), a)
    parts = [ember.empty((4, 5), device="cuda")]
    dist.all_gather(parts, _cuda(a))
    np.testing.assert_array_equal(parts[0].cpu().numpy(), a)
    red = ember.empty((4, 5), device="cuda")
    dist.reduce_scatter_tensor(red, _cuda(a))
    np.testing.assert_array_equal(red.cpu().numpy(), a)
    with pytest.raises(ValueError, match="BAND"):
        dist.all_reduce(_cuda(a.astype(np.int64)), op=dist.ReduceOp.BAND)


def test_ddp_step_on_the_gpu_equals_the_local_step(nccl_world):
    ember.manual_seed(0)
    local = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(),
                                ember.nn.Linear(16, 2)).cuda()
    ddp_model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(),
                                    ember.nn.Linear(16, 2)).cuda()
    ddp_model.load_state_dict(local.state_dict())
    ddp = ember.nn.parallel.DistributedDataParallel(ddp_model, device_ids=[0])
    x = ember.randn(6, 8, device="cuda")
    y = ember.randn(6, 2, device="cuda")
    for m in (local, ddp):
        ember.nn.functional.mse_loss(m(x), y).backward()
    for p, q in zip(local.parameters(), ddp.module.parameters()):
        assert q.grad.device.type == "cuda"
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-6,
                                   atol=1e-7)


def test_all_reduce_time_at_bucket_sizes(nccl_world):
    # a record, not a check: one GPU has no link to measure, only NCCL's own path
    for mib in (1, 25, 100):
        t = ember.ones(mib * (1 << 20) // 4, device="cuda")
        dist.all_reduce(t)
        ember.cuda.synchronize()
        n = 20
        start = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(t)
        ember.cuda.synchronize()
        per = (time.perf_counter() - start) / n
        print(f"nccl all_reduce world 1, {mib} MiB float32: {per * 1e6:.1f} us, "
              f"{mib / 1024 / per:.1f} GiB/s", flush=True)
        assert float(t[0].item()) == 1.0
