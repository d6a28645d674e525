"""ember.distributed in one process: Future, GradBucket, hooks, Join, ZeRO and the smaller
names, against PyTorch where it answers without a group, else with a world of size 1."""

import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from tests.distributed.conftest import free_port, needs_mpi

try:
    import torch
    import torch.distributed as tdist

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


# -- Future ---------------------------------------------------------------------------------------

def test_future_then_chains_values():
    fut = dist.Future()
    child = fut.then(lambda f: f.value() * 2).then(lambda f: f.value() + 1)
    assert not child.done()
    fut.set_result(3)
    assert child.done() and child.wait() == 7


@needs_torch
def test_future_completed_twice_raises_as_torch():
    ours, theirs = dist.Future(), torch.futures.Future()
    ours.set_result(1)
    theirs.set_result(1)
    with pytest.raises(RuntimeError) as a:
        ours.set_result(2)
    with pytest.raises(RuntimeError) as b:
        theirs.set_result(2)
    assert str(a.value) == str(b.value)


def test_future_exception_raised_by_wait_and_callbacks():
    fut = dist.Future()
    child = fut.then(lambda f: f.value())
    fut.set_exception(ValueError("boom"))
    # as torch.futures.Future: the callback's error, wrapped (NOTE [ Future errors ])
    with pytest.raises(RuntimeError, match="when running the callback: ValueError: boom"):
        child.wait()


# -- small names ----------------------------------------------------------------------------------

@needs_torch
def test_option_records_defaults_match_torch():
    for name in ("AllreduceOptions", "BroadcastOptions", "ReduceOptions", "GatherOptions",
                 "ScatterOptions", "BarrierOptions", "AllToAllOptions",
                 "ReduceScatterOptions", "AllreduceCoalescedOptions"):
        o, t = getattr(dist, name)(), getattr(tdist, name)()
        for field in dir(t):
            if not field.startswith("_") and field not in ("reduceOp", "timeout"):
                assert getattr(o, field) == getattr(t, field), (name, field)


@needs_torch
def test_backend_queries_match_torch(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.BackendConfig("gloo").get_device_backend_map() == \
        tdist.BackendConfig(tdist.Backend("gloo")).get_device_backend_map()
    for dev in ("cpu", "cuda"):
        assert dist.get_default_backend_for_device(dev) == \
            tdist.get_default_backend_for_device(dev)
    for op in ("SUM", "MAX", "PRODUCT", "AVG"):
        assert dist.supports_complex(getattr(dist.ReduceOp, op)) == \
            tdist.supports_complex(getattr(tdist.ReduceOp, op))
    assert dist.is_backend_available("foo") == tdist.is_backend_available("foo")
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    assert dist.default_pg_timeout == tdist.default_pg_timeout
    assert list(dist.BuiltinCommHookType.__members__) == \
        list(tdist.BuiltinCommHookType.__members__)


@needs_torch
def test_debug_level_from_env_matches_torch(monkeypatch):
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level().name == "DETAIL"
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "bogus")
    with pytest.raises(ValueError) as ours:
        dist.set_debug_level_from_env()
    with pytest.raises(ValueError) as theirs:
        tdist.set_debug_level_from_env()
    assert str(ours.value) == str(theirs.value)
    dist.set_debug_level(dist.DebugLevel.OFF)


@needs_torch
def test_comm_hook_types_and_state_errors_match_torch():
    from torch.distributed.algorithms.ddp_comm_hooks import DDPCommHookType as T

    from ember.distributed.algorithms.ddp_comm_hooks import DDPCommHookType as E

    assert [t.name for t in E] == [t.name for t in T]
    with pytest.raises(ValueError, match="start_powerSGD_iter"):
        powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=1)
    with pytest.raises(ValueError, match="at least one joinable"):
        dist.algorithms.Join([])


def test_zero_dim_tensor_pickles_as_zero_dim():
    # gather_object/spawn pickle tensors; a 0-d Adam "step" must stay 0-d
    assert pickle.loads(pickle.dumps(ember.tensor(3.0))).shape == ()


def test_nccl_tables_without_gpu():
    from ember.distributed import _nccl

    assert _nccl.type_name(np.float32) == "NCCL_FLOAT32"
    assert _nccl.type_name(np.dtype(bool)) == "NCCL_UINT8"
    assert _nccl.op_name(dist.ReduceOp.AVG) == "NCCL_AVG"
    with pytest.raises(ValueError, match="BAND"):
        _nccl.op_name(dist.ReduceOp.BAND)
    with pytest.raises(TypeError):
        _nccl.type_name(np.complex64)
    assert dist.is_nccl_available() == _nccl.available()


@needs_torch
def test_parallel_comm_refuses_cpu_as_torch():
    from torch.nn.parallel import comm as tcomm

    from ember.nn.parallel import comm

    with pytest.raises(ValueError) as a:
        comm.broadcast(ember.ones(2), ["cpu"])
    with pytest.raises(ValueError) as b:
        tcomm.broadcast(torch.ones(2), ["cpu"])
    assert str(a.value) == str(b.value)
    with pytest.raises(AssertionError, match="on CPU"):
        comm.reduce_add([ember.ones(2)])


# -- world of size 1 ------------------------------------------------------------------------------

def _net():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2))


def _grads(ddp, x):
    ddp.module.zero_grad()
    ddp(x).sum().backward()
    return [p.grad.numpy().copy() for p in ddp.module.parameters()]


@needs_mpi
def test_comm_hooks_world1_equal_plain(world1):
    x = ember.arange(12.0).reshape(4, 3) / 10
    want = _grads(ember.nn.parallel.DistributedDataParallel(_net()), x)
    for hook in (default_hooks.allreduce_hook, default_hooks.fp16_compress_hook,
                 default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook)):
        ddp = ember.nn.parallel.DistributedDataParallel(_net())
        ddp.register_comm_hook(None, hook)
        for _ in range(2):
            got = _grads(ddp, x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2)


@needs_mpi
def test_register_comm_hook_errors(world1):
    ddp = ember.nn.parallel.DistributedDataParallel(_net())
    with pytest.raises(TypeError, match="callable"):
        ddp.register_comm_hook(None, 3)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)


@needs_mpi
def test_powersgd_world1_exact_for_rank_one_gradients(world1):
    # with a batch of one, a Linear layer's weight gradient has rank 1: PowerSGD is exact
    x = ember.arange(3.0).reshape(1, 3) + 1
    want = _grads(ember.nn.parallel.DistributedDataParallel(_net()), x)
    for hook in (powerSGD_hook.powerSGD_hook, powerSGD_hook.batched_powerSGD_hook):
        ddp = ember.nn.parallel.DistributedDataParallel(_net())
        state = powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=2,
                                            min_compression_rate=0.1)
        ddp.register_comm_hook(state, hook)
        for _ in range(3):
            got = _grads(ddp, x)
        assert state.iter == 3
        if hook is powerSGD_hook.powerSGD_hook:
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        else:  # one square matrix over the whole bucket: error feedback keeps the sum
            assert all(np.isfinite(g).all() for g in got)


@needs_mpi
def test_gradient_as_bucket_view_grads_share_the_bucket(world1):
    ddp = ember.nn.parallel.DistributedDataParallel(_net(), gradient_as_bucket_view=True)
    _grads(ddp, ember.ones(2, 3))
    _grads(ddp, ember.ones(2, 3))
    bucket = ddp._buckets[0].tensor
    for p in ddp.module.parameters():
        assert np.shares_memory(p.grad._data, bucket._data)


@needs_mpi
def test_ddp_deprecated_spellings_warn(world1):
    with pytest.warns(FutureWarning, match="broadcast_buffers"):
        ember.nn.parallel.DistributedDataParallel(_net(), broadcast_buffers=False)
    with pytest.warns(FutureWarning, match="DistributedDataParallelCPU"):
        ember.nn.parallel.DistributedDataParallelCPU(_net())


@needs_mpi
def test_zero_world1_equals_plain_adam(world1):
    from ember.distributed.optim import ZeroRedundancyOptimizer

    a, b = _net(), _net()
    zero = ZeroRedundancyOptimizer(a.parameters(), ember.optim.Adam, lr=0.1)
    adam = ember.optim.Adam(b.parameters(), lr=0.1)
    for _ in range(3):
        for net, opt in ((a, zero), (b, adam)):
            opt.zero_grad()
            net(ember.ones(2, 3)).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="consolidate_state_dict"):
        zero.state_dict()
    zero.consolidate_state_dict()
    sd = zero.state_dict()
    assert sd["param_groups"][0]["params"] == [0, 1, 2, 3] and sorted(sd["state"]) == [0, 1, 2, 3]


@needs_mpi
def test_join_world1_and_device_mesh(world1):
    ddp = ember.nn.parallel.DistributedDataParallel(_net())
    with ddp.join():
        ddp(ember.ones(2, 3)).sum().backward()
    mesh = dist.init_device_mesh("cpu", (1,), mesh_dim_names=("dp",))
    assert mesh.get_group("dp").size() == 1 and mesh.get_local_rank() == 0
    with pytest.raises(KeyError):
        mesh.get_group("tp")
    assert dist.get_pg_count() == 1 and dist.get_backend_config() == "cpu:gloo,cuda:gloo"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ts = [ember.ones(2), ember.ones(1)]
        dist.all_reduce_coalesced(ts)
    assert [t.tolist() for t in ts] == [[1.0, 1.0], [1.0]]


def test_nccl_comm_drives_cupy_nccl_api(monkeypatch):
    """The NCCL path against a stand-in for cupy.cuda.nccl (no GPU here): the calls it
    makes, their arguments, and the Work handle's event logic."""
    import sys
    import types

    from ember.distributed import _nccl

    calls = []

    class Communicator:
        def __init__(self, n, uid, rank):
            calls.append(("init", n, uid, rank))

        def __getattr__(self, name):
            return lambda *args: calls.append((name,) + args)

    class Event:
        def __init__(self, **kw):
            self.done = False

        def record(self, stream):
            calls.append(("record", stream.ptr))

        def synchronize(self):
            self.done = True

    nccl = types.SimpleNamespace(get_unique_id=lambda: (7, 7), NcclCommunicator=Communicator,
                                 available=True, **{v: v for v in list(_nccl._TYPES.values())
                                                    + list(_nccl._OPS.values())})
    stream = types.SimpleNamespace(ptr=99)
    cuda = types.SimpleNamespace(nccl=nccl, Event=Event, get_current_stream=lambda: stream)
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)

    class Buffer:  # what a CuPy array offers the engine
        def __init__(self, n):
            self.size, self.dtype = n, np.dtype(np.float32)
            self.flags = types.SimpleNamespace(c_contiguous=True)
            self.data = types.SimpleNamespace(ptr=1000 + n)

    class FakeTensor:
        def __init__(self, n):
            self._data = Buffer(n)
            self.bumped = 0

        def _bump(self):
            self.bumped += 1

    mpi = types.SimpleNamespace(bcast=lambda obj, root: obj)
    comm = _nccl.NcclComm(None, mpi, 0, 1, 5.0)
    t = FakeTensor(4)
    work = comm.all_reduce(t, dist.ReduceOp.AVG)
    assert calls[0] == ("init", 1, (7, 7), 0)
    assert calls[1] == ("allReduce", 1004, 1004, 4, "NCCL_FLOAT32", "NCCL_AVG", 99)
    assert calls[2] == ("record", 99) and not work.is_completed()
    assert work.wait() and work.is_completed() and t.bumped == 1
    out = FakeTensor(8)
    comm.all_gather(out, t).wait()
    assert calls[-2] == ("allGather", 1004, 1008, 4, "NCCL_FLOAT32", 99)
    comm.broadcast(t, 0)
    assert calls[-2] == ("broadcast", 1004, 1004, 4, "NCCL_FLOAT32", 0, 99)
    with pytest.raises(ValueError, match="BXOR"):
        comm.all_reduce(t, dist.ReduceOp.BXOR)


# -- model averaging without a group ------------------------------------------------------------

@needs_torch
def test_model_averager_without_group_raises_as_torch():
    from torch.distributed.algorithms.model_averaging import averagers as theirs

    from ember.distributed.algorithms.model_averaging import averagers as ours

    with pytest.raises(TypeError):
        theirs.PeriodicModelAverager(2)
    with pytest.raises(TypeError, match="init_process_group"):
        ours.PeriodicModelAverager(2)


@needs_torch
@needs_mpi
def test_new_subgroups_default_size_without_cuda_raises_as_torch(world1):
    with pytest.raises(ValueError) as theirs:
        tdist.new_subgroups()
    with pytest.raises(ValueError) as ours:
        dist.new_subgroups()
    assert str(ours.value).split(".")[0] == str(theirs.value).split(".")[0]


@needs_mpi
def test_zero_overlap_refuses_state_and_groups_before_ddp_buckets(world1):
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.distributed.optim.functional_adam import _FunctionalAdam

    net = ember.nn.Linear(2, 2)
    zero = ZeroRedundancyOptimizer(net.parameters(), ember.optim.Adam, overlap_with_ddp=True,
                                   lr=0.1)
    with pytest.raises(RuntimeError, match="fully initialized"):
        zero.consolidate_state_dict()
    with pytest.raises(RuntimeError, match="single parameter group"):
        zero.add_param_group({"params": [ember.nn.Parameter(ember.ones(1))]})
    with pytest.raises(ValueError, match="functional optimizer"):
        ZeroRedundancyOptimizer(net.parameters(), _FunctionalAdam, lr=0.1)


@needs_mpi
def test_noop_hook_keeps_local_gradients(world1):
    from ember.distributed.algorithms.ddp_comm_hooks import (DDPCommHookType, debugging_hooks,
                                                             register_ddp_comm_hook)

    bucket = dist.GradBucket(0, ember.tensor([3.0, 4.0]), [], [], True)
    assert debugging_hooks.noop_hook(None, bucket).wait() is bucket.buffer()
    ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 1))
    register_ddp_comm_hook(DDPCommHookType.NOOP, ddp)
    assert ddp._comm_hook is debugging_hooks.noop_hook
    ddp(ember.ones(1, 2)).sum().backward()
    np.testing.assert_allclose(ddp.module.weight.grad.numpy(), [[1.0, 1.0]])


def test_without_mpi4py_one_process_runs_and_more_are_refused(monkeypatch):
    # NOTE [ A world of one ]: without mpi4py "gloo" runs a group of one process; a larger
    # group, or the "mpi" name, is refused before any state changes
    from ember.distributed import _engine

    monkeypatch.setattr(_engine, "available", lambda: False)
    assert dist.is_available() and dist.is_gloo_available() and not dist.is_mpi_available()
    with pytest.raises(RuntimeError, match="doesn't have MPI built in.*ember\\[distributed\\]"):
        dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                                world_size=1)
    assert not dist.is_initialized()
    for backend in ("gloo", "cpu:gloo"):
        with pytest.raises(RuntimeError, match="group of 2 processes.*ember\\[distributed\\]"):
            dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}",
                                    rank=0, world_size=2)
        assert not dist.is_initialized()
