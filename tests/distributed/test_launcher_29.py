"""The launcher and ``torch.distributed.elastic`` as torchrun users meet them (issue 21):
each test compares what users observe of ember's launcher (workers' environment, exit
codes, log files, the failure report) or elastic API with torch's, where torch is
installed. Launches start at most two local workers."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# prints the worker's launcher environment as one JSON line, and a line on stderr
ENV_SCRIPT = """
import json, os, sys
keep = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
        "MASTER_PORT", "OMP_NUM_THREADS"}
print(json.dumps({k: v for k, v in os.environ.items()
                  if k in keep or k.startswith("TORCHELASTIC_")}), flush=True)
print("stderr of", os.environ["LOCAL_RANK"], sys.argv[1:], file=sys.stderr, flush=True)
"""

# local rank 1 raises under @record; rank 0 waits to be stopped
FAIL_SCRIPT = """
import os, time
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    if os.environ["LOCAL_RANK"] == "1":
        raise ValueError("boom from rank one")
    time.sleep(60)

main()
"""

# the value of these differs from run to run; the rest must match torchrun's
VOLATILE = {"MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"}


def _launch(module, args, tmp_path, env=None, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **(env or {}))
    env.pop("OMP_NUM_THREADS", None)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, **kw)


def _ember(args, tmp_path, **kw):
    return _launch("ember.distributed.run", args, tmp_path, **kw)


def _torchrun(args, tmp_path, **kw):
    return _launch("torch.distributed.run", args, tmp_path, **kw)


def _envs(stdout):
    # (each object on its own: two workers' lines may meet on the shared pipe)
    envs = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", stdout)]
    return sorted(envs, key=lambda e: e["LOCAL_RANK"])


def _script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _relative_logs(root):
    """The files under a log dir, with the run folder's random name replaced."""
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            # (the run's folder: ``<run id>_<tempfile suffix>``, whose suffix may hold "_")
            out.append(re.sub(r"^[^/]+/", "<run>/", rel))
    return sorted(out)


def test_worker_environment_matches_torchrun(tmp_path):
    torch = pytest.importorskip("torch")  # noqa: F841
    script = _script(tmp_path, "env.py", ENV_SCRIPT)
    ours = _ember(["--nproc-per-node=2", script, "a"], tmp_path)
    assert ours.returncode == 0, ours.stderr
    theirs = _torchrun(["--nproc-per-node=2", script, "a"], tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    got, want = _envs(ours.stdout), _envs(theirs.stdout)
    assert [sorted(e) for e in got] == [sorted(e) for e in want]
    for g, w in zip(got, want):
        assert {k: v for k, v in g.items() if k not in VOLATILE} == \
            {k: v for k, v in w.items() if k not in VOLATILE}
        # one job id for both workers, a uuid as torchrun's; the error file per attempt/rank
        assert re.fullmatch(r"[0-9a-f-]{36}", g["TORCHELASTIC_RUN_ID"])
        assert g["TORCHELASTIC_ERROR_FILE"].endswith(
            f"/attempt_0/{g['LOCAL_RANK']}/error.json")
    assert got[0]["MASTER_PORT"] == got[1]["MASTER_PORT"] != "29500"
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in \
        ours.stderr


def test_log_dir_redirects_tee_and_rank_filter_match_torchrun(tmp_path):
    pytest.importorskip("torch")
    script = _script(tmp_path, "env.py", ENV_SCRIPT)
    flags = ["--nproc-per-node=2", "--tee=3", "--local-ranks-filter=1", "--role=trainer"]
    ours = _ember([*flags, "--log-dir", "ours", script], tmp_path)
    theirs = _torchrun([*flags, "--log-dir", "theirs", script], tmp_path)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert _relative_logs(tmp_path / "ours") == _relative_logs(tmp_path / "theirs") == [
        f"<run>/attempt_0/{r}/{s}.log" for r in (0, 1) for s in ("stderr", "stdout")]
    # only rank 1 reaches the console, each line behind [<role><local_rank>]:
    for proc in (ours, theirs):
        assert proc.stdout.startswith("[trainer1]:{") and "[trainer0]" not in proc.stdout
        assert "[trainer1]:stderr of 1 []" in proc.stderr
        assert "stderr of 0" not in proc.stderr
    [run] = os.listdir(tmp_path / "ours")
    log = (tmp_path / "ours" / run / "attempt_0" / "0" / "stdout.log").read_text()
    assert json.loads(log)["ROLE_NAME"] == "trainer"


def _report(stderr):
    return stderr[stderr.index("FAILED"):]


def test_failure_report_and_exit_code_match_torchrun(tmp_path):
    pytest.importorskip("torch")
    script = _script(tmp_path, "fail.py", FAIL_SCRIPT)
    ours = _ember(["--nproc-per-node=2", script], tmp_path)
    theirs = _torchrun(["--nproc-per-node=2", script], tmp_path)
    assert ours.returncode == theirs.returncode == 1
    for proc in (ours, theirs):
        assert re.search(r"failed \(exitcode: 1\) local_rank: 1 \(pid: \d+\) of binary: ",
                         proc.stderr), proc.stderr
        assert "ChildFailedError" in proc.stderr
        report = _report(proc.stderr)
        assert report.startswith("FAILED\n")
        root = report[report.index("Root Cause (first observed failure):"):]
        assert "rank      : 1 (local_rank: 1)" in root
        assert re.search(r"error_file: \S+/attempt_0/1/error\.json", root)
        assert "raise ValueError(\"boom from rank one\")" in root
        assert "ValueError: boom from rank one" in root
        others = report[report.index("Failures:"):report.index("Root Cause")]
        assert "rank      : 0 (local_rank: 0)" in others
        assert "exitcode  : -15" in others and "(SIGTERM)" in others
    # the lines naming the job and the sections are the same
    keep = ("fail.py FAILED", "Failures:", "Root Cause (first observed failure):")
    assert [ln for ln in ours.stderr.splitlines() if ln in keep] == \
        [ln for ln in theirs.stderr.splitlines() if ln in keep]


def test_failure_without_record_and_restart_count(tmp_path):
    script = _script(tmp_path, "fail.py",
                     "import os, sys\nprint(os.environ['TORCHELASTIC_RESTART_COUNT'], "
                     "os.environ['TORCHELASTIC_MAX_RESTARTS'], flush=True)\nsys.exit(3)\n")
    proc = _ember(["--nproc-per-node=1", "--max-restarts=1", "--monitor-interval=0.05",
                   script], tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.split() == ["0", "1", "1", "1"]
    assert "exitcode  : 3" in proc.stderr and "error_file: <N/A>" in proc.stderr
    assert "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" in \
        proc.stderr


def test_sigterm_stops_workers_and_ends_the_launcher(tmp_path):
    script = _script(tmp_path, "sleep.py", (
        "import os, signal, sys, time\n"
        "def stop(s, f):\n"
        "    # (one write: the two workers share the pipe, and print writes piece by piece\n"
        "    # under PYTHONUNBUFFERED)\n"
        "    os.write(1, f\"worker {os.environ['LOCAL_RANK']} got {s}\\n\".encode())\n"
        "    sys.exit(7)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "os.write(1, b'ready\\n')\n"
        "time.sleep(600)\n"))  # (until the launcher passes on the SIGTERM)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                             "--max-restarts=3", script], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 90
    while lines.count("ready\n") < 2 and time.monotonic() < deadline:
        lines.append(proc.stdout.readline())
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert sorted(ln for ln in out.splitlines() if ln.startswith("worker")) == \
        ["worker 0 got 15", "worker 1 got 15"]
    assert "Received 15 death signal, shutting down workers" in err
    assert "SignalException: Process" in err and "got signal: 15" in err
    assert "restarting" not in err  # a signal is not a worker failure


def test_module_and_run_path(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "job.py").write_text("import sys\nprint('module', __name__, sys.argv[1:])\n")
    script = _script(tmp_path, "job.py", "import sys\nprint('path', __name__, sys.argv[1:])\n")
    proc = _ember(["-m", "pkg.job", "x"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "module __main__ ['x']\n"
    proc = _ember(["--run-path", script, "y"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "path __main__ ['y']\n"


def test_parser_matches_torchrun():
    torch_run = pytest.importorskip("torch.distributed.run")
    from ember.distributed.run import get_args_parser

    def table(parser):
        return {a.dest: (tuple(a.option_strings), a.default, a.choices, a.nargs)
                for a in parser._actions if a.dest != "help"}

    assert table(get_args_parser()) == table(torch_run.get_args_parser())


def test_pet_variables_set_options(monkeypatch):
    from ember.distributed.run import parse_args

    monkeypatch.setenv("PET_NPROC_PER_NODE", "2")
    monkeypatch.setenv("PET_STANDALONE", "1")
    monkeypatch.setenv("PET_MAX_RESTARTS", "4")
    args = parse_args(["t.py"])
    assert (args.nproc_per_node, args.standalone, args.max_restarts) == ("2", True, 4)
    assert parse_args(["--nproc-per-node", "1", "t.py"]).nproc_per_node == "1"


@pytest.mark.parametrize("argv", [
    ["--no-python", "-m", "x"],
    ["--nproc-per-node", "many", "t.py"],
    ["--local-ranks-filter", "a,b", "t.py"],
    ["--redirects", "5", "t.py"],
])
def test_bad_options_raise_as_torchrun(argv):
    torch_run = pytest.importorskip("torch.distributed.run")
    import ember.distributed.run as ours

    with pytest.raises(ValueError) as theirs_err:
        torch_run.config_from_args(torch_run.parse_args(argv))
    with pytest.raises(ValueError) as ours_err:
        ours.config_from_args(ours.parse_args(argv))
    assert str(ours_err.value) == str(theirs_err.value)


def test_config_from_args_matches_torchrun(monkeypatch):
    torch_run = pytest.importorskip("torch.distributed.run")
    import ember.distributed.run as ours

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    argv = ["--nnodes=1:2", "--nproc-per-node=2", "--rdzv-backend=c10d",
            "--rdzv-endpoint=host:1234", "--rdzv-conf=join_timeout=5", "--role=trainer",
            "--max-restarts=2", "t.py", "--lr", "1"]
    cfg, cmd, args = ours.config_from_args(ours.parse_args(argv))
    tcfg, tcmd, targs = torch_run.config_from_args(torch_run.parse_args(argv))
    fields = ("min_nodes", "max_nodes", "nproc_per_node", "run_id", "role", "rdzv_endpoint",
              "rdzv_backend", "rdzv_configs", "max_restarts", "monitor_interval",
              "start_method")
    assert [getattr(cfg, f) for f in fields] == [getattr(tcfg, f) for f in fields]
    assert (cmd, args) == (tcmd, targs)


def test_std_and_log_specs_match_torch(tmp_path):
    tmp = pytest.importorskip("torch.distributed.elastic.multiprocessing.api")
    from ember.distributed.elastic.multiprocessing import api as ours

    for text in ("0", "3", "0:1,1:2"):
        got, want = ours.Std.from_str(text), tmp.Std.from_str(text)
        if isinstance(want, dict):
            assert {k: int(v) for k, v in got.items()} == {k: int(v) for k, v in want.items()}
        else:
            assert int(got) == int(want)
    for mod, name in ((ours, "ours"), (tmp, "theirs")):
        specs = mod.DefaultLogsSpecs(log_dir=str(tmp_path / name), redirects=mod.Std.OUT,
                                     tee={1: mod.Std.ERR}, local_ranks_filter={1})
        envs = {r: {"TORCHELASTIC_RUN_ID": "job", "TORCHELASTIC_RESTART_COUNT": "2"}
                for r in range(2)}
        dest = specs.reify(envs)
        base = str(tmp_path / name)

        def rel(path, base=base):
            return re.sub(r"job_[^/]+", "job_*", path.replace(base, "<root>"))

        summary = ({r: rel(p) for r, p in dest.stdouts.items()},
                   {r: rel(p) for r, p in dest.stderrs.items()},
                   {r: rel(p) for r, p in dest.tee_stderrs.items()},
                   dest.tee_stdouts, {r: rel(e["TORCHELASTIC_ERROR_FILE"]) for r, e in
                                      envs.items()})
        if name == "ours":
            got = summary
        else:
            assert got == summary


def test_start_processes_program_and_function(tmp_path):
    from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std, start_processes

    pc = start_processes("p", sys.executable,
                         {r: ("-c", f"import sys; print('out{r}'); sys.exit({r} * 5)")
                          for r in range(2)}, {0: {}, 1: {}},
                         DefaultLogsSpecs(log_dir=str(tmp_path), redirects=Std.ALL))
    result = pc.wait(period=0.05)
    # rank 0 may still run when rank 1's failure is seen: then it is stopped, and fails too
    assert result.is_failed() and result.failures[1].exitcode == 5
    assert result.failures.get(0) is None or result.failures[0].exitcode == -signal.SIGTERM
    # (a rank 0 stopped before it printed wrote nothing)
    allowed = ("out0\n",) if 0 not in result.failures else ("out0\n", "")
    assert open(result.stdouts[0]).read() in allowed


def test_elastic_launch_function_gets_torchrun_environment():
    from ember.distributed.launcher.api import LaunchConfig, elastic_launch

    from . import _launcher_workers as w

    out = elastic_launch(LaunchConfig(1, 1, 2, max_restarts=0, role="r"), w.environment)()
    assert sorted(out) == [0, 1]
    assert out[1]["RANK"] == "1" and out[1]["WORLD_SIZE"] == "2"


def test_local_elastic_agent_restarts_a_failed_group(tmp_path):
    from ember.distributed.elastic.agent.server import WorkerSpec, WorkerState
    from ember.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
    from ember.distributed.elastic.rendezvous import RendezvousParameters
    from ember.distributed.elastic.rendezvous.registry import get_rendezvous_handler

    script = _script(tmp_path, "w.py", (
        "import os, sys\n"
        "print(os.environ['RANK'], os.environ['TORCHELASTIC_RESTART_COUNT'])\n"
        "sys.exit(os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' and "
        "os.environ['LOCAL_RANK'] == '1')\n"))
    params = RendezvousParameters("c10d", "127.0.0.1:0", "agent_job", 1, 1, is_host=True,
                                  last_call_timeout=0)
    spec = WorkerSpec("trainer", 2, get_rendezvous_handler(params), entrypoint=sys.executable,
                      args=(script,), max_restarts=1, monitor_interval=0.05)
    agent = LocalElasticAgent(spec, DefaultLogsSpecs(log_dir=str(tmp_path / "logs"),
                                                     redirects=Std.ALL))
    result = agent.run()
    assert result.state == WorkerState.SUCCEEDED and result.return_values == {0: None, 1: None}
    [run] = os.listdir(tmp_path / "logs")
    assert (tmp_path / "logs" / run / "attempt_1" / "1" / "stdout.log").read_text() == "1 1\n"
    assert [w.global_rank for w in agent.get_worker_group().workers] == [0, 1]


def test_rendezvous_parameters_and_endpoints_match_torch():
    tr = pytest.importorskip("torch.distributed.elastic.rendezvous")
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint as tparse

    import ember.distributed.elastic.rendezvous as er
    from ember.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    for endpoint in ("", "node:1", "[::1]:29400", "10.0.0.1", "h:99999", "bad host:1"):
        outcomes = []
        for parse in (parse_rendezvous_endpoint, tparse):
            try:
                outcomes.append(parse(endpoint, 29400))
            except ValueError as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1]
    for args in (("", "e", "r", 1, 1), ("c10d", "e", "r", 0, 1), ("c10d", "e", "r", 2, 1)):
        with pytest.raises(ValueError) as ours:
            er.RendezvousParameters(*args)
        with pytest.raises(ValueError) as theirs:
            tr.RendezvousParameters(*args)
        assert str(ours.value) == str(theirs.value)
    p = er.RendezvousParameters("c10d", "e", "r", 1, 2, flag="yes", n="3")
    assert (p.get_as_bool("flag"), p.get_as_int("n"), p.get("x", 5)) == (True, 3, 5)


def test_static_and_c10d_handlers_form_a_group():
    from ember.distributed.elastic.rendezvous import RendezvousParameters
    from ember.distributed.elastic.rendezvous.registry import get_rendezvous_handler

    static = get_rendezvous_handler(RendezvousParameters("static", "127.0.0.1:0", "j", 1, 1,
                                                         rank=0))
    info = static.next_rendezvous()
    assert (static.get_backend(), info.rank, info.world_size) == ("static", 0, 1)
    info.store.set("k", "v")
    assert info.store.get("k") == b"v"
    c10d = get_rendezvous_handler(RendezvousParameters("c10d", "127.0.0.1:0", "j", 1, 1,
                                                       is_host=True, last_call_timeout=0))
    first, second = c10d.next_rendezvous(), c10d.next_rendezvous()
    assert (first.rank, first.world_size, c10d.num_nodes_waiting()) == (0, 1, 0)
    assert second.bootstrap_store_info.master_port > 0
    c10d.set_closed()
    assert c10d.is_closed()


def test_local_timer_reaps_a_stuck_worker():
    import multiprocessing as mp

    from ember.distributed.elastic import timer

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    server = timer.LocalTimerServer(queue, max_interval=0.05)
    server.start()
    try:
        proc = ctx.Process(target=_stuck_worker, args=(queue,))
        proc.start()
        proc.join(60)
        assert proc.exitcode == -signal.SIGKILL
    finally:
        server.stop()


def _stuck_worker(queue):
    from ember.distributed.elastic import timer

    timer.configure(timer.LocalTimerClient(queue))
    with timer.expires(after=0.2):
        time.sleep(30)


def test_file_timer_reaps_with_its_signal(tmp_path):
    from ember.distributed.elastic.timer import FileTimerClient, FileTimerServer

    path = str(tmp_path / "timer")
    server = FileTimerServer(path, "job", max_interval=0.05)
    server.start()
    try:
        proc = subprocess.Popen([sys.executable, "-c", (
            "import sys, time\n"
            f"sys.path.insert(0, {ROOT!r})\n"
            "from ember.distributed.elastic.timer.file_based_local_timer import FileTimerClient\n"
            f"FileTimerClient({path!r}, signal=15).acquire('step', time.time() + 0.2)\n"
            "time.sleep(30)\n")])
        assert proc.wait(60) == -signal.SIGTERM
        FileTimerClient(path).release("step")
    finally:
        server.stop()


def test_events_and_metrics_serialize_as_torch():
    tev = pytest.importorskip("torch.distributed.elastic.events")
    from ember.distributed.elastic import events, metrics

    ours = events.Event("x", events.EventSource.AGENT, 5, {"a": 1})
    theirs = tev.Event("x", tev.EventSource.AGENT, 5, {"a": 1})
    assert ours.serialize() == theirs.serialize()
    rd = events.RdzvEvent("n", "r", "m", "h", 1, events.NodeState.RUNNING, rank=2)
    trd = tev.RdzvEvent("n", "r", "m", "h", 1, tev.NodeState.RUNNING, rank=2)
    assert rd.serialize() == trd.serialize()
    seen = []

    class Keep(metrics.MetricHandler):
        def emit(self, data):
            seen.append((data.group_name, data.name, data.value))

    metrics.configure(Keep(), group="t29")
    try:
        @metrics.prof(group="t29")
        def step():
            return 4

        assert step() == 4
        metrics.put_metric("m", 7, "t29")
    finally:
        metrics.configure(metrics.NullMetricHandler(), group="t29")
    assert [s[1] for s in seen] == [f"{step.__qualname__}.success",
                                    f"{step.__qualname__}.duration.ms", "m"]


def test_store_helpers():
    from ember.distributed import HashStore
    from ember.distributed.elastic.utils.distributed import get_free_port
    from ember.distributed.elastic.utils.store import barrier, get_all, synchronize

    store = HashStore()
    assert synchronize(store, b"a", 0, 1, "sync/") == [b"a"]
    store.set("p1", "b")
    store.set("p0", "c")
    assert get_all(store, 1, "p", 2) == [b"c", b"b"]
    barrier(store, 1, "bar", barrier_timeout=5)
    assert 0 < get_free_port() < 65536


def test_elastic_name_coverage_is_high():
    """Most public names of torch.distributed.elastic's modules exist in ember's."""
    pytest.importorskip("torch.distributed.elastic")
    import importlib
    import pkgutil

    import torch.distributed.elastic as te

    total = have = 0
    for info in pkgutil.walk_packages(te.__path__, "torch.distributed.elastic."):
        if "etcd" in info.name or "control_plane" in info.name:
            continue
        theirs = importlib.import_module(info.name)
        try:
            ours = importlib.import_module("ember" + info.name[len("torch"):])
        except ImportError:
            ours = None
        for name in getattr(theirs, "__all__", []):
            total += 1
            have += ours is not None and hasattr(ours, name)
    assert have / total > 0.95, (have, total)
