"""``profile_memory=True``: which events PyTorch's profiler charges allocations and frees to;
the trace's ``[memory]`` events, header flags and profile marks, as PyTorch writes them."""

import json

import pytest

import ember

torch = pytest.importorskip("torch")


def _self_memory(lib, fn):
    with lib.profiler.profile(profile_memory=True) as prof:
        fn(lib)
    return {a.key: a.self_cpu_memory_usage for a in prof.key_averages()}


@pytest.mark.parametrize("call", [
    lambda t: t.expand(4, 3, 5), lambda t: t.transpose(0, 1), lambda t: t.view(15),
    lambda t: t.permute(1, 0), lambda t: t[1:],
])
def test_view_ops_allocate_nothing(call):
    x = ember.ones(3, 5)
    with ember.profiler.profile(profile_memory=True) as prof:
        call(x)
    assert [e.cpu_memory_usage for e in prof.events()] == [0]


def _mlp_backward(lib):
    x = lib.ones(64, 128)
    w = lib.ones(256, 128, requires_grad=True)
    y = lib.nn.functional.relu(lib.nn.functional.linear(x, w))
    y.sum().backward()


def test_backward_node_frees_charged_to_evaluate_function():
    mine, theirs = _self_memory(ember, _mlp_backward), _self_memory(torch, _mlp_backward)
    for key in ("ReluBackward0", "MmBackward0"):
        assert mine[key] == theirs[key] == 0
    outer = "autograd::engine::evaluate_function: MmBackward0"
    assert mine[outer] < 0 and theirs[outer] < 0


def test_memory_trace_events_pair_allocations_with_frees(tmp_path):
    with ember.profiler.profile(profile_memory=True) as prof:
        y = ember.ones(32, 32) + 1
        del y
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    mem = [e["args"] for e in json.loads(path.read_text())["traceEvents"]
           if e["name"] == "[memory]"]
    keys = {"Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Id", "Device Type",
            "finished", "Ev Idx"}
    assert all(keys <= set(a) for a in mem)
    freed = [a["Addr"] for a in mem if a["Bytes"] < 0]
    allocated = [a["Addr"] for a in mem if a["Bytes"] > 0]
    assert freed and set(freed) <= set(allocated)


def test_trace_header_names_with_stack(tmp_path):
    with ember.profiler.profile(with_stack=True) as prof:
        ember.ones(2) + 1
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    assert json.loads(path.read_text())["with_stack"] == 1


def test_trace_marks_profile_start_as_torch(tmp_path):
    def marks(lib):
        with lib.profiler.profile() as prof:
            lib.ones(2) + 1
        path = tmp_path / f"{lib.__name__}.json"
        prof.export_chrome_trace(str(path))
        return sorted((e["ph"], e["name"], e["pid"]) for e in
                      json.loads(path.read_text())["traceEvents"]
                      if e.get("pid") in ("Traces", "Spans"))
    assert marks(ember) == marks(torch)


def test_result_viewing_a_kernel_buffer_counts_that_buffer():
    # layer norm returns views of its statistics' buffers beside the output
    x = ember.randn(4, 8, requires_grad=True)
    with ember.profiler.profile(profile_memory=True) as prof:
        ember.nn.functional.layer_norm(x, (8,))
    # (the frees after the call, outside every op, are ``[memory]`` events of their own)
    assert sum(e.cpu_memory_usage for e in prof.events()
               if e.cpu_parent is None and e.name != "[memory]") >= 4 * 8 * 4
