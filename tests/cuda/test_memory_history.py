"""``ember.cuda.memory._record_memory_history`` / ``_snapshot`` / ``_dump_snapshot`` on the
stand-in CuPy pool of test_allocator.py (runs without a GPU): the events, their order and
stacks, in PyTorch's snapshot shape."""

import pickle

import pytest

import ember
from ember.cuda import _allocator

from .test_allocator import OOM, _fake_cupy


@pytest.fixture
def installed(monkeypatch):
    from ember import cuda
    from ember.cuda import _runtime, memory

    alloc = _allocator.CachingAllocator(_fake_cupy(), OOM)
    monkeypatch.setattr(memory, "_allocator", alloc)
    monkeypatch.setattr(memory, "_history_kept", [None])
    monkeypatch.setattr(_runtime, "current_index", lambda: 0)
    monkeypatch.setattr(_runtime, "is_compiled", lambda: True)
    monkeypatch.setattr(_runtime, "gpu_count", lambda: 1)
    monkeypatch.setattr(cuda, "_lazy_init", lambda: None)
    return alloc


def _make_block(alloc):
    return alloc.malloc(4096)


def test_history_records_allocs_and_frees_with_stacks(installed):
    mem = ember.cuda.memory
    mem._record_memory_history()
    a = _make_block(installed)
    addr = a.ptr
    del a
    snap = mem._snapshot()
    assert set(snap) >= {"segments", "device_traces"}
    trace = snap["device_traces"][0]
    actions = [(e["action"], e["addr"]) for e in trace]
    assert actions == [("alloc", addr), ("free_requested", addr), ("free_completed", addr)]
    alloc_event = trace[0]
    assert alloc_event["size"] == 4096 and alloc_event["stream"] == 0
    names = [f["name"] for f in alloc_event["frames"]]
    assert "_make_block" in names  # the allocating Python frame is in the stack
    assert {"filename", "line", "name"} <= set(alloc_event["frames"][0])


def test_stop_keeps_events_and_clear_history_forgets(installed):
    mem = ember.cuda.memory
    mem._record_memory_history(context=None)
    keep = installed.malloc(512)
    mem._record_memory_history(enabled=None)
    other = installed.malloc(512)  # not recorded
    trace = mem._snapshot()["device_traces"][0]
    assert [e["action"] for e in trace] == ["alloc"]
    assert trace[0]["frames"] == []  # context=None: no stacks
    mem._record_memory_history(max_entries=2)
    del keep, other
    assert len(mem._snapshot()["device_traces"][0]) == 2  # the oldest dropped
    mem._record_memory_history(clear_history=True)
    assert mem._snapshot()["device_traces"][0] == []
    mem._record_memory_history(skip_actions=["free_requested"])
    b = installed.malloc(512)
    del b
    assert [e["action"] for e in mem._snapshot()["device_traces"][0]] == ["alloc",
                                                                          "free_completed"]
    with pytest.raises(ValueError):
        mem._record_memory_history(enabled="sometimes")


def test_dump_snapshot_writes_a_pickle(installed, tmp_path):
    mem = ember.cuda.memory
    mem._record_memory_history()
    x = installed.malloc(1024)
    path = tmp_path / "snap.pickle"
    mem._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)
    assert snap["device_traces"][0][0]["action"] == "alloc"
    del x


def test_without_cuda_raises_as_torch_cpu_build(monkeypatch):
    from ember.cuda import _runtime

    monkeypatch.setattr(_runtime, "is_compiled", lambda: False)
    for fn in (ember.cuda.memory._record_memory_history, ember.cuda.memory._snapshot,
               ember.cuda.memory._dump_snapshot):
        with pytest.raises(AttributeError):
            fn()
