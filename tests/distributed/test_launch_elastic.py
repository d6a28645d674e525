"""The launcher's restarts and elastic rendezvous (``--max-restarts``, ``--rdzv-backend
c10d``, ``--nnodes MIN:MAX``), with workers that only record their environment."""

import json
import os
import subprocess
import sys
import time

import numpy as np

from tests.distributed import _workers
from tests.distributed.conftest import free_port, load, needs_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(os.path.dirname(__file__), "_train_script.py")
KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR",
        "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID")

# fails on its first try under a launcher given FAIL_ONCE (on every try with FAIL_ALWAYS),
# else records its environment as <out>/<RANK>.json
WORKER = f"""
import json, os, sys
env = {{k: os.environ.get(k) for k in {KEYS!r}}}
first = env["TORCHELASTIC_RESTART_COUNT"] == "0"
if os.environ.get("FAIL_ALWAYS") or (first and os.environ.get("FAIL_ONCE")):
    sys.exit(5)
with open(os.path.join(sys.argv[1], env["RANK"] + ".json"), "w") as f:
    json.dump(env, f)
"""


def _launcher(args, env=None, **popen):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "ember.distributed.run", *args], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **popen)


def _finish(procs, timeout=180):
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        out.append((p.returncode, err))
    return out


def _envs(out_dir):
    return {int(f[:-5]): json.load(open(os.path.join(out_dir, f)))
            for f in os.listdir(out_dir) if f.endswith(".json")}


def _worker(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "out"
    out.mkdir()
    return str(script), str(out)


def _c10d(port, nnodes, *extra):
    return ["--nnodes", nnodes, "--rdzv-backend", "c10d", "--rdzv-endpoint",
            f"127.0.0.1:{port}", "--rdzv-id", "job1", *extra]


def test_launcher_restarts_failed_worker_group(tmp_path):
    script, out = _worker(tmp_path)
    [(code, err)] = _finish([_launcher(["--nproc-per-node", "2", "--max-restarts", "1",
                                        "--standalone", script, out], env={"FAIL_ONCE": "1"})])
    assert code == 0, err
    assert "restart 1 of 1" in err
    envs = _envs(out)
    assert sorted(envs) == [0, 1]
    assert all(e["TORCHELASTIC_RESTART_COUNT"] == "1" for e in envs.values())


def test_launcher_gives_up_after_max_restarts(tmp_path):
    script, out = _worker(tmp_path)
    [(code, err)] = _finish([_launcher(["--nproc-per-node", "1", "--max-restarts", "2",
                                        script, out], env={"FAIL_ALWAYS": "1"})])
    assert code == 1
    assert "restart 2 of 2" in err and "restart 3" not in err and "exit code 5" in err


def test_c10d_rendezvous_joins_two_agents_into_one_group(tmp_path):
    script, out = _worker(tmp_path)
    port = free_port()
    results = _finish([_launcher(_c10d(port, "2", "--nproc-per-node", "2", script, out))
                       for _ in range(2)])
    assert all(code == 0 for code, _ in results), results
    envs = _envs(out)
    assert sorted(envs) == [0, 1, 2, 3]
    assert {e["WORLD_SIZE"] for e in envs.values()} == {"4"}
    assert sorted(e["GROUP_RANK"] for e in envs.values()) == ["0", "0", "1", "1"]
    assert len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs.values()}) == 1


def test_c10d_rendezvous_starts_with_min_nodes_after_last_call(tmp_path):
    script, out = _worker(tmp_path)
    [(code, err)] = _finish([_launcher(_c10d(free_port(), "1:2", "--rdzv-conf",
                                             "last_call_timeout=0.5", "--nproc-per-node", "1",
                                             script, out))])
    assert code == 0, err
    assert _envs(out)[0]["WORLD_SIZE"] == "1"


def test_c10d_rendezvous_restarts_every_node_after_a_failure(tmp_path):
    script, out = _worker(tmp_path)
    port = free_port()
    results = _finish([_launcher(_c10d(port, "2", "--max-restarts", "1", "--nproc-per-node",
                                       "1", script, out), env=env)
                       for env in ({"FAIL_ONCE": "1"}, {})])
    assert all(code == 0 for code, _ in results), results
    envs = _envs(out)
    assert sorted(envs) == [0, 1]
    # the failed node used a restart; the other only followed it (no restart of its own)
    assert sorted(e["TORCHELASTIC_RESTART_COUNT"] for e in envs.values()) == ["0", "1"]


def test_nnodes_range_without_elastic_backend_is_refused(tmp_path):
    script, out = _worker(tmp_path)
    [(code, err)] = _finish([_launcher(["--nnodes", "1:2", script, out])])
    assert code != 0 and "needs an elastic rendezvous" in err


@needs_mpi
def test_c10d_rendezvous_trains_ddp_script_across_two_agents(tmp_path):
    port = free_port()
    results = _finish([_launcher(_c10d(port, "2", "--nproc-per-node", "1", TRAIN,
                                       str(tmp_path))) for _ in range(2)])
    assert all(code == 0 for code, _ in results), results
    for r in load(tmp_path):
        for got, want in zip(r["params"], _workers.train_single("ember")):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_c10d_rendezvous_admits_a_node_that_arrives_later(tmp_path):
    # alone, the worker waits to be stopped; once a second node is in, it records its env
    script = tmp_path / "grow.py"
    script.write_text(WORKER.replace(
        'first = env["TORCHELASTIC_RESTART_COUNT"] == "0"',
        'first = env["TORCHELASTIC_RESTART_COUNT"] == "0"\n'
        'if env["WORLD_SIZE"] == "1":\n'
        '    open(os.path.join(sys.argv[1], "alone"), "w").close()\n'
        '    import time; time.sleep(3600); sys.exit(7)'))
    out = tmp_path / "out"
    out.mkdir()
    args = _c10d(free_port(), "1:2", "--rdzv-conf", "last_call_timeout=0.5",
                 "--nproc-per-node", "1", str(script), str(out))
    first = _launcher(args)
    deadline = time.monotonic() + 120
    while not (out / "alone").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    results = _finish([first, _launcher(args)])
    assert all(code == 0 for code, _ in results), results
    envs = _envs(str(out))
    assert sorted(envs) == [0, 1] and {e["WORLD_SIZE"] for e in envs.values()} == {"2"}
    assert "a new node asked to join" in results[0][1]


def test_c10d_rendezvous_out_of_restarts_stops_every_node(tmp_path):
    # the healthy node's worker would wait an hour; the failing node's shutdown stops it (else
    # _finish kills the healthy launcher at its timeout and its code is not 1)
    script = tmp_path / "hang.py"
    script.write_text(WORKER.replace(
        'first = env["TORCHELASTIC_RESTART_COUNT"] == "0"',
        'first = env["TORCHELASTIC_RESTART_COUNT"] == "0"\n'
        'if not os.environ.get("FAIL_ALWAYS"):\n'
        '    import time; time.sleep(3600)'))
    out = tmp_path / "out"
    out.mkdir()
    args = _c10d(free_port(), "2", "--nproc-per-node", "1", str(script), str(out))
    results = _finish([_launcher(args, env=env) for env in ({"FAIL_ALWAYS": "1"}, {})])
    assert [code for code, _ in results] == [1, 1], results
    assert "shut down by another agent" in results[1][1] and "exit code 5" in results[1][1]
