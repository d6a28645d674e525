"""The benchmark harness: a quick run of the ``ops`` group produces a table and reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HAS_TORCH

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_bench_quick_ops_produces_table(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "ops", "--quick", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ember/torch" in proc.stdout
    assert "ops: a + b (10 float32)" in proc.stdout
    data = json.loads((tmp_path / "quick.json").read_text())
    names = {r["name"] for r in data["results"]}
    assert {"a + b (10 float32)", "a @ b (1024x1024 float32)"} <= names
    add = next(r for r in data["results"] if r["name"] == "a + b (10 float32)")
    assert add["status"] == "ok" and add["ratio"] > 0
    assert "date" in data["machine"] and "cpu" in data["machine"]
    assert "| workload |" in (tmp_path / "quick.md").read_text()


def test_bench_failing_workload_is_skipped_not_fatal():
    import ember
    from bench.common import Workload, run_workload

    def broken(fw):
        raise NotImplementedError("not there yet")

    w = Workload("t", "broken", {"ember": broken, "torch": lambda fw: lambda: 1}, None)
    row = run_workload(w, {"ember": ember, "torch": ember}, samples=3, min_sample_s=0.0001,
                       warmup_s=0.0)
    assert row.status == "skipped"
    assert "ember raised NotImplementedError: not there yet" in row.note
    assert row.ember_ns is None and row.torch_ns is not None and row.ratio is None


def test_bench_check_mismatch_drops_ember_timing():
    import numpy as np

    import ember
    from bench.common import Workload, assert_same, run_workload

    def setup_ember(fw):
        return lambda: fw.from_numpy(np.ones(3, np.float32))

    def setup_other(fw):
        return lambda: fw.from_numpy(np.zeros(3, np.float32))

    w = Workload("t", "differs", {"ember": setup_ember, "torch": setup_other}, assert_same)
    row = run_workload(w, {"ember": ember, "torch": ember}, samples=3, min_sample_s=0.0001,
                       warmup_s=0.0)
    assert row.status == "mismatch"
    assert "results differ" in row.note
    assert row.ember_ns is None and row.torch_ns is not None


def test_bench_calibrate_reaches_min_sample_time(monkeypatch):
    from bench import common

    # a deterministic clock: every call takes 0.3 ms
    monkeypatch.setattr(common, "_run_loop", lambda fn, n: (n * 300_000, n * 300_000))
    n = common.calibrate(lambda: None, 0.01)
    assert n * 0.0003 >= 0.01
    assert n * 0.0003 <= 0.015  # not wildly past the target


def test_bench_peak_rss_probe_measures_a_training_step():
    from bench._memory import peak_rss
    from bench.run import fmt_rss
    from bench.common import Row

    rss, why = peak_rss("ember", "MLP 784-512-512-10, batch 128, SGD momentum")
    assert why == ""
    # the parameters, gradients and momentum buffers alone take about 8 MiB
    assert 4 * 2**20 < rss < 1024 * 2**20
    row = Row("train", "x", ember_peak_rss=rss)
    assert fmt_rss(row) == f"{rss / 2**20:.0f} / ? MiB"
    assert fmt_rss(Row("ops", "y")) == "—"


def test_bench_peak_rss_probe_reports_unknown_workload():
    from bench._memory import peak_rss

    rss, why = peak_rss("ember", "no such workload")
    assert rss is None and why.startswith("memory probe failed")


def test_measure_settles_before_each_sample(monkeypatch):
    # each sample starts after a sleep, so the other framework's spinning workers are idle
    import bench.common as common

    events = []
    monkeypatch.setattr(common.time, "sleep", lambda s: events.append(("sleep", s)))
    fns = {"ember": lambda: events.append("ember"), "torch": lambda: events.append("torch")}
    common.measure(fns, samples=2, min_sample_s=0.0, warmup_s=0.0, settle_s=0.25)
    timed = events[events.index(("sleep", 0.25)):]
    assert timed == [("sleep", 0.25), "ember", ("sleep", 0.25), "torch"] * 2
    events.clear()
    common.measure(fns, samples=2, min_sample_s=0.0, warmup_s=0.0)
    assert ("sleep", 0.25) not in events


def test_conv_paths_forced_paths_match_torch():
    torch = pytest.importorskip("torch")
    import ember
    from bench._conv_paths import candidates, forced, steps

    layer = (2, 16, 12, 8, 3, 1, 1)
    t_fwd, t_bwd = steps(torch, layer)
    want = [t_fwd().numpy()] + [g.numpy() for g in t_bwd()]
    for path in candidates(layer):
        e_fwd, e_bwd = steps(ember, layer)
        with forced(path):
            got = [e_fwd().numpy()] + [g.numpy() for g in e_bwd()]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max(),
                                       err_msg=path)


def test_conv_paths_forced_takes_the_path_and_restores_the_rules():
    from bench._conv_paths import forced
    from ember._ops import nn_winograd

    shape = ((2, 64, 8, 8), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1, np.float32)
    chosen = nn_winograd.eligible(np, *shape)
    with forced("columns"):
        assert not nn_winograd.eligible(np, *shape)
    with forced("F(2x2) NumPy"):
        assert nn_winograd.eligible(np, *shape)
    assert nn_winograd.eligible(np, *shape) == chosen
