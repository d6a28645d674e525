"""ember.profiler and ember.autograd.profiler, compared with torch's profiler."""

import json
import os
import warnings

import pytest

import ember
from ember import _dispatch
from ember.autograd import _engine
from ember.profiler import (
    ProfilerAction, ProfilerActivity, profile, record_function, schedule,
    tensorboard_trace_handler,
)

try:
    import torch
    import torch.profiler as tprof
    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _mlp_step(lib, record=True, **kw):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x = lib.randn(5, 8)
    prof_mod = ember.profiler if lib is ember else tprof
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU], **kw) as prof:
            with prof_mod.record_function("model_inference"):
                loss = model(x).sum()
            loss.backward()
            opt.step()
    return prof


def _names(prof):
    return [e.name for e in prof.events()]


# -- names and nesting ----------------------------------------------------------------------


def test_profile_mlp_records_op_names_as_torch():
    names = set(_names(_mlp_step(ember)))
    assert {"aten::linear", "aten::relu", "aten::sum", "aten::mm"} <= names


@needs_torch
def test_profile_mlp_backward_node_names_match_torch():
    mine = {n for n in _names(_mlp_step(ember)) if "Backward" in n or "AccumulateGrad" in n}
    theirs = {n for n in _names(_mlp_step(torch)) if "Backward" in n or "AccumulateGrad" in n}
    assert mine == theirs and "TBackward0" in mine


def test_profile_backward_node_nests_under_evaluate_function():
    prof = _mlp_step(ember)
    for e in prof.events():
        if e.name == "AddmmBackward0":
            assert e.cpu_parent.name == "autograd::engine::evaluate_function: AddmmBackward0"
            assert "aten::mm" in [c.name for c in e.cpu_children]


def test_record_function_nests_its_ops():
    prof = _mlp_step(ember)
    block = prof.events()[0]
    assert block.name == "model_inference"
    assert [c.name for c in block.cpu_children] == ["aten::linear", "aten::relu",
                                                    "aten::linear", "aten::sum"]
    assert all(c.cpu_parent is block for c in block.cpu_children)


def test_record_function_as_decorator():
    @record_function("deco")
    def f(x):
        return x + 1

    with profile() as prof:
        f(ember.ones(2))
        f(ember.ones(2))
    deco = [e for e in prof.events() if e.name == "deco"]
    assert len(deco) == 2 and all(d.cpu_children[0].name == "aten::add" for d in deco)


def test_record_function_outside_profile_is_noop():
    with record_function("nothing") as r:
        ember.ones(2) + 1
    assert r.record is None


def test_optimizer_step_is_a_user_event():
    assert "Optimizer.step#SGD.step" in _names(_mlp_step(ember))


def test_module_calls_are_recorded_with_stack_only():
    # as PyTorch 2.13: its Python tracer (``with_stack``) records module calls;
    # ``with_modules`` alone records none
    names = _names(_mlp_step(ember, with_stack=True))
    assert "nn.Module: Linear_0" in names and "nn.Module: Linear_1" in names
    assert not any(n.startswith("nn.Module: ") for n in _names(_mlp_step(
        ember, with_modules=True)))


# -- times, averages, table ------------------------------------------------------------------


def test_self_time_is_total_minus_children():
    prof = _mlp_step(ember)
    for e in prof.events():
        kids = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - kids)
        assert e.self_cpu_time_total >= -1e-6


def test_key_averages_counts_calls():
    with profile() as prof:
        for _ in range(3):
            ember.ones(2) + 1
    avg = {a.key: a for a in prof.key_averages()}["aten::add"]
    assert avg.count == 3
    assert avg.cpu_time == pytest.approx(avg.cpu_time_total / 3)
    for field in ("cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
                  "self_cpu_memory_usage", "input_shapes", "flops", "device_time_total"):
        assert hasattr(avg, field)


def test_key_averages_group_by_input_shape_splits_rows():
    with profile(record_shapes=True) as prof:
        ember.ones(2) + 1
        ember.ones(3) + 1
    rows = [a for a in prof.key_averages(group_by_input_shape=True) if a.key == "aten::add"]
    assert sorted(r.input_shapes[0] for r in rows) == [[2], [3]]


def _header_lines(table):
    return table.splitlines()[:3]


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"profile_memory": True}])
def test_table_layout_matches_torch(kw):
    def run(lib, prof_mod):
        a = lib.ones(3, 4)
        with prof_mod.profile(**kw) as p:
            a + a
            a * a
        return p.key_averages().table(sort_by="cpu_time_total", row_limit=5)

    mine, theirs = run(ember, ember.profiler), run(torch, tprof)
    assert _header_lines(mine) == _header_lines(theirs)
    assert mine.splitlines()[-1].startswith("Self CPU time total: ")
    assert [len(x) for x in mine.splitlines()[3:5]] == [len(x) for x in theirs.splitlines()[3:5]]


@needs_torch
def test_table_header_argument_matches_torch():
    def run(lib, prof_mod):
        a = lib.ones(3, 4)
        with prof_mod.profile() as p:
            a + a
        return p.key_averages().table(header="HDR").splitlines()[:2]

    assert run(ember, ember.profiler) == run(torch, tprof)


def test_table_row_limit_and_sort():
    prof = _mlp_step(ember)
    lines = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2).splitlines()
    assert len(lines) == 3 + 2 + 2


def test_table_with_flops_has_flops_column():
    with profile(with_flops=True) as prof:
        ember.ones(4, 4) @ ember.ones(4, 4)
    assert "Total FLOPs" in prof.key_averages().table()


# -- flops and memory ------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("case", ["mm", "addmm", "bmm", "conv2d", "add", "mul"])
def test_flops_match_torch(case):
    def run(lib, prof_mod):
        lib.manual_seed(0)
        a, b = lib.randn(3, 4), lib.randn(4, 5)
        x, w = lib.randn(2, 3, 8, 9), lib.randn(6, 3, 3, 2)
        bb, cc = lib.randn(2, 3, 4), lib.randn(2, 4, 5)
        calls = {"mm": lambda: lib.mm(a, b), "addmm": lambda: lib.addmm(lib.zeros(5), a, b),
                 "bmm": lambda: lib.bmm(bb, cc),
                 "conv2d": lambda: lib.nn.functional.conv2d(x, w, stride=2, padding=1),
                 "add": lambda: a + a, "mul": lambda: a * 2}
        with prof_mod.profile(with_flops=True) as p:
            calls[case]()
        return sum(e.flops for e in p.events())

    assert run(ember, ember.profiler) == run(torch, tprof)


def test_profile_memory_counts_output_bytes():
    with profile(profile_memory=True) as prof:
        a = ember.ones(4, 4)
        b = a + 1
    ev = {e.name: e for e in prof.events()}
    assert ev["aten::ones"].self_cpu_memory_usage == 64
    assert ev["aten::add"].cpu_memory_usage == 64
    del b


def test_profile_memory_frees_are_negative_in_the_enclosing_event():
    with profile(profile_memory=True) as prof:
        with record_function("block"):
            t = ember.ones(8)
            del t
    block = prof.events()[0]
    assert block.self_cpu_memory_usage == -32 and block.cpu_memory_usage == 0


def test_profile_memory_off_records_no_bytes():
    with profile() as prof:
        ember.ones(4, 4)
    assert all(e.cpu_memory_usage == 0 for e in prof.events())


# -- chrome trace ----------------------------------------------------------------------------


def test_export_chrome_trace_is_valid_and_nested(tmp_path):
    prof = _mlp_step(ember, record_shapes=True, profile_memory=True)
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    doc = json.load(open(path))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") != "Trace"]
    # (``[memory]`` events are the trace's instants, as in PyTorch's)
    assert len(xs) == len([e for e in prof.events() if e.name != "[memory]"])
    for e in xs:
        assert {"name", "ts", "dur", "pid", "tid"} <= set(e) and e["dur"] >= 0
    eps = 1e-3
    for a in xs:
        for b in xs:
            a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
            disjoint = a1 <= b0 + eps or b1 <= a0 + eps
            nested = (a0 <= b0 + eps and b1 <= a1 + eps) or (b0 <= a0 + eps and a1 <= b1 + eps)
            assert disjoint or nested, (a["name"], b["name"])
    mm = next(e for e in xs if e["name"] == "aten::mm")
    assert mm["args"]["Input Dims"] == [[5, 4], [4, 16]]
    assert any(e["ph"] == "i" and e["name"] == "[memory]" for e in doc["traceEvents"])


def test_export_chrome_trace_flow_links_forward_to_backward(tmp_path):
    prof = _mlp_step(ember)
    path = str(tmp_path / "t.json")
    prof.export_chrome_trace(path)
    evs = json.load(open(path))["traceEvents"]
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    by_ts = {e["ts"]: e["name"] for e in evs if e["ph"] == "X"}
    assert all(by_ts[ends[i]["ts"]].endswith("Backward0") for i in ends)
    assert all(by_ts[starts[i]["ts"]].startswith("aten::") for i in starts)


def test_export_chrome_trace_gzip(tmp_path):
    import gzip
    with profile() as prof:
        ember.ones(2) + 1
    path = str(tmp_path / "t.json.gz")
    prof.export_chrome_trace(path)
    assert "traceEvents" in json.loads(gzip.open(path, "rt").read())


def _verbose():
    return ember._C._profiler._ExperimentalConfig(verbose=True)


def test_export_stacks_writes_folded_lines(tmp_path):
    # stacks come with ``verbose`` only, as in PyTorch (NOTE [ Stacks as PyTorch records
    # them ]); a line is the stack, outermost first, blanks as ``_``, then the value
    def work():
        ember.ones(64, 64) @ ember.ones(64, 64)

    with profile(with_stack=True, experimental_config=_verbose()) as prof:
        work()
    path = str(tmp_path / "stacks.txt")
    prof.export_stacks(path, "self_cpu_time_total")
    lines = open(path).read().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert all(" " not in line.rsplit(" ", 1)[0] for line in lines)
    assert any(line.rsplit(" ", 1)[0].endswith("):_work") for line in lines)


def test_export_stacks_empty_without_verbose_as_torch(tmp_path):
    with profile(with_stack=True) as prof:
        ember.ones(64, 64) @ ember.ones(64, 64)
    path = str(tmp_path / "stacks.txt")
    prof.export_stacks(path, "self_cpu_time_total")
    assert open(path).read() == ""
    assert all(e.stack == [] for e in prof.events())


def test_tensorboard_trace_handler_names_file_as_torch(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "worker")):
        ember.ones(2) + 1
    (name,) = os.listdir(tmp_path)
    head, stamp, rest = name.split(".", 2)
    assert head == "worker" and stamp.isdigit() and rest == "pt.trace.json"
    json.load(open(tmp_path / name))


# -- schedule --------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("kw", [
    dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
    dict(wait=2, warmup=1, active=1, skip_first=1, skip_first_wait=1),
    dict(wait=0, warmup=2, active=3, repeat=1),
])
def test_schedule_actions_match_torch(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine, theirs = schedule(**kw), tprof.schedule(**kw)
    assert [mine(i).name for i in range(14)] == [theirs(i).name for i in range(14)]


def test_schedule_invalid_arguments_raise():
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)


def test_schedule_without_warmup_warns():
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


def _schedule_run(lib_prof, lib, n_steps, **kw):
    fired = []

    def ready(p):
        fired.append((p.step_num, sorted({e.name for e in p.events()
                                           if e.name == "ProfilerStep*"}),
                      sum(e.name == "ProfilerStep*" for e in p.events())))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib_prof.profile(schedule=lib_prof.schedule(**kw), on_trace_ready=ready) as p:
            for _ in range(n_steps):
                lib.ones(2) + 1
                p.step()
    return fired


@needs_torch
@pytest.mark.parametrize("kw,n", [
    (dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1), 12),
    (dict(wait=0, warmup=1, active=2), 7),
    (dict(wait=1, warmup=1, active=3), 4),
])
def test_schedule_trace_ready_steps_match_torch(kw, n):
    assert _schedule_run(ember.profiler, ember, n, **kw) == _schedule_run(tprof, torch, n, **kw)


def test_profile_without_schedule_fires_trace_ready_on_exit():
    fired = []
    with profile(on_trace_ready=lambda p: fired.append(p.step_num)) as p:
        for _ in range(3):
            p.step()
    assert fired == [3]


def test_profiler_action_members():
    assert [a.name for a in ProfilerAction] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE",
                                                "DEVICE_STOPPED"]


# -- no cost when off, activities ------------------------------------------------------------


def test_mode_stack_and_engine_hook_empty_outside_profile():
    assert _dispatch.state.modes == () and _engine.profiler_hook is None
    with profile():
        assert len(_dispatch.state.modes) == 1 and _engine.profiler_hook is not None
    assert _dispatch.state.modes == () and _engine.profiler_hook is None
    assert _dispatch.intercept is False


def test_profile_restores_state_after_exception():
    with pytest.raises(ValueError):
        with profile():
            raise ValueError("boom")
    assert _dispatch.state.modes == () and _engine.profiler_hook is None


def test_cuda_activity_without_cuda_warns_as_torch():
    if ember.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            ember.ones(1)


def test_supported_activities_has_cpu():
    assert ProfilerActivity.CPU in ember.profiler.supported_activities()


# -- legacy API ------------------------------------------------------------------------------


def test_legacy_profile_records_forward_and_backward():
    x = ember.ones(3, 3, requires_grad=True)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("fwd"):
            y = (x @ x).sum()
        y.backward()
    names = [e.name for e in prof.function_events]
    assert names[0] == "fwd" and "autograd::engine::evaluate_function: SumBackward0" in names
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    assert "fwd" in table and "Self CPU time total" in str(prof)


def test_legacy_profile_disabled_records_nothing():
    with ember.autograd.profiler.profile(enabled=False):
        assert _dispatch.state.modes == ()


def test_legacy_use_cuda_warns_future_warning():
    with pytest.warns(FutureWarning, match="use_cuda"):
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            with ember.autograd.profiler.profile(use_cuda=True):
                pass


def test_emit_nvtx_without_cuda_raises_as_torch():
    if ember.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(AssertionError):
        with ember.autograd.profiler.emit_nvtx():
            pass
    assert _dispatch.state.modes == ()


@needs_torch
def test_profiler_public_names_cover_torch():
    for mod, theirs in [(ember.profiler, tprof), (ember.autograd.profiler,
                                                   torch.autograd.profiler)]:
        missing = [n for n in theirs.__all__ if not hasattr(mod, n)]
        assert missing == []


@needs_torch
def test_backward_events_record_grad_shapes_as_torch():
    def shapes(lib, prof_mod):
        x = lib.ones(3, 4, requires_grad=True)
        with prof_mod.profile(record_shapes=True) as prof:
            (x * 2).sum().backward()
        return [(e.name, e.input_shapes) for e in prof.events()
                if e.name in ("SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad")
                or e.name.startswith("autograd::engine")]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert shapes(ember, ember.profiler) == shapes(torch, tprof)


def test_backward_events_without_record_shapes_have_none():
    x = ember.ones(2, requires_grad=True)
    with profile() as prof:
        (x * 2).sum().backward()
    assert all(not e.input_shapes for e in prof.events() if e.name == "MulBackward0")
