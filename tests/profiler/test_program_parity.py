"""Details a user meets when running PyTorch's profiler recipe and the autograd profiler
reference unchanged on ember: compared with PyTorch where it is installed."""

import pytest

import ember
from ember.profiler import ProfilerActivity

try:
    import torch
    HAS_TORCH = True
except ImportError:   # pragma: no cover
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch")


def _batch_norm_events(lib):
    lib.manual_seed(0)
    bn = lib.nn.BatchNorm2d(4)
    x = lib.randn(3, 4, 5, 5)
    bn(x)
    with lib.profiler.profile() as prof:
        bn(x)
    return [e.name for e in prof.events()], bn


@needs_torch
def test_batch_norm_training_running_stats_not_recorded_as_ops():
    names, _ = _batch_norm_events(ember)
    torch_names, _ = _batch_norm_events(torch)
    # PyTorch updates the running statistics inside its kernel: no mul/pow/sub rows
    assert set(names) <= set(torch_names)
    assert names[0] == "aten::add_" and "aten::native_batch_norm" in names


def test_batch_norm_running_stats_still_updated_under_profiler():
    ember.manual_seed(0)
    plain, profiled = ember.nn.BatchNorm1d(3), ember.nn.BatchNorm1d(3)
    x = ember.randn(8, 3)
    plain(x)
    with ember.profiler.profile():
        profiled(x)
    assert ember.equal(plain.running_mean, profiled.running_mean)
    assert ember.equal(plain.running_var, profiled.running_var)


@needs_torch
def test_batch_norm_running_stats_match_torch_after_steps():
    import numpy as np
    x = np.random.default_rng(0).standard_normal((6, 4, 3, 3)).astype(np.float32)
    bt, be = torch.nn.BatchNorm2d(4, momentum=0.3), ember.nn.BatchNorm2d(4, momentum=0.3)
    for _ in range(3):
        bt(torch.tensor(x))
        be(ember.tensor(x))
    np.testing.assert_allclose(be.running_mean.numpy(), bt.running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(be.running_var.numpy(), bt.running_var.numpy(), rtol=1e-6)


def _fwd_threads(lib):
    x = lib.ones(3, requires_grad=True)
    with lib.profiler.profile() as prof:
        (x * 2).sum().backward()
    return {e.name: e.fwd_thread for e in prof.events()
            if e.name in ("aten::mul", "aten::sum", "MulBackward0",
                          "autograd::engine::evaluate_function: SumBackward0",
                          "torch::autograd::AccumulateGrad")}


@needs_torch
def test_fwd_thread_set_on_backward_events_only_as_torch():
    assert _fwd_threads(ember) == _fwd_threads(torch)


@needs_torch
def test_print_event_list_shows_the_table_as_torch():
    for lib in (ember, torch):
        with lib.autograd.profiler.profile() as prof:
            lib.ones(2) + 1
        text = str(prof.function_events)
        assert text.splitlines()[1].split()[:3] == ["Name", "Self", "CPU"]
        assert str(prof.key_averages()).endswith("\n")
        assert repr(prof.function_events).startswith("[<FunctionEvent")


def test_legacy_profile_trace_ids():
    prof = ember.autograd.profiler.profile()
    tid = prof.default_trace_id()
    assert len(tid) == 32 and tid == tid.upper() and int(tid, 16) >= 0
    assert prof.create_trace_id() != tid
    named = ember.autograd.profiler.profile(custom_trace_id_callback=lambda: "run-7")
    with named:
        pass
    assert named.trace_id == "run-7" and named.config().trace_id == "run-7"


@needs_torch
def test_legacy_profile_toggle_collection_as_torch():
    def names(lib):
        with lib.autograd.profiler.profile() as prof:
            prof.toggle_collection_dynamic(False, [lib.profiler.ProfilerActivity.CPU])
            lib.ones(2).neg()
            prof.toggle_collection_dynamic(True, [lib.profiler.ProfilerActivity.CPU])
            lib.ones(2).exp()
        return [e.name for e in prof.function_events]
    got, want = names(ember), names(torch)
    assert "aten::neg" not in got and "aten::neg" not in want
    assert "aten::exp" in got and "aten::exp" in want


def test_legacy_profile_toggle_ignores_other_activities():
    with ember.autograd.profiler.profile() as prof:
        prof.toggle_collection_dynamic(False, [ProfilerActivity.CUDA])
        ember.ones(2).neg()
    assert "aten::neg" in [e.name for e in prof.function_events]


def _memory_profile(lib):
    x = lib.ones(64, 64)
    with lib.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True) as prof:
        y = x * 2
        del y
    return prof


def _export(prof, path):
    with pytest.warns(FutureWarning, match="export_memory_timeline` is deprecated"):
        prof.export_memory_timeline(str(path), device="cpu")


@needs_torch
def test_memory_timeline_json_has_torch_columns(tmp_path):
    import json
    for lib in (ember, torch):
        _export(_memory_profile(lib), tmp_path / f"{lib.__name__}.json")
    times, sizes = json.loads((tmp_path / "ember.json").read_text())
    t_times, t_sizes = json.loads((tmp_path / "torch.json").read_text())
    assert len(sizes[0]) == len(t_sizes[0]) == 9
    assert len(times) == len(sizes) and times == sorted(times)
    # (PyTorch also lists the memory that existed before the profile: ember does not)
    assert max(sum(r) for r in sizes) == 64 * 64 * 4 <= max(sum(r) for r in t_sizes)
    assert sum(sizes[-1]) == 0


@needs_torch
def test_memory_timeline_raw_events_as_torch(tmp_path):
    import gzip
    import json
    for lib in (ember, torch):
        _export(_memory_profile(lib), tmp_path / f"{lib.__name__}.raw.json.gz")
    got = json.loads(gzip.open(tmp_path / "ember.raw.json.gz", "rt").read())
    want = json.loads(gzip.open(tmp_path / "torch.raw.json.gz", "rt").read())
    # the product's buffer made and freed; PyTorch adds its 8-byte scalar operands
    assert [(a, n) for _, a, n, _ in got] == \
        [(a, n) for t, a, n, _ in want if t != -1 and abs(n) >= 1024]


def test_memory_timeline_html_embeds_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "mem.html"
    _export(_memory_profile(ember), path)
    text = path.read_text()
    assert text.startswith("<html>") and "data:image/png;base64," in text
