"""ember.cuda on a machine without CuPy or a GPU answers as a CPU-only PyTorch does."""

import warnings

import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = pytest.mark.skipif(ember.cuda._is_compiled(),
                                reason="these check the no-CUDA answers (CuPy is installed)")
needs_torch = pytest.mark.skipif(not HAS_TORCH or torch.cuda.is_available(),
                                 reason="needs a CPU-only PyTorch")

QUIET = ["is_available()", "device_count()", "manual_seed(0)", "manual_seed_all(0)", "seed()",
         "seed_all()", "empty_cache()", "memory_allocated()", "max_memory_allocated()",
         "memory_reserved()", "max_memory_reserved()", "memory_stats()", "is_initialized()",
         "get_rng_state_all()", "set_rng_state_all([])", "is_bf16_supported()",
         "get_arch_list()", "set_device(-1)", "host_memory_stats()", "list_gpu_processes()",
         "is_tf32_supported()", "get_gencode_flags()", "host_memory_stats_as_nested_dict()",
         "caching_allocator_enable(True)", "cudaStatus.SUCCESS", "cudaStatus.ERROR_NOT_READY",
         "nccl.is_available([])"]
RAISING = ["initial_seed()", "synchronize()", "mem_get_info()", "get_device_name()",
           "get_device_name(0)", "get_device_properties(0)", "get_device_capability()",
           "current_device()", "init()", "get_rng_state()", "current_stream()",
           "default_stream()", "reset_peak_memory_stats()", "memory_summary()",
           "set_device(0)", "set_device('cpu')", "Stream()", "Event()", "ipc_collect()",
           "nvtx.range_push('a')", "nvtx.range_pop()", "nvtx.mark('a')", "utilization()",
           "caching_allocator_alloc(10)", "caching_allocator_delete(0)",
           "can_device_access_peer(0, 1)", "current_blas_handle()", "current_solver_handle()",
           "get_allocator_backend()", "get_sync_debug_mode()", "set_sync_debug_mode(0)",
           "reset_accumulated_host_memory_stats()", "reset_peak_host_memory_stats()",
           "memory_snapshot()", "is_current_stream_capturing()", "graph_pool_handle()",
           "CUDAGraph()", "cudart()", "check_error(0)", "get_stream_from_external(0)",
           "FloatStorage(2)", "graph(None)", "make_graphed_callables(None, ())",
           "nccl.version()", "profiler.start()", "profiler.stop()", "device_memory_used()",
           "reset_accumulated_memory_stats()"]


def _run(lib, call):
    return eval(f"lib.cuda.{call}", {"lib": lib})


@needs_torch
@pytest.mark.parametrize("call", QUIET)
def test_cuda_quiet_call_matches_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _run(ember, call) == _run(torch, call)


@needs_torch
@pytest.mark.parametrize("call", RAISING)
def test_cuda_raising_call_matches_torch_type(call):
    with pytest.raises(Exception) as theirs, warnings.catch_warnings():  # noqa: PT011
        warnings.simplefilter("ignore")
        _run(torch, call)
    with pytest.raises(Exception) as ours:  # noqa: PT011
        _run(ember, call)
    assert type(ours.value) is type(theirs.value) or issubclass(type(ours.value),
                                                                type(theirs.value))


def test_cuda_get_device_name_raises_not_compiled():
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.cuda.get_device_name()


def test_cuda_device_context_negative_index_does_nothing():
    with ember.cuda.device(-1):
        pass
    with ember.cuda.device(None):
        pass


def test_cuda_device_context_index_raises_runtime_error():
    with pytest.raises(RuntimeError):
        with ember.cuda.device(0):
            pass


def test_cuda_stream_none_is_a_no_op_block():
    with ember.cuda.stream(None):
        pass
    ember.cuda.set_stream(None)


def test_cuda_nvtx_range_raises_only_on_enter():
    r = ember.cuda.nvtx.range("x")
    with pytest.raises(RuntimeError, match="NVTX"):
        with r:
            pass


def test_cuda_memory_cached_warns_future_warning():
    with pytest.warns(FutureWarning):
        assert ember.cuda.memory_cached() == 0


def test_cuda_manual_seed_all_keeps_cpu_stream():
    ember.manual_seed(3)
    a = ember.rand(3)
    ember.manual_seed(3)
    ember.cuda.manual_seed_all(99)
    assert ember.equal(a, ember.rand(3))


def test_cuda_default_generators_empty():
    assert ember.cuda.default_generators == ()


def test_cuda_out_of_memory_error_is_runtime_error():
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)


def test_cuda_utilization_without_pynvml_raises_module_not_found():
    try:
        import pynvml  # noqa: F401
    except ImportError:
        with pytest.raises(ModuleNotFoundError):
            ember.cuda.utilization()


def test_cuda_caching_allocator_disabled_is_a_block():
    with ember.cuda.caching_allocator_disabled():
        pass


def test_cuda_cpu_tensor_is_not_pinned():
    assert ember.ones(3).is_pinned() is False


def test_cuda_to_cpu_non_blocking_on_cpu_tensor_is_itself():
    x = ember.ones(2)
    assert x.to("cpu", non_blocking=True) is x


def test_cuda_storage_isinstance_is_false_for_cpu_storage():
    assert not isinstance(ember.ones(2).untyped_storage(), ember.cuda.FloatStorage)
    assert not isinstance(ember.FloatStorage(2), ember.cuda.FloatStorage)


def test_cuda_device_alias_is_a_union():
    assert ember.cuda.Device == (ember.device | str | int | None)


@needs_torch
def test_cuda_classproperty_matches_torch():
    def make(lib):
        class Box:
            @lib.cuda.classproperty
            def kind(cls):
                return cls.__name__

        return Box.kind, Box().kind

    assert make(ember) == make(torch)
