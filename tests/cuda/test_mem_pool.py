"""ember.cuda.MemPool and use_mem_pool on the stand-in for CuPy's pool of
tests/cuda/test_allocator.py: a thread's allocations go to the pool inside the context and
back to it when freed, counted with the rest (NOTE [ Counting CuPy's pool ])."""

import threading

import pytest

import ember
from ember.cuda import _allocator
from tests.cuda.test_allocator import OOM, _fake_cupy


@pytest.fixture
def alloc():
    return _allocator.CachingAllocator(_fake_cupy(), OOM)


@pytest.fixture
def installed(monkeypatch, alloc):
    """ember.cuda.memory answering from the stand-in allocator, as on one device 0."""
    from ember.cuda import _runtime, memory

    monkeypatch.setattr(memory, "_allocator", alloc)
    monkeypatch.setattr(_runtime, "current_index", lambda: 0)
    monkeypatch.setattr(_runtime, "is_compiled", lambda: True)
    monkeypatch.setattr(_runtime, "gpu_count", lambda: 1)
    monkeypatch.setattr(_runtime, "cupy", lambda: alloc.cp)
    monkeypatch.setattr(ember.cuda, "_lazy_init", lambda: None)
    return alloc


def test_routed_allocations_come_from_the_pool_and_go_back(alloc):
    pool = alloc.new_pool()
    a = alloc.malloc(4096)
    with alloc.routed(pool):
        b = alloc.malloc(8192)
        c = alloc.malloc(512)
    d = alloc.malloc(1024)
    assert pool.in_use == 8192 + 512
    assert alloc.pool.in_use == 4096 + 1024
    assert alloc.device_stats(0).allocated_bytes == 4096 + 8192 + 512 + 1024
    del b, c
    assert alloc.device_stats(0).allocated_bytes == 4096 + 1024  # (counts the frees)
    assert pool.in_use == 0 and alloc.pool.in_use == 4096 + 1024
    # reserved bytes are every pool's
    assert alloc.reserved(0) == alloc.pool.total_bytes() + pool.total_bytes()
    del a, d


def test_routing_is_per_thread_and_nests(alloc):
    p1, p2 = alloc.new_pool(), alloc.new_pool()
    seen = []

    def other():
        seen.append(alloc.malloc(1024))  # not routed: the default pool

    with alloc.routed(p1):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        x = alloc.malloc(512)
        with alloc.routed(p2):
            y = alloc.malloc(512)
        z = alloc.malloc(512)
    assert (p1.in_use, p2.in_use, alloc.pool.in_use) == (1024, 512, 1024)
    del seen[:], x, y, z


def test_use_on_oom_pool_serves_an_allocation_the_default_pool_cannot(alloc):
    spare = alloc.new_pool(use_on_oom=True)
    with alloc.routed(spare):
        block = alloc.malloc(4096)
    del block  # cached in the spare pool
    alloc.pool.limit = 1024  # the default pool can hold no more than this
    got = alloc.malloc(4096)
    assert spare.in_use == 4096 and alloc.pool.in_use == 0
    del got
    plain = _allocator.CachingAllocator(_fake_cupy(), OOM)
    plain.pool.limit = 1024
    with pytest.raises(OOM):
        plain.malloc(4096)


def test_mem_pool_and_use_mem_pool_as_torch_users_write_them(installed):
    pool = ember.cuda.MemPool()
    assert pool.id[1] >= 1 and pool.allocator is None and pool.use_count() == 1
    base = ember.cuda.memory_allocated()
    with ember.cuda.use_mem_pool(pool) as p:
        assert p is pool and pool.use_count() == 2
        block = installed.malloc(2048)
    assert pool.use_count() == 1
    assert ember.cuda.memory_allocated() - base == 2048
    (seg,) = pool.snapshot()
    assert seg["segment_pool_id"] == pool.id and seg["allocated_size"] == 2048
    assert ember.cuda.memory_snapshot(mempool_id=pool.id) == [seg]
    assert ember.cuda.memory_reserved() == installed.reserved(0)
    del block
    assert pool.snapshot()[0]["allocated_size"] == 0
    other = ember.cuda.MemPool()
    assert other.id != pool.id and other.snapshot() == []


def test_bad_arguments_are_refused(installed):
    with pytest.raises(TypeError, match="expects a MemPool"):
        ember.cuda.use_mem_pool(object())
    with pytest.raises(ValueError, match="pluggable allocators"):
        ember.cuda.MemPool(allocator=object())


def test_mem_pool_needs_a_gpu():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError):
        ember.cuda.MemPool()
