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
    marker, env = _marked_environment()
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "ops", "--quick", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert _processes_with(marker) == []  # no worker outlived the run
    assert "ember/torch" in proc.stdout
    assert "ops: a + b (10 float32)" in proc.stdout
    data = json.loads((tmp_path / "quick.json").read_text())
    names = {r["name"] for r in data["results"]}
    assert {"a + b (10 float32)", "a @ b (1024x1024 float32)"} <= names
    add = next(r for r in data["results"] if r["name"] == "a + b (10 float32)")
    assert add["status"] == "ok" and add["ratio"] > 0
    assert "date" in data["machine"] and "cpu" in data["machine"]
    assert "| workload |" in (tmp_path / "quick.md").read_text()
    # by default each framework ran in a worker process of its own
    assert data["settings"]["same_process"] is False
    assert "worker process of its own" in (tmp_path / "quick.md").read_text()
    grad = next(r for r in data["results"] if r["name"].startswith("a + b, a requires grad"))
    assert grad["status"] == "ok"  # the check saw requires_grad and grad_fn from the workers


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_bench_same_process_mode_still_works(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "-k", "a + b (10", "--same-process",
         "--no-memory", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "quick.json").read_text())
    assert [r["name"] for r in data["results"]] == ["a + b (10 float32)"]
    assert data["results"][0]["status"] == "ok" and data["results"][0]["ratio"] > 0
    assert data["settings"]["same_process"] is True
    assert "both frameworks in one process" in (tmp_path / "quick.md").read_text()


def test_bench_same_process_is_documented(capsys):
    from bench.run import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--same-process" in capsys.readouterr().out
    assert "--same-process" in (ROOT / "bench" / "README.md").read_text()


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


# ------------------------------------------------------------------------------------------------
# each framework in a worker process (NOTE [ Frameworks in separate processes ])


def _tiny(**kw):
    return dict(samples=3, min_sample_s=0.0001, warmup_s=0.0, **kw)


@pytest.fixture(scope="module")
def two_workers():
    """Two ember workers standing in for the two frameworks (as the in-process tests above
    pass ember twice), started once for the tests that need them."""
    from bench._workers import Worker

    workers = {"ember": Worker("ember"), "torch": Worker("ember")}
    yield workers
    for worker in workers.values():
        worker.close()


def test_bench_worker_imports_only_its_framework():
    from bench._workers import WorkerPool
    from tests import _bench_setups

    names = ["ember", "torch"] if HAS_TORCH else ["ember"]
    with WorkerPool(names) as pool:
        for name, worker in pool.workers().items():
            assert worker.setup(_bench_setups.ones, want_output=True).tolist() == [1.0] * 3
            assert worker.loaded() == [name]


def test_bench_worker_failing_setup_is_reported_and_other_timed(two_workers):
    from bench.common import Workload, run_workload
    from tests import _bench_setups

    w = Workload("t", "broken", {"ember": _bench_setups.broken,
                                 "torch": _bench_setups.ones}, None)
    row = run_workload(w, two_workers, **_tiny())
    assert row.status == "skipped"
    assert "ember raised NotImplementedError: not there yet" in row.note
    assert row.ember_ns is None and row.torch_ns is not None and row.ratio is None
    # the failure left the worker serving the next workload
    w = Workload("t", "ok", {"ember": _bench_setups.ones, "torch": _bench_setups.ones})
    row = run_workload(w, two_workers, **_tiny())
    assert row.status == "ok" and row.ratio > 0


def test_bench_worker_failing_while_timing_leaves_the_other_timed(two_workers):
    from bench.common import Workload, run_workload
    from tests import _bench_setups

    w = Workload("t", "breaks", {"ember": _bench_setups.ones,
                                 "torch": _bench_setups.fails_after_first_call}, None)
    row = run_workload(w, two_workers, **_tiny())
    assert row.status == "skipped"
    assert "torch raised RuntimeError: broke while timing while timing" in row.note
    assert row.ember_ns is not None and row.torch_ns is None


def test_bench_worker_mismatch_drops_ember_timing(two_workers):
    from bench.common import Workload, assert_same, run_workload
    from tests import _bench_setups

    w = Workload("t", "differs", {"ember": _bench_setups.ones, "torch": _bench_setups.zeros},
                 assert_same)
    row = run_workload(w, two_workers, **_tiny())
    assert row.status == "mismatch" and "results differ" in row.note
    assert row.ember_ns is None and row.torch_ns is not None


def test_bench_dead_worker_is_reported_and_replaced():
    from bench._workers import WorkerPool
    from bench.common import Workload, run_workload
    from tests import _bench_setups

    with WorkerPool(["ember"]) as pool:
        first = pool.workers()["ember"]
        w = Workload("t", "exits", {"ember": _bench_setups.exits}, None)
        row = run_workload(w, pool.workers(), **_tiny())
        assert row.status == "skipped" and "ember worker exited (code 3)" in row.note
        fresh = pool.workers()["ember"]
        assert fresh is not first and fresh.alive
        w = Workload("t", "ok", {"ember": _bench_setups.ones})
        assert run_workload(w, pool.workers(), **_tiny()).ember_ns > 0


def test_bench_unsendable_setup_runs_in_one_process_with_note():
    from bench._workers import sendable
    from bench.common import FRAMEWORKS, Workload
    from bench.run import _run_in_workers
    from tests import _bench_setups

    nested = Workload("t", "lambda setup", {fw: (lambda m: _bench_setups.ones(m))
                                            for fw in FRAMEWORKS})
    plain = Workload("t", "module setup", {fw: _bench_setups.ones for fw in FRAMEWORKS})
    assert "cannot be sent to a worker" in sendable(nested) and sendable(plain) == ""
    settings = {**_tiny(), "settle_s": 0.0, "memory": False}
    rows, info = _run_in_workers([nested, plain], settings)
    assert rows[0].note.startswith("both frameworks in one process: ")
    assert rows[0].ember_ns is not None
    assert "one process" not in rows[1].note and rows[1].ember_ns is not None
    assert info["ember"]


def _marked_environment():
    """(marker, environment): this process's environment plus a variable unique to one
    test, which the processes a run starts inherit."""
    import os
    import uuid

    key, value = "BENCH_TEST_MARK", uuid.uuid4().hex
    return f"{key}={value}", {**os.environ, key: value}


def _processes_with(marker):
    """Process ids of live processes whose environment holds ``marker`` (none where there
    is no /proc to read)."""
    found = []
    if not Path("/proc/self/environ").exists():
        return found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_bench_workers_end_on_ctrl_c(tmp_path):
    import os
    import signal
    import time

    marker, env = _marked_environment()
    # samples so long that the interrupt lands while the workers are timing, however long
    # this process takes to see them start (with 0.5 s samples a loaded machine let the whole
    # run end first, exit code 0)
    # (Ctrl-C's default action restored in the child: a test run started in the background
    # -- `cmd &` in a script -- passes SIGINT on ignored, and Python keeps it ignored)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "ops", "-k", "a + b (10", "--no-memory",
         "--min-time", "600", "--out", str(tmp_path)], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        expected = 2 if HAS_TORCH else 1
        while len(_processes_with(marker)) < 1 + expected and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_processes_with(marker)) == 1 + expected, "the workers never started"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("python -m bench did not end within 120 s of Ctrl-C")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = _processes_with(marker)
        # (a failed run must not leave a worker timing for ten minutes, holding the stderr
        # pipe open and slowing the rest)
        for pid in left:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    assert proc.returncode == 130, proc.stderr.read().decode()[-2000:]
    assert left == []


def test_bench_worker_pool_ends_workers_on_exception():
    import os

    from bench._workers import WorkerPool

    with pytest.raises(RuntimeError, match="boom"):
        with WorkerPool(["ember"]) as pool:
            pids = pool.pids()
            raise RuntimeError("boom")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_result_values_keep_autograd_facts_through_pickle():
    import pickle

    import ember
    from bench.common import Values, result_values

    x = ember.ones(2, requires_grad=True)
    v = pickle.loads(pickle.dumps(result_values([x * 2, 3])))
    assert isinstance(v[0], Values) and v[0].tolist() == [2.0, 2.0]
    assert v[0].requires_grad and v[0].grad_fn == "MulBackward0"
    assert v[1].tolist() == 3 and not isinstance(v[1], Values)
    assert not result_values(ember.ones(2)).requires_grad


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
