"""ember's allocator account (ember/cuda/_allocator.py) on a stand-in for CuPy's pool.

These run everywhere: the stand-in has the few CuPy names the allocator uses, so the counting
(exact peaks, frees from any thread, record_stream holding blocks, OOM conversion) is checked
without a GPU. tests/cuda/test_gpu.py checks the same against torch.cuda on a real GPU.
"""

import gc
import threading
import types

import pytest

import ember
from ember.cuda import _allocator


class FakeOOM(MemoryError):
    pass


class FakeCudaError(RuntimeError):
    pass


class FakePooled:
    device_id = 0

    def __init__(self, pool, ptr, size):
        self.pool, self.ptr, self.mem = pool, ptr, types.SimpleNamespace(size=size)

    def __del__(self):
        self.pool.in_use -= self.mem.size


class FakePool:
    """CuPy's MemoryPool in miniature: new segments come from ``segment`` (the allocator the
    pool was made with); a failing segment empties the cache and tries once more."""

    def __init__(self, segment, driver=None):
        self.segment, self.driver = segment, driver if driver is not None else [0]
        self.in_use = 0
        self.total = 0
        self.limit = 0
        self.next_ptr = 4096
        self.device_free = None  # bytes the "driver" has left, None: unlimited

    def malloc(self, size):
        n = (size + 511) // 512 * 512
        if n and self.in_use + n > self.total:
            for attempt in range(2):
                grow = self.in_use + n - self.total
                if self.limit and self.total + grow > self.limit:
                    raise FakeOOM(f"Out of memory allocating {n:,} bytes")
                self.total += grow
                try:
                    self.segment(grow)
                    break
                except FakeCudaError:
                    self.total -= grow
                    if attempt:
                        raise FakeOOM(f"Out of memory allocating {n:,} bytes") from None
                    self.free_all_blocks()
        self.in_use += n
        self.next_ptr += n
        return FakePooled(self, self.next_ptr, n)

    def total_bytes(self):
        return self.total

    def used_bytes(self):
        return self.in_use

    def free_all_blocks(self):
        self.driver[0] -= self.total - self.in_use
        self.total = self.in_use

    def get_limit(self):
        return self.limit


class FakeEvent:
    def __init__(self, disable_timing=True):
        self.done = False

    def record(self, stream):
        stream.events.append(self)

    def synchronize(self):
        self.done = True


class FakeDevice:
    def __init__(self, index):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _fake_cupy(failures=0):
    """The CuPy names the allocator uses; the first ``failures`` segments fail (cudaMalloc
    out of memory)."""
    taken = [0]
    left = [failures]

    def raw_malloc(size):
        if left[0]:
            left[0] -= 1
            raise FakeCudaError("cudaErrorMemoryAllocation: out of memory")
        taken[0] += size
        return types.SimpleNamespace(device_id=0, size=size)

    memory = types.SimpleNamespace(
        UnownedMemory=lambda ptr, size, owner, device: types.SimpleNamespace(
            ptr=ptr, size=size, _owner=owner),
        MemoryPointer=lambda mem, offset: types.SimpleNamespace(mem=mem, ptr=mem.ptr),
        OutOfMemoryError=FakeOOM, _malloc=raw_malloc)
    runtime = types.SimpleNamespace(getDevice=lambda: 0, memGetInfo=lambda: (100, 1000),
                                    CUDARuntimeError=FakeCudaError)
    cuda = types.SimpleNamespace(memory=memory, runtime=runtime, Event=FakeEvent,
                                 MemoryPool=lambda segment: FakePool(segment, taken),
                                 Device=FakeDevice)
    return types.SimpleNamespace(cuda=cuda, failures_left=left)


class OOM(RuntimeError):
    pass


@pytest.fixture
def alloc():
    return _allocator.CachingAllocator(_fake_cupy(), OOM)


def _array(memptr):
    return types.SimpleNamespace(data=memptr)


def _allocated(alloc):
    """[current, peak, allocated, freed] bytes of the 'all' pool."""
    d = alloc.device_stats(0).as_dict(0)
    return [d[f"allocated_bytes.all.{k}"] for k in ("current", "peak", "allocated", "freed")]


def _stat(alloc, key):
    return alloc.device_stats(0).as_dict(0)[key]


def test_allocator_counts_rounded_bytes(alloc):
    a = alloc.malloc(1000)
    assert _allocated(alloc)[:3] == [1024, 1024, 1024]
    del a
    assert _allocated(alloc) == [0, 1024, 1024, 1024]


def test_allocator_peak_is_exact_between_queries(alloc):
    blocks = [alloc.malloc(512) for _ in range(4)]
    del blocks
    small = alloc.malloc(512)
    assert _allocated(alloc)[:2] == [512, 2048]
    del small


def test_allocator_splits_pools_at_one_mebibyte(alloc):
    big, little = alloc.malloc(2 << 20), alloc.malloc(100)
    assert _stat(alloc, "allocated_bytes.large_pool.current") == 2 << 20
    assert _stat(alloc, "allocated_bytes.small_pool.current") == 512
    del big, little


def test_allocator_reset_peaks_starts_from_current(alloc):
    a = alloc.malloc(4096)
    b = alloc.malloc(512)
    del a
    alloc.device_stats(0).reset_peaks(alloc.pool.total_bytes())
    assert _allocated(alloc)[:2] == [512, 512]
    del b


def test_allocator_frees_from_another_thread_are_counted(alloc):
    box = [alloc.malloc(512)]
    t = threading.Thread(target=box.clear)
    t.start()
    t.join()
    assert _allocated(alloc)[0] == 0


def test_allocator_free_by_the_collector_is_counted(alloc):
    a = alloc.malloc(512)
    cycle = [a]
    cycle.append(cycle)
    del a, cycle  # freed only by the collector (which may run inside a malloc)
    gc.collect()
    b = alloc.malloc(512)
    assert _allocated(alloc) == [512, 512, 1024, 512]
    del b


def test_allocator_record_stream_holds_block_until_event(alloc):
    stream = types.SimpleNamespace(ptr=7, events=[])
    a = alloc.malloc(512)
    alloc.record_stream(_array(a), stream)
    alloc.record_stream(_array(a), stream)  # recorded once per stream
    del a
    assert _stat(alloc, "allocated_bytes.all.current") == 0
    assert _stat(alloc, "active_bytes.all.current") == 512  # still held for the stream
    assert alloc.pool.in_use == 512 and len(stream.events) == 1
    stream.events[0].done = True
    assert _stat(alloc, "active_bytes.all.current") == 0
    assert _stat(alloc, "active_bytes.all.freed") == 512
    assert alloc.pool.in_use == 0


def test_allocator_synchronize_pending_waits_for_events(alloc):
    stream = types.SimpleNamespace(ptr=7, events=[])
    a = alloc.malloc(512)
    alloc.record_stream(_array(a), stream)
    del a
    alloc.synchronize_pending()
    assert alloc.pool.in_use == 0


def test_allocator_record_stream_ignores_foreign_memory(alloc):
    foreign = _array(types.SimpleNamespace(mem=types.SimpleNamespace(_owner=None)))
    alloc.record_stream(foreign, types.SimpleNamespace(ptr=1, events=[]))


def test_allocator_oom_raises_given_type_with_summary(alloc):
    alloc.pool.limit = 1024
    keep = alloc.malloc(512)
    with pytest.raises(OOM, match=r"CUDA out of memory\. Tried to allocate 2\.00 KiB.*"
                                  r"512 bytes is allocated by ember"):
        alloc.malloc(2048)
    st = alloc.device_stats(0)
    assert st.num_ooms == 1 and st.allocated_bytes == 512
    del keep


def test_allocator_reserved_peak_and_device_allocs(alloc):
    a = alloc.malloc(2048)
    del a
    alloc.empty_cache()
    st = alloc.device_stats(0)
    assert (st.reserved_peak, alloc.pool.total_bytes()) == (2048, 0)
    assert (st.num_device_alloc, st.num_device_free) == (1, 1)


def test_allocator_capture_keeps_blocks(alloc):
    keep = []
    alloc.captures.append(keep)
    a = alloc.malloc(512)
    alloc.captures.remove(keep)
    del a
    alloc.device_stats(0)  # counts the free
    assert alloc.pool.in_use == 512  # the graph still owns it
    keep.clear()
    assert alloc.pool.in_use == 0


def test_allocator_stats_dict_has_torch_keys(alloc):
    a = alloc.malloc(512)
    d = alloc.device_stats(0).as_dict(alloc.pool.total_bytes())
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "allocated_bytes.small_pool.allocated", "reserved_bytes.all.current",
                "active_bytes.all.freed", "allocation.all.current", "requested_bytes.all.peak",
                "num_alloc_retries", "num_ooms"):
        assert key in d
    assert d["requested_bytes.all.current"] == 512 and d["allocation.all.current"] == 1
    del a


def test_allocator_zero_size_is_not_counted(alloc):
    z = alloc.malloc(0)
    assert _allocated(alloc)[2] == 0
    del z


def test_allocator_reset_accumulated_zeroes_totals_as_torch(alloc):
    a = alloc.malloc(512)
    b = alloc.malloc(512)
    del b
    alloc.device_stats(0).reset_accumulated()
    assert _allocated(alloc) == [512, 1024, 0, 0]
    del a
    assert _allocated(alloc) == [0, 1024, 0, 512]


def test_allocator_counts_failed_segments_as_retries():
    alloc = _allocator.CachingAllocator(_fake_cupy(failures=1), OOM)
    b = alloc.malloc(2048)  # the first cudaMalloc fails; the pool empties its cache, retries
    st = alloc.device_stats(0)
    assert (st.num_alloc_retries, st.num_device_alloc, st.reserved_peak) == (1, 1, 2048)
    del b


def test_allocator_driver_out_of_memory_counts_one_oom():
    alloc = _allocator.CachingAllocator(_fake_cupy(failures=2), OOM)
    with pytest.raises(OOM, match="CUDA out of memory"):
        alloc.malloc(4096)
    st = alloc.device_stats(0)
    assert (st.num_ooms, st.num_alloc_retries) == (1, 1)


@pytest.fixture
def installed(monkeypatch, alloc):
    """ember.cuda.memory answering from the stand-in allocator, as on device 0."""
    from ember.cuda import _runtime, memory

    monkeypatch.setattr(memory, "_allocator", alloc)
    monkeypatch.setattr(_runtime, "current_index", lambda: 0)
    monkeypatch.setattr(_runtime, "is_compiled", lambda: True)
    return alloc


def test_memory_functions_read_the_allocator(installed):
    base = ember.cuda.memory_allocated()
    a = installed.malloc(4096)
    b = installed.malloc(4096)
    del a
    assert ember.cuda.memory_allocated() - base == 4096
    assert ember.cuda.max_memory_allocated() - base == 8192
    assert ember.cuda.memory_reserved() == installed.pool.total_bytes()
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == ember.cuda.memory_allocated()
    del b


def test_memory_stats_are_sorted_torch_keys(installed):
    stats = ember.cuda.memory_stats()
    assert list(stats) == sorted(stats)
    nested = ember.cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == stats["allocated_bytes.all.current"]


def test_memory_summary_table_lists_counters(installed):
    keep = installed.malloc(3 << 20)
    text = ember.cuda.memory_summary()
    assert "Allocated memory" in text and "3.00 MiB" in text and "CUDA OOMs: 0" in text
    assert "from large pool" in text
    assert "from large pool" not in ember.cuda.memory_summary(abbreviated=True)
    del keep


def test_allocator_retry_gets_blocks_of_collected_garbage():
    alloc = _allocator.CachingAllocator(_fake_cupy(), OOM)
    a = alloc.malloc(512)
    alloc.cp.failures_left[0] = 1
    cycle = [a]
    cycle.append(cycle)
    del a, cycle
    gc.disable()
    try:
        b = alloc.malloc(2048)  # cudaMalloc fails once: the garbage must reach the pool first
    finally:
        gc.enable()
    assert alloc.pool.in_use == 2048
    del b
