"""ember.cuda on a real GPU: the allocator's account, streams and events, graphs, pinned and
asynchronous copies, per-device RNG, and the device API, compared with torch.cuda where the
installed torch sees the GPU. Skipped without CuPy and a GPU (CI); the allocator's logic is
also checked without a GPU in tests/cuda/test_allocator.py.
"""

import gc
import time

import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(),
                                reason="needs CuPy and an NVIDIA GPU")

try:
    import torch

    HAS_TORCH_CUDA = torch.cuda.is_available()
except ImportError:
    HAS_TORCH_CUDA = False
needs_torch_cuda = pytest.mark.skipif(not HAS_TORCH_CUDA, reason="needs torch with CUDA")

MiB = 1 << 20


def cp():
    return ember.cuda._runtime.cupy()


def _spin(cycles=300_000_000):
    """Keep the current stream busy for about 0.15 s (clock64 cycles at ~2 GHz)."""
    kernel = cp().RawKernel(r"""
        extern "C" __global__ void ember_spin(long long n) {
            long long t0 = clock64();
            while (clock64() - t0 < n) {}
        }""", "ember_spin")
    kernel((1,), (1,), (cp().int64(cycles),))


@pytest.fixture(autouse=True)
def _settled():
    ember.cuda.init()
    ember.cuda.synchronize()
    gc.collect()
    yield
    ember.cuda.synchronize()


def _stat(key):
    return ember.cuda.memory_stats()[key]


# -- the allocator's account --------------------------------------------------------------------


def test_memory_allocated_counts_new_tensor_exactly():
    base = ember.cuda.memory_allocated()
    x = ember.empty(MiB, device="cuda")
    assert ember.cuda.memory_allocated() - base == 4 * MiB
    del x
    assert ember.cuda.memory_allocated() == base


def test_max_memory_allocated_keeps_peak_between_queries():
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    a = ember.empty(MiB, device="cuda")
    b = ember.empty(MiB, device="cuda")
    del a, b
    c = ember.empty(MiB, device="cuda")
    assert ember.cuda.max_memory_allocated() - base == 8 * MiB
    del c


@needs_torch_cuda
def test_max_memory_allocated_delta_matches_torch():
    deltas = []
    for lib in (ember, torch):
        lib.cuda.synchronize()
        lib.cuda.reset_peak_memory_stats()
        base = lib.cuda.memory_allocated()
        a = lib.empty(MiB, device="cuda")
        b = lib.empty(3 * MiB, device="cuda")
        del a
        c = lib.empty(100, device="cuda")
        deltas.append((lib.cuda.max_memory_allocated() - base,
                       lib.cuda.memory_allocated() - base))
        del b, c
    assert deltas[0] == deltas[1]


@needs_torch_cuda
def test_memory_stats_pool_split_matches_torch():
    got = []
    for lib in (ember, torch):
        keys = ("allocated_bytes.small_pool.current", "allocated_bytes.large_pool.current",
                "allocation.all.current")
        before = [lib.cuda.memory_stats()[k] for k in keys]
        small = lib.empty(256, device="cuda")  # 1 KiB: small pool
        large = lib.empty(MiB, device="cuda")  # 4 MiB: large pool
        after = [lib.cuda.memory_stats()[k] for k in keys]
        got.append([a - b for a, b in zip(after, before)])
        del small, large
    assert got[0] == got[1]


@needs_torch_cuda
def test_memory_stats_keys_are_torch_keys():
    x = torch.empty(10, device="cuda")
    theirs = set(torch.cuda.memory_stats())
    ours = set(ember.cuda.memory_stats())
    assert not ours - theirs, f"keys torch does not have: {sorted(ours - theirs)}"
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "active_bytes.all.current", "num_ooms",
                "num_alloc_retries", "requested_bytes.all.current"):
        assert key in ours
    del x


def test_reset_peak_memory_stats_sets_peak_to_current():
    x = ember.empty(4 * MiB, device="cuda")
    del x
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == ember.cuda.memory_allocated()
    assert ember.cuda.max_memory_reserved() == ember.cuda.memory_reserved()


def test_reset_accumulated_memory_stats_zeroes_totals():
    x = ember.empty(MiB, device="cuda")
    ember.cuda.reset_accumulated_memory_stats()
    assert _stat("allocated_bytes.all.allocated") == 0
    del x
    assert _stat("allocated_bytes.all.freed") == 4 * MiB


def test_memory_reserved_is_at_least_allocated():
    x = ember.empty(MiB, device="cuda")
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated() >= 4 * MiB
    del x


def test_empty_cache_returns_unused_blocks_to_driver():
    x = ember.empty(16 * MiB, device="cuda")  # 64 MiB
    del x
    before = ember.cuda.memory_reserved()
    ember.cuda.empty_cache()
    assert before - ember.cuda.memory_reserved() >= 64 * MiB


def test_set_per_process_memory_fraction_raises_out_of_memory():
    _, total = ember.cuda.mem_get_info()
    frac = (ember.cuda.memory_reserved() + 64 * MiB) / total
    ooms = _stat("num_ooms")
    ember.cuda.set_per_process_memory_fraction(frac)
    try:
        with pytest.raises(ember.cuda.OutOfMemoryError) as info:
            ember.empty(256 * MiB, device="cuda")  # 1 GiB
        ok = ember.empty(MiB, device="cuda")  # what fits still works
        del ok
    finally:
        ember.cuda.set_per_process_memory_fraction(1.0)
    err = info.value
    assert isinstance(err, RuntimeError) and isinstance(err, MemoryError)
    assert isinstance(err, ember.OutOfMemoryError)
    assert "CUDA out of memory. Tried to allocate 1.00 GiB" in str(err)
    assert _stat("num_ooms") == ooms + 1


def test_out_of_memory_inside_an_op_raises_ember_type():
    x = ember.ones(16 * MiB, device="cuda")  # 64 MiB
    _, total = ember.cuda.mem_get_info()
    ember.cuda.set_per_process_memory_fraction((ember.cuda.memory_reserved() + 128 * MiB)
                                               / total)
    try:
        with pytest.raises(ember.cuda.OutOfMemoryError, match="CUDA out of memory"):
            x.repeat(64)  # 4 GiB
    finally:
        ember.cuda.set_per_process_memory_fraction(1.0)
    del x


def test_memory_summary_shows_counters():
    text = ember.cuda.memory_summary()
    assert "Allocated memory" in text and "GPU reserved memory" in text
    assert "CUDA OOMs" in text


@needs_torch_cuda
def test_mem_get_info_total_matches_torch():
    assert ember.cuda.mem_get_info()[1] == torch.cuda.mem_get_info()[1]


def test_caching_allocator_alloc_and_delete_are_counted():
    base = ember.cuda.memory_allocated()
    ptr = ember.cuda.caching_allocator_alloc(1000)
    assert isinstance(ptr, int) and ember.cuda.memory_allocated() - base == 1024
    ember.cuda.caching_allocator_delete(ptr)
    assert ember.cuda.memory_allocated() == base


def test_memory_snapshot_reports_device_zero():
    snap = ember.cuda.memory_snapshot()
    assert snap[0]["device"] == 0 and snap[0]["total_size"] == ember.cuda.memory_reserved()


# -- streams and events ---------------------------------------------------------------------------


def test_stream_context_sets_current_stream():
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        assert cp().cuda.get_current_stream().ptr == s.cuda_stream
    assert ember.cuda.current_stream() == ember.cuda.default_stream()


def test_stream_ops_queue_behind_work_on_that_stream():
    s = ember.cuda.Stream()
    x = ember.ones(1000, device="cuda")
    with ember.cuda.stream(s):
        del_me = x + x  # the pool caches a block for s: no cudaMalloc (which may sync) below
        del del_me
    ember.cuda.synchronize()
    with ember.cuda.stream(s):
        _spin()
        y = x + x
    assert not s.query()
    s.synchronize()
    assert s.query()
    assert y.sum().item() == 2000.0


def test_event_elapsed_time_measures_spin():
    start = ember.cuda.Event(enable_timing=True)
    end = ember.cuda.Event(enable_timing=True)
    start.record()
    _spin()
    end.record()
    end.synchronize()
    assert end.query()
    assert 20.0 < start.elapsed_time(end) < 5000.0


def test_event_query_false_until_work_done():
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        _spin()
    ev = s.record_event()
    assert not ev.query()
    ev.synchronize()
    assert ev.query()


def test_wait_stream_orders_work_across_streams():
    s1, s2 = ember.cuda.Stream(), ember.cuda.Stream()
    x = ember.ones(1000, device="cuda")
    ember.cuda.synchronize()
    with ember.cuda.stream(s1):
        _spin()
        y = x * 3
    s2.wait_stream(s1)
    with ember.cuda.stream(s2):
        z = y + 1
    s2.synchronize()
    assert z.sum().item() == 4000.0


def test_event_wait_orders_work():
    s1, s2 = ember.cuda.Stream(), ember.cuda.Stream()
    x = ember.ones(10, device="cuda")
    ember.cuda.synchronize()
    ev = ember.cuda.Event()
    with ember.cuda.stream(s1):
        _spin()
        y = x * 5
        ev.record()
    ev.wait(s2)
    with ember.cuda.stream(s2):
        z = y - 1
    s2.synchronize()
    assert z.tolist() == [4.0] * 10


@needs_torch_cuda
def test_stream_priority_matches_torch():
    assert ember.cuda.Stream(priority=-1).priority == torch.cuda.Stream(priority=-1).priority
    assert ember.cuda.Stream().priority == torch.cuda.Stream().priority == 0


def test_external_stream_wraps_pointer():
    s = ember.cuda.Stream()
    assert ember.cuda.ExternalStream(s.cuda_stream) == s
    assert ember.cuda.get_stream_from_external(s.cuda_stream).cuda_stream == s.cuda_stream


def test_record_stream_holds_block_until_stream_done():
    s = ember.cuda.Stream()
    x = ember.empty(MiB, device="cuda")
    with ember.cuda.stream(s):
        _spin()
    x.record_stream(s)
    allocated, active = ember.cuda.memory_allocated(), _stat("active_bytes.all.current")
    del x
    assert ember.cuda.memory_allocated() == allocated - 4 * MiB
    assert _stat("active_bytes.all.current") == active  # held for s
    s.synchronize()
    assert _stat("active_bytes.all.current") == active - 4 * MiB


def test_record_stream_block_not_reused_while_stream_busy():
    s = ember.cuda.Stream()
    x = ember.empty(MiB, device="cuda")
    ptr = x.data_ptr()
    with ember.cuda.stream(s):
        _spin()
    x.record_stream(s)
    del x
    y = ember.empty(MiB, device="cuda")
    assert y.data_ptr() != ptr
    s.synchronize()


def test_without_record_stream_block_is_reused():
    x = ember.empty(MiB, device="cuda")
    ptr = x.data_ptr()
    del x
    assert ember.empty(MiB, device="cuda").data_ptr() == ptr


# -- graphs -------------------------------------------------------------------------------------


def test_cuda_graph_replay_reads_new_input_values():
    x = ember.ones(1024, device="cuda")
    y = x * x + x  # warm-up: kernels are loaded before the capture
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        y = x * x + x
    ptr = x.data_ptr()
    x.fill_(3.0)
    assert x.data_ptr() == ptr
    g.replay()
    ember.cuda.synchronize()
    assert y.tolist() == [12.0] * 1024


def test_is_current_stream_capturing_only_inside_capture():
    x = ember.ones(8, device="cuda")
    _ = x + x
    seen = []
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        seen.append(ember.cuda.is_current_stream_capturing())
        _ = x + x
    assert seen == [True] and not ember.cuda.is_current_stream_capturing()


def test_graph_keeps_memory_freed_during_capture():
    x = ember.ones(MiB, device="cuda")
    _ = (x * x) + x
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        t = x * x
        t_ptr = t.data_ptr()
        y = t + x
        del t
    z = ember.empty(MiB, device="cuda", dtype=ember.float32)
    assert z.data_ptr() != t_ptr  # the graph's replay still writes there
    g.replay()
    ember.cuda.synchronize()
    assert y.sum().item() == 2.0 * MiB


def test_capture_on_default_stream_raises():
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()


def _poly(t):
    return t * t * 0.5 + t  # elementwise: CuPy cannot capture cuBLAS calls


def test_make_graphed_callables_forward_matches_eager():
    sample = ember.randn(64, device="cuda")
    x = ember.randn(64, device="cuda")
    graphed = ember.cuda.make_graphed_callables(_poly, (sample,))
    assert ember.allclose(graphed(x), _poly(x))


def test_make_graphed_callables_backward_matches_eager():
    sample = ember.randn(64, device="cuda", requires_grad=True)
    x = ember.randn(64, device="cuda", requires_grad=True)
    graphed = ember.cuda.make_graphed_callables(_poly, (sample,))
    graphed(x).sum().backward()
    assert ember.allclose(x.grad, x.detach() + 1)


def test_graph_capture_of_matmul_raises_cupy_limit():
    a = ember.randn(8, 8, device="cuda")
    _ = a @ a
    g = ember.cuda.CUDAGraph()
    with pytest.raises(NotImplementedError, match="cuBLAS"):
        with ember.cuda.graph(g):
            _ = a @ a


# -- pinned memory and copies -------------------------------------------------------------------


@needs_torch_cuda
def test_pin_memory_is_pinned_like_torch():
    x = ember.randn(16)
    p = x.pin_memory()
    assert (x.is_pinned(), p.is_pinned()) == (torch.randn(16).is_pinned(),
                                               torch.randn(16).pin_memory().is_pinned())
    assert p.is_pinned() and ember.equal(p, x)
    assert p.pin_memory() is p


def test_non_blocking_copy_from_pinned_returns_before_copy():
    x = ember.randn(MiB).pin_memory()
    _spin()
    t0 = time.perf_counter()
    y = x.to("cuda", non_blocking=True)
    elapsed = time.perf_counter() - t0
    ember.cuda.synchronize()
    assert elapsed < 0.05, f"the copy waited {elapsed:.3f} s for the queued spin"
    assert ember.equal(y.cpu(), x)


def test_non_blocking_copy_to_cpu_lands_in_pinned_memory():
    x = ember.arange(1000.0, device="cuda")
    y = x.to("cpu", non_blocking=True)
    ember.cuda.synchronize()
    assert y.is_pinned() and y.tolist() == x.tolist()


def test_cuda_method_non_blocking_copies():
    x = ember.randn(100).pin_memory()
    y = x.cuda(non_blocking=True)
    ember.cuda.synchronize()
    assert y.device == ember.device("cuda", 0) and ember.equal(y.cpu(), x)


def test_to_cuda_with_index_places_on_device():
    assert ember.ones(3).to("cuda:0").device == ember.device("cuda:0")


@pytest.mark.skipif(ember.cuda.device_count() < 2, reason="needs two GPUs")
def test_to_other_cuda_device_copies_across():
    x = ember.arange(10.0, device="cuda:0")
    y = x.to("cuda:1")
    assert y.device == ember.device("cuda:1") and y.tolist() == x.tolist()
    assert y._data.device.id == 1


# -- per-device random generators --------------------------------------------------------------


def test_cuda_manual_seed_reproduces_draws():
    ember.cuda.manual_seed(0)
    a = ember.randn(8, device="cuda")
    ember.cuda.manual_seed(0)
    b = ember.randn(8, device="cuda")
    assert ember.equal(a, b)


def test_cuda_draws_leave_cpu_generator_alone():
    ember.manual_seed(1)
    a = ember.rand(3)
    ember.manual_seed(1)
    _ = ember.randn(5, device="cuda")
    assert ember.equal(ember.rand(3), a)


def test_cuda_rng_state_round_trip():
    state = ember.cuda.get_rng_state()
    a = ember.rand(6, device="cuda")
    ember.cuda.set_rng_state(state)
    assert ember.equal(ember.rand(6, device="cuda"), a)


def test_cuda_generator_object_reproduces_draws():
    g = ember.Generator(device="cuda").manual_seed(5)
    a = ember.randn(4, device="cuda", generator=g)
    g.manual_seed(5)
    assert ember.equal(ember.randn(4, device="cuda", generator=g), a)
    assert g.device.type == "cuda"


def test_cuda_inplace_random_uses_device_generator():
    x = ember.empty(5, device="cuda")
    ember.cuda.manual_seed(3)
    a = x.uniform_().clone()
    ember.cuda.manual_seed(3)
    assert ember.equal(x.uniform_(), a)


# -- the device API -----------------------------------------------------------------------------


@needs_torch_cuda
def test_device_queries_match_torch():
    assert ember.cuda.device_count() == torch.cuda.device_count()
    assert ember.cuda.get_device_name() == torch.cuda.get_device_name()
    assert ember.cuda.get_device_capability() == torch.cuda.get_device_capability()
    assert (ember.cuda.get_device_properties(0).total_memory
            == torch.cuda.get_device_properties(0).total_memory)


@needs_torch_cuda
def test_can_device_access_peer_same_device_matches_torch():
    assert ember.cuda.can_device_access_peer(0, 0) == torch.cuda.can_device_access_peer(0, 0)


def test_library_handles_are_addresses():
    assert ember.cuda.current_blas_handle() != 0
    assert ember.cuda.current_solver_handle() != 0


def test_small_device_api_answers():
    assert ember.cuda.get_allocator_backend() == "cupy"
    assert ember.cuda.get_sync_debug_mode() == 0
    ember.cuda.check_error(0)
    with pytest.raises(ember.cuda.CudaError):
        ember.cuda.check_error(2)
    assert ember.cuda.cudart().runtimeGetVersion() > 0
    assert ember.cuda.get_gencode_flags().startswith("-gencode")
    assert len(ember.cuda.FloatStorage(3)) == 3


def test_profiler_start_stop_run():
    with ember.cuda.profiler.profile():
        _ = ember.ones(2, device="cuda") + 1


def test_mem_pool_serves_tensors_made_inside_use_mem_pool():
    pool = ember.cuda.MemPool()
    base = ember.cuda.memory_allocated()
    with ember.cuda.use_mem_pool(pool):
        x = ember.ones(MiB, device="cuda")  # 4 MiB
    y = ember.ones(1024, device="cuda")  # the default pool again
    (seg,) = pool.snapshot()
    assert seg["allocated_size"] >= 4 * MiB
    assert ember.cuda.memory_allocated() - base >= 4 * MiB + 4096
    del x
    gc.collect()
    assert pool.snapshot()[0]["allocated_size"] == 0
    assert float(y.sum()) == 1024.0
