"""``python -m bench --profile NAME``: one workload under ember.profiler, a trace and a table."""

import json

import pytest

from bench.common import REGISTRY, load_groups
from bench.run import find_workload, main, profile_overhead, profile_workload


@pytest.fixture(scope="module")
def workloads():
    load_groups()
    return list(REGISTRY)


def test_find_workload_by_substring(workloads):
    assert find_workload("gpt", workloads).name.startswith("GPT")


def test_find_workload_ambiguous_lists_candidates(workloads):
    with pytest.raises(LookupError, match="several workloads match"):
        find_workload("a + b", workloads)


def test_find_workload_unknown_raises(workloads):
    with pytest.raises(LookupError, match="no workload matches"):
        find_workload("no such workload", workloads)


def test_profile_workload_writes_trace_and_table(workloads, tmp_path, capsys):
    w = find_workload("ops: a + b (10", workloads)
    run_dir, ratio = profile_workload(w, tmp_path, steps=2, top=5, overhead_rounds=1)
    trace = json.loads((run_dir / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"aten::add", "bench_step"} <= names
    assert "aten::add" in (run_dir / "table.txt").read_text()
    assert ratio > 0 and json.loads((run_dir / "overhead.json").read_text())["ratio"] == ratio
    assert "profiler overhead" in capsys.readouterr().out


def test_profile_overhead_returns_wall_and_cpu_times():
    times = profile_overhead(lambda: None, rounds=2, steps=2)
    assert set(times) == {"wall", "cpu"}
    assert all(t >= 0 for pair in times.values() for t in pair)


def test_main_profile_quick_skips_overhead(tmp_path, capsys):
    assert main(["--profile", "ops: a * b (10", "--quick", "--out", str(tmp_path),
                 "--profile-steps", "1", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "aten::mul" in out and "profiler overhead" not in out
    assert len(list((tmp_path / "profile").glob("*/trace.json"))) == 1
