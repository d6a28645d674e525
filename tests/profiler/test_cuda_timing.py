"""GPU times from CUDA events (NOTE [ CUDA event timing ] in ember/profiler/_cuda.py).

Most tests drive the recorder with a fake timer (a GPU clock that advances 5 us per event,
and "the GPU" meaning 2-d results), so the plumbing from events to tables and traces is
checked on any machine; the last ones need a GPU and skip without one.
"""

import json
import os
from time import perf_counter_ns

import pytest

import ember
from ember.profiler import _cuda


class FakeTimer:
    device_name = "cuda"

    def __init__(self):
        self.clock = 0.0
        self.ref = None
        self.ref_ns = 0
        self.released = 0
        self.stopped = False

    def start(self):
        self.ref = self.mark()
        self.ref_ns = perf_counter_ns()

    def stop(self):
        self.stopped = True

    def mark(self):
        self.clock += 5.0
        return self.clock

    def release(self, ev):
        self.released += 1

    def on_device(self, args, result):
        return isinstance(result, ember.Tensor) and result.dim() == 2

    def elapsed_us(self, a, b):
        return b - a

    def stream_id(self):
        return 7

    def device_index(self):
        return 0


def _profile_with(timer, monkeypatch, fn):
    monkeypatch.setattr(_cuda, "timer", lambda: timer)
    prof = ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU])
    prof.use_device = "cuda"
    with prof:
        fn()
    return prof


_X = ember.ones(4, 4)


def _work():
    x = _X
    with ember.profiler.record_function("block"):
        y = x @ x
        _ = y.sum()


def test_cuda_timing_gpu_op_gets_kernel(monkeypatch):
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert [(k.name, k.duration) for k in mm.kernels] == [("aten::mm kernels", 5.0)]
    assert mm.self_device_time_total == 5.0


def test_cuda_timing_cpu_op_keeps_no_events(monkeypatch):
    timer = FakeTimer()
    prof = _profile_with(timer, monkeypatch, _work)
    total = next(e for e in prof.events() if e.name == "aten::sum")
    assert total.kernels == [] and timer.released >= 1 and timer.stopped


def test_cuda_timing_parent_sums_children(monkeypatch):
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    block = next(e for e in prof.events() if e.name == "block")
    assert block.device_time_total == 5.0 and block.self_device_time_total == 0


def test_cuda_timing_table_as_torch_formats_it(monkeypatch):
    # PyTorch's own table code, run on ember's averages, prints ember's table
    profiler_util = pytest.importorskip("torch.autograd.profiler_util")
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    averages = prof.key_averages()
    mine = averages.table(sort_by="self_cuda_time_total")
    for a in averages:   # torch's code tests device types against its own enum
        a.device_type = getattr(profiler_util.DeviceType, a.device_type.name)
    assert mine == profiler_util._build_table(averages, sort_by="self_cuda_time_total")
    assert "Self CUDA %" in mine and "aten::mm kernels" in mine


def test_cuda_timing_kernel_row_is_device_event(monkeypatch):
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    row = next(a for a in prof.key_averages() if a.key == "aten::mm kernels")
    assert (row.device_type, row.self_cpu_time_total, row.self_device_time_total) == \
        (ember.profiler.DeviceType.CUDA, 0, pytest.approx(5.0))


def test_cuda_timing_key_averages_sum_device_time(monkeypatch):
    def work():
        for _ in range(3):
            _X @ _X
    prof = _profile_with(FakeTimer(), monkeypatch, work)
    row = next(a for a in prof.key_averages() if a.key == "aten::mm")
    assert (row.count, row.self_device_time_total, row.device_time) == (3, 15.0, 5.0)


def test_cuda_timing_trace_has_kernel_and_flow(monkeypatch, tmp_path):
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    path = os.path.join(tmp_path, "t.json")
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert [(k["name"], k["pid"], k["tid"], k["dur"]) for k in kernels] == \
        [("aten::mm kernels", 0, 7, 5.0)]
    flows = [e for e in events if e.get("cat") == "ac2g"]
    assert sorted(f["ph"] for f in flows) == ["f", "s"]
    assert {f["id"] for f in flows} == {kernels[0]["args"]["correlation"]}


def test_cuda_timing_kernel_time_on_profile_timeline(monkeypatch):
    prof = _profile_with(FakeTimer(), monkeypatch, _work)
    k = next(e for e in prof.events() if e.name == "aten::mm kernels")
    # the reference event is at the fake clock's 5 us; the op's first event at 10 us
    ref_us = (prof.profiler.device_timer.ref_ns - prof.profiler.start_ns) / 1e3
    assert (k.time_range.start - ref_us, k.time_range.elapsed_us(), k.device_index,
            k.thread) == (pytest.approx(5.0), pytest.approx(5.0), 0, 7)


def test_cuda_timing_off_without_cuda_activity():
    with ember.profiler.profile() as prof:
        _work()
    assert prof.profiler.device_timer is None
    assert all(e.kernels == [] for e in prof.events())


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the machine without a GPU")
def test_cuda_timer_none_without_gpu():
    assert _cuda.timer() is None


needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")


@needs_gpu
def test_cuda_timing_real_gpu_matmul():
    x = ember.randn(256, 256, device="cuda")
    acts = [ember.profiler.ProfilerActivity.CPU, ember.profiler.ProfilerActivity.CUDA]
    with ember.profiler.profile(activities=acts) as prof:
        for _ in range(3):
            y = x @ x
        ember.cuda.synchronize()
    row = next(a for a in prof.key_averages() if a.key == "aten::mm")
    assert row.count == 3 and row.self_device_time_total > 0
    assert "Self CUDA" in prof.key_averages().table()
    del y


@needs_gpu
def test_cuda_timing_real_gpu_legacy_profiler():
    x = ember.randn(64, 64, device="cuda")
    with ember.autograd.profiler.profile(use_device="cuda") as prof:
        x @ x
    mm = next(e for e in prof.function_events if e.name == "aten::mm")
    assert mm.self_device_time_total > 0

